package csv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/bundles"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/identity"
	"github.com/operator-manager/operator-manager/internal/kubeapply"
	"github.com/operator-manager/operator-manager/internal/operatorgroup"
	"github.com/operator-manager/operator-manager/internal/render"
)

// build renders the CSV with its Subscription's overrides into the objects to apply, and
// the digest of everything that shapes them.
func (r *Reconciler) build(ctx context.Context, s *scope) (bool, error) {
	csv := s.csv
	var err error
	if s.sub, err = r.subscriptionOf(ctx, csv); err == nil && s.sub != nil {
		// The namespace's OperatorGroup gives the targets the Subscription does not name;
		// with several, nothing is rendered until one is left.
		err = operatorgroup.ApplyFrom(ctx, r.Client, s.sub)
	}
	if err != nil {
		return true, err
	}
	if csv.Spec.DecodeError != "" {
		s.decide(omv1alpha1.CSVFailed, ReasonInvalidCSV, "spec does not fit OLM's ClusterServiceVersion: %s", csv.Spec.DecodeError)
		return true, nil
	}
	// The Blueprint writes the effective identity (the Subscription's ServiceAccount or the
	// manager's default) on the CSV, so the CSV and its Blueprint always agree.
	s.id = identity.Effective(csv.Namespace, csv.Annotations[omv1.AnnotationServiceAccount], "")
	targets, err := targetsOf(csv, s.sub)
	if err != nil {
		// Nothing is rendered. A CSV applied before (its inventory) keeps its operator's
		// Deployments as they were deployed, with their old targets, as OLM leaves them:
		// said, so "Failed" does not read as an operator that stopped.
		msg := err.Error()
		if len(csv.Status.Inventory) > 0 {
			msg += "; nothing was changed: the operator runs on as it was deployed, with its earlier targets"
		}
		s.decide(omv1alpha1.CSVFailed, ReasonUnsupportedOperatorGroup, "%s", msg)
		return true, nil
	}
	others, err := r.otherObjects(ctx, csv)
	if errors.Is(err, bundles.ErrNotKept) {
		s.decide(omv1alpha1.CSVPending, ReasonBundleUnavailable, "%v", err)
		s.result = ctrl.Result{RequeueAfter: 10 * pollWhileInstalling}
		return true, nil
	}
	if err != nil {
		return true, err
	}
	certs, err := r.webhookCerts(ctx, s)
	if err != nil {
		return true, err
	}
	objs, err := render.Render(renderInput(csv, s.sub, targets, others, certs))
	if err != nil {
		s.decide(omv1alpha1.CSVFailed, ReasonInvalidCSV, "%v", err)
		return true, nil
	}
	s.deploys, s.conversions = objs.Deployments, objs.Conversions
	for _, a := range objs.APIServices {
		s.apiServices = append(s.apiServices, a.Name)
	}
	// What the operator is granted in a target namespace not there (its Roles and
	// RoleBindings) waits for it: waiting would hold the whole installation (a namespace
	// named by mistake, or deleted under a running operator). A namespace's creation
	// reconciles the CSVs that target it (operatorgroup.Namespaces).
	if s.absent, err = operatorgroup.AbsentNamespaces(ctx, r.Client, csv.Namespace, targets); err != nil {
		return true, err
	}
	all := objs.InApplyOrder()
	for _, obj := range all {
		if obj.GetNamespace() == csv.Namespace {
			if err := controllerutil.SetControllerReference(csv, obj, r.Client.Scheme()); err != nil {
				return true, err
			}
		}
	}
	if s.hash, err = renderHash(all, s.id); err != nil {
		return true, err
	}
	s.objects, s.hash = withoutNamespaces(all, s.absent), s.hash+absentSuffix(s.absent)
	csv.Status.CRDRepairs = crdRepairs(csv)
	if len(objs.Moved) > 0 {
		csv.Status.CRDRepairs = append(csv.Status.CRDRepairs, omv1alpha1.CRDRepair{Name: BundleObjectsRepairName, Changes: objs.Moved})
	}
	return false, nil
}

// absentSuffix is what the render hash adds for the target namespaces absent: a change of
// them alone applies (or prunes) what goes into them, without a health gate, since no
// Deployment changes (sameRender).
func absentSuffix(absent []string) string {
	if len(absent) == 0 {
		return ""
	}
	return absentMark + strings.Join(absent, ",")
}

const absentMark = " absent:"

// sameRender says whether render hashes a and b differ at most in the target namespaces
// absent.
func sameRender(a, b string) bool {
	a, _, _ = strings.Cut(a, absentMark)
	b, _, _ = strings.Cut(b, absentMark)
	return a == b
}

