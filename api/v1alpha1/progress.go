package v1alpha1

import "fmt"

// RevisionProgress is what the CSV says of the Blueprint revision it judges while that
// revision rolls out: "revision 2: x.v1.2.0 is Installing: 1/1 replicas updated, 0
// available". The Blueprint's Progressing condition repeats these words, now and then
// (they change every few seconds while a rollout waits, and the Blueprint's status is a
// summary); `install --wait` reads them from the CSV itself, live.
func (c *ClusterServiceVersion) RevisionProgress() string {
	phase := string(c.Status.Phase)
	if phase == "" {
		phase = "new" // as the Blueprint says of a CSV yet to write its status
	}
	msg := fmt.Sprintf("revision %d: %s is %s", c.Status.Revision, c.Name, phase)
	if c.Status.Message != "" {
		msg += ": " + c.Status.Message
	}
	return msg
}

// Judging says whether the CSV is judging revision rev and has not yet reached its
// outcome: its progress words are the revision's.
func (c *ClusterServiceVersion) Judging(rev int64) bool {
	return c.Status.Revision == rev && c.Status.Phase != CSVSucceeded && c.Status.Phase != CSVFailed
}
