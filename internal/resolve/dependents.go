package resolve

import (
	"fmt"
	"strings"

	"github.com/operator-manager/operator-manager/internal/catalog"
)

// Dependent is an installation whose running bundle needs the package being changed: its
// Blueprint lists that package's installation among its dependencies.
type Dependent struct {
	// Name names its Subscription in messages ("backup", or "team/backup" from another
	// namespace).
	Name string
	// Bundle is the bundle it runs.
	Bundle *catalog.Bundle
}

// Breaks lists, in words, the requirements of dependents that next would no longer meet
// if it replaced current (the version of next's package running now; nil when unknown).
// Resolution chose current to meet them; an upgrade or downgrade of the dependency must
// not take that away behind the dependents' backs, as OLM's resolver, which resolves a
// namespace as a whole, would never choose such a version either.
//   - olm.package of next's package: next's version must be in the range;
//   - olm.gvk, a required CRD, olm.label and olm.constraint: what current met, next must
//     meet too (what current did not meet, something else meets).
func Breaks(next, current *catalog.Bundle, dependents []Dependent) []string {
	var out []string
	for _, d := range dependents {
		if d.Bundle == nil {
			continue
		}
		who := fmt.Sprintf("%s (%s) requires", d.Name, d.Bundle.CSVName)
		for _, dep := range d.Bundle.Dependencies {
			switch dep.Type {
			case catalog.DependencyPackage:
				if dep.Package == next.Package && !dep.Versions.Contains(next.Version) {
					out = append(out, fmt.Sprintf("%s %s %s %s, which %s is outside", who, catalog.DependencyPackage, dep.Package, dep.Versions.Raw, next.CSVName))
				}
			case catalog.DependencyGVK:
				if current != nil && current.Provides(dep.GVK) && !next.Provides(dep.GVK) {
					out = append(out, fmt.Sprintf("%s %s %s, which %s does not provide", who, catalog.DependencyGVK, dep.GVK.Text(), next.CSVName))
				}
			case catalog.DependencyLabel, catalog.DependencyConstraint:
				if current == nil {
					continue
				}
				was, _ := dep.Matches(catalog.SubjectOf(current))
				if is, _ := dep.Matches(catalog.SubjectOf(next)); was && !is {
					out = append(out, fmt.Sprintf("%s %s, which %s does not meet", who, dep.String(), next.CSVName))
				}
			}
		}
		for _, crd := range d.Bundle.RequiredCRDs {
			g := crd.GVK()
			if d.Bundle.Provides(g) || hasGVKDependency(d.Bundle, g) {
				continue
			}
			if current != nil && current.Provides(g) && !next.Provides(g) {
				out = append(out, fmt.Sprintf("%s CRD %s, which %s does not provide", who, g.Text(), next.CSVName))
			}
		}
	}
	return out
}

// BreaksMessage says why a version is not installed when Breaks found what it would break:
// the words the Subscription and `recommend` both give.
func BreaksMessage(broken []string) string {
	return "it would break the installations that depend on this one: " + strings.Join(broken, "; ")
}
