// Package operatorgroup reads OLM's OperatorGroup: at most one per namespace, whose target
// namespaces and ServiceAccount the Subscriptions of that namespace take when they do not
// say their own.
//
// Its target namespaces are named (spec.targetNamespaces) or selected by label
// (spec.selector, read only when none are named, as in OLM). Of resolves a selector to the
// namespaces it selects at that moment, so every reader sees names; the controllers also
// watch Namespaces (Watch), so labelling a namespace re-renders the operators that now
// watch it.
//
// The OperatorGroup's values are laid over a Subscription in memory, where a controller
// reads it (Apply), never written into it: the Subscription stays as its author wrote it,
// and a changed OperatorGroup takes effect on the next reconcile (each controller that
// reads targets or the ServiceAccount watches OperatorGroups).
package operatorgroup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// TooManyError says a namespace has several OperatorGroups, naming them.
type TooManyError struct {
	Namespace string
	Names     []string
}

func (e *TooManyError) Error() string {
	return fmt.Sprintf("namespace %s has %d OperatorGroups (%s): what its operators watch is ambiguous; keep one", e.Namespace, len(e.Names), strings.Join(e.Names, ", "))
}

// NoTargetsError says an OperatorGroup's selector selects no namespace. Its operators are
// not rendered for no namespace (which would be read as all of them): what runs stays as
// it is until a namespace is selected.
type NoTargetsError struct {
	Namespace, Name string
	Selector        string // the selector, as kubectl prints one
}

func (e *NoTargetsError) Error() string {
	return fmt.Sprintf("OperatorGroup %s/%s selects no namespace (spec.selector %s): label the namespaces its operators should watch, or name them in spec.targetNamespaces",
		e.Namespace, e.Name, e.Selector)
}

// Unusable says whether err is an OperatorGroup that gives no answer (several in the
// namespace, a selector that selects no namespace), with the Subscription condition reason
// that says so. Until it gives one, its Subscriptions wait and nothing installed changes.
func Unusable(err error) (reason string, ok bool) {
	var many *TooManyError
	var none *NoTargetsError
	switch {
	case errors.As(err, &many):
		return omv1.ReasonTooManyOperatorGroups, true
	case errors.As(err, &none):
		return omv1.ReasonNoTargetNamespaces, true
	}
	return "", false
}

// Of returns the OperatorGroup of namespace ns: nil when there is none, a *TooManyError
// when there are several. A selector (with no targetNamespaces) comes back resolved, in a
// copy: spec.targetNamespaces holds the names of the namespaces it selects now, sorted,
// and spec.selector is cleared; a *NoTargetsError when it selects none.
func Of(ctx context.Context, r client.Reader, ns string) (*omv1.OperatorGroup, error) {
	return NewReader(r).Of(ctx, ns)
}

// Reader answers Of for many namespaces in one pass (a controller going over every
// Subscription of the cluster): each namespace's OperatorGroups are listed once, and the
// cluster's namespaces at most once, however many Subscriptions share them. It is for
// one pass only: it never sees a change made after it read.
type Reader struct {
	r       client.Reader
	of      map[string]ofAnswer
	nss     []metav1.PartialObjectMetadata
	nssRead bool
}

type ofAnswer struct {
	og  *omv1.OperatorGroup
	err error
}

// NewReader returns a Reader over r (the controllers' cache, or an API reader).
func NewReader(r client.Reader) *Reader { return &Reader{r: r, of: map[string]ofAnswer{}} }

// Of is the package's Of, remembered per namespace. The OperatorGroup it returns is
// shared between calls: read it, do not change it (Apply copies what it takes).
func (m *Reader) Of(ctx context.Context, ns string) (*omv1.OperatorGroup, error) {
	if a, ok := m.of[ns]; ok {
		return a.og, a.err
	}
	og, err := m.of1(ctx, ns)
	m.of[ns] = ofAnswer{og, err}
	return og, err
}

func (m *Reader) of1(ctx context.Context, ns string) (*omv1.OperatorGroup, error) {
	list := &omv1.OperatorGroupList{}
	if err := m.r.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing the OperatorGroups of namespace %s: %w", ns, err)
	}
	og, err := pick(ns, list.Items)
	if err != nil || og == nil || !selects(og) {
		return og, err
	}
	if !m.nssRead {
		nss, err := namespaces(ctx, m.r)
		if err != nil {
			return nil, fmt.Errorf("listing the namespaces OperatorGroup %s/%s selects: %w", ns, og.Name, err)
		}
		m.nss, m.nssRead = nss, true
	}
	return resolve(og, m.nss)
}

