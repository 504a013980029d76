package v1alpha1

import "fmt"

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
