package render

import (
	"reflect"
	"strings"
	"testing"

	olm "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog"
)

func sampleContent(t *testing.T, csv string) *catalog.BundleContent {
	t.Helper()
	cat, err := catalog.Load("../../samples/catalog", catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := cat.BundleByCSV(csv)
	if b == nil {
		t.Fatalf("no %s in the sample catalog", csv)
	}
	c, err := cat.Content(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRenderOwnNamespace(t *testing.T) {
	c := sampleContent(t, "cache-operator.v1.2.0")
	objs, err := Render(Input{Namespace: "ops", CSVName: c.CSV.Name, Package: "cache-operator", Spec: &c.CSV.Spec,
		TargetNamespaces: []string{"ops"}, Others: c.Objects,
		Config: &omv1.SubscriptionConfig{
			Env:          []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "debug"}, {Name: "WATCH_NAMESPACE", Value: "override"}},
			Resources:    &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
			NodeSelector: map[string]string{"pool": "ops"},
			Tolerations:  []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs.ServiceAccounts) != 1 || objs.ServiceAccounts[0].Name != "cache-operator" || objs.ServiceAccounts[0].Namespace != "ops" {
		t.Errorf("service accounts = %+v", objs.ServiceAccounts)
	}
	// permissions: one Role (both entries of the account merged) bound to the account,
	// then the Role of the operator's OperatorCondition.
	if len(objs.Roles) != 2 || objs.Roles[0].Namespace != "ops" || !reflect.DeepEqual(objs.Roles[0].Rules, c.CSV.Spec.InstallStrategy.StrategySpec.Permissions[0].Rules) {
		t.Errorf("roles = %+v", objs.Roles)
	}
	if rb := objs.RoleBindings[0]; rb.RoleRef.Name != objs.Roles[0].Name || rb.Subjects[0].Name != "cache-operator" || rb.Subjects[0].Namespace != "ops" {
		t.Errorf("role binding = %+v", rb)
	}
	if len(objs.ClusterRoles) != 1 || !reflect.DeepEqual(objs.ClusterRoles[0].Rules, c.CSV.Spec.InstallStrategy.StrategySpec.ClusterPermissions[0].Rules) ||
		objs.ClusterRoleBindings[0].RoleRef.Name != objs.ClusterRoles[0].Name {
		t.Errorf("cluster roles = %+v", objs.ClusterRoles)
	}
	if objs.ClusterRoles[0].Labels[LabelOwnerName] != "cache-operator.v1.2.0" || objs.ClusterRoles[0].Labels[LabelOwnerNamespace] != "ops" {
		t.Errorf("cluster role labels = %v: uninstall finds cluster-scoped objects by them", objs.ClusterRoles[0].Labels)
	}
	if len(objs.Others) != 1 || objs.Others[0].GetKind() != "Service" || objs.Others[0].GetNamespace() != "ops" ||
		objs.Others[0].GetLabels()[LabelOwnerName] != "cache-operator.v1.2.0" {
		t.Errorf("others = %+v", objs.Others)
	}
	d := objs.Deployments[0]
	if d.Name != "cache-operator" || d.Namespace != "ops" || d.Spec.Template.Annotations[AnnotationTargetNamespaces] != "ops" {
		t.Errorf("deployment %s/%s annotations %v", d.Namespace, d.Name, d.Spec.Template.Annotations)
	}
	ctr := d.Spec.Template.Spec.Containers[0]
	var env []string
	for _, e := range ctr.Env {
		env = append(env, e.Name+"="+e.Value)
	}
	if strings.Join(env, ",") != "WATCH_NAMESPACE=override,LOG_LEVEL=debug,OPERATOR_CONDITION_NAME=cache-operator.v1.2.0" {
		t.Errorf("env = %v: an override replaces by name, new ones are appended", env)
	}
	if ctr.Resources.Limits.Memory().String() != "1Gi" || d.Spec.Template.Spec.NodeSelector["pool"] != "ops" || len(d.Spec.Template.Spec.Tolerations) != 1 {
		t.Errorf("overrides not applied: %+v", d.Spec.Template.Spec)
	}
	// The bundle's own content is not changed by rendering.
	if len(c.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.Containers[0].Env) != 1 {
		t.Error("Render modified its input")
	}
}

func TestRenderAllNamespacesMakesPermissionsClusterWide(t *testing.T) {
	c := sampleContent(t, "cache-operator.v1.1.0")
	objs, err := Render(Input{Namespace: "ops", CSVName: c.CSV.Name, Spec: &c.CSV.Spec})
	if err != nil {
		t.Fatal(err)
	}
	// Only the OperatorCondition's Role is namespaced: it names one object of the namespace.
	if len(objs.Roles) != 1 || len(objs.ClusterRoles) != 2 || len(objs.ClusterRoleBindings) != 2 {
		t.Errorf("roles %d, cluster roles %d, bindings %d", len(objs.Roles), len(objs.ClusterRoles), len(objs.ClusterRoleBindings))
	}
	if objs.ClusterRoles[0].Name == objs.ClusterRoles[1].Name || objs.ClusterRoleBindings[0].Name == objs.ClusterRoleBindings[1].Name {
		t.Errorf("cluster roles share a name: %s, %s", objs.ClusterRoles[0].Name, objs.ClusterRoles[1].Name)
	}
	if got := objs.Deployments[0].Spec.Template.Annotations[AnnotationTargetNamespaces]; got != "" {
		t.Errorf("olm.targetNamespaces = %q, want empty (all namespaces)", got)
	}
}

// TestRenderSideBySideNamesApart: two installations of one version, each in its own
// namespace, one also watching the other's namespace's neighbour, never name an object
// the same: their cluster-scoped RBAC carries their namespace, and so does a Role in a
// namespace an installation watches but does not run in.
func TestRenderSideBySideNamesApart(t *testing.T) {
	c := sampleContent(t, "cache-operator.v1.2.0")
	seen := map[string]string{}
	for _, in := range []Input{
		{Namespace: "a", TargetNamespaces: []string{"a", "c"}},
		{Namespace: "c", TargetNamespaces: []string{"c"}},
		{Namespace: "b"}, // all namespaces
	} {
		in.CSVName, in.Package, in.Spec, in.Others = c.CSV.Name, "cache-operator", &c.CSV.Spec, c.Objects
		objs, err := Render(in)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs.InApplyOrder() {
			kind := reflect.TypeOf(o).Elem().Name()
			if u, ok := o.(*unstructured.Unstructured); ok {
				kind = u.GetKind()
			}
			if kind == "Deployment" || kind == "ServiceAccount" || kind == "Service" || kind == "OperatorCondition" {
				if o.GetNamespace() != in.Namespace {
					t.Errorf("installation %s: %s %s/%s outside its namespace", in.Namespace, kind, o.GetNamespace(), o.GetName())
				}
				continue // namespaced in the installation's own namespace: apart by namespace
			}
			key := kind + " " + o.GetNamespace() + "/" + o.GetName()
			if other, dup := seen[key]; dup {
				t.Errorf("%s is rendered by the installations in %s and %s", key, other, in.Namespace)
			}
			seen[key] = in.Namespace
		}
	}
	if _, ok := seen["Role c/a-cache-operator.v1.2.0-cache-operator"]; !ok {
		t.Errorf("the Role of installation a in namespace c should carry a's namespace; rendered: %v", seen)
	}
}

func TestRenderRejectsWhatItCannotInstall(t *testing.T) {
	spec := &olm.ClusterServiceVersionSpec{InstallStrategy: olm.NamedInstallStrategy{StrategyName: "helm"}}
	if _, err := Render(Input{Spec: spec}); err == nil || !strings.Contains(err.Error(), `spec.install.strategy "helm"`) {
		t.Errorf("err = %v", err)
	}
	spec = &olm.ClusterServiceVersionSpec{InstallStrategy: olm.NamedInstallStrategy{StrategyName: "deployment",
		StrategySpec: olm.StrategyDetailsDeployment{DeploymentSpecs: []olm.StrategyDeploymentSpec{{Name: "x"}}}}}
	if _, err := Render(Input{Spec: spec}); err == nil || !strings.Contains(err.Error(), "deployments[0] (x): spec.selector is required") {
		t.Errorf("err = %v", err)
	}
}

func TestTargetNamespaces(t *testing.T) {
	all := []olm.InstallMode{{Type: olm.InstallModeTypeOwnNamespace, Supported: true}, {Type: olm.InstallModeTypeSingleNamespace, Supported: true},
		{Type: olm.InstallModeTypeMultiNamespace, Supported: false}, {Type: olm.InstallModeTypeAllNamespaces, Supported: true}}
	own := []olm.InstallMode{{Type: olm.InstallModeTypeOwnNamespace, Supported: true}, {Type: olm.InstallModeTypeAllNamespaces, Supported: false}}
	for _, tc := range []struct {
		name      string
		modes     []olm.InstallMode
		requested []string
		want      []string
		err       string
	}{
		{"all by default", all, nil, nil, ""},
		{"own when all unsupported", own, nil, []string{"ops"}, ""},
		{"single", all, []string{"apps"}, []string{"apps"}, ""},
		{"multi unsupported", all, []string{"a", "b"}, nil, "needs install mode MultiNamespace"},
		{"none supported", nil, nil, nil, "supports neither AllNamespaces nor OwnNamespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := TargetNamespaces(tc.modes, "ops", tc.requested)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestLabelValue(t *testing.T) {
	long := strings.Repeat("a", 80)
	if v := LabelValue(long); len(v) != 63 || v == LabelValue(long+"b") {
		t.Errorf("LabelValue(long) = %q", v)
	}
	if LabelValue("short") != "short" {
		t.Error("short values stay")
	}
}

// TestRenderMovesRemovedAPIVersions: a bundle object written for an API version Kubernetes
// removed is applied in the version that replaced it, and the move is reported; one whose
// meaning would change fails the render, named.
func TestRenderMovesRemovedAPIVersions(t *testing.T) {
	c := sampleContent(t, "cache-operator.v1.2.0")
	role := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1beta1", "kind": "ClusterRole",
		"metadata": map[string]any{"name": "reader"}, "rules": []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"pods"}, "verbs": []any{"get"}}}}}
	objs, err := Render(Input{Namespace: "ops", CSVName: c.CSV.Name, Package: "cache-operator", Spec: &c.CSV.Spec,
		TargetNamespaces: []string{"ops"}, Others: []*unstructured.Unstructured{role}})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs.Others) != 1 || objs.Others[0].GetAPIVersion() != "rbac.authorization.k8s.io/v1" || objs.Others[0].GetNamespace() != "" {
		t.Fatalf("others = %+v", objs.Others)
	}
	if len(objs.Moved) != 1 || !strings.Contains(objs.Moved[0], `ClusterRole "reader": moved from rbac.authorization.k8s.io/v1beta1`) {
		t.Errorf("moved = %q", objs.Moved)
	}
	ingress := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "extensions/v1beta1", "kind": "Ingress", "metadata": map[string]any{"name": "web"}}}
	_, err = Render(Input{Namespace: "ops", CSVName: c.CSV.Name, Package: "cache-operator", Spec: &c.CSV.Spec,
		TargetNamespaces: []string{"ops"}, Others: []*unstructured.Unstructured{ingress}})
	if err == nil || !strings.Contains(err.Error(), `Ingress "web" is written for extensions/v1beta1`) {
		t.Errorf("render of an extensions/v1beta1 Ingress: %v", err)
	}
}

