package resolve

import (
	"github.com/blang/semver/v4"

	"github.com/operator-manager/operator-manager/internal/catalog"
)

// Following reports whether an intent follows a channel (no pinned version): then the
// installation upgrades by itself along the channel's edges.
func Following(in Intent) bool {
	if in.StartingCSV != "" || in.Package == "" {
		return false
	}
	if in.Version == "" {
		return true
	}
	_, err := parseVersion(in.Version)
	return err != nil // a range limits how far; an exact version pins
}

// NextInChannel is the next version a channel-following installation moves to from the
// version it runs: the newest bundle that replaces, skips or skipRange-covers it in the
// channel (as OLM), within the intent's version range. nil means it is up to date.
func NextInChannel(cat *catalog.Catalog, in Intent, currentCSV string, current semver.Version) *catalog.Bundle {
	p := cat.Package(in.Package)
	if p == nil {
		return nil
	}
	channel := in.Channel
	if channel == "" {
		channel = p.DefaultChannel
	}
	next, err := cat.SuccessorsOf(p.Name, channel, currentCSV, current)
	if err != nil {
		return nil
	}
	var rng catalog.VersionRange
	if in.Version != "" {
		if rng, err = catalog.ParseVersionRange(in.Version); err != nil {
			return nil
		}
	}
	for _, b := range next { // newest first
		if b.Version.GT(current) && (rng.IsZero() || rng.Contains(b.Version)) {
			return b
		}
	}
	return nil
}
