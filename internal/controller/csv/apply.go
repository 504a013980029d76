package csv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/kubeapply"
	"github.com/operator-manager/operator-manager/internal/metrics"
	"github.com/operator-manager/operator-manager/internal/refusal"
	"github.com/operator-manager/operator-manager/internal/render"
)

// installRetryBudget is how long an apply the API server refuses for good (Forbidden,
// Invalid, an unknown kind, an immutable field) is retried before the CSV fails with the
// refusal: long enough for a right granted a moment late, short enough that nothing waits
// forever.
const installRetryBudget = 15 * time.Second

// ConditionInstalled on a CSV: every object applied as rendered (True), or the refusal.
const ConditionInstalled = "Installed"

// apply server-side applies the rendered objects as the installation's identity when
// they changed (a new version, a new config) or when one of them drifted (deleted or
// edited by hand), records them in the inventory, and removes what the installation no
// longer renders. Nothing is written when nothing changed.
func (r *Reconciler) apply(ctx context.Context, s *scope) (bool, error) {
	st := &s.csv.Status
	changed := s.hash != st.RenderHash || s.newRevision
	if s.sub != nil && s.sub.Spec.Paused && st.RenderHash != "" && !s.newRevision {
		// Paused: neither a new config nor drift repair reaches the cluster. A revision the
		// Blueprint starts (an automatic rollback or retry of a change under way when the
		// pause came) applies all the same: its gate judges what it applies, and skipped,
		// it judged the failed version's pods and failed the rollback.
		return false, nil
	}
	var drift *driftFinding
	if !changed {
		var err error
		if drift, err = r.drift(ctx, s); err != nil || drift == nil {
			return false, err
		}
	}
	if changed && passedGate(st) && (s.newRevision || !sameRender(s.hash, st.RenderHash)) {
		// A new config (or identity) of a running version rolls its Deployments through
		// the health gate, without a new version. A target namespace created or deleted
		// changes only what is granted there: no gate.
		r.startGate(s, "a configuration change")
	}
	cl, err := r.Identities.For(s.id)
	if err != nil {
		return true, err
	}
	// Each object's entry, by its place in the apply order, so the inventory keeps that
	// order however the waves' applies come back.
	entries := make([]*omv1alpha1.InventoryEntry, len(s.objects))
	sofar := func() []omv1alpha1.InventoryEntry {
		out := make([]omv1alpha1.InventoryEntry, 0, len(entries))
		for _, e := range entries {
			if e != nil {
				out = append(out, *e)
			}
		}
		return out
	}
	for _, wave := range waves(s.objects) {
		results := applyWave(ctx, cl, s.objects, wave)
		var failed error
		var failedObj client.Object
		for i, res := range results {
			if res.err != nil {
				if failed == nil {
					failed, failedObj = res.err, s.objects[wave[i]]
				}
				continue
			}
			e := entryOf(res.obj)
			entries[wave[i]] = &e
			if res.obj.GetKind() == "Deployment" {
				r.applied.set(res.obj.GetNamespace(), res.obj.GetName(), res.obj.GetUID(), res.obj.GetGeneration())
			}
		}
		if failed == nil {
			continue
		}
		// What was applied before the refusal (in this wave too) is recorded, so an
		// uninstall or the removal of a failed install finds it all, cluster-scoped
		// objects included.
		st.Inventory = union(st.Inventory, sofar())
		if r.replaceForNewSelector(ctx, s, cl, failedObj, failed) {
			// The previous version's Deployment, whose selector cannot change, is being
			// replaced; the apply is retried once it is gone.
			s.result = ctrl.Result{RequeueAfter: time.Second}
			return true, nil
		}
		if drift != nil {
			// Say what the apply was for: a repair of the object found changed, which
			// the refusal stopped (the installing identity lost its rights, say).
			failed = fmt.Errorf("restoring %s %s (%s): %w", drift.entry.Kind, describeEntry(drift.entry), drift.how, failed)
		}
		return r.refused(s, failed)
	}
	inventory := sofar()
	if err := r.prune(ctx, s, inventory); err != nil {
		return true, err
	}
	// A version's first apply is told by its Installed condition ("N objects applied as
	// whom") and its Blueprint's outcome event, not by an event of its own: one write
	// fewer per installation. Only a repair of hand-made changes is news here.
	if drift != nil && drift.repaired(inventory) {
		metrics.DriftRepairs.WithLabelValues(s.csv.Labels[omv1.LabelPackage], drift.entry.Kind).Inc()
		r.event(s.csv, true, "DriftRepaired", "Restored what was changed by hand: %s %s was %s", drift.entry.Kind, describeEntry(drift.entry), drift.how)
	}
	st.Inventory, st.RenderHash = inventory, s.hash
	s.appliedAll = true
	installed := appliedCondition(len(inventory), s.id.String(), s.absent)
	installed.ObservedGeneration = s.csv.Generation
	if len(s.absent) > 0 {
		if was := meta.FindStatusCondition(st.Conditions, ConditionInstalled); was == nil || was.Message != installed.Message {
			r.event(s.csv, true, ReasonTargetNamespacesMissing, "%s", installed.Message)
		}
	}
	meta.SetStatusCondition(&st.Conditions, installed)
	return false, nil
}