// withoutNamespaces is objs without those in the namespaces absent.
func withoutNamespaces(objs []client.Object, absent []string) []client.Object {
	if len(absent) == 0 {
		return objs
	}
	return slices.DeleteFunc(objs, func(o client.Object) bool { return slices.Contains(absent, o.GetNamespace()) })
}

// subscriptionOf is the Subscription the CSV names, or nil: it names none, or it is gone.
func (r *Reconciler) subscriptionOf(ctx context.Context, csv *omv1alpha1.ClusterServiceVersion) (*omv1.Subscription, error) {
	name := csv.Labels[omv1.LabelSubscription]
	if name == "" {
		return nil, nil
	}
	sub := &omv1.Subscription{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: csv.Namespace, Name: name}, sub); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return sub, nil
}

// targetsOf is the namespaces the CSV's operator serves, as its Subscription (nil: none)
// asks and its install modes allow, or their refusal.
func targetsOf(csv *omv1alpha1.ClusterServiceVersion, sub *omv1.Subscription) ([]string, error) {
	var requested []string
	if sub != nil {
		requested = sub.Spec.TargetNamespaces
	}
	return render.TargetNamespaces(csv.Spec.InstallModes, csv.Namespace, requested)
}

// renderInput is what the CSV renders from: its spec, its Subscription's config (sub nil:
// none), the target namespaces, the bundle's other manifests and the webhook certificates.
func renderInput(csv *omv1alpha1.ClusterServiceVersion, sub *omv1.Subscription, targets []string,
	others []*unstructured.Unstructured, certs map[string]render.ServingCert) render.Input {
	var config *omv1.SubscriptionConfig
	if sub != nil {
		config = sub.Spec.Config
	}
	return render.Input{Namespace: csv.Namespace, CSVName: csv.Name, Package: csv.Labels[omv1.LabelPackage],
		Spec: &csv.Spec.ClusterServiceVersionSpec, TargetNamespaces: targets, Config: config, Others: others, WebhookCerts: certs}
}

// renderHash is the digest of the objects to apply and of who applies them: when it
// changes, they are applied again and the Deployments go through the health gate.
func renderHash(objs []client.Object, id identity.Identity) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "identity=%s\n", id.Username())
	for _, o := range objs {
		u, err := kubeapply.ToUnstructured(o)
		if err != nil {
			return "", err
		}
		data, err := json.Marshal(u.Object) // maps marshal with sorted keys: stable
		if err != nil {
			return "", err
		}
		h.Write(data)
		h.Write([]byte{'\n'})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// otherObjects are the bundle's manifests besides the CSV and CRDs, read by the digest
// the Blueprint controller recorded, from the local cache or the copy in the cluster. A
// CSV created by hand has none.
func (r *Reconciler) otherObjects(ctx context.Context, csv *omv1alpha1.ClusterServiceVersion) ([]*unstructured.Unstructured, error) {
	digest := csv.Annotations[omv1.AnnotationBundleDigest]
	if digest == "" || r.Bundles == nil {
		return nil, nil
	}
	if objs, ok := r.others.get(digest); ok {
		return objs, nil
	}
	owner := metav1ControllerName(csv)
	files, err := r.Bundles.Get(ctx, csv.Namespace, owner, digest)
	if err != nil {
		return nil, fmt.Errorf("reading bundle %s of CSV %s: %w", digest, csv.Name, err)
	}
	objs, err := catalog.ObjectsFromFiles(files)
	if err != nil {
		return nil, fmt.Errorf("parsing bundle %s of CSV %s: %w", digest, csv.Name, err)
	}
	r.others.put(digest, objs)
	return objs, nil
}

// metav1ControllerName is the name of the CSV's Blueprint (its controller), where the
// bundle is stored; a CSV made by hand falls back to its Subscription label.
func metav1ControllerName(csv *omv1alpha1.ClusterServiceVersion) string {
	for _, ref := range csv.OwnerReferences {
		if ref.Controller != nil && *ref.Controller && ref.Kind == "Blueprint" {
			return ref.Name
		}
	}
	return csv.Labels[omv1.LabelSubscription]
}

// BundleObjectsRepairName is the entry of status.crdRepairs that lists the bundle's other
// objects moved from a removed API version (they are recorded with the CRD repairs, as
// changes made so that the bundle would be accepted).
const BundleObjectsRepairName = "(bundle objects)"

func crdRepairs(csv *omv1alpha1.ClusterServiceVersion) []omv1alpha1.CRDRepair {
	raw := csv.Annotations[omv1.AnnotationCRDRepairs]
	if raw == "" {
		return nil
	}
	var out []omv1alpha1.CRDRepair
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return []omv1alpha1.CRDRepair{{Name: "(annotation)", Changes: []string{"unreadable " + omv1.AnnotationCRDRepairs + ": " + err.Error()}}}
	}
	return out
}
