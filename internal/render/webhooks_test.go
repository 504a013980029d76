package render

import (
	"reflect"
	"strings"
	"testing"

	olm "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func ptr[T any](v T) *T { return &v }

var testCert = ServingCert{CA: []byte("CA PEM"), Cert: []byte("CERT PEM"), Key: []byte("KEY PEM"), Hash: "abc123"}

// webhookCSV is an operator whose Deployment "webhook-operator" (two containers) serves
// a validating, a mutating and a conversion webhook, next to a Deployment "other" that
// serves none.
func webhookCSV() *olm.ClusterServiceVersionSpec {
	podSpec := func(containers ...string) corev1.PodSpec {
		var p corev1.PodSpec
		for _, c := range containers {
			p.Containers = append(p.Containers, corev1.Container{Name: c, Image: "example.com/" + c})
		}
		return p
	}
	dep := func(name string, pod corev1.PodSpec) olm.StrategyDeploymentSpec {
		labels := map[string]string{"app": name}
		return olm.StrategyDeploymentSpec{Name: name, Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod}}}
	}
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}},
	}}
	return &olm.ClusterServiceVersionSpec{
		InstallStrategy: olm.NamedInstallStrategy{StrategyName: olm.InstallStrategyNameDeployment,
			StrategySpec: olm.StrategyDetailsDeployment{DeploymentSpecs: []olm.StrategyDeploymentSpec{
				dep("webhook-operator", podSpec("manager", "proxy")),
				dep("other", podSpec("worker")),
			}}},
		WebhookDefinitions: []olm.WebhookDescription{
			{
				Type: olm.ValidatingAdmissionWebhook, GenerateName: "vwidget.example.com", DeploymentName: "webhook-operator",
				ContainerPort: 9443, Rules: rules, WebhookPath: ptr("/validate-widget"),
				FailurePolicy: ptr(admissionregistrationv1.Fail), MatchPolicy: ptr(admissionregistrationv1.Equivalent),
				ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"validate": "yes"}},
				SideEffects:    ptr(admissionregistrationv1.SideEffectClassNoneOnDryRun), TimeoutSeconds: ptr(int32(7)),
				AdmissionReviewVersions: []string{"v1"},
			},
			{
				// containerPort unset (443), served on 9443; sideEffects and
				// admissionReviewVersions left out.
				Type: olm.MutatingAdmissionWebhook, GenerateName: "mwidget.example.com", DeploymentName: "webhook-operator",
				TargetPort: ptr(intstr.FromInt32(9443)), Rules: rules, WebhookPath: ptr("/mutate-widget"),
				ReinvocationPolicy: ptr(admissionregistrationv1.IfNeededReinvocationPolicy),
			},
			{
				Type: olm.ConversionWebhook, GenerateName: "cwidget.example.com", DeploymentName: "webhook-operator",
				ContainerPort: 9443, WebhookPath: ptr("/convert"), AdmissionReviewVersions: []string{"v1"},
				ConversionCRDs: []string{"widgets.example.com", "gadgets.example.com"},
			},
		},
	}
}

func webhookInput(spec *olm.ClusterServiceVersionSpec, targets ...string) Input {
	return Input{Namespace: "ops", CSVName: "webhook-operator.v1.0.0", Package: "webhook-operator", Spec: spec,
		TargetNamespaces: targets, WebhookCerts: map[string]ServingCert{"webhook-operator": testCert}}
}

func TestWebhookNames(t *testing.T) {
	if got := ServingDeployments(webhookCSV()); !reflect.DeepEqual(got, []string{"webhook-operator"}) {
		t.Errorf("ServingDeployments = %v", got)
	}
	spec := webhookCSV()
	spec.WebhookDefinitions[1].DeploymentName = "a-operator"
	if got := ServingDeployments(spec); !reflect.DeepEqual(got, []string{"a-operator", "webhook-operator"}) {
		t.Errorf("ServingDeployments = %v, want sorted and unique", got)
	}
	if got := ServingDeployments(&olm.ClusterServiceVersionSpec{}); len(got) != 0 {
		t.Errorf("ServingDeployments of a CSV without webhooks = %v", got)
	}
	if WebhookServiceName("webhook-operator") != "webhook-operator-service" || WebhookSecretName("webhook-operator") != "webhook-operator-service-cert" {
		t.Errorf("names: %s, %s", WebhookServiceName("webhook-operator"), WebhookSecretName("webhook-operator"))
	}
	// A Service name is a DNS label: OLM replaces the dots of a Deployment name.
	if got := WebhookServiceName("webhooks.v2"); got != "webhooks-v2-service" {
		t.Errorf("WebhookServiceName(webhooks.v2) = %s", got)
	}
}