// ReasonTargetNamespacesMissing: a target namespace does not exist (or is being deleted),
// so what the operator would be granted there is not applied until it does.
const ReasonTargetNamespacesMissing = "TargetNamespacesMissing"

// objects counts objects in words: "1 object", "9 objects".
func objects(n int) string {
	if n == 1 {
		return "1 object"
	}
	return fmt.Sprintf("%d objects", n)
}

// appliedCondition is the Installed condition of an apply that went through: n objects
// applied as who, and the target namespaces absent, whose objects wait for them.
func appliedCondition(n int, who string, absent []string) metav1.Condition {
	c := metav1.Condition{Type: ConditionInstalled, Status: metav1.ConditionTrue, Reason: "Applied",
		Message: objects(n) + " applied as " + who}
	if len(absent) > 0 {
		c.Reason = ReasonTargetNamespacesMissing
		what := fmt.Sprintf("target namespace %s does not exist (or is being deleted): what the operator is granted there is applied when it is created", absent[0])
		if len(absent) > 1 {
			what = fmt.Sprintf("target namespaces %s do not exist (or are being deleted): what the operator is granted there is applied when they are created", strings.Join(absent, ", "))
		}
		c.Message += "; " + what + " (or remove it from the Subscription's targetNamespaces or its OperatorGroup's)"
	}
	return c
}

// refused handles an apply the API server refused: a transient error is returned for a
// retry with backoff; a lasting refusal is retried for installRetryBudget and then fails
// the CSV with the refusal named (the Blueprint then applies its rollback policy).
//
// A running version's repair that fails with an error that is no refusal but is not
// momentary either (a policy webhook that is down answers 500 "failed calling webhook")
// is said as a refusal is, with the reason ReconcileError: before, it was retried with
// backoff and only logged, and the CSV said "Succeeded, N objects applied" over a Role
// deleted by hand that could not be restored. A version in its health gate keeps the
// gate's own handling: the error in its phase until its deadline.
func (r *Reconciler) refused(s *scope, err error) (bool, error) {
	ref := kubeapply.Classify(err)
	st := &s.csv.Status
	if !ref.Permanent {
		running := passedGate(st) || st.Phase == omv1alpha1.CSVFailed && st.Reason == omv1.ReasonReconcileError
		if !running || refusal.Momentary(err) {
			return true, err
		}
		ref.Reason = omv1.ReasonReconcileError
	}
	// A version that was applied whole once (its render recorded) and ran: its repair or
	// its new config is what the API server refuses.
	ran := passedGate(st) || st.RenderHash != ""
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: ConditionInstalled, Status: metav1.ConditionFalse, Reason: ref.Reason,
		Message: err.Error(), ObservedGeneration: s.csv.Generation})
	since := meta.FindStatusCondition(st.Conditions, ConditionInstalled).LastTransitionTime.Time
	if since.IsZero() {
		since = s.now
	}
	waited := s.now.Sub(since)
	switch {
	case waited < installRetryBudget && !passedGate(st):
		s.decide(omv1alpha1.CSVInstalling, ref.Reason, "the API server refused an object; retrying for %s: %v", (installRetryBudget - waited).Round(time.Second), err)
		s.result = ctrl.Result{RequeueAfter: installRetryBudget/3 + time.Second}
		return true, nil
	case waited < installRetryBudget && ref.Reason == omv1.ReasonReconcileError:
		// A webhook restarting fails a few requests: the version keeps its phase (its
		// Installed condition says the error) for the budget before it is unhealthy. Kept
		// here, since the steps before decided the phase of a CSV yet to be applied.
		s.decide(st.Phase, st.Reason, "%s", st.Message)
		s.result = ctrl.Result{RequeueAfter: installRetryBudget/3 + time.Second}
		return true, nil
	}
	s.decide(omv1alpha1.CSVFailed, ref.Reason, "%v", err)
	s.result = ctrl.Result{RequeueAfter: resyncAfterGate}
	if ran {
		// A running version's repair or config refused (its identity's rights revoked, a
		// policy): what mends it (a RoleBinding made again) is not watched, so the apply
		// is tried again at a steady pace; refused again, it writes nothing.
		s.result = ctrl.Result{RequeueAfter: refusal.RetryAfter}
	}
	return true, nil
}