// TestRenderDeprecatedServiceAccount: a Deployment naming its account in the deprecated
// serviceAccount field (prometheus 0.27.0 in the community catalog) runs as that account
// on upgrade too: serviceAccountName is set, and the account is created.
func TestRenderDeprecatedServiceAccount(t *testing.T) {
	c := sampleContent(t, "cache-operator.v1.2.0")
	spec := c.CSV.Spec.DeepCopy()
	pod := &spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec
	pod.ServiceAccountName, pod.DeprecatedServiceAccount = "", "legacy-account"
	objs, err := Render(Input{Namespace: "ops", CSVName: c.CSV.Name, Package: "cache-operator", Spec: spec, TargetNamespaces: []string{"ops"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := objs.Deployments[0].Spec.Template.Spec.ServiceAccountName; got != "legacy-account" {
		t.Errorf("serviceAccountName = %q, want legacy-account", got)
	}
	found := false
	for _, sa := range objs.ServiceAccounts {
		found = found || sa.Name == "legacy-account"
	}
	if !found {
		t.Errorf("the account is not created: %+v", objs.ServiceAccounts)
	}
}

// TestRenderOperatorCondition: every CSV with Deployments gets an OperatorCondition of its
// own name, which exactly its pods' service accounts may read and update, and whose name
// its containers find in $OPERATOR_CONDITION_NAME (where OLM's operator-lib looks).
func TestRenderOperatorCondition(t *testing.T) {
	c := sampleContent(t, "cache-operator.v1.1.0")
	objs, err := Render(Input{Namespace: "ops", CSVName: c.CSV.Name, Spec: &c.CSV.Spec})
	if err != nil {
		t.Fatal(err)
	}
	oc := objs.OperatorCondition
	if oc == nil || oc.Name != c.CSV.Name || oc.Namespace != "ops" || oc.Kind != "OperatorCondition" || oc.Labels[LabelOwnerName] != c.CSV.Name {
		t.Fatalf("operator condition = %+v", oc)
	}
	if len(oc.Spec.Conditions) != 0 || len(oc.Spec.Overrides) != 0 {
		t.Errorf("the rendered OperatorCondition claims conditions the operator and administrators own: %+v", oc.Spec)
	}
	role := objs.Roles[len(objs.Roles)-1]
	want := []rbacv1.PolicyRule{{APIGroups: []string{"operators.coreos.com.operator-manager.domain"}, Resources: []string{"operatorconditions"},
		ResourceNames: []string{c.CSV.Name}, Verbs: []string{"get", "update", "patch"}}}
	if !reflect.DeepEqual(role.Rules, want) {
		t.Errorf("operator condition role rules = %+v", role.Rules)
	}
	binding := objs.RoleBindings[len(objs.RoleBindings)-1]
	if binding.RoleRef.Name != role.Name || len(binding.Subjects) != 1 || binding.Subjects[0].Name != "cache-operator" || binding.Subjects[0].Namespace != "ops" {
		t.Errorf("operator condition binding = %+v", binding)
	}
	for _, d := range objs.Deployments {
		for _, ctr := range d.Spec.Template.Spec.Containers {
			found := false
			for _, e := range ctr.Env {
				found = found || (e.Name == "OPERATOR_CONDITION_NAME" && e.Value == c.CSV.Name)
			}
			if !found {
				t.Errorf("container %s of %s lacks OPERATOR_CONDITION_NAME: %v", ctr.Name, d.Name, ctr.Env)
			}
		}
	}
	order := objs.InApplyOrder()
	for i, o := range order {
		if o.GetObjectKind().GroupVersionKind().Kind == "Deployment" {
			t.Errorf("a Deployment (%s) is applied before the OperatorCondition", o.GetName())
		}
		if o == client.Object(oc) {
			break
		}
		if i == len(order)-1 {
			t.Error("the OperatorCondition is not applied")
		}
	}
}

// TestRenderDropsRepeatedEnvAndPorts: eclipse-che 7.26.0 lists an env variable twice in
// its Deployment, which the API server accepts but server-side apply refuses outright;
// the last value is kept (the one the kubelet would use), identical ports are kept once,
// and both are said.
func TestRenderDropsRepeatedEnvAndPorts(t *testing.T) {
	c := sampleContent(t, "cache-operator.v1.1.0")
	spec := c.CSV.Spec.DeepCopy()
	ctr := &spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.Containers[0]
	ctr.Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}, {Name: "A", Value: "3"}}
	ctr.Ports = []corev1.ContainerPort{{ContainerPort: 8080}, {ContainerPort: 8080, Protocol: corev1.ProtocolTCP}, {ContainerPort: 8080, Protocol: corev1.ProtocolUDP}}
	objs, err := Render(Input{Namespace: "ops", CSVName: c.CSV.Name, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	got := objs.Deployments[0].Spec.Template.Spec.Containers[0]
	var env []string
	for _, e := range got.Env {
		if e.Name != "OPERATOR_CONDITION_NAME" {
			env = append(env, e.Name+"="+e.Value)
		}
	}
	if strings.Join(env, ",") != "B=2,A=3" {
		t.Errorf("env = %v, want B=2,A=3", env)
	}
	if len(got.Ports) != 2 || got.Ports[1].Protocol != corev1.ProtocolUDP {
		t.Errorf("ports = %+v, want 8080/TCP once and 8080/UDP", got.Ports)
	}
	said := strings.Join(objs.Moved, "\n")
	for _, w := range []string{"container " + ctr.Name + ": env A was given 2 times; the last is kept", "port 8080/TCP was listed more than once"} {
		if !strings.Contains(said, w) {
			t.Errorf("changes lack %q:\n%s", w, said)
		}
	}
	if len(spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.Containers[0].Env) != 3 {
		t.Error("Render modified its input")
	}
}

// TestRenderOneObjectPerIdentity: a bundle shipping the ServiceAccount its CSV names
// (apicurio-registry 1.0.0 in the community catalog), or a manifest twice, still applies
// each object once. Applied twice with different content, each apply undid the other and
// the installation re-applied itself ten times a second.
func TestRenderOneObjectPerIdentity(t *testing.T) {
	c := sampleContent(t, "cache-operator.v1.2.0")
	sa := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount",
		"metadata":         map[string]any{"name": "cache-operator", "labels": map[string]any{"app.kubernetes.io/name": "cache"}},
		"imagePullSecrets": []any{map[string]any{"name": "registry"}}}}
	cm := func(v string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "settings"}, "data": map[string]any{"v": v}}}
	}
	objs, err := Render(Input{Namespace: "ops", CSVName: c.CSV.Name, Package: "cache-operator", Spec: &c.CSV.Spec,
		TargetNamespaces: []string{"ops"}, Others: []*unstructured.Unstructured{sa, cm("1"), cm("2")}})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, o := range objs.InApplyOrder() {
		seen[identityOf(o)]++
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("%s is applied %d times", id, n)
		}
	}
	if len(objs.ServiceAccounts) != 1 {
		t.Fatalf("service accounts = %+v", objs.ServiceAccounts)
	}
	got := objs.ServiceAccounts[0]
	if got.Labels["app.kubernetes.io/name"] != "cache" || got.Labels[LabelPackage] == "" ||
		len(got.ImagePullSecrets) != 1 || got.ImagePullSecrets[0].Name != "registry" {
		t.Errorf("the bundle's ServiceAccount is not merged into the generated one: %+v", got)
	}
	if len(objs.Others) != 1 || objs.Others[0].Object["data"].(map[string]any)["v"] != "2" {
		t.Errorf("others = %+v, want the last ConfigMap only", objs.Others)
	}
	if len(objs.Moved) != 2 {
		t.Errorf("moved = %q, want a line for the merged account and one for the repeated ConfigMap", objs.Moved)
	}
}

