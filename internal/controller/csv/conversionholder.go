package csv

import (
	"context"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	olm "github.com/operator-framework/api/pkg/operators/v1alpha1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/render"
)

// A CRD has one conversion webhook, and installations of one package side by side (in
// separate namespaces) each serve one for the CRDs they share. Left to themselves, the
// last to reconcile would take the CRD, an older version's converter could convert for a
// schema only a newer one knows, and an uninstall would set the CRD's conversion to None
// while another installation still served it. So the installations agree, each from the
// same facts and without talking, on one holder.

// conversionPeer is an installation (one CSV) that serves a CRD's conversion webhook.
type conversionPeer struct {
	// Namespace and Name of the CSV; Service is its webhook Service's name, in Namespace.
	Namespace, Name, Service string
	Version                  semver.Version
	// Proven: the CSV passed its health gate (phase Succeeded), so its webhook answers.
	Proven bool
}

// conversionHolder decides which peer's webhook converts the CRD. First the trusted: a
// proven one, or the one the CRD names already (its installation's own upgrade keeps the
// Service, and the Deployment keeps its old pods serving until the new ones are ready), so
// a new installation whose operator never becomes ready cannot take every other
// installation's conversions down with it. Then the newest version (the CRD is kept at
// the newest schema any installation applied, and only the newest operator is sure to
// convert every version of it); among equals, the one named already (no churn); then the
// first by namespace and name. current is the CRD's conversion Service as
// namespace/name ("" when it names none). ok is false with no peers.
func conversionHolder(peers []conversionPeer, current string) (holder conversionPeer, ok bool) {
	if len(peers) == 0 {
		return conversionPeer{}, false
	}
	return slices.MinFunc(peers, func(a, b conversionPeer) int {
		aNamed, bNamed := a.Namespace+"/"+a.Service == current, b.Namespace+"/"+b.Service == current
		if aTrusted, bTrusted := a.Proven || aNamed, b.Proven || bNamed; aTrusted != bTrusted {
			if aTrusted {
				return -1
			}
			return 1
		}
		if c := b.Version.Compare(a.Version); c != 0 {
			return c
		}
		switch {
		case aNamed && !bNamed:
			return -1
		case bNamed && !aNamed:
			return 1
		}
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	}), true
}

// convertsFor returns the webhook Service a CSV names for converting crd, if it serves it.
func convertsFor(csv *omv1alpha1.ClusterServiceVersion, crd string) (service string, ok bool) {
	for _, def := range csv.Spec.WebhookDefinitions {
		if def.Type == olm.ConversionWebhook && slices.Contains(def.ConversionCRDs, crd) {
			return render.WebhookServiceName(def.DeploymentName), true
		}
	}
	return "", false
}

// servesConversions reports whether a CSV may hold a CRD's conversion: it serves one, and
// it is its installation's current version, neither going (being deleted, or replaced
// by another version of its installation) nor failed.
func servesConversions(csv *omv1alpha1.ClusterServiceVersion) bool {
	if !csv.DeletionTimestamp.IsZero() || csv.Spec.DecodeError != "" ||
		csv.Annotations[omv1.AnnotationDesiredPhase] == omv1.DesiredPhaseReplacing ||
		csv.Status.Phase == omv1alpha1.CSVFailed {
		return false
	}
	return len(conversionCRDs(csv)) > 0
}

// conversionCRDs are the CRDs whose conversion webhook a CSV's operator serves.
func conversionCRDs(csv *omv1alpha1.ClusterServiceVersion) []string {
	var crds []string
	for _, def := range csv.Spec.WebhookDefinitions {
		if def.Type == olm.ConversionWebhook {
			crds = append(crds, def.ConversionCRDs...)
		}
	}
	return crds
}

// conversionPeers lists, from the cache, the CSVs that may hold crd's conversion, with
// self among them whatever the cache says of it (the reconcile reads the newest copy).
func (r *Reconciler) conversionPeers(ctx context.Context, self *omv1alpha1.ClusterServiceVersion, crd string) ([]conversionPeer, error) {
	list := &omv1alpha1.ClusterServiceVersionList{}
	if err := r.Client.List(ctx, list); err != nil {
		return nil, err
	}
	var peers []conversionPeer
	add := func(csv *omv1alpha1.ClusterServiceVersion) {
		if service, ok := convertsFor(csv, crd); ok {
			peers = append(peers, conversionPeer{Namespace: csv.Namespace, Name: csv.Name, Service: service, Version: csv.Spec.Version.Version,
				Proven: csv.Status.Phase == omv1alpha1.CSVSucceeded})
		}
	}
	add(self)
	for i := range list.Items {
		csv := &list.Items[i]
		if csv.UID != self.UID && servesConversions(csv) {
			add(csv)
		}
	}
	return peers, nil
}

// conversionPeersChanged enqueues the other CSVs that serve a conversion webhook for one
// of the same CRDs when a CSV that serves one comes, goes, fails or is being replaced: the
// holder of each shared CRD may change, and the new holder must take it. (A CSV that
// passes its gate needs no one else: its own status write brings it back, and it takes
// what it now holds.)
func (r *Reconciler) conversionPeersChanged() handler.TypedEventHandler[client.Object, reconcile.Request] {
	enqueue := func(ctx context.Context, obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, req := range r.peersOf(ctx, obj) {
			q.Add(req)
		}
	}
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			before, ok1 := e.ObjectOld.(*omv1alpha1.ClusterServiceVersion)
			after, ok2 := e.ObjectNew.(*omv1alpha1.ClusterServiceVersion)
			if ok1 && ok2 && servesConversions(before) != servesConversions(after) {
				enqueue(ctx, after, q)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q)
		},
	}
}

// peersOf names the other CSVs that serve a conversion for a CRD obj serves one for.
func (r *Reconciler) peersOf(ctx context.Context, obj client.Object) []reconcile.Request {
	csv, ok := obj.(*omv1alpha1.ClusterServiceVersion)
	if !ok {
		return nil
	}
	crds := conversionCRDs(csv)
	if len(crds) == 0 {
		return nil
	}
	list := &omv1alpha1.ClusterServiceVersionList{}
	if err := r.Client.List(ctx, list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		other := &list.Items[i]
		if other.UID == csv.UID || !other.DeletionTimestamp.IsZero() {
			continue
		}
		if slices.ContainsFunc(crds, func(crd string) bool { _, ok := convertsFor(other, crd); return ok }) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(other)})
		}
	}
	return out
}
