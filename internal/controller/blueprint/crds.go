package blueprint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/access"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/crdready"
	"github.com/operator-manager/operator-manager/internal/crdsafety"
	"github.com/operator-manager/operator-manager/internal/kubeapply"
	"github.com/operator-manager/operator-manager/internal/render"
	"github.com/operator-manager/operator-manager/internal/statuswrite"
)

// Annotations on applied CRDs: which package and version wrote them, so that an older
// version of the same package, in any namespace, never replaces a newer CRD.
const (
	AnnotationCRDPackage = crdsafety.PackageAnnotation
	AnnotationCRDVersion = "operator-manager.domain/crd-version"
	// AnnotationCRDMigration on an applied CRD says which storage version migration was
	// carried out before it was applied (crdsafety.Migration), for the CSV's crdRepairs.
	// The next version's apply, which does not carry it, removes it.
	AnnotationCRDMigration = "operator-manager.domain/crd-storage-migration"
)

// checkAccess asks the API server whether the installing identity may make every write
// the revision needs (its CRDs and every object its CSV installs) before anything is
// written, and blocks the revision with InsufficientPermissions naming what is missing. A
// bundle object of a kind the cluster does not serve fails the revision, named.
func (r *Reconciler) checkAccess(ctx context.Context, s *scope, content *catalog.BundleContent, plan []crdStep) (bool, error) {
	p, err := r.accessProblem(ctx, s, content, plan)
	switch {
	case err != nil:
		return true, err
	case p.message == "":
		return false, nil
	case p.fails:
		r.fail(s, omv1.ReasonInstallFailed, p.message)
	default:
		r.block(s, omv1.ReasonInsufficientPermissions, p.message)
	}
	return true, nil
}

// accessRecheck is how often a change blocked for the installing identity's rights is
// checked again (recheckBlocked): once they are granted, it goes on by itself.
const accessRecheck = 30 * time.Second

// accessProblem is what stops the installing identity from making the revision's writes
// (read only: SubjectAccessReviews and a ServiceAccount read): none (message empty), a
// block (missing rights, or a missing ServiceAccount), or a failure (fails: a kind the
// cluster does not serve).
func (r *Reconciler) accessProblem(ctx context.Context, s *scope, content *catalog.BundleContent, plan []crdStep) (accessFinding, error) {
	if !s.id.IsManager() {
		sa := &corev1.ServiceAccount{}
		if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: s.id.Namespace, Name: s.id.Name}, sa); apierrors.IsNotFound(err) {
			return accessFinding{message: fmt.Sprintf("%s does not exist: create it, or name another in spec.serviceAccountName; nothing was changed, and the change goes on by itself once it exists (checked every %s)", s.id, accessRecheck)}, nil
		} else if err != nil {
			return accessFinding{}, err
		}
	}
	var objs []access.Object
	for _, st := range plan {
		if st.write {
			objs = append(objs, st.crd)
		}
	}
	own := map[string]bool{} // groups of the bundle's own CRDs: not served until applied
	for _, u := range content.CRDs {
		if g, _, _ := unstructuredString(u.Object, "spec", "group"); g != "" {
			own[g] = true
		}
	}
	var requested []string
	var config *omv1.SubscriptionConfig
	if s.sub != nil {
		requested, config = s.sub.Spec.TargetNamespaces, s.sub.Spec.Config
	}
	targets, err := render.TargetNamespaces(content.CSV.Spec.InstallModes, s.bp.Namespace, requested)
	if err == nil {
		rendered, err := render.Render(render.Input{Namespace: s.bp.Namespace, CSVName: content.CSV.Name, Package: s.bp.Spec.Package,
			Spec: &content.CSV.Spec, TargetNamespaces: targets, Config: config, Others: content.Objects,
			WebhookCerts: render.PlaceholderCerts(&content.CSV.Spec)})
		if err == nil {
			for _, o := range rendered.InApplyOrder() {
				if !own[o.GetObjectKind().GroupVersionKind().Group] {
					objs = append(objs, o)
				}
			}
		}
	} // a CSV that cannot be rendered fails in the CSV controller, with the field named
	reqs, err := access.Requests(r.Client.RESTMapper(), objs)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return accessFinding{fails: true, message: fmt.Sprintf("%s cannot be installed on this cluster: %v", content.CSV.Name, err)}, nil
		}
		return accessFinding{}, err
	}
	missing, err := r.Access.Missing(ctx, s.id, reqs)
	if err != nil {
		return accessFinding{}, err
	}
	if len(missing) > 0 {
		access.Sort(missing)
		return accessFinding{message: access.Describe(s.id, missing) + fmt.Sprintf("; nothing was changed, and the change goes on by itself once they are granted (checked every %s)", accessRecheck)}, nil
	}
	return accessFinding{}, nil
}