// TestRenderAggregatedClusterRole: an aggregated ClusterRole's rules belong to the
// controller manager, so the apply leaves them out (universal-crossplane ships `rules: []`).
func TestRenderAggregatedClusterRole(t *testing.T) {
	c := sampleContent(t, "cache-operator.v1.2.0")
	role := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
		"metadata":        map[string]any{"name": "admin-of-x"},
		"aggregationRule": map[string]any{"clusterRoleSelectors": []any{map[string]any{"matchLabels": map[string]any{"x/aggregate-to-admin": "true"}}}},
		"rules":           []any{}}}
	plain := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
		"metadata": map[string]any{"name": "reader"}, "rules": []any{}}}
	objs, err := Render(Input{Namespace: "ops", CSVName: c.CSV.Name, Package: "cache-operator", Spec: &c.CSV.Spec,
		TargetNamespaces: []string{"ops"}, Others: []*unstructured.Unstructured{role, plain}})
	if err != nil {
		t.Fatal(err)
	}
	if _, has := objs.Others[0].Object["rules"]; has || objs.Others[0].Object["aggregationRule"] == nil {
		t.Errorf("aggregated role = %v, want its aggregationRule and no rules", objs.Others[0].Object)
	}
	if _, has := objs.Others[1].Object["rules"]; !has {
		t.Errorf("a plain role lost its rules: %v", objs.Others[1].Object)
	}
}

