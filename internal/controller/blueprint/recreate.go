package blueprint

import (
	"context"
	"errors"
	"fmt"
	"time"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/bundles"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/statuswrite"
)

// ReasonCSVRecreated: the CSV of the version that runs was deleted (by hand: its
// finalizer removed the operator's objects) while its Subscription still asks for it, so
// it was created again, from the revision that installed it.
const ReasonCSVRecreated = "CSVRecreated"

// runningRevision is the revision that made the running version current: the newest
// that succeeded with its CSV; nil when the history no longer holds it.
func runningRevision(bp *omv1.Blueprint) *omv1.Revision {
	for i := len(bp.Status.History) - 1; i >= 0; i-- {
		if h := &bp.Status.History[i]; h.CSVName == bp.Status.CurrentCSV && h.Outcome == omv1.OutcomeSucceeded && !h.Imported {
			return h
		}
	}
	return nil
}

// recreatedKey names the CSV recreateCurrent creates in the record of what this process
// wrote and its cache may not have seen yet.
func recreatedKey(bp *omv1.Blueprint, rev *omv1.Revision) string {
	return fmt.Sprintf("%s/%s/%d/recreated", bp.UID, rev.CSVName, rev.Revision)
}

// seen drops that record once the cache holds the CSV (at rv), so that a second deletion
// within the record's minute is created again at once, not taken for the cache lagging.
func (r *Reconciler) seen(bp *omv1.Blueprint, rv string, now time.Time) {
	if rev := runningRevision(bp); rev != nil {
		r.children.Is(recreatedKey(bp, rev), rv, now)
	}
}

// recreateCurrent creates again the CSV of the version that runs, found deleted while the
// Blueprint is settled: a CSV is the manager's own object, as its Deployments are, and
// the Subscription still asks for it (OLM v0 left such a Subscription without an operator
// until it was recreated; uninstalling is deleting the Subscription, or option: delete).
// It is the running revision's CSV again, from its stored bundle (or the catalog), so the
// CSV controller applies its objects and runs its health gate; the history is unchanged.
// It says whether the CSV was created (or was just created by this process), and when it
// cannot be, why.
func (r *Reconciler) recreateCurrent(ctx context.Context, s *scope) (bool, string, error) {
	bp := s.bp
	rev := runningRevision(bp)
	if rev == nil || s.sub == nil || !s.sub.DeletionTimestamp.IsZero() || s.sub.Spec.Option == omv1.OptionDelete {
		return false, "", nil
	}
	child := recreatedKey(bp, rev)
	if r.children.Is(child, statuswrite.Absent, s.now) {
		return true, "", nil // created a moment ago; the cache has not seen it yet
	}
	content, why, err := r.revisionContent(ctx, bp, rev)
	if content == nil {
		return false, why, err
	}
	saved := s.work
	s.work = rev
	applied, err := r.applyCSV(ctx, s, content.CSV, nil)
	s.work = saved
	if err != nil {
		return false, "", err
	}
	r.children.Wrote(child, statuswrite.Absent, applied.ResourceVersion, s.now)
	r.event(bp, true, ReasonCSVRecreated, "%s was deleted while its Subscription asks for it: created it again from revision %d, and its objects with it (to uninstall, delete the Subscription or set option: delete)", rev.CSVName, rev.Revision)
	statuswrite.RequeueWithin(&s.result, 5*time.Second)
	return true, "", nil
}

// revisionContent is the bundle a revision installed, from its stored copy (or the
// catalog); when it cannot be had, why, in words.
func (r *Reconciler) revisionContent(ctx context.Context, bp *omv1.Blueprint, rev *omv1.Revision) (*catalog.BundleContent, string, error) {
	files, err := r.Bundles.Get(ctx, bp.Namespace, bp.Name, rev.BundleDigest)
	if errors.Is(err, bundles.ErrNotKept) {
		files, err = r.fromCatalog(bp, rev.CSVName, rev.BundleDigest)
	}
	if err != nil {
		return nil, err.Error(), nil
	}
	content, err := catalog.ContentFromFiles(files)
	if err != nil {
		return nil, fmt.Sprintf("its bundle %s: %v", rev.BundleDigest, err), nil
	}
	if content.CSV.Name != rev.CSVName {
		return nil, fmt.Sprintf("its bundle %s holds CSV %s", rev.BundleDigest, content.CSV.Name), nil
	}
	return content, "", nil
}