func TestRenderWebhooks(t *testing.T) {
	spec := webhookCSV()
	objs, err := Render(webhookInput(spec, "ops"))
	if err != nil {
		t.Fatal(err)
	}

	if len(objs.Secrets) != 1 {
		t.Fatalf("secrets = %+v", objs.Secrets)
	}
	s := objs.Secrets[0]
	if s.Kind != "Secret" || s.APIVersion != "v1" || s.Name != "webhook-operator-service-cert" || s.Namespace != "ops" ||
		s.Type != corev1.SecretTypeTLS || string(s.Data["tls.crt"]) != "CERT PEM" || string(s.Data["tls.key"]) != "KEY PEM" ||
		string(s.Data["ca.crt"]) != "CA PEM" || s.Labels[LabelOwnerName] != "webhook-operator.v1.0.0" {
		t.Errorf("secret = %+v", s)
	}

	if len(objs.Services) != 1 {
		t.Fatalf("services = %+v", objs.Services)
	}
	svc := objs.Services[0]
	wantPorts := []corev1.ServicePort{
		{Name: "443", Port: 443, TargetPort: intstr.FromInt32(9443)},
		{Name: "9443", Port: 9443, TargetPort: intstr.FromInt32(9443)},
	}
	if svc.Kind != "Service" || svc.APIVersion != "v1" || svc.Name != "webhook-operator-service" || svc.Namespace != "ops" ||
		!reflect.DeepEqual(svc.Spec.Selector, map[string]string{"app": "webhook-operator"}) || !reflect.DeepEqual(svc.Spec.Ports, wantPorts) ||
		svc.Labels[LabelOwnerName] != "webhook-operator.v1.0.0" {
		t.Errorf("service = %+v", svc)
	}

	d := objs.Deployments[0]
	if d.Spec.Template.Annotations[AnnotationServingCertHash] != "abc123" {
		t.Errorf("pod annotations = %v", d.Spec.Template.Annotations)
	}
	wantMounts := []corev1.VolumeMount{
		{Name: "apiservice-cert", MountPath: "/apiserver.local.config/certificates", ReadOnly: true},
		{Name: "webhook-cert", MountPath: "/tmp/k8s-webhook-server/serving-certs", ReadOnly: true},
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if !reflect.DeepEqual(c.VolumeMounts, wantMounts) {
			t.Errorf("container %s mounts = %+v", c.Name, c.VolumeMounts)
		}
	}
	wantVolumes := []corev1.Volume{
		{Name: "apiservice-cert", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "webhook-operator-service-cert",
			Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "apiserver.crt"}, {Key: "tls.key", Path: "apiserver.key"}}}}},
		{Name: "webhook-cert", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "webhook-operator-service-cert",
			Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "tls.crt"}, {Key: "tls.key", Path: "tls.key"}}}}},
	}
	if !reflect.DeepEqual(d.Spec.Template.Spec.Volumes, wantVolumes) {
		t.Errorf("volumes = %+v", d.Spec.Template.Spec.Volumes)
	}
	if o := objs.Deployments[1]; len(o.Spec.Template.Spec.Volumes) != 0 || len(o.Spec.Template.Spec.Containers[0].VolumeMounts) != 0 ||
		o.Spec.Template.Annotations[AnnotationServingCertHash] != "" {
		t.Errorf("deployment %s serves no webhook but got %+v", o.Name, o.Spec.Template)
	}

	service := func(path string, port int32) *admissionregistrationv1.ServiceReference {
		return &admissionregistrationv1.ServiceReference{Namespace: "ops", Name: "webhook-operator-service", Path: &path, Port: &port}
	}
	scope := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{"ops"}}}}
	def := spec.WebhookDefinitions

	if len(objs.ValidatingWebhooks) != 1 {
		t.Fatalf("validating = %+v", objs.ValidatingWebhooks)
	}
	v := objs.ValidatingWebhooks[0]
	wantV := admissionregistrationv1.ValidatingWebhook{
		Name: "vwidget.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: service("/validate-widget", 9443), CABundle: []byte("CA PEM")},
		Rules: def[0].Rules, FailurePolicy: ptr(admissionregistrationv1.Fail), MatchPolicy: ptr(admissionregistrationv1.Equivalent),
		NamespaceSelector: scope, ObjectSelector: def[0].ObjectSelector, SideEffects: ptr(admissionregistrationv1.SideEffectClassNoneOnDryRun),
		TimeoutSeconds: ptr(int32(7)), AdmissionReviewVersions: []string{"v1"},
	}
	if v.Kind != "ValidatingWebhookConfiguration" || v.APIVersion != "admissionregistration.k8s.io/v1" || v.Name != "ops-vwidget.example.com" ||
		v.Namespace != "" || v.Labels[LabelOwnerName] != "webhook-operator.v1.0.0" || v.Labels[LabelOwnerNamespace] != "ops" ||
		len(v.Webhooks) != 1 || !reflect.DeepEqual(v.Webhooks[0], wantV) {
		t.Errorf("validating configuration = %+v\nwant webhook %+v", v, wantV)
	}

	if len(objs.MutatingWebhooks) != 1 {
		t.Fatalf("mutating = %+v", objs.MutatingWebhooks)
	}
	m := objs.MutatingWebhooks[0]
	wantM := admissionregistrationv1.MutatingWebhook{
		Name: "mwidget.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: service("/mutate-widget", 443), CABundle: []byte("CA PEM")},
		Rules: def[1].Rules, NamespaceSelector: scope,
		SideEffects:             ptr(admissionregistrationv1.SideEffectClassNone), // defaulted
		AdmissionReviewVersions: []string{"v1", "v1beta1"},                        // defaulted
		ReinvocationPolicy:      ptr(admissionregistrationv1.IfNeededReinvocationPolicy),
	}
	if m.Kind != "MutatingWebhookConfiguration" || m.APIVersion != "admissionregistration.k8s.io/v1" || m.Name != "ops-mwidget.example.com" ||
		m.Namespace != "" || m.Labels[LabelOwnerName] != "webhook-operator.v1.0.0" ||
		len(m.Webhooks) != 1 || !reflect.DeepEqual(m.Webhooks[0], wantM) {
		t.Errorf("mutating configuration = %+v\nwant webhook %+v", m, wantM)
	}

	conv := func(crd string) CRDConversion {
		return CRDConversion{CRD: crd, Namespace: "ops", Name: "webhook-operator-service", Path: "/convert", Port: 9443,
			CABundle: []byte("CA PEM"), ReviewVersions: []string{"v1"}}
	}
	if want := []CRDConversion{conv("gadgets.example.com"), conv("widgets.example.com")}; !reflect.DeepEqual(objs.Conversions, want) {
		t.Errorf("conversions = %+v\nwant %+v", objs.Conversions, want)
	}
	for _, o := range objs.InApplyOrder() {
		if o.GetName() == "cwidget.example.com" || strings.HasSuffix(o.GetName(), "-cwidget.example.com") {
			t.Errorf("a conversion webhook was rendered as an object: %T %s", o, o.GetName())
		}
	}

	// An upgrade renders the same configuration names, so they are updated in place.
	in := webhookInput(webhookCSV(), "ops")
	in.CSVName = "webhook-operator.v1.1.0"
	next, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if next.ValidatingWebhooks[0].Name != v.Name || next.MutatingWebhooks[0].Name != m.Name {
		t.Errorf("configuration names change with the version: %s, %s", next.ValidatingWebhooks[0].Name, next.MutatingWebhooks[0].Name)
	}
}

