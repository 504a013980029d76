package fleet

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/crdrepair"
	"github.com/operator-manager/operator-manager/internal/kubeapply"
	"github.com/operator-manager/operator-manager/internal/render"
	"github.com/operator-manager/operator-manager/test/harness"
)

// item is one installation of the benchmark: a bundle in its own namespace, with the
// objects the manager's own render makes of it. The floor applies exactly these, and the
// Helm peer packages exactly these as a chart.
type item struct {
	Package, Channel, Version, CSVName, Namespace string
	// CRDs are the bundle's CRDs as the manager applies them (converted to v1, repaired).
	CRDs []*unstructured.Unstructured
	// Objects are everything else the manager creates for the CSV, in its apply order.
	Objects []*unstructured.Unstructured
	// Deployments are the names of the operator's Deployments, in Namespace.
	Deployments []string
}

// objectCount is how many objects the installation applies (CRDs included): the unit of
// the write budget.
func (it *item) objectCount() int { return len(it.CRDs) + len(it.Objects) }

// excluded are channel heads the fleet leaves out, each for a reason a person can check in
// docs/compatibility.md: the benchmark compares speed, so every installation in it must
// be one the manager completes on this cluster.
var excluded = map[string]string{
	"community-kubevirt-hyperconverged": "needs what the simulated cluster lacks (docs/compatibility.md)",
	"portworx-essentials":               "shares its CRDs with portworx; the manager refuses two packages writing one CRD",
}

// heads are the default-channel heads of the catalog that install on their own, in
// package-name order, at most n (n <= 0: all), only those named in only (when any), and
// why each other package was left out.
func heads(cat *catalog.Catalog, n int, only map[string]bool) (items []item, skipped []string, err error) {
	pkgs := cat.Packages()
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].Name < pkgs[j].Name })
	for _, p := range pkgs {
		if n > 0 && len(items) == n {
			break
		}
		if len(only) > 0 && !only[p.Name] {
			continue
		}
		ch := p.Channel(p.DefaultChannel)
		switch {
		case ch == nil || len(ch.Entries) == 0:
			skipped = append(skipped, p.Name+": no usable default channel")
			continue
		case excluded[p.Name] != "":
			skipped = append(skipped, p.Name+": "+excluded[p.Name])
			continue
		}
		b := ch.Entries[0].Bundle
		if len(b.Dependencies) > 0 || len(b.RequiredCRDs) > 0 {
			skipped = append(skipped, p.Name+": needs another package installed first")
			continue
		}
		it, err := render1(cat, b, p.DefaultChannel, harness.PackageNamespace("fleet", p.Name))
		if err != nil {
			return nil, nil, err
		}
		items = append(items, it)
	}
	return items, skipped, nil
}

// render1 renders bundle b as the manager would install it in ns, in its default install
// mode there.
func render1(cat *catalog.Catalog, b *catalog.Bundle, channel, ns string) (item, error) {
	it := item{Package: b.Package, Channel: channel, Version: b.Version.String(), CSVName: b.CSVName, Namespace: ns}
	content, err := cat.Content(b)
	if err != nil {
		return it, err
	}
	for _, u := range content.CRDs {
		crd, _, err := crdrepair.Repair(u)
		if err != nil {
			return it, fmt.Errorf("%s: CRD %s: %w", b.Ref(), u.GetName(), err)
		}
		crd.APIVersion, crd.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
		out, err := kubeapply.ToUnstructured(crd)
		if err != nil {
			return it, err
		}
		it.CRDs = append(it.CRDs, out)
	}
	targets, err := render.TargetNamespaces(content.CSV.Spec.InstallModes, ns, nil)
	if err != nil {
		return it, fmt.Errorf("%s: %w", b.Ref(), err)
	}
	objs, err := render.Render(render.Input{Namespace: ns, CSVName: content.CSV.Name, Package: b.Package,
		Spec: &content.CSV.Spec, TargetNamespaces: targets, Others: content.Objects,
		WebhookCerts: render.PlaceholderCerts(&content.CSV.Spec)})
	if err != nil {
		return it, fmt.Errorf("rendering %s: %w", b.Ref(), err)
	}
	for _, o := range objs.InApplyOrder() {
		u, err := kubeapply.ToUnstructured(o)
		if err != nil {
			return it, err
		}
		it.Objects = append(it.Objects, u)
	}
	for _, d := range objs.Deployments {
		it.Deployments = append(it.Deployments, d.Name)
	}
	return it, nil
}

// bundleAt is the bundle of package pkg at version v in its default channel.
func bundleAt(cat *catalog.Catalog, pkg, v string) (*catalog.Bundle, string, error) {
	p := cat.Package(pkg)
	if p == nil {
		return nil, "", fmt.Errorf("package %s is not in the catalog", pkg)
	}
	ch := p.Channel(p.DefaultChannel)
	for _, e := range ch.Entries {
		if e.Bundle.Version.String() == v {
			return e.Bundle, p.DefaultChannel, nil
		}
	}
	return nil, "", fmt.Errorf("%s has no version %s in channel %s", pkg, v, p.DefaultChannel)
}
