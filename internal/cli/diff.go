package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/blang/semver/v4"
	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/controller/blueprint"
	"github.com/operator-manager/operator-manager/internal/crdrepair"
	"github.com/operator-manager/operator-manager/internal/crdsafety"
	"github.com/operator-manager/operator-manager/internal/render"
	"github.com/operator-manager/operator-manager/internal/revisionstore"
	"github.com/operator-manager/operator-manager/internal/scheme"
)

// objectChange is one object an upgrade adds, removes or changes.
type objectChange struct {
	Change    string `json:"change"` // added, removed or changed
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Replaces is the running object a changed one succeeds, when its name carries the
	// CSV's (RBAC, OperatorCondition): the manager creates it and deletes the old one.
	Replaces string `json:"replaces,omitempty"`
	// Diff is the unified diff of the object's YAML as the manager applies it.
	Diff string `json:"diff,omitempty"`
	// Note says why a CRD is kept or unchanged though the versions' CRDs differ.
	Note string `json:"note,omitempty"`
}

// CRD rows the upgrade leaves as the cluster has them (crdAsApplied).
const (
	changeKept      = "kept"
	changeUnchanged = "unchanged"
)

// diffDoc is `diff -o json|yaml`.
type diffDoc struct {
	Namespace string         `json:"namespace"`
	Name      string         `json:"name"`
	From      string         `json:"from"`
	To        string         `json:"to"`
	Changes   []objectChange `json:"changes"`
}

func newDiffCmd(g *globals) *cobra.Command {
	out := &output{}
	src := &catalogSource{g: g}
	var csv, version string
	cmd := &cobra.Command{
		Use:   "diff NAME [DIR] | diff NAME --url URL | diff NAME --image REF",
		Short: "Show what an upgrade would change (CRDs, RBAC, Deployments, every object) before it is made",
		Long: `diff renders the installation NAME at the version it runs and at a target version, as
the manager would apply them, and shows each object added, removed or changed, with a
unified diff of its YAML. Nothing is changed in the cluster.

The running version's bundle is read from the cluster (the revision the manager stored),
or from the catalog when it is not stored there. The target version is --csv or --version,
else the version a Manual Subscription waits to have approved, else the head of the
Subscription's channel in the catalog at DIR (or served at --url).

Without DIR or a flag naming a catalog (--catalog names another CatalogSource of the
cluster), the catalog is the installation's own CatalogSource, read as the manager reads it: its URL, image, registry address or
ConfigMap. A Directory CatalogSource is on the manager's disk: it is read when this
machine has that directory (as with "make run"), else give it as DIR.`,
		Example: `  operator-manager diff cache --version 1.2.0
  operator-manager diff cache samples/catalog --csv cache-operator.1.2.0
  operator-manager diff cache --url http://catalog:8080 -o json`,
		ValidArgsFunction: g.completeSubscriptions,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, ns, err := g.clientAndNamespace()
			if err != nil {
				return err
			}
			name := args[0]
			sub, err := getSubscription(ctx, c, client.ObjectKey{Namespace: ns, Name: name})
			if err != nil {
				return err
			}
			bp := &omv1.Blueprint{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, bp); apierrors.IsNotFound(err) {
				return fmt.Errorf("nothing runs to compare with: %w", noBlueprint(ctx, c, ns, name))
			} else if err != nil {
				return err
			}
			if len(args) == 1 && !src.hasSource() {
				// No catalog given: the one the installation came from, as the cluster
				// names it.
				if err := src.fromCluster(ctx, c, omv1.CatalogKey(bp.Spec.Catalog, ns)); err != nil {
					return err
				}
			}
			cat, err := src.loadWithBundles(ctx, args[1:])
			if err != nil {
				return err
			}
			pkg := bp.Spec.Package
			to, err := diffTarget(cat, sub, bp, pkg, csv, version)
			if err != nil {
				return err
			}
			fromFiles, fromCSV, err := runningBundle(ctx, c, cat, bp)
			if err != nil {
				return err
			}
			toFiles, err := cat.Files(to)
			if err != nil {
				return err
			}
			before, err := renderForDiff(fromFiles, sub, ns, pkg)
			if err != nil {
				return fmt.Errorf("rendering the running version %s: %w", fromCSV, err)
			}
			after, err := renderForDiff(toFiles, sub, ns, pkg)
			if err != nil {
				return fmt.Errorf("rendering the target version %s: %w", to.CSVName, err)
			}
			changes, err := diffObjects(before, after, fromCSV, to.CSVName)
			if err != nil {
				return err
			}
			for i, ch := range changes {
				if ch.Kind != "CustomResourceDefinition" {
					continue
				}
				// CRDs are shared by every installation of the package: what the upgrade
				// does to one depends on the version the cluster's stands at.
				live := &apiextensionsv1.CustomResourceDefinition{}
				var annotations map[string]string
				if err := c.Get(ctx, client.ObjectKey{Name: ch.Name}, live); err == nil {
					annotations = live.Annotations
					if annotations == nil {
						annotations = map[string]string{}
					}
				} else if !apierrors.IsNotFound(err) {
					changes[i].Note = "not compared with the cluster's CRD: " + notReadable(err, "CRDs, which are cluster-scoped")
					continue
				}
				changes[i] = crdAsApplied(ch, annotations, pkg, bp.Status.CurrentVersion, to.Version.String())
			}
			doc := diffDoc{Namespace: ns, Name: name, From: fromCSV, To: to.CSVName, Changes: changes}
			return out.print(cmd.OutOrStdout(), doc, func(tw *tabwriter.Writer) { printDiff(tw, doc) })
		},
	}
	src.inCluster = true
	src.bind(cmd, 2)
	cmd.Flags().StringVar(&csv, "csv", "", "the target version as a CSV name (<package>.<version> or <package>.v<version>)")
	cmd.Flags().StringVar(&version, "version", "", "the target version")
	out.bind(cmd)
	return cmd
}