func TestRenderWebhooksScopedToTargetNamespaces(t *testing.T) {
	for _, tc := range []struct {
		name    string
		targets []string
		want    *metav1.LabelSelector
	}{
		{"AllNamespaces", nil, nil},
		{"OwnNamespace", []string{"ops"}, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{"ops"}}}}},
		{"SingleNamespace", []string{"apps"}, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{"apps"}}}}},
		{"MultiNamespace", []string{"b", "a", "b"}, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Render(webhookInput(webhookCSV(), tc.targets...))
			if err != nil {
				t.Fatal(err)
			}
			if got := objs.ValidatingWebhooks[0].Webhooks[0].NamespaceSelector; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("validating namespaceSelector = %+v, want %+v", got, tc.want)
			}
			if got := objs.MutatingWebhooks[0].Webhooks[0].NamespaceSelector; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("mutating namespaceSelector = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestRenderWebhookErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Input)
		want   string
	}{
		{"missing certificate", func(in *Input) { in.WebhookCerts = nil },
			"deployment webhook-operator serves webhooks (spec.webhookdefinitions) but no serving certificate"},
		{"certificate without key", func(in *Input) {
			in.WebhookCerts = map[string]ServingCert{"webhook-operator": {CA: testCert.CA, Cert: testCert.Cert}}
		}, "deployment webhook-operator serves webhooks (spec.webhookdefinitions) but no serving certificate"},
		{"unknown deployment", func(in *Input) { in.Spec.WebhookDefinitions[1].DeploymentName = "nope" },
			`spec.webhookdefinitions[1].deploymentName "nope" names no deployment`},
		{"no deployment", func(in *Input) { in.Spec.WebhookDefinitions[2].DeploymentName = "" },
			`spec.webhookdefinitions[2].deploymentName "" names no deployment`},
		{"empty generateName", func(in *Input) { in.Spec.WebhookDefinitions[0].GenerateName = "" },
			"spec.webhookdefinitions[0].generateName is empty"},
		{"duplicate generateName", func(in *Input) {
			in.Spec.WebhookDefinitions[0].GenerateName = "mwidget.example.com"
			in.Spec.WebhookDefinitions[0].Type = olm.MutatingAdmissionWebhook
		},
			`spec.webhookdefinitions[1].generateName "mwidget.example.com" is used by spec.webhookdefinitions[0] too`},
		{"unknown type", func(in *Input) { in.Spec.WebhookDefinitions[1].Type = "AuditWebhook" },
			`spec.webhookdefinitions[1].type "AuditWebhook" is not one of`},
		{"selector without matchLabels", func(in *Input) {
			d := &in.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec
			d.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists}}}
		}, "deployment webhook-operator serves webhooks (spec.webhookdefinitions) but its spec.selector has no matchLabels"},
		{"conflicting targetPort", func(in *Input) { in.Spec.WebhookDefinitions[2].TargetPort = ptr(intstr.FromString("https")) },
			"spec.webhookdefinitions[2].targetPort https differs from the targetPort 9443 of spec.webhookdefinitions[0]"},
		{"CRD converted twice", func(in *Input) {
			w := in.Spec.WebhookDefinitions[2]
			in.Spec.WebhookDefinitions = append(in.Spec.WebhookDefinitions, w)
		}, "spec.webhookdefinitions[3].conversionCRDs: widgets.example.com is converted by spec.webhookdefinitions[2] already"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := webhookInput(webhookCSV(), "ops")
			tc.change(&in)
			objs, err := Render(in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
			if objs != nil {
				t.Errorf("objects returned with an error: %+v", objs)
			}
		})
	}
}

