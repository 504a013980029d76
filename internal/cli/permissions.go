package cli

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/grants"
	"github.com/operator-manager/operator-manager/internal/render"
)

// grant is one rule a bundle's installation grants (see internal/grants).
type grant = grants.Grant

// bundleGrants lists the rules the bundle would be granted in namespace, in its default
// install mode there.
func bundleGrants(cat *catalog.Catalog, b *catalog.Bundle, namespace string) ([]grant, error) {
	return grants.Of(cat, b, namespace, nil)
}

// grantsOf lists the rules of the rendered objects (pure, for tests).
func grantsOf(objs *render.Objects) ([]grant, error) { return grants.OfObjects(objs) }

// printGrants writes the grants as a table, cluster-wide ones first.
func printGrants(tw *tabwriter.Writer, grants []grant) {
	fmt.Fprintln(tw, "\nGRANTED TO\tSCOPE\tAPI GROUPS\tRESOURCES\tVERBS")
	sorted := append([]grant(nil), grants...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Scope == "cluster" && sorted[j].Scope != "cluster" })
	for _, g := range sorted {
		subject := g.Subject
		if subject == "" {
			subject = "(unbound " + g.Role + ")"
		}
		resources := strings.Join(g.Resources, ",")
		if len(g.ResourceNames) > 0 {
			resources += " (" + strings.Join(g.ResourceNames, ",") + ")"
		}
		if len(g.NonResourceURLs) > 0 {
			resources = strings.Join(g.NonResourceURLs, ",")
		}
		groups := make([]string, len(g.APIGroups))
		for i, grp := range g.APIGroups {
			if grp == "" {
				grp = `""` // the core group
			}
			groups[i] = grp
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", subject, g.Scope, strings.Join(groups, ","), resources, strings.Join(g.Verbs, ","))
	}
}
