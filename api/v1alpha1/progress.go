package v1alpha1

import (
	"fmt"
	"time"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// RevisionProgress is what the CSV says of the Blueprint revision it judges while that
// revision rolls out: "revision 2: x.v1.2.0 is Installing: 1/1 replicas updated, 0
// available". The Blueprint's Progressing condition repeats these words, now and then
// (they change every few seconds while a rollout waits, and the Blueprint's status is a
// summary); `install --wait` reads them from the CSV itself, live.
func (c *ClusterServiceVersion) RevisionProgress() string {
	msg := fmt.Sprintf("revision %d: %s is %s", c.Status.Revision, c.Name, c.Status.Phase.OrNew())
	if c.Status.Message != "" {
		msg += ": " + c.Status.Message
	}
	return msg
}

// OrNew is the phase in words, "new" for a CSV yet to write its status.
func (p CSVPhase) OrNew() string {
	if p == "" {
		return "new"
	}
	return string(p)
}

// HealthTimeout is how long the CSV's health gate may take: the timeout its Blueprint
// wrote in its health-timeout annotation, else def. What
// the CSV's gate judges by, and the Blueprint's live health too.
func (c *ClusterServiceVersion) HealthTimeout(def time.Duration) time.Duration {
	if d, err := time.ParseDuration(c.Annotations[omv1.AnnotationHealthTimeout]); err == nil && d > 0 {
		return d
	}
	return def
}