// union is the entries of a and those of b not in a (b's replace a's of the same object).
func union(a, b []omv1alpha1.InventoryEntry) []omv1alpha1.InventoryEntry {
	index := map[string]int{}
	out := append([]omv1alpha1.InventoryEntry{}, a...)
	for i, e := range out {
		index[refKey(e)] = i
	}
	for _, e := range b {
		if i, ok := index[refKey(e)]; ok {
			out[i] = e
			continue
		}
		out = append(out, e)
	}
	return out
}

func entryOf(u *unstructured.Unstructured) omv1alpha1.InventoryEntry {
	e := omv1alpha1.InventoryEntry{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
	e.Fingerprint = fingerprint(e.Kind, u)
	return e
}

// fingerprint is what tells a hand edit: a Deployment's generation (its status changes
// all the time, its spec only when someone changes it), other kinds' resourceVersion.
func fingerprint(kind string, o metav1.Object) string {
	if kind == "OperatorCondition" {
		// The operator writes its conditions there: only its deletion is drift.
		return ""
	}
	if kind == "Deployment" {
		return "generation:" + strconv.FormatInt(o.GetGeneration(), 10)
	}
	if kind == "APIService" {
		// The aggregator writes its status all the time, and its spec has no generation.
		return specDigest(o)
	}
	if kind == "ClusterRole" {
		// An aggregated ClusterRole's rules are written by the controller manager, from
		// the roles its aggregationRule selects, whenever one of those changes: only what
		// the manager applies (labels, annotations, the rule) is its to repair. Compared by
		// resourceVersion, each aggregation was drift, repaired by a new apply of every
		// object of the CSV, aggregated again: universal-crossplane looped 150 times a
		// minute.
		if d := aggregatedDigest(o); d != "" {
			return d
		}
	}
	return "resourceVersion:" + o.GetResourceVersion()
}

// aggregatedDigest is a digest of what the manager applies of an aggregated ClusterRole,
// typed or unstructured alike, or "" when o has no aggregationRule.
func aggregatedDigest(o metav1.Object) string {
	rule := topField(o, "aggregationRule")
	if rule == nil {
		return ""
	}
	return digest("aggregated:", map[string]any{"labels": o.GetLabels(), "annotations": o.GetAnnotations(), "aggregationRule": rule})
}

// specDigest is a digest of an object's spec, typed or unstructured alike.
func specDigest(o metav1.Object) string {
	return digest("spec:", topField(o, "spec"))
}

// topField is a top-level field of o as JSON-like data, typed or unstructured alike.
func topField(o metav1.Object, name string) any {
	if u, ok := o.(*unstructured.Unstructured); ok {
		return u.Object[name]
	}
	if ro, ok := o.(runtime.Object); ok {
		if m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ro); err == nil {
			return m[name]
		}
	}
	return nil
}

// digest is prefix and a short hash of v's JSON (maps marshal with sorted keys), or "".
func digest(prefix string, v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return prefix + hex.EncodeToString(sum[:8])
}

// watchedKinds are the installed kinds the manager caches (restricted to its own objects
// by label): their drift is seen at once, through an event.
var watchedKinds = map[string]func() client.Object{
	"Deployment":         func() client.Object { return &appsv1.Deployment{} },
	"ServiceAccount":     func() client.Object { return &corev1.ServiceAccount{} },
	"Service":            func() client.Object { return &corev1.Service{} },
	"Role":               func() client.Object { return &rbacv1.Role{} },
	"RoleBinding":        func() client.Object { return &rbacv1.RoleBinding{} },
	"ClusterRole":        func() client.Object { return &rbacv1.ClusterRole{} },
	"ClusterRoleBinding": func() client.Object { return &rbacv1.ClusterRoleBinding{} },
	// A webhook configuration deleted by hand silently turns validation off: restored at once.
	"ValidatingWebhookConfiguration": func() client.Object { return &admissionregistrationv1.ValidatingWebhookConfiguration{} },
	"MutatingWebhookConfiguration":   func() client.Object { return &admissionregistrationv1.MutatingWebhookConfiguration{} },
	// So is an APIService: without it the operator's API is gone.
	"APIService": func() client.Object { return &apiregistrationv1.APIService{} },
}

