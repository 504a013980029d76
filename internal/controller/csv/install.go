package csv

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	olm "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/health"
	"github.com/operator-manager/operator-manager/internal/kubeapply"
	"github.com/operator-manager/operator-manager/internal/render"
)

// Reasons of CSV phases.
const (
	ReasonRequirementsNotMet = "RequirementsNotMet"
	ReasonInvalidCSV         = "InvalidInstallStrategy"
	ReasonInstallSucceeded   = "InstallSucceeded"
	ReasonInstalling         = "InstallWaiting"
	ReasonRequirementsMet    = "AllRequirementsMet"
)

type renderedObjects = render.Objects

// requirements checks that every CRD the CSV owns or requires is Established and serves
// the version the CSV names, and records each as OLM's requirementStatus does.
func (r *Reconciler) requirements(ctx context.Context, s *scope) (bool, error) {
	crds := s.csv.Spec.CustomResourceDefinitions
	var status []olm.RequirementStatus
	var missing []string
	check := func(d olm.CRDDescription) error {
		st := olm.RequirementStatus{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: d.Name}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		err := r.APIReader.Get(ctx, client.ObjectKey{Name: d.Name}, crd)
		switch {
		case apierrors.IsNotFound(err):
			st.Status, st.Message = olm.RequirementStatusReasonNotPresent, "CRD is not present"
		case err != nil:
			return err
		case !established(crd):
			st.Status, st.Message = olm.RequirementStatusReasonNotAvailable, "CRD is not yet Established"
		case d.Version != "" && !served(crd, d.Version):
			st.Status, st.Message = olm.RequirementStatusReasonNotAvailable, fmt.Sprintf("CRD does not serve version %s", d.Version)
		default:
			st.Status, st.Message = olm.RequirementStatusReasonPresent, "CRD is present and Established"
		}
		if st.Status != olm.RequirementStatusReasonPresent {
			missing = append(missing, d.Name+" ("+st.Message+")")
		}
		status = append(status, st)
		return nil
	}
	for _, d := range append(append([]olm.CRDDescription{}, crds.Owned...), crds.Required...) {
		if d.Name == "" {
			continue // nothing to look up; the catalog loader reports such CSVs
		}
		if err := check(d); err != nil {
			return true, err
		}
	}
	s.csv.Status.RequirementStatus = status
	if len(missing) > 0 {
		s.decide(omv1alpha1.CSVPending, ReasonRequirementsNotMet, "requirements not met: %s", strings.Join(missing, "; "))
		s.result = ctrl.Result{RequeueAfter: 2 * time.Second}
		return true, nil
	}
	s.decide(omv1alpha1.CSVInstallReady, ReasonRequirementsMet, "all requirements met")
	return false, nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

func served(crd *apiextensionsv1.CustomResourceDefinition, version string) bool {
	for _, v := range crd.Spec.Versions {
		if v.Name == version && v.Served {
			return true
		}
	}
	return false
}

// install renders the CSV with its Subscription's overrides and applies every object.
func (r *Reconciler) install(ctx context.Context, s *scope) (bool, error) {
	csv := s.csv
	var sub *omv1.Subscription
	if name := csv.Labels[omv1.LabelSubscription]; name != "" {
		sub = &omv1.Subscription{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: csv.Namespace, Name: name}, sub); err != nil {
			if !apierrors.IsNotFound(err) {
				return true, err
			}
			sub = nil
		}
	}
	var requested []string
	var config *omv1.SubscriptionConfig
	if sub != nil {
		requested, config = sub.Spec.TargetNamespaces, sub.Spec.Config
	}
	targets, err := render.TargetNamespaces(csv.Spec.InstallModes, csv.Namespace, requested)
	if err != nil {
		s.decide(omv1alpha1.CSVFailed, "UnsupportedOperatorGroup", "%v", err)
		return true, nil
	}
	others, err := r.otherObjects(csv)
	if err != nil {
		return true, err
	}
	objs, err := render.Render(render.Input{Namespace: csv.Namespace, CSVName: csv.Name, Package: csv.Labels[omv1.LabelPackage],
		Spec: &csv.Spec, TargetNamespaces: targets, Config: config, Others: others})
	if err != nil {
		s.decide(omv1alpha1.CSVFailed, ReasonInvalidCSV, "%v", err)
		return true, nil
	}
	s.objects = objs
	csv.Status.CRDRepairs = crdRepairs(csv)
	for _, obj := range applyOrder(objs) {
		if obj.GetNamespace() == csv.Namespace {
			if err := controllerutil.SetControllerReference(csv, obj, r.Client.Scheme()); err != nil {
				return true, err
			}
		}
		if err := kubeapply.Apply(ctx, r.Client, obj); err != nil {
			return true, err
		}
	}
	if s.csv.Status.Phase != omv1alpha1.CSVInstalling && s.csv.Status.Phase != omv1alpha1.CSVSucceeded && s.csv.Status.Phase != omv1alpha1.CSVFailed {
		r.event(csv, false, ReasonInstalling, "Applied %d deployments, %d service accounts, %d roles and %d cluster roles",
			len(objs.Deployments), len(objs.ServiceAccounts), len(objs.Roles), len(objs.ClusterRoles))
	}
	return false, nil
}

