package subscription

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog"
)

// deprecations is what the Subscription's catalog deprecates of what it installs, as
// OLM's conditions: PackageDeprecated, ChannelDeprecated (the channel it follows, else
// the package's default) and BundleDeprecated (the version it runs, else the one it
// resolves to), each with the catalog's message, and Deprecated summing them up. Pure:
// nil when nothing is deprecated, so a catalog without deprecations changes no status.
func deprecations(p *catalog.Package, channel string, b *catalog.Bundle) []metav1.Condition {
	if p == nil {
		return nil
	}
	if channel == "" {
		channel = p.DefaultChannel
	}
	var out []metav1.Condition
	var all []string
	add := func(typ, msg string) {
		if msg == "" {
			return
		}
		out = append(out, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: omv1.ConditionDeprecated, Message: msg})
		all = append(all, msg)
	}
	add(omv1.ConditionPackageDeprecated, p.Deprecation)
	if c := p.Channel(channel); c != nil {
		add(omv1.ConditionChannelDeprecated, c.Deprecation)
	}
	if b != nil && b.Package == p.Name {
		add(omv1.ConditionBundleDeprecated, b.Deprecation)
	}
	if len(out) == 0 {
		return nil
	}
	return append(out, metav1.Condition{Type: omv1.ConditionDeprecated, Status: metav1.ConditionTrue, Reason: omv1.ConditionDeprecated,
		Message: strings.Join(all, "; ")})
}

var deprecationTypes = []string{omv1.ConditionDeprecated, omv1.ConditionPackageDeprecated, omv1.ConditionChannelDeprecated, omv1.ConditionBundleDeprecated}

// markDeprecations sets the deprecation conditions from the Subscription's catalog. A
// catalog not loaded changes nothing: what was said stays until the catalog says again.
func (r *Reconciler) markDeprecations(sub *omv1.Subscription) {
	cat := r.Catalogs.Get(r.catalogOf(sub))
	if cat == nil {
		return
	}
	pkg := sub.Status.Package
	if pkg == "" {
		pkg = sub.Spec.PackageName()
	}
	csv := sub.Status.InstalledCSV
	if csv == "" {
		csv = sub.Status.CurrentCSV
	}
	setDeprecations(sub, deprecations(cat.Package(pkg), sub.Spec.Channel, cat.BundleByCSV(csv)))
}

// setDeprecations makes the deprecation conditions conds, and only those. A condition
// that stays keeps its lastTransitionTime: removing and adding it again would stamp a new
// one at every reconcile, a status write each time, and each write another reconcile.
func setDeprecations(sub *omv1.Subscription, conds []metav1.Condition) {
	wanted := map[string]bool{}
	for _, c := range conds {
		wanted[c.Type] = true
		setCondition(sub, c.Type, true, c.Reason, c.Message)
	}
	for _, typ := range deprecationTypes {
		if !wanted[typ] {
			removeCondition(sub, typ)
		}
	}
}