// driftFinding is an inventoried object deleted or changed by someone else: how, and its
// fingerprint as found ("" when gone).
type driftFinding struct {
	entry     omv1alpha1.InventoryEntry
	how, live string
	// unreadable: the identity may not read the object, so nothing is known to have
	// drifted; an apply that then goes through restored nothing that is known of.
	unreadable bool
}

// repaired says whether the apply that followed the finding changed the object, by its
// entry in the new inventory. A change to fields the manager does not apply (`kubectl
// rollout restart`'s annotation, a label someone added) is applied over as a no-op: the
// object comes back as found, and nothing was restored, so nothing is said.
func (d *driftFinding) repaired(inventory []omv1alpha1.InventoryEntry) bool {
	if d.unreadable {
		return false
	}
	for _, e := range inventory {
		if refKey(e) == refKey(d.entry) {
			return d.live == "" || e.Fingerprint != d.live
		}
	}
	return true
}

// drift finds the first inventoried object that was deleted or changed by someone else,
// or nil. Watched kinds are read from the cache on every reconcile (and what the cache
// says is confirmed with a direct read, since it may lag behind an apply just made); the
// others (Secrets, ConfigMaps, the bundle's other kinds) by their metadata only, once per
// resync period.
func (r *Reconciler) drift(ctx context.Context, s *scope) (found *driftFinding, err error) {
	deep := r.deep.due(s.csv.UID, s.now)
	defer func() {
		if deep && err != nil {
			r.deep.forget(s.csv.UID) // cut short: the next pass checks again
		}
	}()
	var unreadable *driftFinding
	for _, e := range s.csv.Status.Inventory {
		key := client.ObjectKey{Namespace: e.Namespace, Name: e.Name}
		if newObj, ok := watchedKinds[e.Kind]; ok {
			obj := newObj()
			err := r.Client.Get(ctx, key, obj)
			if err != nil && !apierrors.IsNotFound(err) {
				return nil, err
			}
			if err == nil && (e.Fingerprint == "" || fingerprint(e.Kind, obj) == e.Fingerprint) {
				continue
			}
			if err == nil && r.sharedWithLive(ctx, s.csv, e, obj) {
				continue
			}
		} else if !deep {
			continue
		}
		how, live, err := r.driftedLive(ctx, s, e)
		if apierrors.IsForbidden(err) {
			// The installing identity may no longer read it (a RoleBinding deleted, the
			// ServiceAccount gone). What the cache says of a watched kind stands; of
			// another, nothing can be told, so a definite finding further on is preferred.
			// Either way the apply that follows is the test, and its refusal is said on
			// the CSV, not only in the manager's log.
			if _, watched := watchedKinds[e.Kind]; watched {
				return &driftFinding{entry: e, how: "deleted"}, nil
			}
			if unreadable == nil {
				unreadable = &driftFinding{entry: e, how: "not readable by " + s.id.String(), unreadable: true}
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		if how != "" {
			return &driftFinding{entry: e, how: how, live: live}, nil
		}
	}
	return unreadable, nil
}

// driftedLive reads an object's metadata from the API server and says how it drifted
// ("deleted", "changed", "no longer served", or ""), with its fingerprint as read.
func (r *Reconciler) driftedLive(ctx context.Context, s *scope, e omv1alpha1.InventoryEntry) (string, string, error) {
	reader, err := r.Identities.Reader(s.id)
	if err != nil {
		return "", "", err
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(schema.FromAPIVersionAndKind(e.APIVersion, e.Kind))
	if err := reader.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: e.Name}, obj); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return "deleted", "", nil
		case meta.IsNoMatchError(err):
			return "no longer served", "", nil
		}
		return "", "", err
	}
	live := fingerprint(e.Kind, obj)
	if e.Fingerprint != "" && live != e.Fingerprint && !r.sharedWithLive(ctx, s.csv, e, obj) {
		return "changed", live, nil
	}
	return "", "", nil
}