// TestRenderOLMConfigOverrides: the rest of OLM's Subscription config (envFrom, volumes,
// volumeMounts, affinity, annotations) is applied as OLM applies it, so an OLM
// Subscription's config means the same here.
func TestRenderOLMConfigOverrides(t *testing.T) {
	c := sampleContent(t, "cache-operator.v1.2.0")
	// The bundle's own: a volume and a mount the override replaces, an annotation it must
	// not overwrite, an affinity part it leaves alone.
	pod := &c.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec
	pod.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	pod.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: "/etc/bundle"}}
	pod.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "bundle-env"}}}}
	pod.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1}}}}
	c.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Annotations = map[string]string{"team": "bundle"}
	bundleEnv := pod.Containers[0].EnvFrom[0]
	proxy := corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "proxy"}}}
	nodeAffinity := &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}}}
	objs, err := Render(Input{Namespace: "ops", CSVName: c.CSV.Name, Package: "cache-operator", Spec: &c.CSV.Spec,
		TargetNamespaces: []string{"ops"}, Others: c.Objects,
		Config: &omv1.SubscriptionConfig{
			EnvFrom: []corev1.EnvFromSource{bundleEnv, proxy},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "mine"}}}},
				{Name: "certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "ca"}}}},
			VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/mine"}, {Name: "certs", MountPath: "/etc/ssl/extra"}},
			Affinity:     &corev1.Affinity{NodeAffinity: nodeAffinity},
			Annotations:  map[string]string{"team": "override", "cost-center": "42"},
		}})
	if err != nil {
		t.Fatal(err)
	}
	d := objs.Deployments[0]
	got := d.Spec.Template.Spec
	if len(got.Volumes) != 2 || got.Volumes[0].ConfigMap == nil || got.Volumes[0].ConfigMap.Name != "mine" || got.Volumes[1].Name != "certs" {
		t.Errorf("volumes = %+v: the override replaces by name and appends the rest", got.Volumes)
	}
	ctr := got.Containers[0]
	if len(ctr.VolumeMounts) != 2 || ctr.VolumeMounts[0].MountPath != "/etc/mine" || ctr.VolumeMounts[1].MountPath != "/etc/ssl/extra" {
		t.Errorf("volume mounts = %+v", ctr.VolumeMounts)
	}
	if len(ctr.EnvFrom) != 2 || ctr.EnvFrom[1].SecretRef == nil || ctr.EnvFrom[1].SecretRef.Name != "proxy" {
		t.Errorf("envFrom = %+v: a source already there is not repeated, a new one is appended", ctr.EnvFrom)
	}
	if got.Affinity == nil || got.Affinity.NodeAffinity == nil || got.Affinity.PodAntiAffinity == nil {
		t.Errorf("affinity = %+v: node affinity set by the override, pod anti-affinity kept from the bundle", got.Affinity)
	}
	if a := d.Spec.Template.Annotations; a["team"] != "bundle" || a["cost-center"] != "42" || a[AnnotationTargetNamespaces] != "ops" {
		t.Errorf("pod template annotations = %v: the bundle's and the manager's are kept, new ones added", a)
	}
	if a := d.Annotations; a["cost-center"] != "42" || a[AnnotationOperatorNamespace] != "ops" {
		t.Errorf("deployment annotations = %v", a)
	}
	if len(c.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.Volumes) != 1 || len(pod.Containers[0].EnvFrom) != 1 {
		t.Error("Render modified its input")
	}
}

