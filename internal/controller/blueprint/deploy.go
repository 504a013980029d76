package blueprint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/bundles"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/kubeapply"
	"github.com/operator-manager/operator-manager/internal/nativeapi"
	"github.com/operator-manager/operator-manager/internal/statuswrite"
)

// Reasons of Blueprint conditions.
const (
	ReasonBundleUnavailable = "BundleUnavailable"
	ReasonCRDRefused        = "CRDRefused"
	ReasonWaitingForCRDs    = "WaitingForCRDs"
	// ReasonWaitingForNativeAPIs: the CSV's spec.nativeAPIs names a kind the cluster
	// does not serve; nothing is written until it does, or the deadline fails the revision.
	ReasonWaitingForNativeAPIs = "WaitingForNativeAPIs"
	// ReasonWaitingForSubscription: the Blueprint was made before its Subscription (by
	// `import`); nothing is installed until the Subscription says who installs.
	ReasonWaitingForSubscription = "WaitingForSubscription"
)

// carryOut moves the pending revision on, within its deadline. Until the revision's CSV
// carries it, the steps run in order: the bundle, the access check of the installing
// identity, the CRDs (preflight, apply, Established), freezing the running version, and the
// CSV itself; from then on the CSV's phase is followed to the revision's outcome.
func (r *Reconciler) carryOut(ctx context.Context, s *scope) error {
	w := s.work
	live := &omv1alpha1.ClusterServiceVersion{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.bp.Namespace, Name: w.CSVName}, live)
	if client.IgnoreNotFound(err) != nil {
		return err
	}
	exists := err == nil
	if w.StartTime != nil {
		timeout := healthTimeout(s.sub)
		deadline := w.StartTime.Add(timeout + deadlineGrace(timeout))
		if !s.now.Before(deadline) {
			r.missedDeadline(s, timeout, live, exists)
			return nil
		}
		// Nothing waits forever: the deadline is looked at even when no event comes.
		s.result = ctrl.Result{RequeueAfter: deadline.Sub(s.now) + 100*time.Millisecond}
	}
	r.progressWork(s)
	// The CSV applied a moment ago for this revision by this process may not be in the
	// cache yet (or only as it was before): its watch event brings this Blueprint back.
	// Going on would redo every step of the revision and apply the CSV again. (Keyed by
	// revision: a CSV retired and applied again by a later revision, a rollback, is
	// another write.)
	liveRV, child := statuswrite.Absent, fmt.Sprintf("%s/%s/%d", s.bp.UID, w.CSVName, w.Revision)
	if exists {
		liveRV = live.ResourceVersion
	}
	if r.children.Is(child, liveRV, s.now) {
		r.progress(s, string(w.Trigger), fmt.Sprintf("revision %d: waiting for %s to start the revision", w.Revision, w.CSVName))
		statuswrite.RequeueWithin(&s.result, time.Second)
		return nil
	}
	if exists && r.carries(s, live) {
		// The CSV has all it needs of the bundle: its parsed content is not kept for it.
		r.contents.forget(w.BundleDigest)
		return r.follow(ctx, s, live)
	}
	next, waiting := r.afterCRDsApplied(s)
	if waiting {
		return nil
	}
	if next != nil {
		// This process applied the revision's CRDs and they are Established now: the
		// steps after them, without the bundle.
		if waiting, err := r.waitForNativeAPIs(s, next.csv); waiting || err != nil {
			return err
		}
		return r.startCSV(ctx, s, child, liveRV, next.csv, r.stepsOf(next.crds), next.repairs)
	}
	content, err := r.content(ctx, s)
	if err != nil || content == nil {
		return err
	}
	if waiting, err := r.waitForNativeAPIs(s, content.CSV); waiting || err != nil {
		return err
	}
	plan, repairs, stop, err := r.placeCRDs(ctx, s, content)
	if stop || err != nil {
		return err
	}
	return r.startCSV(ctx, s, child, liveRV, content.CSV, plan, repairs)
}

