package v1

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// VersionIntent is a digest of what the Subscription asks of the version: its package
// (spec.package or OLM's spec.name), channel, version or startingCSV, and its catalog
// (spec.catalog or OLM's source and sourceNamespace). The Subscription controller records
// it on the Blueprint (AnnotationSubscriptionIntent) with each write: a new generation
// with the same intent (the Subscription paused or resumed, its config, approval, health
// or upgrade windows edited) leaves a version a person pointed the Blueprint at (a
// rollback by hand) where it is. Only asking for another version moves it on.
func (s *SubscriptionSpec) VersionIntent() string {
	data, _ := json.Marshal([]string{s.Package, s.Name, s.Channel, s.Version, s.StartingCSV, s.Catalog, s.Source, s.SourceNamespace})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}
