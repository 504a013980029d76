// Package resolve chooses the bundle a Subscription asks for. It is pure: it reads a
// loaded catalog and returns a bundle or an error a person can act on, naming what the
// catalog does have.
//
// Bundle resolves a Subscription's own intent to one bundle. Resolve then chooses the
// operators that bundle needs (olm.package ranges, olm.gvk and required CRDs,
// transitively) from the catalogs and the installed operators, with a small
// conflict-directed backtracking search bounded in depth and steps, and checks every
// chosen bundle's minKubeVersion. Recommend walks a channel from its head down to the
// newest version that can be installed, or upgraded to along the channel's edges, on this
// cluster. Every failure is an *Error whose Reason is a condition reason and whose Message
// names the constraint, who imposes it, each candidate and why it was refused.
package resolve

import (
	"fmt"
	"sort"
	"strings"

	"github.com/blang/semver/v4"

	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/spelling"
)

// Intent is what a Subscription asks for, in either of its two forms.
type Intent struct {
	// StartingCSV is `<package>.<version>`, `<package>.v<version>` or a CSV name.
	StartingCSV string
	// Package, Channel and Version are the richer form; Version is exact or a range.
	Package, Channel, Version string
}

// Error is a resolution failure: Reason is a condition reason, Message says what was
// asked, what the catalog has, and so what a person can change.
type Error struct {
	Reason  string
	Message string
}

func (e *Error) Error() string { return e.Message }

// Reasons of resolution errors (the same words as the API's condition reasons).
const (
	ReasonPackageNotFound = "PackageNotFound"
	ReasonVersionNotFound = "VersionNotFound"
	ReasonChannelNotFound = "ChannelNotFound"
	ReasonInvalidVersion  = "InvalidVersion"
)

// Bundle resolves an intent against a catalog named catName (for messages).
func Bundle(cat *catalog.Catalog, catName string, in Intent) (*catalog.Bundle, error) {
	if in.StartingCSV != "" {
		return startingCSV(cat, catName, in.StartingCSV)
	}
	p := cat.Package(in.Package)
	if p == nil {
		return nil, packageNotFound(cat, catName, in.Package)
	}
	if in.Channel != "" && p.Channel(in.Channel) == nil {
		return nil, &Error{ReasonChannelNotFound, fmt.Sprintf("package %q in catalog %s has no channel %q; its channels: %s",
			p.Name, catName, in.Channel, channelList(p))}
	}
	channel := in.Channel
	if channel == "" {
		channel = p.DefaultChannel
	}
	if in.Version == "" {
		head, err := cat.Head(p.Name, channel)
		if err != nil {
			return nil, &Error{ReasonChannelNotFound, fmt.Sprintf("package %q in catalog %s: %v", p.Name, catName, err)}
		}
		return head, nil
	}
	if v, err := parseVersion(in.Version); err == nil {
		if b := cat.Bundle(p.Name, v); b != nil {
			return b, nil
		}
		return nil, versionNotFound(p, catName, in.Version)
	}
	rng, err := catalog.ParseVersionRange(in.Version)
	if err != nil {
		return nil, &Error{ReasonInvalidVersion, fmt.Sprintf("spec.version %q is neither a version nor a semver range: %v", in.Version, err)}
	}
	// The newest version of the channel within the range.
	ch := p.Channel(channel)
	var best *catalog.Bundle
	for _, e := range ch.Entries {
		if e.Bundle != nil && rng.Contains(e.Bundle.Version) && (best == nil || e.Bundle.Version.GT(best.Version)) {
			best = e.Bundle
		}
	}
	if best == nil {
		return nil, &Error{ReasonVersionNotFound, fmt.Sprintf("no version of package %q in channel %q of catalog %s is in range %q; the channel has %s",
			p.Name, channel, catName, in.Version, channelVersions(ch))}
	}
	return best, nil
}