// accessFinding is accessProblem's answer.
type accessFinding struct {
	message string
	fails   bool
}

// preflightRecheck is how often a change the CRD preflight blocked is checked again
// (recheckBlocked): once a person mends the custom resources it names, it goes on by
// itself. Less often than rights: each check lists the custom resources.
const preflightRecheck = time.Minute

// preflightRefusal is the Blocked message of a preflight finding.
func preflightRefusal(v *crdsafety.Violation) string {
	return v.Error() + fmt.Sprintf("; nothing was changed, and the change goes on by itself once it is safe (checked every %s)", preflightRecheck)
}

// recheckBlocked says whether what blocks the change the Blueprint holds as Blocked has
// changed since: for the installing identity's rights (a ServiceAccount missing, rights
// not granted), or for the CRD preflight (a custom resource the new schema refuses, a
// stored version dropped). Gone, the change goes on; another finding now (the
// ServiceAccount made, but without its rights; another custom resource), a new attempt
// says so. The same checks, on a copy of the scope, so nothing is written or told while
// nothing changed; s.result brings it back for the next. Any other Blocked (a migration
// the API server refused) waits for a person: retry, or a new version.
func (r *Reconciler) recheckBlocked(ctx context.Context, s *scope) (bool, error) {
	bp := s.bp
	if bp.Status.Phase != omv1.BlueprintBlocked || !SettledForTarget(bp) {
		return false, nil
	}
	last := latestAttempt(bp) // of the target: SettledForTarget
	every, ok := map[string]time.Duration{omv1.ReasonInsufficientPermissions: accessRecheck, omv1.ReasonCRDPreflightFailed: preflightRecheck}[last.Reason]
	if last.Outcome != omv1.OutcomeBlocked || !ok {
		return false, nil
	}
	// The throttle of status writes, used for when each was last checked.
	if wait := r.rechecks.WaitSince(bp.UID, every, s.now); wait > 0 {
		statuswrite.RequeueWithin(&s.result, wait)
		return false, nil
	}
	r.rechecks.Wrote(bp.UID, s.now)
	statuswrite.RequeueWithin(&s.result, every)
	work := *last
	probe := &scope{bp: bp.DeepCopy(), sub: s.sub, id: s.id, now: s.now, work: &work, probe: true}
	content, err := r.content(ctx, probe)
	if err != nil || content == nil {
		return false, err
	}
	plan, stop, err := r.planCRDs(ctx, probe, content)
	if stop || err != nil {
		return false, err
	}
	if last.Reason == omv1.ReasonCRDPreflightFailed {
		finding, known := r.preflightFinding(ctx, probe, plan)
		return known && finding != last.Message, nil
	}
	p, err := r.accessProblem(ctx, probe, content, plan)
	return err == nil && p.message != last.Message, err
}

// preflightFinding runs the CRD preflight of every CRD the plan writes, reading only:
// the Blocked message of the first refusal, "" when none refuses, and false when it
// cannot tell now (a version not served yet, the custom resources not readable), which
// leaves the block as it is.
func (r *Reconciler) preflightFinding(ctx context.Context, s *scope, plan []crdStep) (string, bool) {
	dyn, err := r.Identities.Dynamic(s.id)
	if err != nil {
		return "", false
	}
	for _, st := range plan {
		if !st.write {
			continue
		}
		_, _, v, err := crdsafety.PreflightLive(ctx, st.live, dyn, st.crd, s.bp.Spec.Package)
		if err != nil {
			return "", false
		}
		if v != nil {
			return preflightRefusal(v), true
		}
	}
	return "", true
}