// diffTarget picks the bundle an upgrade would install: the one asked for, the one
// waiting for approval, or the channel head.
func diffTarget(cat *catalog.Catalog, sub *omv1.Subscription, bp *omv1.Blueprint, pkg, csv, version string) (*catalog.Bundle, error) {
	switch {
	case csv != "" && version != "":
		return nil, usageError("give at most one of --csv and --version")
	case csv != "":
		return cat.BundleByRef(csv)
	case version != "":
		return cat.BundleByRef(pkg + "." + version)
	case bp.Spec.ClusterServiceVersionName != "" && bp.Spec.ClusterServiceVersionName != bp.Status.CurrentCSV:
		if b := cat.BundleByCSV(bp.Spec.ClusterServiceVersionName); b != nil {
			return b, nil
		}
		return nil, fmt.Errorf("the pending target %s is not in the catalog", bp.Spec.ClusterServiceVersionName)
	default:
		return cat.Head(pkg, sub.Spec.Channel)
	}
}

// runningBundle returns the files of the version that runs: as stored in the cluster for
// its revision, else from the catalog.
func runningBundle(ctx context.Context, c client.Client, cat *catalog.Catalog, bp *omv1.Blueprint) ([]catalog.File, string, error) {
	current := bp.Status.CurrentCSV
	if current == "" {
		return nil, "", fmt.Errorf("%s/%s runs no version yet (phase %s)", bp.Namespace, bp.Name, bp.Status.Phase)
	}
	var stored error
	for i := len(bp.Status.History) - 1; i >= 0; i-- {
		h := bp.Status.History[i]
		if h.CSVName != current || h.BundleDigest == "" {
			continue
		}
		files, err := (&revisionstore.Store{Client: c}).Load(ctx, bp.Namespace, bp.Name, h.BundleDigest)
		if err == nil {
			return files, current, nil
		}
		stored = err
		break
	}
	b := cat.BundleByCSV(current)
	if b == nil {
		if stored != nil {
			return nil, "", fmt.Errorf("the running version %s is neither readable from the cluster (%v) nor in the catalog", current, stored)
		}
		return nil, "", fmt.Errorf("the running version %s is neither stored in the cluster nor in the catalog", current)
	}
	files, err := cat.Files(b)
	return files, current, err
}

