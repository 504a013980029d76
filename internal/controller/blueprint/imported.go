package blueprint

import (
	"encoding/json"
	"fmt"
	"sort"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// ReasonImportedHistoryUnreadable: the Blueprint's imported-history annotation could not
// be read; the installation goes on with a history of its own only.
const ReasonImportedHistoryUnreadable = "ImportedHistoryUnreadable"

// ImportedHistory reads the revisions `operator-manager import` wrote into a Blueprint's
// imported-history annotation: each one that succeeded on the cluster it came from, with
// its bundle stored here. They are returned oldest first, each marked Imported and with
// no generation of this Blueprint's (Plan never counts one as an attempt at its target).
// A list that is not JSON, or whose revisions are not numbered, named and distinct, is
// refused whole, naming what is wrong.
func ImportedHistory(raw string) ([]omv1.Revision, error) {
	var revs []omv1.Revision
	if err := json.Unmarshal([]byte(raw), &revs); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", omv1.AnnotationImportedHistory, err)
	}
	seen := map[int64]bool{}
	for i := range revs {
		r := &revs[i]
		switch {
		case r.Revision < 1:
			return nil, fmt.Errorf("annotation %s: entry %d: revision %d is not a positive number", omv1.AnnotationImportedHistory, i, r.Revision)
		case seen[r.Revision]:
			return nil, fmt.Errorf("annotation %s: revision %d appears twice", omv1.AnnotationImportedHistory, r.Revision)
		case r.CSVName == "" || r.BundleDigest == "":
			return nil, fmt.Errorf("annotation %s: revision %d: csvName and bundleDigest are required", omv1.AnnotationImportedHistory, r.Revision)
		}
		seen[r.Revision] = true
		r.Imported, r.Generation, r.InstallPlan = true, 0, ""
		r.Outcome = omv1.OutcomeSucceeded // only what ran is exported
		if r.Reason == "" {
			r.Reason = "Succeeded"
		}
	}
	sort.Slice(revs, func(i, j int) bool { return revs[i].Revision < revs[j].Revision })
	return revs, nil
}
