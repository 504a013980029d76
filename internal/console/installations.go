package console

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/controller/blueprint"
	"github.com/operator-manager/operator-manager/internal/controller/subscription"
	"github.com/operator-manager/operator-manager/internal/installevents"
	"github.com/operator-manager/operator-manager/internal/render"
	"github.com/operator-manager/operator-manager/internal/revisionstore"
)

// namespacesFor returns the namespaces to read resource (of this group) in: [""] when the
// person may list it cluster-wide; else the namespaces they may list it in, among all
// namespaces when they may list those, always with the kubeconfig's default namespace and
// those the request names (?namespace=a,b), which are tried even when not allowed so a
// refusal is the API server's.
func (s *Server) namespacesFor(ctx context.Context, r *http.Request, id *identity, resource string) ([]string, bool, error) {
	may := func(ns string) (bool, error) {
		review, err := id.kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: "list", Group: omv1.GroupVersion.Group, Resource: resource}}}, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		return review.Status.Allowed, nil
	}
	all, err := may("")
	if err != nil {
		return nil, false, err
	}
	if all {
		return []string{""}, true, nil
	}
	var out []string
	add := func(ns string) {
		if ns != "" && !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	add(id.namespace)
	if resource == "catalogsources" {
		for _, ns := range s.opts.CatalogNamespaces {
			add(ns)
		}
	}
	if r != nil {
		for _, ns := range strings.Split(r.URL.Query().Get("namespace"), ",") {
			add(strings.TrimSpace(ns))
		}
	}
	nss := &corev1.NamespaceList{}
	if err := id.c.List(ctx, nss); err == nil {
		for _, n := range nss.Items {
			if slices.Contains(out, n.Name) {
				continue
			}
			if ok, err := may(n.Name); err == nil && ok {
				add(n.Name)
			}
		}
	}
	return out, false, nil
}

// eachNamespace calls fn for each namespace the person may read resource in ("" for all
// of them at once). A namespace that refuses is skipped unless every one refuses.
func (s *Server) eachNamespace(ctx context.Context, r *http.Request, id *identity, resource string, fn func(ns string) error) error {
	nss, _, err := s.namespacesFor(ctx, r, id, resource)
	if err != nil {
		return err
	}
	var refused error
	done := 0
	for _, ns := range nss {
		err := fn(ns)
		switch {
		case err == nil:
			done++
		case apierrors.IsForbidden(err):
			if refused == nil {
				refused = err
			}
		default:
			return err
		}
	}
	if done == 0 && refused != nil {
		return refused
	}
	return nil
}

// row is one installation: a Subscription joined with its Blueprint.
type row struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Package   string `json:"package"`
	Catalog   string `json:"catalog"`
	CSV       string `json:"csv"`
	Version   string `json:"version"`
	Phase     string `json:"phase"`
	Ready     string `json:"ready"`
	Reason    string `json:"reason"`
	Message   string `json:"message"`
	// State sorts the Ready condition as the metrics and alerts do (ready, progressing,
	// waiting, scheduled, paused, failed, unhealthy, unresolved, uninstalled): Ready
	// False is a fault only in some of them.
	State           string `json:"state"`
	PendingApproval string `json:"pendingApproval"`
	Revision        int64  `json:"revision"`
	Paused          bool   `json:"paused"`
	// Retry is the target a retry would try again (a change that ended Failed, RolledBack
	// or Blocked: blueprint.Retryable), empty when there is nothing to retry.
	Retry string `json:"retry,omitempty"`
	// Deprecation is what the catalog says is deprecated about this installation (its
	// package, channel or version): the message of the Subscription's Deprecated condition.
	Deprecation string `json:"deprecation,omitempty"`
}