func unstructuredString(obj map[string]any, fields ...string) (string, bool, error) {
	cur := any(obj)
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false, nil
		}
		cur = m[f]
	}
	s, ok := cur.(string)
	return s, ok, nil
}

// crdStep is what a revision does with one CRD of its bundle.
type crdStep struct {
	crd     *apiextensionsv1.CustomResourceDefinition // converted, repaired, annotated
	live    *apiextensionsv1.CustomResourceDefinition // nil when absent
	changes []string                                  // repairs, in words
	hash    string
	write   bool // false: kept as the cluster has it (newer, or already this one)
}

// crdWatchedRequeue is the floor of a wait for a watched CRD to be Established: its
// watch event normally ends the wait first.
const crdWatchedRequeue = 5 * time.Second

// crdWaitKey names the revision of s in crdWaits.
func crdWaitKey(s *scope) string {
	return fmt.Sprintf("%s/%d", s.bp.UID, s.work.Revision)
}

// waitForCRD reports the wait for CRD name to be Established; its watch event, or the
// requeue after wait, brings the Blueprint back.
func (r *Reconciler) waitForCRD(s *scope, name string, wait time.Duration) {
	r.progress(s, ReasonWaitingForCRDs, "waiting for CRD "+name+" to be Established")
	s.result = ctrl.Result{RequeueAfter: wait}
}

// afterCRDsApplied looks at the CRDs this process applied for the revision of s
// (crdWaits). While one that the CRD cache holds is not Established, the revision waits
// again, without the bundle being read, parsed or repaired (waiting true). Once all are
// Established it returns what the applying pass kept for the steps after them, and
// forgets the entry. Any other case (nothing remembered, a CRD gone from the cache) goes
// the full way: nil, false.
func (r *Reconciler) afterCRDsApplied(s *scope) (next *afterCRDs, waiting bool) {
	if !r.CRDs.Watched() {
		return nil, false
	}
	key := crdWaitKey(s)
	w, ok := r.crdWaits.get(key, s.now)
	if !ok {
		return nil, false
	}
	for _, name := range w.names {
		if r.CRDs.Ready(name, "") {
			continue
		}
		if _, cached := r.CRDs.Cached(name); !cached {
			return nil, false
		}
		r.waitForCRD(s, name, crdWatchedRequeue)
		return nil, true
	}
	r.crdWaits.forget(key)
	// The revision as the applying pass left it: its CSV, and the bundle digest that pass
	// learned (a revision opened from a hand edit learns it there, and a status write
	// that did not land leaves it unknown).
	if w.next == nil || w.next.csv == nil || w.next.csv.Name != s.work.CSVName ||
		w.next.digest == "" || w.next.digest != s.work.BundleDigest {
		return nil, false
	}
	return w.next, false
}

// stepsOf stands in for a plan in the steps after the CRDs of a revision whose applying
// pass this process made: each CRD as the CRD cache has it (without its schema, which
// those steps do not read).
func (r *Reconciler) stepsOf(names []string) []crdStep {
	plan := make([]crdStep, 0, len(names))
	for _, name := range names {
		st := crdStep{crd: &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}}
		if live, ok := r.CRDs.Cached(name); ok {
			st.live = live
		}
		plan = append(plan, st)
	}
	return plan
}

