// Package operatorgroup reads OLM's OperatorGroup: at most one per namespace, whose target
// namespaces and ServiceAccount the Subscriptions of that namespace take when they do not
// say their own.
//
// The OperatorGroup's values are laid over a Subscription in memory, where a controller
// reads it (Apply), never written into it: the Subscription stays as its author wrote it,
// and a changed OperatorGroup takes effect on the next reconcile (each controller that
// reads targets or the ServiceAccount watches OperatorGroups).
package operatorgroup

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// Of returns the OperatorGroup of namespace ns: nil when there is none, a *TooManyError
// when there are several.
func Of(ctx context.Context, r client.Reader, ns string) (*omv1.OperatorGroup, error) {
	list := &omv1.OperatorGroupList{}
	if err := r.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing the OperatorGroups of namespace %s: %w", ns, err)
	}
	return pick(ns, list.Items)
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
	og, err := Of(ctx, r, sub.Namespace)
	if err != nil {
		return err
	}
	Apply(sub, og)
	return nil
}

// InNamespace maps an OperatorGroup to the objects of its namespace that read it, for a
// controller's watch: those newList lists there (filtered by opts).
func InNamespace(c client.Reader, newList func() client.ObjectList, opts ...client.ListOption) handler.MapFunc {
	return func(ctx context.Context, og client.Object) []reconcile.Request {
		list := newList()
		if err := c.List(ctx, list, append([]client.ListOption{client.InNamespace(og.GetNamespace())}, opts...)...); err != nil {
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
}