// rowOf joins a Subscription and its Blueprint (nil when there is none yet).
func rowOf(sub *omv1.Subscription, bp *omv1.Blueprint) row {
	rw := row{Namespace: sub.Namespace, Name: sub.Name, Package: first(sub.Spec.PackageName(), sub.Status.Package),
		CSV: sub.Status.InstalledCSV, Version: sub.Status.InstalledVersion, Ready: string(metav1.ConditionUnknown),
		Revision: sub.Status.CurrentRevision, Paused: sub.Spec.Paused}
	rw.Catalog = sub.Spec.CatalogRef(sub.Namespace) // as the Blueprint names the catalog it resolved from
	conds := sub.Status.Conditions
	if bp != nil {
		rw.Package = first(rw.Package, bp.Spec.Package)
		rw.Catalog = first(rw.Catalog, bp.Spec.Catalog)
		rw.CSV, rw.Version = first(bp.Status.CurrentCSV, rw.CSV), first(bp.Status.CurrentVersion, rw.Version)
		rw.Phase = string(bp.Status.Phase)
		if bp.Status.Phase == omv1.BlueprintWaitingForApproval {
			rw.PendingApproval = bp.Spec.ClusterServiceVersionName
		}
		if blueprint.Retryable(bp) == nil {
			rw.Retry = bp.Spec.ClusterServiceVersionName
		}
		if n := len(bp.Status.History); n > 0 && rw.Revision == 0 {
			rw.Revision = bp.Status.History[n-1].Revision
		}
		if meta.FindStatusCondition(conds, omv1.ConditionReady) == nil {
			conds = bp.Status.Conditions
		}
	}
	if c := meta.FindStatusCondition(conds, omv1.ConditionReady); c != nil {
		rw.Ready, rw.Reason, rw.Message = string(c.Status), c.Reason, c.Message
	}
	rw.State = subscription.State(&sub.Status)
	if c := meta.FindStatusCondition(sub.Status.Conditions, omv1.ConditionDeprecated); c != nil && c.Status == metav1.ConditionTrue {
		rw.Deprecation = c.Message
	}
	return rw
}

func first(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func (s *Server) listInstallations(w http.ResponseWriter, r *http.Request, id *identity) {
	rows, err := s.rows(r.Context(), r, id)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rows)
}

// rows lists every installation the person may read.
func (s *Server) rows(ctx context.Context, r *http.Request, id *identity) ([]row, error) {
	out := []row{}
	err := s.eachNamespace(ctx, r, id, "subscriptions", func(ns string) error {
		subs, bps := &omv1.SubscriptionList{}, &omv1.BlueprintList{}
		if err := id.c.List(ctx, subs, client.InNamespace(ns)); err != nil {
			return err
		}
		byKey := map[string]*omv1.Blueprint{}
		if err := id.c.List(ctx, bps, client.InNamespace(ns)); err == nil {
			for i := range bps.Items {
				byKey[bps.Items[i].Namespace+"/"+bps.Items[i].Name] = &bps.Items[i]
			}
		} else if !apierrors.IsForbidden(err) {
			return err
		}
		for i := range subs.Items {
			sub := &subs.Items[i]
			out = append(out, rowOf(sub, byKey[sub.Namespace+"/"+sub.Name]))
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name })
	return out, err
}

// rowFor reads one installation; nil when its Subscription is gone.
func rowFor(ctx context.Context, id *identity, key client.ObjectKey) (*row, error) {
	sub := &omv1.Subscription{}
	if err := id.c.Get(ctx, key, sub); apierrors.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	bp := &omv1.Blueprint{}
	if err := id.c.Get(ctx, key, bp); err != nil {
		bp = nil
	}
	rw := rowOf(sub, bp)
	return &rw, nil
}

// stream sends a row whenever a Subscription or Blueprint the person may watch changes,
// as server-sent events, until the request ends.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, id *identity) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, fmt.Errorf("the connection cannot stream"))
		return
	}
	nss, _, err := s.namespacesFor(ctx, r, id, "subscriptions")
	if err != nil {
		writeError(w, err)
		return
	}
	changed := make(chan client.ObjectKey, 64)
	var started int
	var refused error
	for _, ns := range nss {
		for _, list := range []client.ObjectList{&omv1.SubscriptionList{}, &omv1.BlueprintList{}} {
			wi, rv, err := startWatch(ctx, id, list, ns, "")
			if err != nil {
				if apierrors.IsForbidden(err) {
					refused = err
					continue
				}
				writeError(w, err)
				return
			}
			started++
			go follow(ctx, id, list, ns, wi, rv, changed)
		}
	}
	if started == 0 && refused != nil {
		writeError(w, refused)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": watching\n\n")
	flusher.Flush()
	tick := time.NewTicker(s.opts.KeepAlive)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": keepalive\n\n"); err != nil {
				return
			}
			flusher.Flush()
		case key := <-changed:
			rw, err := rowFor(ctx, id, key)
			var event string
			var data []byte
			switch {
			case err != nil:
				continue // the next change, or the page's reload, tells
			case rw == nil:
				event = "deleted"
				data, _ = json.Marshal(map[string]string{"namespace": key.Namespace, "name": key.Name})
			default:
				event = "installation"
				data, _ = json.Marshal(rw)
			}
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}