// placeCRDs plans the bundle's CRDs, checks the installing identity may write them, and
// applies them, holding each CRD's lock (crdLocks) from the plan's read to the apply, so
// that no other installation of this process writes it in between. stop: the pass ends
// here (err says why, or the scope does).
func (r *Reconciler) placeCRDs(ctx context.Context, s *scope, content *catalog.BundleContent) ([]crdStep, []omv1alpha1.CRDRepair, bool, error) {
	names := make([]string, 0, len(content.CRDs))
	for _, u := range content.CRDs {
		names = append(names, u.GetName())
	}
	defer r.crdLocks.lock(names)()
	plan, stop, err := r.planCRDs(ctx, s, content)
	if stop || err != nil {
		return nil, nil, true, err
	}
	if stop, err := r.checkAccess(ctx, s, content, plan); stop || err != nil {
		return nil, nil, true, err
	}
	repairs, stop, err := r.applyCRDs(ctx, s, content, plan)
	if stop || err != nil {
		return nil, nil, true, err
	}
	return plan, repairs, false, nil
}

// startCSV takes a revision whose CRDs are in place on to its CSV: it records the
// installation on each CRD of the bundle, stops the running version applying its
// objects, and applies the CSV, whose outcome it then follows.
func (r *Reconciler) startCSV(ctx context.Context, s *scope, child, liveRV string, src *v1alpha1.ClusterServiceVersion,
	plan []crdStep, repairs []omv1alpha1.CRDRepair) error {
	w := s.work
	// The provider records on the CRDs the revision keeps as they are (a written CRD
	// carried its record in its apply) are a record for people and for other
	// installations' uninstalls, which the CSV does not wait for: written alongside the
	// two steps below, not before them (a rollback by hand changes every record, one
	// round trip each).
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		r.recordProviders(ctx, s, plan, w.CSVName)
	}()
	defer func() { <-recorded }() // no goroutine outlives the reconcile
	// Only now, past the checks, does the running version stop applying its objects: a
	// blocked change leaves the cluster exactly as it was.
	if err := r.freezeOthers(ctx, s, w.CSVName); err != nil {
		return err
	}
	applied, err := r.applyCSV(ctx, s, src, repairs)
	if err != nil {
		return err
	}
	<-recorded // the records read the Blueprint's status, which following the CSV changes
	r.children.Wrote(child, liveRV, applied.ResourceVersion, s.now)
	return r.follow(ctx, s, applied)
}

// waitForNativeAPIs holds the revision, before anything is written, while the cluster
// does not serve a kind the CSV's spec.nativeAPIs names: it may come (an aggregated API
// being installed), so it is looked at again every few seconds; the revision's deadline
// ends the wait, naming the kind.
func (r *Reconciler) waitForNativeAPIs(s *scope, csv *v1alpha1.ClusterServiceVersion) (bool, error) {
	missing, err := nativeapi.Missing(r.Client.RESTMapper(), csv.Spec.NativeAPIs)
	if err != nil || len(missing) == 0 {
		return false, err
	}
	r.progress(s, ReasonWaitingForNativeAPIs, fmt.Sprintf("revision %d: %s needs APIs this cluster does not serve; nothing was changed: %s",
		s.work.Revision, s.work.CSVName, strings.Join(missing, "; ")))
	statuswrite.RequeueWithin(&s.result, 5*time.Second)
	return true, nil
}

// deadlineGrace is how long after the health timeout a revision's deadline falls: the CSV
// judges its own health gate with the same timeout, from a moment later, and its verdict
// (naming the Deployment and the pods' problem) is the better message. The deadline is
// the backstop for everything else: a bundle never found, requirements never met, an
// apply the API server keeps refusing.
func deadlineGrace(timeout time.Duration) time.Duration {
	return min(max(timeout/10, 5*time.Second), 30*time.Second)
}