// sharedWithLive reports whether a cluster-scoped object of the inventory is now owned by
// another live CSV of the same package: an object the bundle names itself (a ClusterRole
// among its manifests), which installations of the package side by side share. Its
// latest applier owns it; that is no drift, or two installations would take it from each
// other without end. Uninstalling the owner hands it over (finalize), so it stays while
// anyone uses it.
func (r *Reconciler) sharedWithLive(ctx context.Context, csv *omv1alpha1.ClusterServiceVersion, e omv1alpha1.InventoryEntry, obj metav1.Object) bool {
	owner := obj.GetAnnotations()[render.AnnotationOwner]
	ns, name, ok := strings.Cut(owner, "/")
	if e.Namespace != "" || !ok || owner == csv.Namespace+"/"+csv.Name {
		return false
	}
	other := &omv1alpha1.ClusterServiceVersion{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, other); err != nil {
		return false
	}
	return other.DeletionTimestamp.IsZero() && other.Labels[omv1.LabelPackage] == csv.Labels[omv1.LabelPackage]
}

func describeEntry(e omv1alpha1.InventoryEntry) string {
	if e.Namespace == "" {
		return e.Name
	}
	return e.Namespace + "/" + e.Name
}

// prune deletes, as the installation's identity, the objects of the previous inventory
// that are no longer rendered (a target namespace dropped, a bundle object removed), if
// they are still this CSV's.
func (r *Reconciler) prune(ctx context.Context, s *scope, next []omv1alpha1.InventoryEntry) error {
	keep := map[string]bool{}
	for _, e := range next {
		keep[refKey(e)] = true
	}
	var gone []omv1alpha1.InventoryEntry
	for _, e := range s.csv.Status.Inventory {
		if !keep[refKey(e)] {
			gone = append(gone, e)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	_, err := r.deleteEntries(ctx, s.csv, s.id, gone)
	return err
}

func refKey(e omv1alpha1.InventoryEntry) string {
	gv, _ := schema.ParseGroupVersion(e.APIVersion)
	return gv.Group + "/" + e.Kind + "/" + e.Namespace + "/" + e.Name
}

// ownedBy reports whether an object still belongs to the CSV: objects that pass to the
// next version of an installation (its Deployments, service accounts) carry the newer
// CSV's owner annotation and must stay.
// replaceForNewSelector deletes the Deployment of an earlier version of the same
// installation when the new version changes its selector, which the API server refuses
// to update ("field is immutable"), or moves to the Recreate strategy, as OLM does: the new Deployment is created on the next
// apply. It reports whether it did; a Deployment that is not this installation's is left
// alone, and the refusal stands.
func (r *Reconciler) replaceForNewSelector(ctx context.Context, s *scope, cl client.Client, obj client.Object, applyErr error) bool {
	dep, ok := obj.(*appsv1.Deployment)
	msg := applyErr.Error()
	selector := strings.Contains(msg, "spec.selector") && strings.Contains(msg, "field is immutable")
	// A change to the Recreate strategy leaves the rollingUpdate the API server defaulted
	// (owned by no one, so not removed by the apply), which it then refuses.
	recreate := strings.Contains(msg, "spec.strategy.rollingUpdate") && strings.Contains(msg, "Recreate")
	if !ok || !apierrors.IsInvalid(applyErr) || (!selector && !recreate) {
		return false
	}
	live := &appsv1.Deployment{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(dep), live); err != nil {
		return false
	}
	if live.Labels[render.LabelOwnerNamespace] != s.csv.Namespace || live.Labels[render.LabelPackage] != dep.Labels[render.LabelPackage] {
		return false
	}
	if live.DeletionTimestamp == nil {
		if err := cl.Delete(ctx, live, client.Preconditions{UID: &live.UID}, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
			return false
		}
		what := "its selector"
		if recreate {
			what = "to the Recreate strategy"
		}
		r.event(s.csv, false, "DeploymentReplaced", "Deployment %s changes %s in %s, which cannot be applied in place: replacing it", dep.Name, what, s.csv.Name)
	}
	return true
}

func ownedBy(o metav1.Object, csv *omv1alpha1.ClusterServiceVersion) bool {
	return o.GetAnnotations()[render.AnnotationOwner] == csv.Namespace+"/"+csv.Name
}