// startWatch lists (for a resource version, unless one is given) and watches list's kind
// in ns as the person.
func startWatch(ctx context.Context, id *identity, list client.ObjectList, ns, rv string) (watch.Interface, string, error) {
	if rv == "" {
		fresh := list.DeepCopyObject().(client.ObjectList)
		if err := id.c.List(ctx, fresh, client.InNamespace(ns), client.Limit(1)); err != nil {
			return nil, "", err
		}
		rv = fresh.GetResourceVersion()
	}
	wi, err := id.c.Watch(ctx, list.DeepCopyObject().(client.ObjectList), client.InNamespace(ns),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
	return wi, rv, err
}

// follow passes on the key of every changed object, watching again when the API server
// ends the watch, until ctx ends.
func follow(ctx context.Context, id *identity, list client.ObjectList, ns string, wi watch.Interface, rv string, changed chan<- client.ObjectKey) {
	for {
		gone := false
		for ev := range wi.ResultChan() {
			switch ev.Type {
			case watch.Error:
				gone = true
			case watch.Bookmark:
				if o, err := meta.Accessor(ev.Object); err == nil {
					rv = o.GetResourceVersion()
				}
			default:
				o, err := meta.Accessor(ev.Object)
				if err != nil {
					continue
				}
				rv = o.GetResourceVersion()
				select {
				case changed <- client.ObjectKey{Namespace: o.GetNamespace(), Name: o.GetName()}:
				case <-ctx.Done():
					wi.Stop()
					return
				}
			}
		}
		wi.Stop()
		for {
			if ctx.Err() != nil {
				return
			}
			if gone {
				rv = "" // too old: start from now
			}
			var err error
			if wi, rv, err = startWatch(ctx, id, list, ns, rv); err == nil {
				break
			}
			gone = true
			select {
			case <-ctx.Done():
				return
			case <-time.After(2 * time.Second):
			}
		}
	}
}

// detailBody is GET /api/installations/{ns}/{name}.
type detailBody struct {
	Row          row                `json:"row"`
	Subscription *omv1.Subscription `json:"subscription"`
	Blueprint    *omv1.Blueprint    `json:"blueprint"`
	History      []historyBody      `json:"history"`
	Health       *healthBody        `json:"health"`
	Preflight    *conditionBody     `json:"preflight"`
	Dependencies []dependencyBody   `json:"dependencies"`
	Dependents   []dependentBody    `json:"dependents"`
	Events       []eventBody        `json:"events"`
}

type historyBody struct {
	Revision    int64  `json:"revision"`
	Trigger     string `json:"trigger"`
	CSV         string `json:"csv"`
	Version     string `json:"version"`
	FromVersion string `json:"fromVersion"`
	Outcome     string `json:"outcome"`
	Reason      string `json:"reason"`
	Message     string `json:"message"`
	Start       string `json:"start"`
	End         string `json:"end"`
	Duration    string `json:"duration"`
	// Kept is whether the cluster still keeps the revision's bundle; null when the
	// viewer may not read the bundle Secrets, so it is not known.
	Kept *bool `json:"kept"`
	// Imported: the revision ran on the cluster the installation was exported from.
	Imported bool `json:"imported,omitempty"`
}

type healthBody struct {
	CSV         string           `json:"csv"`
	Phase       string           `json:"phase"`
	Message     string           `json:"message"`
	WaitingFor  string           `json:"waitingFor"`
	Deadline    string           `json:"deadline"`
	TimeLeft    string           `json:"timeLeft"`
	Deployments []deploymentBody `json:"deployments"`
	Pods        []podBody        `json:"pods"`
}

type deploymentBody struct {
	Name      string `json:"name"`
	Desired   int32  `json:"desired"`
	Updated   int32  `json:"updated"`
	Ready     int32  `json:"ready"`
	Available int32  `json:"available"`
	// Watches is the namespaces the operator was rendered to watch (its pod template's
	// olm.targetNamespaces, comma separated; "" for all namespaces); absent when the
	// Deployment could not be read.
	Watches *string `json:"watches,omitempty"`
}

type podBody struct {
	Name   string `json:"name"`
	Ready  bool   `json:"ready"`
	Phase  string `json:"phase"`
	Reason string `json:"reason"`
}

type conditionBody struct {
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

type dependencyBody struct {
	Package string `json:"package"`
	CSV     string `json:"csv"`
	// Namespace and Subscription name the installation running it (Namespace is the
	// dependent's own unless another namespace's installation runs it for it).
	Namespace    string `json:"namespace"`
	Subscription string `json:"subscription"`
}

type dependentBody struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Package   string `json:"package"`
}

type eventBody struct {
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Object  string `json:"object"`
	Time    string `json:"time"`
}

func rfc3339(t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func (s *Server) installationDetail(w http.ResponseWriter, r *http.Request, id *identity) {
	ctx := r.Context()
	key := client.ObjectKey{Namespace: r.PathValue("ns"), Name: r.PathValue("name")}
	sub := &omv1.Subscription{}
	if err := id.c.Get(ctx, key, sub); err != nil {
		writeError(w, err)
		return
	}
	var bp *omv1.Blueprint
	if got := (&omv1.Blueprint{}); id.c.Get(ctx, key, got) == nil {
		bp = got
	}
	doc := detailBody{Row: rowOf(sub, bp), Subscription: sub, Blueprint: bp, History: []historyBody{}, Dependencies: []dependencyBody{},
		Dependents: []dependentBody{}, Events: []eventBody{}}
	if bp != nil {
		doc.History = historyOf(ctx, id, bp)
		doc.Health = healthOf(ctx, id, sub, bp)
		if c := meta.FindStatusCondition(bp.Status.Conditions, omv1.ConditionBlocked); c != nil && (c.Reason == omv1.ReasonCRDPreflightFailed || c.Reason == omv1.ReasonCRDMigrationFailed) {
			doc.Preflight = &conditionBody{Status: string(c.Status), Reason: c.Reason, Message: c.Message}
		}
		doc.Dependencies, doc.Dependents = dependenciesOf(ctx, id, bp)
	}
	doc.Events = eventsOf(ctx, id, sub, bp)
	writeJSON(w, http.StatusOK, doc)
}

// historyOf is the Blueprint's revisions, newest first, with whether the cluster keeps
// each one's bundle (unknown, null, where the person may not read the Secret).
func historyOf(ctx context.Context, id *identity, bp *omv1.Blueprint) []historyBody {
	store := &revisionstore.Store{Client: id.c}
	out := []historyBody{}
	for i := len(bp.Status.History) - 1; i >= 0; i-- {
		h := bp.Status.History[i]
		hb := historyBody{Revision: h.Revision, Trigger: string(h.Trigger), CSV: h.CSVName, Version: h.Version, FromVersion: h.FromVersion, Imported: h.Imported,
			Outcome: string(h.Outcome), Reason: h.Reason, Message: h.Message, Start: rfc3339(h.StartTime), End: rfc3339(h.EndTime)}
		if h.StartTime != nil && h.EndTime != nil {
			hb.Duration = h.EndTime.Sub(h.StartTime.Time).Round(time.Second).String()
		}
		if h.BundleDigest != "" {
			if st, err := store.Stat(ctx, bp.Namespace, bp.Name, h.BundleDigest); err == nil {
				kept := st != nil
				hb.Kept = &kept
			}
		}
		out = append(out, hb)
	}
	return out
}

// healthOf is the health of the version the Blueprint targets: its CSV's phase, the
// Deployments it names and their pods, and the pending revision's deadline.
func healthOf(ctx context.Context, id *identity, sub *omv1.Subscription, bp *omv1.Blueprint) *healthBody {
	hb := &healthBody{CSV: first(bp.Spec.ClusterServiceVersionName, bp.Status.CurrentCSV), Deployments: []deploymentBody{}, Pods: []podBody{}}
	if hb.CSV == "" {
		return hb
	}
	csv := &omv1alpha1.ClusterServiceVersion{}
	read := id.c.Get(ctx, client.ObjectKey{Namespace: bp.Namespace, Name: hb.CSV}, csv) == nil
	if read {
		hb.Phase, hb.Message = string(csv.Status.Phase), csv.Status.Message
		if csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs != nil {
			for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
				dep := &appsv1.Deployment{}
				db := deploymentBody{Name: d.Name}
				if err := id.c.Get(ctx, client.ObjectKey{Namespace: bp.Namespace, Name: d.Name}, dep); err == nil {
					db.Desired, db.Updated, db.Ready, db.Available = 1, dep.Status.UpdatedReplicas, dep.Status.ReadyReplicas, dep.Status.AvailableReplicas
					watches := dep.Spec.Template.Annotations[render.AnnotationTargetNamespaces]
					db.Watches = &watches
					if dep.Spec.Replicas != nil {
						db.Desired = *dep.Spec.Replicas
					}
					hb.Pods = append(hb.Pods, podsOf(ctx, id, dep)...)
				}
				hb.Deployments = append(hb.Deployments, db)
			}
		}
	}
	if c := meta.FindStatusCondition(bp.Status.Conditions, omv1.ConditionProgressing); c != nil && c.Status == metav1.ConditionTrue {
		hb.WaitingFor = c.Message
	}
	for i := len(bp.Status.History) - 1; i >= 0; i-- {
		h := bp.Status.History[i]
		if h.Outcome == omv1.OutcomePending && h.StartTime != nil {
			deadline := blueprint.Deadline(h.StartTime.Time, sub)
			hb.Deadline = deadline.UTC().Format(time.RFC3339)
			hb.TimeLeft = max(time.Until(deadline), 0).Round(time.Second).String()
			if hb.WaitingFor == "" && hb.Phase != string(omv1alpha1.CSVSucceeded) {
				hb.WaitingFor = hb.Message
			}
			if hb.WaitingFor != "" && read && csv.Name == h.CSVName && csv.Status.Revision == h.Revision {
				// The CSV's own rollout words, live, and its outcome until the Blueprint
				// records it: the Blueprint repeats them only now and then, and its words
				// may still be of an earlier step (its CRDs).
				hb.WaitingFor = csv.RevisionProgress()
			}
			break
		}
	}
	return hb
}

func podsOf(ctx context.Context, id *identity, dep *appsv1.Deployment) []podBody {
	out := []podBody{}
	if dep.Spec.Selector == nil {
		return out
	}
	sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
	if err != nil {
		return out
	}
	pods := &corev1.PodList{}
	if err := id.c.List(ctx, pods, client.InNamespace(dep.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return out
	}
	for _, p := range pods.Items {
		pb := podBody{Name: p.Name, Phase: string(p.Status.Phase), Reason: p.Status.Reason}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				pb.Ready = c.Status == corev1.ConditionTrue
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			if pb.Reason != "" {
				break
			}
			if cs.State.Waiting != nil {
				pb.Reason = cs.State.Waiting.Reason
			} else if cs.State.Terminated != nil {
				pb.Reason = cs.State.Terminated.Reason
			}
		}
		out = append(out, pb)
	}
	return out
}

// dependenciesOf is what the Blueprint depends on (with the Subscription running each: in
// its namespace, or the installation of another namespace that runs for it, servedFrom)
// and the Blueprints that depend on it (of its namespace by package, of other namespaces
// by servedFrom). A person who may not list Blueprints of every namespace sees those of
// the installation's namespace.
func dependenciesOf(ctx context.Context, id *identity, bp *omv1.Blueprint) ([]dependencyBody, []dependentBody) {
	deps, dependents := []dependencyBody{}, []dependentBody{}
	bps := &omv1.BlueprintList{}
	if err := id.c.List(ctx, bps); err != nil {
		if err := id.c.List(ctx, bps, client.InNamespace(bp.Namespace)); err != nil {
			bps.Items = nil
		}
	}
	for _, d := range bp.Spec.Dependencies {
		db := dependencyBody{Package: d.Package, CSV: d.CSVName, Namespace: bp.Namespace}
		if ns, name, ok := strings.Cut(d.ServedFrom, "/"); ok {
			db.Namespace, db.Subscription = ns, name
		} else {
			for _, o := range bps.Items {
				if o.Namespace == bp.Namespace && o.Spec.Package == d.Package && o.Name != bp.Name {
					db.Subscription = o.Name
					break
				}
			}
		}
		deps = append(deps, db)
	}
	for i := range bps.Items {
		o := &bps.Items[i]
		if o.Namespace == bp.Namespace && o.Name == bp.Name {
			continue
		}
		// The Blueprint has the name of its Subscription.
		if o.DependsOn(bp.Namespace, bp.Name, bp.Spec.Package) {
			dependents = append(dependents, dependentBody{Namespace: o.Namespace, Name: o.Name, Package: o.Spec.Package})
		}
	}
	// Those of the installation's namespace first, then by namespace and name.
	slices.SortStableFunc(dependents, func(a, b dependentBody) int {
		elsewhere := func(d dependentBody) int {
			if d.Namespace == bp.Namespace {
				return 0
			}
			return 1
		}
		return cmp.Or(cmp.Compare(elsewhere(a), elsewhere(b)), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return deps, dependents
}

// maxEvents is how many events the detail shows.
const maxEvents = 50

// eventsOf is the manager's events about the installation (installevents), newest first,
// at most maxEvents: none where the viewer may not list events.
func eventsOf(ctx context.Context, id *identity, sub *omv1.Subscription, bp *omv1.Blueprint) []eventBody {
	evs, err := installevents.List(ctx, id.c, sub, bp)
	out := []eventBody{}
	if err != nil {
		return out
	}
	for i := 0; i < len(evs) && i < maxEvents; i++ {
		e := evs[i]
		out = append(out, eventBody{Type: e.Type, Reason: e.Reason, Message: e.Message, Object: e.Object, Time: e.Time.Format(time.RFC3339)})
	}
	return out
}