// TestRenderConfigSelector: spec.config.selector limits the overrides to the Deployments
// whose pod template labels it selects (OLM ignores it and overrides every Deployment);
// a selector that cannot be read is an error naming the field.
func TestRenderConfigSelector(t *testing.T) {
	c := sampleContent(t, "cache-operator.v1.2.0")
	spec := c.CSV.Spec.DeepCopy()
	second := *spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].DeepCopy()
	second.Name = "cache-metrics"
	second.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cache-metrics"}}
	second.Spec.Template.Labels = map[string]string{"app": "cache-metrics"}
	spec.InstallStrategy.StrategySpec.DeploymentSpecs = append(spec.InstallStrategy.StrategySpec.DeploymentSpecs, second)
	first := spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Labels
	overridden := func(cfg *omv1.SubscriptionConfig) (map[string]bool, error) {
		objs, err := Render(Input{Namespace: "ops", CSVName: c.CSV.Name, Package: "cache-operator", Spec: spec, TargetNamespaces: []string{"ops"}, Config: cfg})
		if err != nil {
			return nil, err
		}
		out := map[string]bool{}
		for _, d := range objs.Deployments {
			out[d.Name] = d.Spec.Template.Spec.NodeSelector["pool"] == "ops" && d.Annotations["team"] == "a"
		}
		return out, nil
	}
	cfg := &omv1.SubscriptionConfig{NodeSelector: map[string]string{"pool": "ops"}, Annotations: map[string]string{"team": "a"}}
	for _, tc := range []struct {
		name string
		sel  *metav1.LabelSelector
		want map[string]bool
	}{
		{"no selector: every Deployment", nil, map[string]bool{"cache-operator": true, "cache-metrics": true}},
		{"the metrics Deployment only", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cache-metrics"}}, map[string]bool{"cache-operator": false, "cache-metrics": true}},
		{"the first only", &metav1.LabelSelector{MatchLabels: first}, map[string]bool{"cache-operator": true, "cache-metrics": false}},
		{"none", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}, map[string]bool{"cache-operator": false, "cache-metrics": false}},
	} {
		cfg.Selector = tc.sel
		got, err := overridden(cfg)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: overridden %v, want %v", tc.name, got, tc.want)
		}
	}
	cfg.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Sometimes"}}}
	if _, err := overridden(cfg); err == nil || !strings.Contains(err.Error(), "spec.config.selector") {
		t.Errorf("an unreadable selector: %v", err)
	}
}