// planCRDs converts and repairs every CRD of the bundle and decides which must be written:
// on a downgrade an existing CRD is kept as it is (the cluster's is a superset), and a CRD
// already as this version applies it is not written again. A CRD that cannot be repaired
// fails the revision.
func (r *Reconciler) planCRDs(ctx context.Context, s *scope, content *catalog.BundleContent) ([]crdStep, bool, error) {
	var plan []crdStep
	for _, u := range content.CRDs {
		crd, changes, err := r.contents.repair(s.work.BundleDigest, u)
		if err != nil {
			r.fail(s, ReasonCRDRefused, fmt.Sprintf("CRD %s of %s cannot be installed: %v", u.GetName(), content.CSV.Name, err))
			return nil, true, nil
		}
		st := crdStep{crd: crd, changes: changes, write: true}
		if st.hash, err = crdHash(crd, s.bp.Spec.Package, s.work.Version); err != nil {
			return nil, false, err
		}
		annotate(crd, s.bp.Spec.Package, s.work.Version, st.hash)
		// The cached copy (no schema) decides a CRD that stays as it is; one to write, or
		// one the cache does not hold yet, is read whole: the preflight needs it, and the
		// cache may not show a change made a moment ago.
		if cached, ok := r.CRDs.Cached(crd.Name); ok && kept(s, cached, st.hash) {
			st.live = cached
		} else {
			live := &apiextensionsv1.CustomResourceDefinition{}
			if err := r.APIReader.Get(ctx, client.ObjectKey{Name: crd.Name}, live); err == nil {
				st.live = live
				r.CRDs.Saw(live)
			} else if client.IgnoreNotFound(err) != nil {
				return nil, false, err
			} else {
				r.CRDs.Forget(crd.Name)
			}
		}
		if st.live != nil && kept(s, st.live, st.hash) {
			st.write = false
			if st.live.Annotations[omv1.AnnotationCRDHash] != st.hash {
				st.changes = append(st.changes, fmt.Sprintf("kept the cluster's CRD, which a newer version (%s) installed: not replaced by this older version's",
					st.live.Annotations[AnnotationCRDVersion]))
			}
		}
		plan = append(plan, st)
	}
	return plan, false, nil
}