// ApplyFrom is the package's ApplyFrom through the Reader.
func (m *Reader) ApplyFrom(ctx context.Context, sub *omv1.Subscription) error {
	og, err := m.Of(ctx, sub.Namespace)
	if err != nil {
		return err
	}
	Apply(sub, og)
	return nil
}

// selects says whether og's targets come from its selector: OLM reads spec.selector only
// when spec.targetNamespaces is empty, and an empty selector ({}) means all namespaces, as
// no selector does.
func selects(og *omv1.OperatorGroup) bool {
	sel := og.Spec.Selector
	return len(og.Spec.TargetNamespaces) == 0 && sel != nil && (len(sel.MatchLabels) > 0 || len(sel.MatchExpressions) > 0)
}

// resolve is Of's decision for a selecting OperatorGroup: a copy naming the namespaces of
// nss that og's selector selects (those being deleted left out), or a *NoTargetsError.
func resolve(og *omv1.OperatorGroup, nss []metav1.PartialObjectMetadata) (*omv1.OperatorGroup, error) {
	sel, err := metav1.LabelSelectorAsSelector(og.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("OperatorGroup %s/%s: spec.selector: %w", og.Namespace, og.Name, err)
	}
	var names []string
	for i := range nss {
		if nss[i].DeletionTimestamp.IsZero() && sel.Matches(labels.Set(nss[i].Labels)) {
			names = append(names, nss[i].Name)
		}
	}
	if len(names) == 0 {
		return nil, &NoTargetsError{Namespace: og.Namespace, Name: og.Name, Selector: sel.String()}
	}
	sort.Strings(names)
	out := og.DeepCopy()
	out.Spec.TargetNamespaces, out.Spec.Selector = names, nil
	return out, nil
}

// namespaces lists the cluster's namespaces, their metadata only (the controllers' cache
// keeps only that: Watch registers the same metadata informer).
func namespaces(ctx context.Context, r client.Reader) ([]metav1.PartialObjectMetadata, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "NamespaceList"})
	if err := r.List(ctx, list); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// pick is Of's decision: one OperatorGroup (those being deleted do not count), none, or
// too many.
func pick(ns string, items []omv1.OperatorGroup) (*omv1.OperatorGroup, error) {
	var live []*omv1.OperatorGroup
	for i := range items {
		if items[i].DeletionTimestamp.IsZero() {
			live = append(live, &items[i])
		}
	}
	switch len(live) {
	case 0:
		return nil, nil
	case 1:
		return live[0], nil
	}
	names := make([]string, len(live))
	for i, og := range live {
		names[i] = og.Name
	}
	sort.Strings(names)
	return nil, &TooManyError{Namespace: ns, Names: names}
}

// Apply lays og's target namespaces and ServiceAccount over sub where sub sets none (og
// nil: nothing). It reports whether it changed anything.
func Apply(sub *omv1.Subscription, og *omv1.OperatorGroup) bool {
	if og == nil {
		return false
	}
	changed := false
	if len(sub.Spec.TargetNamespaces) == 0 && len(og.Spec.TargetNamespaces) > 0 {
		sub.Spec.TargetNamespaces = append([]string(nil), og.Spec.TargetNamespaces...)
		changed = true
	}
	if sub.Spec.ServiceAccountName == "" && og.Spec.ServiceAccountName != "" {
		sub.Spec.ServiceAccountName = og.Spec.ServiceAccountName
		changed = true
	}
	return changed
}

// ApplyFrom reads the OperatorGroup of sub's namespace and lays it over sub (see Apply).
func ApplyFrom(ctx context.Context, r client.Reader, sub *omv1.Subscription) error {
	return NewReader(r).ApplyFrom(ctx, sub)
}

// InNamespace maps an OperatorGroup to the objects of its namespace that read it, for a
// controller's watch: those newList lists there (filtered by opts).
func InNamespace(c client.Reader, newList func() client.ObjectList, opts ...client.ListOption) handler.MapFunc {
	return func(ctx context.Context, og client.Object) []reconcile.Request {
		return requestsIn(ctx, c, og.GetNamespace(), newList, opts)
	}
}

