package render

import (
	"fmt"

	olm "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// apiServiceServicePort is the Service port the aggregator calls an APIService's server
// on; it forwards to the definition's containerPort.
const apiServiceServicePort = 443

// The priorities OLM gives the APIServices it registers: above the built-in groups'
// defaults, so an operator's group is listed, and equal for every version.
const (
	apiServiceGroupPriorityMinimum = 2000
	apiServiceVersionPriority      = 15
)

// APIServiceName is the name of the APIService of a group version: <version>.<group>,
// the name the API server requires.
func APIServiceName(group, version string) string { return version + "." + group }

// apiServicePort is a definition's containerPort: 443 when unset.
func apiServicePort(a *olm.APIServiceDescription) int32 {
	if a.ContainerPort == 0 {
		return 443
	}
	return a.ContainerPort
}

// checkAPIServices refuses an owned APIService definition that cannot be registered,
// naming the field at fault.
func checkAPIServices(apis []olm.APIServiceDescription, deps map[string]*appsv1.Deployment) error {
	seen := map[string]int{}
	for i := range apis {
		a := &apis[i]
		field := fmt.Sprintf("spec.apiservicedefinitions.owned[%d]", i)
		switch {
		case a.Group == "":
			return fmt.Errorf("%s.group is empty", field)
		case a.Version == "":
			return fmt.Errorf("%s.version is empty", field)
		case deps[a.DeploymentName] == nil:
			return fmt.Errorf("%s.deploymentName %q names no deployment of spec.install.spec.deployments", field, a.DeploymentName)
		case a.ContainerPort < 0 || a.ContainerPort > 65535:
			return fmt.Errorf("%s.containerPort %d is not a port", field, a.ContainerPort)
		}
		name := APIServiceName(a.Group, a.Version)
		if j, ok := seen[name]; ok {
			return fmt.Errorf("%s: %s is defined by spec.apiservicedefinitions.owned[%d] already", field, name, j)
		}
		seen[name] = i
	}
	return nil
}

// apiService is the APIService of an owned definition: the group version served by the
// Deployment's Service, with the CA that signed its serving certificate.
func apiService(namespace string, a *olm.APIServiceDescription, ca []byte, meta func(name, namespace string) metav1.ObjectMeta) *apiregistrationv1.APIService {
	port := int32(apiServiceServicePort)
	return &apiregistrationv1.APIService{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiregistration.k8s.io/v1", Kind: "APIService"},
		ObjectMeta: meta(APIServiceName(a.Group, a.Version), ""),
		Spec: apiregistrationv1.APIServiceSpec{
			Group: a.Group, Version: a.Version,
			Service:              &apiregistrationv1.ServiceReference{Namespace: namespace, Name: WebhookServiceName(a.DeploymentName), Port: &port},
			CABundle:             clone(ca),
			GroupPriorityMinimum: apiServiceGroupPriorityMinimum,
			VersionPriority:      apiServiceVersionPriority,
		},
	}
}
