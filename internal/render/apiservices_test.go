package render

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	olm "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// apiServiceCSV is webhookCSV whose Deployment "other" also serves an aggregated API,
// metrics.example.com/v1beta1, on container port 6443.
func apiServiceCSV() *olm.ClusterServiceVersionSpec {
	spec := webhookCSV()
	spec.APIServiceDefinitions.Owned = []olm.APIServiceDescription{{
		Name: "nodemetrics", Group: "metrics.example.com", Version: "v1beta1", Kind: "NodeMetrics",
		DeploymentName: "other", ContainerPort: 6443,
	}}
	return spec
}

func apiServiceInput(spec *olm.ClusterServiceVersionSpec) Input {
	in := webhookInput(spec)
	in.WebhookCerts = map[string]ServingCert{"webhook-operator": testCert,
		"other": {CA: []byte("OTHER CA"), Cert: []byte("OTHER CERT"), Key: []byte("OTHER KEY"), Hash: "def456"}}
	return in
}

// TestRenderAPIServices: an owned APIService is registered as OLM registers it: named
// <version>.<group>, pointing at the serving Deployment's Service on port 443 (which
// forwards to the containerPort), with the CA of that Deployment's certificate, which is
// mounted in its pods like a webhook server's; and it is applied last, after its server.
func TestRenderAPIServices(t *testing.T) {
	spec := apiServiceCSV()
	if got := ServingDeployments(spec); !reflect.DeepEqual(got, []string{"other", "webhook-operator"}) {
		t.Errorf("ServingDeployments = %v", got)
	}
	objs, err := Render(apiServiceInput(spec))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs.APIServices) != 1 {
		t.Fatalf("APIServices = %d", len(objs.APIServices))
	}
	a := objs.APIServices[0]
	if a.Name != "v1beta1.metrics.example.com" || a.Namespace != "" || a.Labels[LabelOwnerName] != "webhook-operator.v1.0.0" {
		t.Errorf("APIService %q in %q, labels %v", a.Name, a.Namespace, a.Labels)
	}
	sp := a.Spec
	if sp.Group != "metrics.example.com" || sp.Version != "v1beta1" || sp.Service == nil || sp.Service.Namespace != "ops" ||
		sp.Service.Name != "other-service" || sp.Service.Port == nil || *sp.Service.Port != 443 ||
		!bytes.Equal(sp.CABundle, []byte("OTHER CA")) || sp.InsecureSkipTLSVerify ||
		sp.GroupPriorityMinimum != 2000 || sp.VersionPriority != 15 {
		t.Errorf("APIService spec = %+v", sp)
	}
	var svc *corev1.Service
	for _, s := range objs.Services {
		if s.Name == "other-service" {
			svc = s
		}
	}
	if svc == nil || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 443 || svc.Spec.Ports[0].TargetPort != intstr.FromInt32(6443) ||
		svc.Spec.Selector["app"] != "other" {
		t.Fatalf("Service of the APIService's Deployment = %+v", svc)
	}
	var secret *corev1.Secret
	for _, s := range objs.Secrets {
		if s.Name == "other-service-cert" {
			secret = s
		}
	}
	if secret == nil || !bytes.Equal(secret.Data["tls.crt"], []byte("OTHER CERT")) || !bytes.Equal(secret.Data["ca.crt"], []byte("OTHER CA")) {
		t.Fatalf("certificate Secret of the APIService's Deployment = %+v", secret)
	}
	for _, d := range objs.Deployments {
		if d.Name != "other" {
			continue
		}
		mounts := map[string]string{}
		for _, m := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
			mounts[m.MountPath] = m.Name
		}
		if mounts["/apiserver.local.config/certificates"] == "" || mounts["/tmp/k8s-webhook-server/serving-certs"] == "" {
			t.Errorf("the certificate is not mounted where aggregated API servers look: %v", mounts)
		}
		if d.Spec.Template.Annotations[AnnotationServingCertHash] != "def456" {
			t.Errorf("pod template hash annotation = %q", d.Spec.Template.Annotations[AnnotationServingCertHash])
		}
	}
	order := objs.InApplyOrder()
	if last := order[len(order)-1]; last.GetObjectKind().GroupVersionKind().Kind != "APIService" {
		t.Errorf("last applied is %s, want the APIService after its server", last.GetObjectKind().GroupVersionKind().Kind)
	}
}

// TestRenderAPIServiceErrors: a definition that cannot be registered is refused with the
// field named, before anything is built.
func TestRenderAPIServiceErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Input)
		want string
	}{
		{"no group", func(in *Input) { in.Spec.APIServiceDefinitions.Owned[0].Group = "" }, "spec.apiservicedefinitions.owned[0].group is empty"},
		{"no version", func(in *Input) { in.Spec.APIServiceDefinitions.Owned[0].Version = "" }, "spec.apiservicedefinitions.owned[0].version is empty"},
		{"unknown deployment", func(in *Input) { in.Spec.APIServiceDefinitions.Owned[0].DeploymentName = "nope" },
			`spec.apiservicedefinitions.owned[0].deploymentName "nope" names no deployment`},
		{"twice", func(in *Input) {
			in.Spec.APIServiceDefinitions.Owned = append(in.Spec.APIServiceDefinitions.Owned, in.Spec.APIServiceDefinitions.Owned[0])
		}, "spec.apiservicedefinitions.owned[1]: v1beta1.metrics.example.com is defined by spec.apiservicedefinitions.owned[0] already"},
		{"no certificate", func(in *Input) { delete(in.WebhookCerts, "other") },
			"deployment other serves APIServices (spec.apiservicedefinitions.owned) but no serving certificate"},
		{"port 443 of the Service taken by a webhook with another target", func(in *Input) {
			in.Spec.APIServiceDefinitions.Owned[0].DeploymentName = "webhook-operator"
		}, "spec.webhookdefinitions[1].targetPort 9443 differs from the targetPort 6443 of spec.apiservicedefinitions.owned[0], on the same port 443 of deployment webhook-operator's Service"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := apiServiceInput(apiServiceCSV())
			tc.edit(&in)
			_, err := Render(in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