// Namespaces handles the events of Namespaces (watched as metadata) for a controller whose
// objects read their OperatorGroup's targets: a namespace created, deleted, or labelled
// anew brings back the objects (those newList lists, filtered by opts) of each namespace
// whose OperatorGroup's selector selects it before or after; a namespace created, or
// deleted or its deletion begun, those of each namespace whose Subscriptions or
// OperatorGroup name it as a target (what is granted there waits for it to exist). Other
// namespace events cost a cached list or two and nothing more.
func Namespaces(c client.Reader, newList func() client.ObjectList, opts ...client.ListOption) handler.EventHandler {
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], named string, sets ...labels.Set) {
		// Read only: the cache's objects as they are, not copies of every one at each of
		// the namespace events of a manager's start.
		groups := &omv1.OperatorGroupList{}
		if err := c.List(ctx, groups, client.UnsafeDisableDeepCopy); err != nil {
			return
		}
		namespaces := selecting(groups.Items, sets...)
		if named != "" {
			subs := &omv1.SubscriptionList{}
			if err := c.List(ctx, subs, client.UnsafeDisableDeepCopy); err != nil {
				return
			}
			namespaces = append(namespaces, naming(groups.Items, subs.Items, named)...)
			sort.Strings(namespaces)
			namespaces = slices.Compact(namespaces)
		}
		for _, ns := range namespaces {
			for _, req := range requestsIn(ctx, c, ns, newList, opts) {
				q.Add(req)
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.Object.GetName(), e.Object.GetLabels())
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			// A namespace being deleted is no longer a target (resolve), so its deletion
			// starting counts as a change.
			deleting := e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
			if labels.Equals(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) && !deleting {
				return
			}
			named := ""
			if deleting {
				named = e.ObjectNew.GetName()
			}
			enqueue(ctx, q, named, e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.Object.GetName(), e.Object.GetLabels())
		},
	}
}

// naming returns the namespaces of the Subscriptions among subs and of the OperatorGroups
// among groups that name namespace ns as a target, sorted and each once.
func naming(groups []omv1.OperatorGroup, subs []omv1.Subscription, ns string) []string {
	var out []string
	for i := range groups {
		if slices.Contains(groups[i].Spec.TargetNamespaces, ns) {
			out = append(out, groups[i].Namespace)
		}
	}
	for i := range subs {
		if slices.Contains(subs[i].Spec.TargetNamespaces, ns) {
			out = append(out, subs[i].Namespace)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// selecting returns the namespaces of the OperatorGroups among groups whose selector
// selects a namespace labelled with any of sets, sorted and each once.
func selecting(groups []omv1.OperatorGroup, sets ...labels.Set) []string {
	var out []string
	for i := range groups {
		og := &groups[i]
		if !og.DeletionTimestamp.IsZero() || !selects(og) {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(og.Spec.Selector)
		if err != nil {
			continue
		}
		for _, set := range sets {
			if sel.Matches(set) {
				out = append(out, og.Namespace)
				break
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// requestsIn lists the objects newList lists in namespace ns (filtered by opts) as
// requests.
func requestsIn(ctx context.Context, c client.Reader, ns string, newList func() client.ObjectList, opts []client.ListOption) []reconcile.Request {
	list := newList()
	if err := c.List(ctx, list, append([]client.ListOption{client.InNamespace(ns)}, opts...)...); err != nil {
		return nil
	}
	items, err := apimeta.ExtractList(list)
	if err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(items))
	for _, o := range items {
		if obj, ok := o.(client.Object); ok {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
		}
	}
	return out
}

// AbsentNamespaces are the target namespaces, other than own, that do not exist or are
// being deleted, read as metadata (from a controller's cache of the namespaces it
// watches, or from the API server): the CSV controller leaves out what would go into them,
// and `status` marks them.
func AbsentNamespaces(ctx context.Context, c client.Reader, own string, targets []string) ([]string, error) {
	var absent []string
	for _, ns := range targets {
		if ns == "" || ns == own {
			continue
		}
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
		switch err := c.Get(ctx, client.ObjectKey{Name: ns}, m); {
		case apierrors.IsNotFound(err):
			absent = append(absent, ns)
		case err != nil:
			return absent, fmt.Errorf("reading target namespace %s: %w", ns, err)
		case !m.DeletionTimestamp.IsZero():
			absent = append(absent, ns)
		}
	}
	return absent, nil
}