// renderForDiff renders a bundle's files as the installation would apply them: its CRDs
// as repaired to apiextensions v1, and the CSV's objects for the Subscription's target
// namespaces and config. Webhook certificates are placeholders on both sides, so a diff
// never shows a certificate the manager keeps.
func renderForDiff(files []catalog.File, sub *omv1.Subscription, ns, pkg string) (map[string]*unstructured.Unstructured, error) {
	content, err := catalog.ContentFromFiles(files)
	if err != nil {
		return nil, err
	}
	targets, err := render.TargetNamespaces(content.CSV.Spec.InstallModes, ns, sub.Spec.TargetNamespaces)
	if err != nil {
		return nil, err
	}
	objs, err := render.Render(render.Input{Namespace: ns, CSVName: content.CSV.Name, Package: pkg, Spec: &content.CSV.Spec,
		TargetNamespaces: targets, Config: sub.Spec.Config, Others: content.Objects, WebhookCerts: render.PlaceholderCerts(&content.CSV.Spec)})
	if err != nil {
		return nil, err
	}
	out := map[string]*unstructured.Unstructured{}
	add := func(o runtime.Object) error {
		gvk, err := apiutil.GVKForObject(o, scheme.Scheme)
		if err != nil {
			return err
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: m}
		u.SetGroupVersionKind(gvk)
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(u.Object, "status")
		out[diffKey(u)] = u
		return nil
	}
	for _, raw := range content.CRDs {
		crd, _, err := crdrepair.Repair(raw)
		if err != nil {
			return nil, fmt.Errorf("CRD %s: %w", raw.GetName(), err)
		}
		if err := add(crd); err != nil {
			return nil, err
		}
	}
	for _, o := range objs.InApplyOrder() {
		if err := add(o); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// diffKey names an object across versions: kind, namespace and name.
func diffKey(u *unstructured.Unstructured) string {
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}

// diffObjects compares two renderings object by object (pure, for tests). Changes are
// ordered CRDs first, then by kind, namespace and name.
//
// Objects named after the CSV (its RBAC, its OperatorCondition) are replaced by new ones
// at each upgrade; they are compared with their successor, the running CSV's name read as
// the target's, so the diff shows what the permissions gain or lose rather than a whole
// role removed and another added. Labels and annotations that only carry the CSV's name
// are not a change for the same reason.
func diffObjects(before, after map[string]*unstructured.Unstructured, fromCSV, toCSV string) ([]objectChange, error) {
	rename := func(s string) string {
		if fromCSV == "" || toCSV == "" {
			return s
		}
		return strings.ReplaceAll(s, fromCSV, toCSV)
	}
	renamed := map[string]string{} // key in after -> key in before
	for k := range before {
		renamed[rename(k)] = k
	}
	keys := map[string]bool{}
	for k := range before {
		if _, ok := after[rename(k)]; !ok {
			keys[k] = true // removed
		}
	}
	for k := range after {
		keys[k] = true
	}
	var changes []objectChange
	for k := range keys {
		a := after[k]
		bk := k
		if a != nil {
			bk = renamed[k]
		}
		b := before[bk]
		var by, ay []byte
		var err error
		if b != nil {
			if by, err = yaml.Marshal(b.Object); err != nil {
				return nil, err
			}
			if a != nil {
				by = []byte(rename(string(by)))
			}
		}
		if a != nil {
			if ay, err = yaml.Marshal(a.Object); err != nil {
				return nil, err
			}
		}
		if string(by) == string(ay) {
			continue
		}
		kind, rest, _ := strings.Cut(k, "/")
		ns, name, _ := strings.Cut(rest, "/")
		ch := objectChange{Kind: kind, Namespace: ns, Name: name, Change: "changed"}
		switch {
		case b == nil:
			ch.Change = "added"
		case a == nil:
			ch.Change = "removed"
		case bk != k:
			_, oldName, _ := strings.Cut(strings.TrimPrefix(bk, kind+"/"), "/")
			ch.Replaces = oldName
		}
		ud := difflib.UnifiedDiff{FromFile: "/dev/null", ToFile: "/dev/null", Context: 3}
		if b != nil {
			ud.A, ud.FromFile = difflib.SplitLines(string(by)), "running/"+bk
		}
		if a != nil {
			ud.B, ud.ToFile = difflib.SplitLines(string(ay)), "target/"+k
		}
		ch.Diff, err = difflib.GetUnifiedDiffString(ud)
		if err != nil {
			return nil, err
		}
		changes = append(changes, ch)
	}
	sort.Slice(changes, func(i, j int) bool {
		ci, cj := changes[i].Kind == "CustomResourceDefinition", changes[j].Kind == "CustomResourceDefinition"
		if ci != cj {
			return ci
		}
		if changes[i].Kind != changes[j].Kind {
			return changes[i].Kind < changes[j].Kind
		}
		if changes[i].Namespace != changes[j].Namespace {
			return changes[i].Namespace < changes[j].Namespace
		}
		return changes[i].Name < changes[j].Name
	})
	return changes, nil
}

// crdAsApplied says what the upgrade does to a CRD that differs between the running and
// the target version's renderings, as the manager decides it (the Blueprint's kept):
// a CRD is never deleted; a downgrade keeps the cluster's CRD; one that another
// installation of the package wrote at a newer version is kept; one already at the
// target's version is unchanged. live is the cluster's CRD's annotations, nil when it
// has none. Pure, for tests.
func crdAsApplied(ch objectChange, live map[string]string, pkg, running, target string) objectChange {
	if ch.Change == "removed" {
		ch.Change, ch.Diff = changeKept, ""
		ch.Note = "not in the target version: kept with its custom resources (the manager never deletes a CRD; uninstall --delete-crds does)"
		return ch
	}
	if live == nil || live[crdsafety.PackageAnnotation] != pkg {
		return ch
	}
	at := live[blueprint.AnnotationCRDVersion]
	atVersion, err := semver.ParseTolerant(at)
	if err != nil {
		return ch
	}
	targetVersion, err1 := semver.ParseTolerant(target)
	runningVersion, err2 := semver.ParseTolerant(running)
	switch {
	case err1 != nil:
	case err2 == nil && targetVersion.LT(runningVersion):
		ch.Change, ch.Diff = changeKept, ""
		ch.Note = fmt.Sprintf("a downgrade keeps the cluster's CRD, at %s %s's schema, so that custom resources written with the newer fields stay valid", pkg, at)
	case targetVersion.LT(atVersion):
		ch.Change, ch.Diff = changeKept, ""
		ch.Note = fmt.Sprintf("the cluster's CRD stands at %s %s's schema, newer than the target's (another installation of the package runs it): kept as it is", pkg, at)
	case targetVersion.EQ(atVersion):
		ch.Change, ch.Diff = changeUnchanged, ""
		ch.Note = fmt.Sprintf("the cluster's CRD is at the target's schema already (%s %s, written by another installation of the package)", pkg, at)
	}
	return ch
}

func printDiff(tw *tabwriter.Writer, doc diffDoc) {
	n, notes := 0, false
	for _, c := range doc.Changes {
		if c.Change != changeKept && c.Change != changeUnchanged {
			n++
		}
		notes = notes || c.Note != ""
	}
	fmt.Fprintf(tw, "%s/%s: %s -> %s: %d object(s) change\n\n", doc.Namespace, doc.Name, doc.From, doc.To, n)
	if len(doc.Changes) == 0 {
		return
	}
	header, row := "CHANGE\tKIND\tNAMESPACE\tNAME\tREPLACES", "%s\t%s\t%s\t%s\t%s"
	if notes {
		header += "\tNOTE"
	}
	fmt.Fprintln(tw, header)
	for _, c := range doc.Changes {
		fmt.Fprintf(tw, row, c.Change, c.Kind, c.Namespace, c.Name, c.Replaces)
		if notes {
			fmt.Fprintf(tw, "\t%s", c.Note)
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush() // the diffs below are not table rows
	for _, c := range doc.Changes {
		if c.Diff != "" {
			fmt.Fprintf(tw, "\n%s", c.Diff)
		}
	}
}