// applyCRDs runs the preflight on every CRD to write before changing any (stored versions
// kept, existing custom resources still valid, listed as the installing identity), then
// carries out the storage version migrations the preflights asked for (a CRD dropping an
// old stored version: its custom resources rewritten in the storage version, the version
// removed from status.storedVersions), applies the CRDs as that identity and waits until
// each is Established. A CRD is never deleted here.
func (r *Reconciler) applyCRDs(ctx context.Context, s *scope, content *catalog.BundleContent, plan []crdStep) ([]omv1alpha1.CRDRepair, bool, error) {
	dyn, err := r.Identities.Dynamic(s.id)
	if err != nil {
		return nil, false, err
	}
	type migration struct {
		step int
		live *apiextensionsv1.CustomResourceDefinition
		plan *crdsafety.Migration
	}
	var migrations []migration
	for i, st := range plan {
		if !st.write {
			if st.live.Annotations[omv1.AnnotationCRDHash] != st.hash {
				r.event(s.bp, false, "CRDKept", "Kept CRD %s from the newer version while changing to %s", st.crd.Name, content.CSV.Name)
			} else if done := st.live.Annotations[AnnotationCRDMigration]; done != "" {
				// applied by an earlier pass of this version, after migrating: still recorded
				plan[i].changes = append(plan[i].changes, done)
			}
			continue
		}
		rv := ""
		if st.live != nil {
			rv = st.live.ResourceVersion
		}
		key := st.crd.Name + "/" + rv + "/" + st.hash
		if r.checked.has(key) {
			continue
		}
		live, m, v, err := crdsafety.PreflightLive(ctx, st.live, dyn, st.crd, s.bp.Spec.Package)
		var notServed *crdsafety.NotServedError
		if errors.As(err, &notServed) {
			// A storage version switched a moment ago: served within moments.
			r.progress(s, ReasonWaitingForCRDs, fmt.Sprintf("waiting for CRD %s to serve version %s", notServed.CRD, notServed.Version))
			s.result = ctrl.Result{RequeueAfter: 500 * time.Millisecond}
			return nil, true, nil
		}
		if err != nil {
			if refusal := kubeapply.Classify(err); refusal.Reason == omv1.ReasonInsufficientPermissions {
				r.block(s, omv1.ReasonInsufficientPermissions, fmt.Sprintf("%s may not read the custom resources the CRD preflight of %s must check: %v; nothing was changed", s.id, st.crd.Name, err))
				return nil, true, nil
			}
			return nil, false, err
		}
		if v != nil {
			r.block(s, omv1.ReasonCRDPreflightFailed, preflightRefusal(v))
			return nil, true, nil
		}
		if m != nil {
			// Not remembered as passed: until the migration is done, every pass must find
			// it again. Once done, the live CRD has a new resourceVersion (its status).
			migrations = append(migrations, migration{step: i, live: live, plan: m})
			continue
		}
		r.checked.add(key)
	}
	cl, err := r.Identities.For(s.id)
	if err != nil {
		return nil, false, err
	}
	for _, mg := range migrations {
		st := &plan[mg.step]
		n, err := crdsafety.Migrate(ctx, cl, dyn, mg.live, mg.plan)
		if errors.Is(err, crdsafety.ErrStorageSwitched) {
			r.event(s.bp, false, "CRDStorageSwitched", "CRD %s: storage version switched from %s to %s while no custom resource existed, before %s drops %s",
				st.crd.Name, mg.plan.SwitchFrom, mg.plan.StorageVersion, content.CSV.Name, mg.plan.SwitchFrom)
			r.progress(s, ReasonWaitingForCRDs, fmt.Sprintf("switched CRD %s to store in %s; waiting for it to be served", st.crd.Name, mg.plan.StorageVersion))
			s.result = ctrl.Result{RequeueAfter: 500 * time.Millisecond}
			return nil, true, nil
		}
		if err != nil {
			refusal := kubeapply.Classify(err)
			if !refusal.Permanent {
				return nil, false, fmt.Errorf("migrating the custom resources of CRD %s to storage version %s: %w", st.crd.Name, mg.plan.StorageVersion, err)
			}
			what := fmt.Sprintf("the storage version migration CRD %s needs before %s drops %s from its stored versions (every custom resource rewritten unchanged in storage version %s, then status.storedVersions updated)",
				st.crd.Name, content.CSV.Name, strings.Join(mg.plan.Drop, ", "), mg.plan.StorageVersion)
			if refusal.Reason == omv1.ReasonInsufficientPermissions {
				lacks := "make a write"
				if step := (*crdsafety.StepError)(nil); errors.As(err, &step) {
					lacks = step.Verb + " " + step.Resource
				}
				r.block(s, omv1.ReasonInsufficientPermissions, fmt.Sprintf("%s may not %s, which %s needs: %v; custom resources rewritten so far are unchanged, nothing else was changed",
					s.id, lacks, what, err))
			} else {
				r.block(s, omv1.ReasonCRDMigrationFailed, fmt.Sprintf("the API server refused %s: %v; custom resources rewritten so far are unchanged, nothing else was changed", what, err))
			}
			return nil, true, nil
		}
		done := mg.plan.Describe(n)
		st.changes = append(st.changes, done)
		// Kept on the applied CRD, so a later pass of this version (the CSV not yet
		// applied when the reconcile is retried) still records the migration.
		st.crd.Annotations[AnnotationCRDMigration] = done
		r.event(s.bp, false, "CRDStorageMigrated", "CRD %s: %s, before changing to %s", st.crd.Name, done, content.CSV.Name)
	}
	var repairs []omv1alpha1.CRDRepair
	for _, st := range plan {
		if len(st.changes) > 0 {
			repairs = append(repairs, omv1alpha1.CRDRepair{Name: st.crd.Name, Changes: st.changes})
		}
	}
	sort.Slice(repairs, func(i, j int) bool { return repairs[i].Name < repairs[j].Name })
	key, value := ProviderKey(s.bp.Namespace, s.bp.Name), providerValue(s.bp, s.work.CSVName)
	for i, st := range plan {
		if !st.write {
			continue
		}
		carryProviders(st.crd, st.live, key, value)
		r.CRDs.Forget(st.crd.Name) // changed: its served versions are read again
		stored, err := kubeapply.ApplyIfUnchanged(ctx, cl, st.crd)
		if apierrors.IsConflict(err) {
			// Changed since the plan read it (another installation's record, a migration's
			// stored versions): planned again from a fresh read.
			s.result = ctrl.Result{RequeueAfter: 200 * time.Millisecond}
			return nil, true, nil
		}
		if err != nil {
			refusal := kubeapply.Classify(err)
			if !refusal.Permanent {
				return nil, false, err
			}
			if refusal.Reason == omv1.ReasonInsufficientPermissions {
				r.block(s, refusal.Reason, fmt.Sprintf("%s may not apply CRD %s of %s: %v", s.id, st.crd.Name, content.CSV.Name, err))
			} else {
				r.fail(s, ReasonCRDRefused, fmt.Sprintf("the API server refused CRD %s of %s: %v", st.crd.Name, content.CSV.Name, err))
			}
			return nil, true, nil
		}
		// The apply's response is the CRD as stored, status included: a CRD that was
		// Established before the change stays so, and needs no GET to tell.
		applied := &apiextensionsv1.CustomResourceDefinition{}
		if runtime.DefaultUnstructuredConverter.FromUnstructured(stored.Object, applied) == nil {
			r.CRDs.Saw(applied)
			plan[i].live = applied // carries this installation's provider record now
		}
	}
	for _, st := range plan {
		if !st.write {
			continue
		}
		if r.CRDs.Ready(st.crd.Name, "") {
			continue
		}
		// With CRDs watched, the CRD's event brings this Blueprint back once it is
		// Established (it carries the installation's provider record: providersOfCRD),
		// and the requeue is only a floor. A CRD the cache does not hold yet (created a
		// moment ago) is read.
		wait := 500 * time.Millisecond
		if r.CRDs.Watched() {
			wait = crdWatchedRequeue
			if _, ok := r.CRDs.Cached(st.crd.Name); ok {
				var names, all []string
				for _, st := range plan {
					all = append(all, st.crd.Name)
					if st.write {
						names = append(names, st.crd.Name)
					}
				}
				r.crdWaits.set(crdWaitKey(s), names, &afterCRDs{digest: s.work.BundleDigest, csv: content.CSV, crds: all, repairs: repairs}, s.now)
				r.waitForCRD(s, st.crd.Name, wait)
				return nil, true, nil
			}
		}
		live := &apiextensionsv1.CustomResourceDefinition{}
		err := r.APIReader.Get(ctx, client.ObjectKey{Name: st.crd.Name}, live)
		if err == nil {
			r.CRDs.Saw(live)
		}
		if err != nil || !crdready.Established(live) {
			// CRDs are not cached (the manager would hold every CRD of the cluster); they
			// become Established within moments of being applied.
			r.progress(s, ReasonWaitingForCRDs, "waiting for CRD "+st.crd.Name+" to be Established")
			s.result = ctrl.Result{RequeueAfter: wait}
			return nil, true, client.IgnoreNotFound(err)
		}
	}
	return repairs, false, nil
}