// missedDeadline fails a revision that reached no outcome in time, naming what it waited
// for: the CSV's own state once it runs (a health gate that did not pass is a failed
// health check; one whose objects never all applied, its last error retried, is not), or
// the step it was at.
func (r *Reconciler) missedDeadline(s *scope, timeout time.Duration, csv *omv1alpha1.ClusterServiceVersion, exists bool) {
	w := s.work
	if exists && csv.Status.Revision == w.Revision && csv.Status.Phase == omv1alpha1.CSVInstalling && csv.Status.Reason != omv1.ReasonReconcileError {
		r.fail(s, omv1.ReasonHealthCheckFailed, fmt.Sprintf("%s did not become healthy within %s: %s", w.CSVName, timeout, csv.Status.Message))
		return
	}
	last := conditionMessage(s.bp, omv1.ConditionProgressing)
	if exists && csv.Status.Revision == w.Revision {
		last = fmt.Sprintf("%s is %s: %s", csv.Name, csv.Status.Phase.OrNew(), csv.Status.Message)
	}
	if c := meta.FindStatusCondition(s.bp.Status.Conditions, omv1.ConditionReady); c != nil &&
		(c.Reason == omv1.ReasonRefusedByAPIServer || c.Reason == omv1.ReasonReconcileError) {
		// The last pass stopped at a write the API server refused, or at an error it
		// retried: that is what it waited for.
		last = c.Message
	}
	if last == "" {
		last = "nothing started"
	}
	r.fail(s, omv1.ReasonDeadlineExceeded, fmt.Sprintf("revision %d (%s) reached no outcome within its deadline of %s; it was waiting for: %s",
		w.Revision, w.CSVName, timeout, last))
}

// carries reports whether the CSV was already asked to carry out this revision, as this
// identity and with this deadline: then only its outcome is awaited.
func (r *Reconciler) carries(s *scope, csv *omv1alpha1.ClusterServiceVersion) bool {
	a := csv.Annotations
	return csv.DeletionTimestamp.IsZero() &&
		a[omv1.AnnotationRevision] == strconv.FormatInt(s.work.Revision, 10) &&
		a[omv1.AnnotationDesiredPhase] == omv1.DesiredPhaseActive &&
		a[omv1.AnnotationServiceAccount] == s.id.Name &&
		a[omv1.AnnotationHealthTimeout] == healthTimeout(s.sub).String() &&
		a[omv1.AnnotationBundleDigest] == s.work.BundleDigest
}

// content returns the revision's bundle, parsed: from memory, the local cache, the copy
// stored in the cluster, or its catalog (then kept in the cache and the cluster). While it
// cannot be found the revision waits (within its deadline) and says so; nil, nil then.
func (r *Reconciler) content(ctx context.Context, s *scope) (*catalog.BundleContent, error) {
	w, bp := s.work, s.bp
	if c := r.contents.get(w.BundleDigest); c != nil && w.BundleDigest != "" && c.CSV.Name == w.CSVName {
		return c, r.Bundles.Keep(ctx, bp, w.BundleDigest, c.Files)
	}
	files, err := r.Bundles.Get(ctx, bp.Namespace, bp.Name, w.BundleDigest)
	if errors.Is(err, bundles.ErrNotKept) {
		files, err = r.fromCatalog(bp, w.CSVName, w.BundleDigest)
		if errors.Is(err, catalog.ErrDigestMismatch) {
			// A catalog that serves other content than its index promised will not heal
			// by waiting: fail now, naming it.
			r.fail(s, ReasonBundleUnavailable, fmt.Sprintf("revision %d: the bundle of %s from catalog %s: %v", w.Revision, w.CSVName, catalogKey(bp), err))
			return nil, nil
		}
		if err != nil {
			r.progress(s, ReasonBundleUnavailable, fmt.Sprintf("revision %d: waiting for the bundle of %s: %v", w.Revision, w.CSVName, err))
			s.result = ctrl.Result{RequeueAfter: 5 * time.Second}
			return nil, nil
		}
	} else if err != nil {
		return nil, err
	}
	digest := catalog.BundleDigest(files)
	if w.BundleDigest != "" && digest != w.BundleDigest {
		r.fail(s, ReasonBundleUnavailable, fmt.Sprintf("the bundle found for %s has digest %s, not %s", w.CSVName, digest, w.BundleDigest))
		return nil, nil
	}
	content, err := catalog.ContentFromFiles(files)
	if err != nil {
		r.fail(s, ReasonBundleUnavailable, fmt.Sprintf("bundle %s of %s: %v", digest, w.CSVName, err))
		return nil, nil
	}
	if content.CSV.Name != w.CSVName {
		r.fail(s, ReasonBundleUnavailable, fmt.Sprintf("bundle %s holds CSV %s, not %s", digest, content.CSV.Name, w.CSVName))
		return nil, nil
	}
	content.Files = files
	// A revision opened from a hand edit of the target CSV alone learns its bundle and
	// version here, from the catalog.
	if w.BundleDigest == "" {
		w.BundleDigest = digest
	}
	if w.Version == "" {
		w.Version = content.CSV.Spec.Version.String()
	}
	if err := r.Bundles.Keep(ctx, bp, digest, files); err != nil {
		return nil, fmt.Errorf("keeping the bundle of %s: %w", w.CSVName, err) // the store's words name the digest
	}
	r.contents.put(digest, content)
	return content, nil
}

