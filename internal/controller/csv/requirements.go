package csv

import (
	"context"
	"fmt"
	"strings"

	olm "github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/crdready"
	"github.com/operator-manager/operator-manager/internal/health"
	"github.com/operator-manager/operator-manager/internal/nativeapi"
	"github.com/operator-manager/operator-manager/internal/render"
)

// Reasons of CSV phases.
const (
	ReasonRequirementsNotMet = "RequirementsNotMet"
	ReasonInvalidCSV         = "InvalidInstallStrategy"
	ReasonInstallSucceeded   = "InstallSucceeded"
	ReasonInstalling         = "InstallWaiting"
	ReasonRequirementsMet    = "AllRequirementsMet"
	ReasonBundleUnavailable  = "BundleUnavailable"
	// ReasonUnsupportedOperatorGroup, as OLM's: the namespaces the operator is to watch
	// need an install mode its CSV does not support.
	ReasonUnsupportedOperatorGroup = "UnsupportedOperatorGroup"
	// ReasonComponentUnhealthy, as OLM's: a CSV that passed its health gate is not
	// healthy now. It is reported, not rolled back: that is not a version problem.
	ReasonComponentUnhealthy = "ComponentUnhealthy"
)

// requirements checks that every CRD the CSV owns or requires is Established and serves
// the version the CSV names, and records each as OLM's requirementStatus does.
func (r *Reconciler) requirements(ctx context.Context, s *scope) (bool, error) {
	crds := s.csv.Spec.CustomResourceDefinitions
	var status []olm.RequirementStatus
	var missing []string
	check := func(d olm.CRDDescription) error {
		st := olm.RequirementStatus{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: d.Name}
		if r.CRDs.Ready(d.Name, d.Version) {
			// Seen Established and serving d.Version moments ago (crdready): not read again.
			st.Status, st.Message = olm.RequirementStatusReasonPresent, "CRD is present and Established"
			status = append(status, st)
			return nil
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		err := r.APIReader.Get(ctx, client.ObjectKey{Name: d.Name}, crd)
		if err == nil {
			r.CRDs.Saw(crd)
		}
		switch {
		case apierrors.IsNotFound(err):
			st.Status, st.Message = olm.RequirementStatusReasonNotPresent, "CRD is not present"
		case err != nil:
			return err
		case !crdready.Established(crd):
			st.Status, st.Message = olm.RequirementStatusReasonNotAvailable, "CRD is not yet Established"
			if why := notEstablishedBecause(crd); why != "" {
				st.Message = "CRD is not Established: " + why // e.g. "The conversion webhook CABundle is invalid"
			}
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
	// Required APIServices: registered and Available, read directly (they are not the
	// manager's, so not in its cache).
	for i, d := range s.csv.Spec.APIServiceDefinitions.Required {
		if d.Group == "" || d.Version == "" {
			missing = append(missing, fmt.Sprintf("spec.apiservicedefinitions.required[%d] names no group and version", i))
			continue
		}
		name := render.APIServiceName(d.Group, d.Version)
		st := olm.RequirementStatus{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService", Name: name}
		a := &apiregistrationv1.APIService{}
		err := r.APIReader.Get(ctx, client.ObjectKey{Name: name}, a)
		switch {
		case apierrors.IsNotFound(err):
			st.Status, st.Message = olm.RequirementStatusReasonNotPresent, "APIService is not present"
		case err != nil:
			return true, err
		default:
			if v := health.APIService(name, a); v.State == health.Healthy {
				st.Status, st.Message = olm.RequirementStatusReasonPresent, "APIService is present and Available"
			} else {
				st.Status, st.Message = olm.RequirementStatusReasonNotAvailable, v.Message
			}
		}
		if st.Status != olm.RequirementStatusReasonPresent {
			missing = append(missing, fmt.Sprintf("APIService %s (%s)", name, st.Message))
		}
		status = append(status, st)
	}
	// Native APIs (spec.nativeAPIs): kinds the cluster itself must serve.
	native, err := nativeapi.Missing(r.Client.RESTMapper(), s.csv.Spec.NativeAPIs)
	if err != nil {
		return true, err
	}
	for i, api := range s.csv.Spec.NativeAPIs {
		st := olm.RequirementStatus{Group: api.Group, Version: api.Version, Kind: api.Kind, Name: api.Kind,
			Status: olm.RequirementStatusReasonPresent, Message: "served by the cluster"}
		for _, m := range native {
			if strings.HasPrefix(m, fmt.Sprintf("spec.nativeAPIs[%d]:", i)) {
				st.Status, st.Message = olm.RequirementStatusReasonNotPresent, "not served by the cluster"
			}
		}
		status = append(status, st)
	}
	missing = append(missing, native...)
	s.csv.Status.RequirementStatus = status
	if len(missing) > 0 {
		msg := "requirements not met: " + strings.Join(missing, "; ")
		if passedGate(&s.csv.Status) {
			s.decide(omv1alpha1.CSVFailed, ReasonComponentUnhealthy, "%s", msg)
		} else {
			s.decide(omv1alpha1.CSVPending, ReasonRequirementsNotMet, "%s", msg)
		}
		s.result = ctrl.Result{RequeueAfter: pollWhileInstalling}
		return true, nil
	}
	s.decide(omv1alpha1.CSVInstallReady, ReasonRequirementsMet, "all requirements met")
	return false, nil
}

// notEstablishedBecause is the API server's message on a CRD it refused to establish.
func notEstablishedBecause(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionFalse {
			return c.Message
		}
	}
	return ""
}

func served(crd *apiextensionsv1.CustomResourceDefinition, version string) bool {
	for _, v := range crd.Spec.Versions {
		if v.Name == version && v.Served {
			return true
		}
	}
	return false
}
