package blueprint

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-manager/operator-manager/internal/statuswrite"
)

// progressHold is how long after the Blueprint's last status write a change of its status
// may wait to be written:
//   - zero, at once, for anything but progress words (a revision opened, an outcome, a
//     phase, a condition turning);
//   - statuswrite.DefaultInterval for a step of the revision, a new reason (waiting for
//     CRDs, then for the CSV to start the revision);
//   - statuswrite.SummaryInterval for the CSV's rollout words repeated within one step.
//     The CSV's own status shows them live, and `install --wait` reads them there. Under
//     a fleet's load a Blueprint's passes come more than DefaultInterval apart, so each
//     change of those words was a status write: 1.7 to 1.9 per installation of 159 at
//     once.
func progressHold(progressOnly, mirrorsCSV bool, before, after []metav1.Condition) time.Duration {
	switch {
	case !progressOnly:
		return 0
	case mirrorsCSV && statuswrite.SameReasons(before, after):
		return statuswrite.SummaryInterval
	}
	return statuswrite.DefaultInterval
}