// kept says whether the cluster's CRD stays as it is for this revision: it is already as
// this version applies it, or it is newer (a downgrade, or a newer version of the package
// installed it) and an older version's CRD never replaces it.
func kept(s *scope, live *apiextensionsv1.CustomResourceDefinition, hash string) bool {
	return live.Annotations[omv1.AnnotationCRDHash] == hash || downgrade(s) || newerLive(live, s.bp.Spec.Package, s.work.Version)
}

// crdHash is the digest of a CRD as this package version applies it.
func crdHash(crd *apiextensionsv1.CustomResourceDefinition, pkg, version string) (string, error) {
	data, err := json.Marshal(struct {
		Spec             apiextensionsv1.CustomResourceDefinitionSpec
		Labels           map[string]string
		Package, Version string
	}{crd.Spec, crd.Labels, pkg, version})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

func annotate(crd *apiextensionsv1.CustomResourceDefinition, pkg, version, hash string) {
	crd.APIVersion, crd.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
	if crd.Annotations == nil {
		crd.Annotations = map[string]string{}
	}
	crd.Annotations[AnnotationCRDPackage], crd.Annotations[AnnotationCRDVersion] = pkg, version
	crd.Annotations[omv1.AnnotationCRDHash] = hash
}

// newerLive reports whether the live CRD was written by a newer version of the package.
func newerLive(live *apiextensionsv1.CustomResourceDefinition, pkg, version string) bool {
	if live.Annotations[AnnotationCRDPackage] != pkg {
		return false
	}
	return older(version, live.Annotations[AnnotationCRDVersion])
}
