package health

import (
	"fmt"

	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// Reasons of an APIService verdict.
const (
	ReasonAPIServiceAvailable   = "APIServiceAvailable"
	ReasonAPIServiceUnavailable = "APIServiceUnavailable"
	ReasonAPIServiceMissing     = "APIServiceMissing"
)

// APIService judges an APIService the operator serves: healthy once the aggregator
// reports it Available (it reached the operator's server through its Service and trusted
// its certificate), progressing until then with the aggregator's reason. It never fails
// by itself: within the health gate the revision's deadline decides, after it the
// operator is reported unhealthy.
func APIService(name string, a *apiregistrationv1.APIService) Verdict {
	if a == nil {
		return Verdict{Progressing, ReasonAPIServiceMissing, fmt.Sprintf("APIService %s does not exist yet", name)}
	}
	for _, c := range a.Status.Conditions {
		if c.Type != apiregistrationv1.Available {
			continue
		}
		if c.Status == apiregistrationv1.ConditionTrue {
			return Verdict{Healthy, ReasonAPIServiceAvailable, fmt.Sprintf("APIService %s is available", name)}
		}
		return Verdict{Progressing, ReasonAPIServiceUnavailable, fmt.Sprintf("APIService %s is not available: %s", name, joinReason(c.Reason, c.Message))}
	}
	return Verdict{Progressing, ReasonAPIServiceUnavailable, fmt.Sprintf("APIService %s is not available yet (the aggregator has not checked it)", name)}
}