func TestRenderWebhooksApplyOrder(t *testing.T) {
	spec := webhookCSV()
	spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.ServiceAccountName = "webhook-operator"
	spec.InstallStrategy.StrategySpec.Permissions = []olm.StrategyDeploymentPermissions{{ServiceAccountName: "webhook-operator"}}
	spec.InstallStrategy.StrategySpec.ClusterPermissions = []olm.StrategyDeploymentPermissions{{ServiceAccountName: "webhook-operator"}}
	in := webhookInput(spec, "ops")
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	cm.SetName("settings")
	in.Others = []*unstructured.Unstructured{cm}
	objs, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, o := range objs.InApplyOrder() {
		kind := o.GetObjectKind().GroupVersionKind().Kind
		if len(kinds) == 0 || kinds[len(kinds)-1] != kind {
			kinds = append(kinds, kind)
		}
	}
	want := []string{"ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "OperatorCondition", "ConfigMap",
		"Secret", "Service", "Deployment", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("apply order = %v\nwant %v", kinds, want)
	}
}

func TestRenderWebhooksIsDeterministic(t *testing.T) {
	spec := webhookCSV()
	before := spec.DeepCopy()
	a, err := Render(webhookInput(spec, "b", "a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Render(webhookInput(spec, "b", "a"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Error("rendering the same input twice gave different objects")
	}
	if !reflect.DeepEqual(spec, before) {
		t.Error("Render modified its input")
	}
	// Nothing rendered shares memory with another object or the input.
	a.ValidatingWebhooks[0].Webhooks[0].Rules[0].Resources[0] = "changed"
	*a.MutatingWebhooks[0].Webhooks[0].NamespaceSelector = metav1.LabelSelector{}
	a.Secrets[0].Data["ca.crt"][0] = 'X'
	if !reflect.DeepEqual(spec, before) || a.ValidatingWebhooks[0].Webhooks[0].NamespaceSelector == nil ||
		len(a.ValidatingWebhooks[0].Webhooks[0].NamespaceSelector.MatchExpressions) != 1 || string(testCert.CA) != "CA PEM" ||
		string(a.ValidatingWebhooks[0].Webhooks[0].ClientConfig.CABundle) != "CA PEM" {
		t.Error("rendered objects share memory")
	}
}

// A bundle built with kubebuilder mounts its own certificate volume where
// controller-runtime reads it and ships its own Service: both give way to the generated
// ones instead of being doubled.
func TestRenderWebhooksReplacesBundleCertificates(t *testing.T) {
	spec := webhookCSV()
	pod := &spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec
	pod.Volumes = []corev1.Volume{
		{Name: "cert", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "webhook-server-cert"}}},
		{Name: "webhook-cert", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
	}
	pod.Containers[0].VolumeMounts = []corev1.VolumeMount{
		{Name: "cert", MountPath: "/tmp/k8s-webhook-server/serving-certs/", ReadOnly: true},
		{Name: "config", MountPath: "/etc/config"},
	}
	pod.Containers[1].VolumeMounts = []corev1.VolumeMount{{Name: "webhook-cert", MountPath: "/certs"}}
	in := webhookInput(spec)
	svc := &unstructured.Unstructured{}
	svc.SetAPIVersion("v1")
	svc.SetKind("Service")
	svc.SetName("webhook-operator-service")
	svc.SetNamespace("elsewhere")
	in.Others = []*unstructured.Unstructured{svc}
	objs, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	got := objs.Deployments[0].Spec.Template.Spec
	var volumes []string
	for _, v := range got.Volumes {
		volumes = append(volumes, v.Name)
		if v.Name == "webhook-cert" && (v.Secret == nil || v.Secret.SecretName != "webhook-operator-service-cert") {
			t.Errorf("webhook-cert volume not replaced: %+v", v)
		}
	}
	if want := []string{"config", "apiservice-cert", "webhook-cert"}; !reflect.DeepEqual(volumes, want) {
		t.Errorf("volumes = %v, want %v", volumes, want)
	}
	for _, c := range got.Containers {
		var mounts []string
		for _, m := range c.VolumeMounts {
			mounts = append(mounts, m.Name+":"+m.MountPath)
		}
		want := []string{"apiservice-cert:/apiserver.local.config/certificates", "webhook-cert:/tmp/k8s-webhook-server/serving-certs"}
		if c.Name == "manager" {
			want = append([]string{"config:/etc/config"}, want...)
		}
		if !reflect.DeepEqual(mounts, want) {
			t.Errorf("container %s mounts = %v, want %v", c.Name, mounts, want)
		}
	}
	if len(objs.Others) != 0 || len(objs.Services) != 1 {
		t.Errorf("the bundle's Service of the same name was kept next to the generated one: others %d, services %d", len(objs.Others), len(objs.Services))
	}
}

func TestWebhookConfigName(t *testing.T) {
	long := strings.Repeat("a", 120) + "." + strings.Repeat("b", 200)
	for _, tc := range []struct{ ns, name string }{
		{"ops", "vwidget.example.com"},
		{"ops", long},
		{"ops", long + "x"},
		{strings.Repeat("n", 63), strings.Repeat("c", 177) + "." + strings.Repeat("d", 20)}, // cut right after the dot
	} {
		got := webhookConfigName(tc.ns, tc.name)
		if len(got) > 253 || got != webhookConfigName(tc.ns, tc.name) {
			t.Errorf("webhookConfigName(%s, %s) = %s (%d characters)", tc.ns, tc.name, got, len(got))
		}
		if full := tc.ns + "-" + tc.name; len(full) <= 253 && got != full {
			t.Errorf("webhookConfigName = %s, want %s", got, full)
		}
		if strings.Contains(got, ".-") {
			t.Errorf("webhookConfigName = %s: not a DNS subdomain", got)
		}
	}
	if webhookConfigName("ops", long) == webhookConfigName("ops", long+"x") {
		t.Error("two long names cut to the same name")
	}
}