// fromCatalog reads a bundle from the Blueprint's catalog.
func (r *Reconciler) fromCatalog(bp *omv1.Blueprint, csvName, digest string) ([]catalog.File, error) {
	key := catalogKey(bp)
	cat := r.Catalogs.Get(key)
	which := csvName // a hand-edited target names no digest
	if digest != "" {
		which = fmt.Sprintf("%s (digest %s)", csvName, digest)
	}
	if cat == nil {
		return nil, fmt.Errorf("bundle %s is neither kept locally nor in the cluster, and catalog %s is not loaded", which, key)
	}
	var b *catalog.Bundle
	if digest != "" {
		b = cat.BundleByDigest(digest)
	} else {
		b = cat.BundleByCSV(csvName)
	}
	if b == nil {
		return nil, fmt.Errorf("catalog %s has no bundle %s, and it is not kept locally or in the cluster", key, which)
	}
	return cat.Files(b)
}

// catalogKey parses spec.catalog, "namespace/name" (or a name in the Blueprint's namespace).
func catalogKey(bp *omv1.Blueprint) types.NamespacedName {
	if ns, name, ok := strings.Cut(bp.Spec.Catalog, "/"); ok {
		return types.NamespacedName{Namespace: ns, Name: name}
	}
	return types.NamespacedName{Namespace: bp.Namespace, Name: bp.Spec.Catalog}
}

// downgrade reports whether the revision goes to an older version than runs now: then the
// cluster's CRDs, a superset, are kept.
func downgrade(s *scope) bool {
	if s.work.Trigger == omv1.TriggerRollback || s.work.Trigger == omv1.TriggerDowngrade {
		return true
	}
	cur, err1 := semver.ParseTolerant(s.bp.Status.CurrentVersion)
	next, err2 := semver.ParseTolerant(s.work.Version)
	return err1 == nil && err2 == nil && next.LT(cur)
}

// freezeOthers asks every other CSV of the Blueprint to stand aside (desired phase
// Replacing), so that only the revision's CSV applies the Deployments they share. The CSV
// controller, the only writer of CSV status, shows it as phase Replacing.
func (r *Reconciler) freezeOthers(ctx context.Context, s *scope, keep string) error {
	list := &omv1alpha1.ClusterServiceVersionList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.bp.Namespace), client.MatchingLabels{omv1.LabelSubscription: s.bp.SubscriptionName()}); err != nil {
		return err
	}
	for i := range list.Items {
		csv := &list.Items[i]
		if csv.Name == keep || !csv.DeletionTimestamp.IsZero() || csv.Annotations[omv1.AnnotationDesiredPhase] == omv1.DesiredPhaseReplacing {
			continue
		}
		patch := client.MergeFromWithOptions(csv.DeepCopy(), client.MergeFromWithOptimisticLock{})
		metav1.SetMetaDataAnnotation(&csv.ObjectMeta, omv1.AnnotationDesiredPhase, omv1.DesiredPhaseReplacing)
		if err := r.Client.Patch(ctx, csv, patch); err != nil {
			return fmt.Errorf("asking %s to stand aside for %s: %w", csv.Name, keep, err)
		}
	}
	return nil
}