// startingCSV accepts the three forms of spec.startingCSV, in this order: the CSV's own
// name (etcdoperator.v0.9.4), `<package>.<version>` (prometheus.0.22.2) and
// `<package>.v<version>` (etcd.v0.9.4). Package names contain dots rarely but may, so
// every split point is tried, the longest package name first.
func startingCSV(cat *catalog.Catalog, catName, s string) (*catalog.Bundle, error) {
	if b := cat.BundleByCSV(s); b != nil {
		return b, nil
	}
	var candidate *catalog.Package
	var candidateVersion string
	for i := strings.LastIndex(s, "."); i > 0; i = strings.LastIndex(s[:i], ".") {
		pkgName, ver := s[:i], s[i+1:]
		p := cat.Package(pkgName)
		if p == nil {
			continue
		}
		v, err := parseVersion(ver)
		if err != nil {
			// "prometheus.0.22.2" splits at its last dot first: "prometheus.0.22" + "2"
			// is no package, so keep looking; but remember a real package.
			if candidate == nil {
				candidate, candidateVersion = p, ver
			}
			continue
		}
		if b := cat.Bundle(p.Name, v); b != nil {
			return b, nil
		}
		candidate, candidateVersion = p, ver
	}
	if candidate != nil {
		// Said of the field as written: OLM's users write CSV names (etcd.v0.9.4), and a
		// bare `has no version "v0.9.4"` reads as a typo of the manager's.
		e := versionNotFound(candidate, catName, strings.TrimPrefix(candidateVersion, "v"))
		e.Message = fmt.Sprintf("spec.startingCSV %q: %s", s, e.Message)
		return nil, e
	}
	// No package prefix matched; the text before the first dot is the likeliest name.
	name := s
	if i := strings.Index(s, "."); i > 0 {
		name = s[:i]
	}
	return nil, &Error{ReasonPackageNotFound, fmt.Sprintf("spec.startingCSV %q names no CSV and no <package>.<version> of catalog %s: %s",
		s, catName, packageNotFound(cat, catName, name).Message)}
}

// parseVersion parses a version with an optional leading "v".
// CheckVersion says whether spec.version can be read: an exact version or a semver range,
// as resolution reads it (so a command line refuses what the manager would).
func CheckVersion(s string) error {
	if _, err := parseVersion(s); err == nil {
		return nil
	}
	if _, err := catalog.ParseVersionRange(s); err != nil {
		return fmt.Errorf("neither a version nor a semver range: %w", err)
	}
	return nil
}

func parseVersion(s string) (semver.Version, error) {
	return semver.Parse(strings.TrimPrefix(s, "v"))
}

func packageNotFound(cat *catalog.Catalog, catName, name string) *Error {
	var names []string
	for _, p := range cat.Packages() {
		names = append(names, p.Name)
	}
	similar := spelling.Similar(name, names)
	msg := fmt.Sprintf("package %q is not in catalog %s", name, catName)
	if len(similar) > 0 {
		msg += fmt.Sprintf("; similar packages: %s", strings.Join(similar, ", "))
	}
	if len(names) == 0 {
		msg += "; it has no packages"
	} else {
		msg += fmt.Sprintf("; it has %d packages: %s", len(names), abbreviate(names, 20))
	}
	return &Error{ReasonPackageNotFound, msg}
}

func versionNotFound(p *catalog.Package, catName, version string) *Error {
	var versions []string
	for _, b := range p.Bundles {
		versions = append(versions, b.Version.String())
	}
	return &Error{ReasonVersionNotFound, fmt.Sprintf("package %q in catalog %s has no version %q; it has %s",
		p.Name, catName, version, strings.Join(versions, ", "))}
}

func channelList(p *catalog.Package) string {
	var names []string
	for _, c := range p.Channels {
		n := c.Name
		if c.Name == p.DefaultChannel {
			n += " (default)"
		}
		names = append(names, n)
	}
	return strings.Join(names, ", ")
}

func channelVersions(ch *catalog.Channel) string {
	var vs []string
	for _, e := range ch.Entries {
		if e.Bundle != nil {
			vs = append(vs, e.Bundle.Version.String())
		}
	}
	sort.Strings(vs)
	return strings.Join(vs, ", ")
}

func abbreviate(items []string, max int) string {
	if len(items) <= max {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:max], ", ") + fmt.Sprintf(", ... (%d more)", len(items)-max)
}

// Satisfies reports whether the version an installation runs (csv, of package pkg, at
// version v) is what the intent asks for, without a catalog: the CSV startingCSV names
// (by its name or as <package>.<version> or <package>.v<version>), or a version of the
// package that is the one spec.version names, or in its range, or any (a channel). It
// tells a running installation that the catalog no longer offers from one that is wrong.
func Satisfies(in Intent, pkg, csv string, v semver.Version) bool {
	if in.StartingCSV != "" {
		s := in.StartingCSV
		return s == csv || s == pkg+"."+v.String() || s == pkg+".v"+v.String()
	}
	if in.Package != pkg {
		return false
	}
	if in.Version == "" {
		return true
	}
	if want, err := parseVersion(in.Version); err == nil {
		return want.Equals(v)
	}
	rng, err := catalog.ParseVersionRange(in.Version)
	return err == nil && rng.Contains(v)
}