// otherObjects are the bundle's manifests besides the CSV and CRDs, read from the local
// bundle cache by the digest the Blueprint controller recorded. A CSV created by hand has
// none.
func (r *Reconciler) otherObjects(csv *omv1alpha1.ClusterServiceVersion) ([]*unstructured.Unstructured, error) {
	digest := csv.Annotations[omv1.AnnotationBundleDigest]
	if digest == "" || r.Cache == nil {
		return nil, nil
	}
	files, err := r.Cache.Get(digest)
	if err != nil {
		return nil, fmt.Errorf("reading bundle %s of CSV %s from the cache: %w", digest, csv.Name, err)
	}
	content, err := catalog.ContentFromFiles(files)
	if err != nil {
		return nil, fmt.Errorf("parsing bundle %s of CSV %s: %w", digest, csv.Name, err)
	}
	return content.Objects, nil
}

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

func applyOrder(o *render.Objects) []client.Object {
	var out []client.Object
	for _, x := range o.ServiceAccounts {
		out = append(out, x)
	}
	for _, x := range o.Roles {
		out = append(out, x)
	}
	for _, x := range o.RoleBindings {
		out = append(out, x)
	}
	for _, x := range o.ClusterRoles {
		out = append(out, x)
	}
	for _, x := range o.ClusterRoleBindings {
		out = append(out, x)
	}
	for _, x := range o.Others {
		out = append(out, x)
	}
	for _, x := range o.Deployments {
		out = append(out, x)
	}
	return out
}

// judge derives the phase from the Deployments and their pods.
func (r *Reconciler) judge(ctx context.Context, s *scope) (bool, error) {
	csv := s.csv
	started := time.Time{}
	if csv.Status.Phase == omv1alpha1.CSVInstalling && csv.Status.LastTransitionTime != nil {
		started = csv.Status.LastTransitionTime.Time
	} else if csv.Status.Phase != omv1alpha1.CSVSucceeded && csv.Status.Phase != omv1alpha1.CSVFailed {
		started = s.now
	}
	timeout := DefaultHealthTimeout
	if v := csv.Annotations[omv1.AnnotationHealthTimeout]; v != "" {
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			timeout = d
		}
	}
	var verdicts []health.Verdict
	for _, want := range s.objects.Deployments {
		in, err := r.healthInput(ctx, want)
		if err != nil {
			return true, err
		}
		if in == nil {
			verdicts = append(verdicts, health.Verdict{State: health.Progressing, Reason: health.ReasonDeploymentMissing,
				Message: fmt.Sprintf("deployment %s does not exist yet", want.Name)})
			continue
		}
		in.Started, in.Timeout, in.Now = started, timeout, s.now
		verdicts = append(verdicts, health.Deployment(*in))
	}
	v := health.Operator(verdicts)
	switch v.State {
	case health.Healthy:
		s.decide(omv1alpha1.CSVSucceeded, ReasonInstallSucceeded, "%s", v.Message)
	case health.Failed:
		s.decide(omv1alpha1.CSVFailed, v.Reason, "%s", v.Message)
		s.result = ctrl.Result{RequeueAfter: 10 * pollWhileInstalling}
	default:
		unchanged := csv.Status.ObservedGeneration == csv.Generation
		switch {
		case csv.Status.Phase == omv1alpha1.CSVSucceeded:
			// A running operator whose pods come and go stays Succeeded until a check
			// fails; only a new install has to prove itself within the timeout.
			s.decide(omv1alpha1.CSVSucceeded, ReasonInstallSucceeded, "%s", v.Message)
		case csv.Status.Phase == omv1alpha1.CSVFailed && unchanged:
			// A verdict stays until the operator becomes healthy or the CSV changes: a
			// failed version does not flap back to Installing and start a new timeout.
			s.decide(omv1alpha1.CSVFailed, csv.Status.Reason, "%s", csv.Status.Message)
		default:
			s.decide(omv1alpha1.CSVInstalling, ReasonInstalling, "%s", v.Message)
		}
		s.result = ctrl.Result{RequeueAfter: pollWhileInstalling}
	}
	return true, nil
}

// healthInput gathers one Deployment, its pods and its current template hash; nil when
// the Deployment does not exist.
func (r *Reconciler) healthInput(ctx context.Context, want *appsv1.Deployment) (*health.Input, error) {
	// Read fresh: a cached Deployment may predate the apply just made, and would report
	// the previous template's replicas as this version's.
	d := &appsv1.Deployment{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(want), d); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("deployment %s: %w", d.Name, err)
	}
	pods := &corev1.PodList{}
	if err := r.APIReader.List(ctx, pods, client.InNamespace(d.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, err
	}
	rss := &appsv1.ReplicaSetList{}
	if err := r.APIReader.List(ctx, rss, client.InNamespace(d.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, err
	}
	hash := ""
	rev := d.Annotations["deployment.kubernetes.io/revision"]
	for _, rs := range rss.Items {
		if rev != "" && rs.Annotations["deployment.kubernetes.io/revision"] == rev && metav1.IsControlledBy(&rs, d) {
			hash = rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		}
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
	return &health.Input{Deployment: d, Pods: pods.Items, CurrentHash: hash}, nil
}