// applyCSV creates or updates the target CSV: the bundle's CSV under this group, owned by
// the Blueprint, labelled for its Subscription and package, and annotated with what it is
// asked to do: the revision, active, as which identity, within which health timeout.
func (r *Reconciler) applyCSV(ctx context.Context, s *scope, src *v1alpha1.ClusterServiceVersion, repairs []omv1alpha1.CRDRepair) (*omv1alpha1.ClusterServiceVersion, error) {
	bp := s.bp
	w := s.work
	csv := &omv1alpha1.ClusterServiceVersion{
		TypeMeta: metav1.TypeMeta{APIVersion: omv1alpha1.GroupVersion.String(), Kind: "ClusterServiceVersion"},
		ObjectMeta: metav1.ObjectMeta{
			Name: src.Name, Namespace: bp.Namespace,
			Labels: mergeMaps(src.Labels, map[string]string{omv1.LabelSubscription: bp.SubscriptionName(), omv1.LabelPackage: bp.Spec.Package}),
			Annotations: mergeMaps(src.Annotations, map[string]string{
				omv1.AnnotationBundleDigest:   w.BundleDigest,
				omv1.AnnotationRevision:       strconv.FormatInt(w.Revision, 10),
				omv1.AnnotationDesiredPhase:   omv1.DesiredPhaseActive,
				omv1.AnnotationServiceAccount: s.id.Name,
				omv1.AnnotationHealthTimeout:  healthTimeout(s.sub).String(),
			}),
		},
		Spec: omv1alpha1.CSVSpec{ClusterServiceVersionSpec: src.Spec},
	}
	// Applied with its finalizer, so the CSV controller needs no write to add it.
	csv.Finalizers = []string{omv1.Finalizer}
	if len(repairs) > 0 {
		data, _ := json.Marshal(repairs)
		csv.Annotations[omv1.AnnotationCRDRepairs] = string(data)
	}
	if err := controllerutil.SetControllerReference(bp, csv, r.Client.Scheme()); err != nil {
		return nil, err
	}
	applied, err := kubeapply.ApplyAndGet(ctx, r.Client, csv)
	if err != nil {
		return nil, err
	}
	out := &omv1alpha1.ClusterServiceVersion{}
	if err := r.Client.Scheme().Convert(applied, out, nil); err != nil {
		return nil, fmt.Errorf("reading back CSV %s: %w", csv.Name, err)
	}
	return out, nil
}

// follow maps the CSV's phase, once the CSV judges this revision, onto the revision and
// the Blueprint. The CSV is watched: its changes bring the next look.
func (r *Reconciler) follow(ctx context.Context, s *scope, csv *omv1alpha1.ClusterServiceVersion) error {
	bp, w := s.bp, s.work
	if csv.Status.Revision != w.Revision {
		r.progress(s, string(w.Trigger), fmt.Sprintf("revision %d: waiting for %s to start the revision", w.Revision, csv.Name))
		return nil
	}
	switch csv.Status.Phase {
	case omv1alpha1.CSVSucceeded:
		endWork(s, omv1.OutcomeSucceeded, omv1.ReasonSucceeded, csv.Status.Message)
		bp.Status.CurrentCSV, bp.Status.CurrentVersion = csv.Name, csv.Spec.Version.String()
		bp.Status.LastGoodRevision = w.Revision
		s.result = ctrl.Result{}
		if w.Trigger == omv1.TriggerRollback {
			return r.settle(ctx, s, omv1.BlueprintRolledBack)
		}
		from := ""
		if w.Trigger == omv1.TriggerInstall {
			from = fromCatalog(bp) // the install's only event says where it came from
		}
		r.event(bp, false, omv1.ReasonSucceeded, "%s is installed and healthy (revision %d)%s", csv.Name, w.Revision, from)
		return r.settle(ctx, s, omv1.BlueprintSucceeded)
	case omv1alpha1.CSVFailed:
		reason := omv1.ReasonHealthCheckFailed
		switch csv.Status.Reason {
		case omv1.ReasonInsufficientPermissions, omv1.ReasonInstallFailed:
			reason = csv.Status.Reason
		case "InvalidInstallStrategy", "UnsupportedOperatorGroup":
			reason = omv1.ReasonInstallFailed // the CSV cannot be installed as written
		}
		r.fail(s, reason, fmt.Sprintf("%s failed: %s: %s", csv.Name, csv.Status.Reason, csv.Status.Message))
		return nil
	default:
		r.progress(s, string(w.Trigger), csv.RevisionProgress())
		s.mirrorsCSV = true
		return nil
	}
}

func mergeMaps(base, over map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}
