package render

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	olm "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/apiversions"
)

// Input is one installation to render.
type Input struct {
	// Namespace is where the CSV and its namespaced objects live.
	Namespace string
	CSVName   string
	Package   string
	Spec      *olm.ClusterServiceVersionSpec
	// TargetNamespaces as TargetNamespaces returns them; empty means all namespaces.
	TargetNamespaces []string
	// Config holds the Subscription's Deployment overrides, if any.
	Config *omv1.SubscriptionConfig
	// Others are the bundle's other manifests (Services, ConfigMaps, ...).
	Others []*unstructured.Unstructured
	// WebhookCerts are the serving certificates of the Deployments ServingDeployments
	// names, by Deployment name (for the DNS names of WebhookServiceName).
	WebhookCerts map[string]ServingCert
}

// Objects are what one CSV installs, in the order they are applied: identities and
// permissions before the Deployments that use them.
type Objects struct {
	ServiceAccounts     []*corev1.ServiceAccount
	Roles               []*rbacv1.Role
	RoleBindings        []*rbacv1.RoleBinding
	ClusterRoles        []*rbacv1.ClusterRole
	ClusterRoleBindings []*rbacv1.ClusterRoleBinding
	// OperatorCondition is where the running operator says whether it may be upgraded
	// now; its service accounts may update it (a Role and RoleBinding in Roles and
	// RoleBindings), and its containers find it by $OPERATOR_CONDITION_NAME.
	OperatorCondition *omv1.OperatorCondition
	Others            []*unstructured.Unstructured
	Deployments       []*appsv1.Deployment
	// The CSV's webhooks (spec.webhookdefinitions): a serving certificate Secret and a
	// Service per webhook Deployment, applied before the Deployments that mount them; the
	// admission webhook configurations, applied after them.
	Secrets            []*corev1.Secret
	Services           []*corev1.Service
	ValidatingWebhooks []*admissionregistrationv1.ValidatingWebhookConfiguration
	MutatingWebhooks   []*admissionregistrationv1.MutatingWebhookConfiguration
	// APIServices register the CSV's owned APIServices (spec.apiservicedefinitions.owned)
	// with the aggregator, applied after the Deployments that serve them.
	APIServices []*apiregistrationv1.APIService
	// Conversions are not applied as objects: the caller sets these CRDs' spec.conversion.
	Conversions []CRDConversion
	// Moved says which bundle objects were moved from a removed API version to the one
	// that replaced it, and what repeated entries of a Deployment were dropped, a line each.
	Moved []string
}

// Render builds the objects of one CSV. Names are derived from the CSV, so each version
// has its own RBAC (removed with it) while Deployments and service accounts keep the
// bundle's names and pass from one version to the next by rolling update.
func Render(in Input) (*Objects, error) {
	if in.Spec.InstallStrategy.StrategyName != "" && in.Spec.InstallStrategy.StrategyName != olm.InstallStrategyNameDeployment {
		return nil, fmt.Errorf("spec.install.strategy %q is not supported (only %q)", in.Spec.InstallStrategy.StrategyName, olm.InstallStrategyNameDeployment)
	}
	strategy := in.Spec.InstallStrategy.StrategySpec
	labels := OwnerLabels(in.Namespace, in.CSVName, in.Package)
	meta := func(name, namespace string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: copyMap(labels),
			Annotations: map[string]string{AnnotationOwner: in.Namespace + "/" + in.CSVName}}
	}
	out := &Objects{}

	// Service accounts: every one named by a permission or a Deployment.
	sas := map[string]bool{}
	for _, p := range append(append([]olm.StrategyDeploymentPermissions{}, strategy.Permissions...), strategy.ClusterPermissions...) {
		if p.ServiceAccountName == "" {
			return nil, fmt.Errorf("spec.install.spec.permissions: an entry has no serviceAccountName")
		}
		sas[p.ServiceAccountName] = true
	}
	for i, d := range strategy.DeploymentSpecs {
		if d.Name == "" {
			return nil, fmt.Errorf("spec.install.spec.deployments[%d].name is empty", i)
		}
		if sa := podServiceAccount(&d.Spec.Template.Spec); sa != "" {
			sas[sa] = true
		}
	}
	for _, sa := range sortedKeys(sas) {
		out.ServiceAccounts = append(out.ServiceAccounts, &corev1.ServiceAccount{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: meta(sa, in.Namespace)})
	}

	// permissions: namespaced rules in the operator's namespace and every namespace it
	// watches; cluster-wide when it watches all namespaces, as OLM grants them.
	for _, p := range mergeRules(strategy.Permissions) {
		name := rbacName(in.CSVName, p.ServiceAccountName)
		subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: p.ServiceAccountName, Namespace: in.Namespace}}
		if len(in.TargetNamespaces) == 0 {
			// Named apart from the clusterPermissions role of the same account.
			global := scopedRBACName(in.Namespace, in.CSVName, p.ServiceAccountName+"-all-namespaces")
			out.ClusterRoles = append(out.ClusterRoles, clusterRole(meta(global, ""), p.Rules))
			out.ClusterRoleBindings = append(out.ClusterRoleBindings, clusterRoleBinding(meta(global, ""), global, subject))
			// Leader election and the like happen in the operator's own namespace, which
			// cluster-wide rules cover too; nothing more is needed.
			continue
		}
		for _, ns := range uniq(append([]string{in.Namespace}, in.TargetNamespaces...)) {
			// In a namespace it watches but does not run in, the role carries the
			// installation's namespace: another installation of the same version runs there
			// (side by side) and has its own role of the CSV's name.
			roleName := name
			if ns != in.Namespace {
				roleName = scopedRBACName(in.Namespace, in.CSVName, p.ServiceAccountName)
			}
			out.Roles = append(out.Roles, &rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
				ObjectMeta: meta(roleName, ns), Rules: p.Rules})
			out.RoleBindings = append(out.RoleBindings, &rbacv1.RoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
				ObjectMeta: meta(roleName, ns), Subjects: subject,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: roleName}})
		}
	}
	for _, p := range mergeRules(strategy.ClusterPermissions) {
		name := scopedRBACName(in.Namespace, in.CSVName, p.ServiceAccountName)
		out.ClusterRoles = append(out.ClusterRoles, clusterRole(meta(name, ""), p.Rules))
		out.ClusterRoleBindings = append(out.ClusterRoleBindings, clusterRoleBinding(meta(name, ""), name,
			[]rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: p.ServiceAccountName, Namespace: in.Namespace}}))
	}

	for _, o := range in.Others {
		// Written for an API version Kubernetes removed: moved to its successor where
		// that loses nothing, refused with the kind, name and version otherwise.
		moved, change, err := apiversions.Upgrade(o)
		if err != nil {
			return nil, fmt.Errorf("bundle object: %w", err)
		}
		if change != "" {
			out.Moved = append(out.Moved, change)
		}
		o = moved.DeepCopy()
		// As OLM places them: a namespaced object of a bundle goes to the installation's
		// namespace whatever namespace its manifest names (bundles are written for one).
		if namespaced(o) {
			o.SetNamespace(in.Namespace)
		} else {
			o.SetNamespace("")
		}
		if o.GetKind() == "ClusterRole" && o.Object["aggregationRule"] != nil {
			// The controller manager writes an aggregated role's rules; applying the
			// bundle's (usually empty) list would take them back at every apply.
			delete(o.Object, "rules")
		}
		o.SetLabels(mergeMaps(o.GetLabels(), labels))
		o.SetAnnotations(mergeMaps(o.GetAnnotations(), map[string]string{AnnotationOwner: in.Namespace + "/" + in.CSVName}))
		o.SetResourceVersion("")
		o.SetUID("")
		out.Others = append(out.Others, o)
	}

	for i, d := range strategy.DeploymentSpecs {
		dep, err := deployment(in, meta(d.Name, in.Namespace), d)
		if err != nil {
			return nil, fmt.Errorf("spec.install.spec.deployments[%d] (%s): %w", i, d.Name, err)
		}
		out.Moved = append(out.Moved, dedupeContainers(d.Name, &dep.Spec.Template.Spec)...)
		out.Deployments = append(out.Deployments, dep)
	}
	renderOperatorCondition(in, out, meta)
	if err := renderWebhooks(in, out, meta); err != nil {
		return nil, err
	}
	if err := dedupeOthers(out); err != nil {
		return nil, err
	}
	return out, nil
}

// dedupeOthers leaves one object per identity among what is applied. A bundle may ship,
// besides its CSV, an object the CSV makes anyway (most often the ServiceAccount its
// permissions name), or the same manifest twice. Applied twice with different content,
// each apply undoes the other, so the installation would never settle: every apply is a
// change, every change is drift to repair. A bundle's ServiceAccount is merged into the
// generated one (its labels, annotations, secrets and pull secrets kept); any other
// bundle object the CSV also defines yields to the CSV's; of a manifest given twice, the
// last counts, as kubectl apply of the directory would leave it.
func dedupeOthers(out *Objects) error {
	generated := map[string]bool{}
	for _, o := range out.InApplyOrder() {
		if _, isOther := o.(*unstructured.Unstructured); !isOther {
			generated[identityOf(o)] = true
		}
	}
	accounts := map[string]*corev1.ServiceAccount{}
	for _, sa := range out.ServiceAccounts {
		accounts[sa.Name] = sa
	}
	last := map[string]int{}
	for i, o := range out.Others {
		last[identityOf(o)] = i
	}
	var kept []*unstructured.Unstructured
	for i, o := range out.Others {
		id := identityOf(o)
		switch {
		case last[id] != i:
			out.Moved = append(out.Moved, fmt.Sprintf("bundle %s %s is given more than once: the last one is applied", o.GetKind(), o.GetName()))
		case generated[id] && o.GetKind() == "ServiceAccount" && accounts[o.GetName()] != nil:
			var bundled corev1.ServiceAccount
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &bundled); err != nil {
				return fmt.Errorf("bundle ServiceAccount %s: %w", o.GetName(), err)
			}
			sa := accounts[o.GetName()]
			sa.Labels = mergeMaps(bundled.Labels, sa.Labels)
			sa.Annotations = mergeMaps(bundled.Annotations, sa.Annotations)
			sa.Secrets, sa.ImagePullSecrets = bundled.Secrets, bundled.ImagePullSecrets
			sa.AutomountServiceAccountToken = bundled.AutomountServiceAccountToken
			out.Moved = append(out.Moved, fmt.Sprintf("bundle ServiceAccount %s is merged into the one the CSV names", o.GetName()))
		case generated[id]:
			out.Moved = append(out.Moved, fmt.Sprintf("bundle %s %s is also defined by the CSV: the CSV's is applied", o.GetKind(), o.GetName()))
		default:
			kept = append(kept, o)
		}
	}
	out.Others = kept
	return nil
}

// identityOf is an object's group, kind, namespace and name: two applies of one identity
// write the same object.
func identityOf(o client.Object) string {
	gvk := o.GetObjectKind().GroupVersionKind()
	return gvk.Group + "/" + gvk.Kind + "/" + o.GetNamespace() + "/" + o.GetName()
}

// renderOperatorCondition adds the OperatorCondition of the CSV (named after it, as OLM
// names it), a Role that lets the operator's service accounts read and update that one
// object, and OPERATOR_CONDITION_NAME in every container, where OLM's operator-lib looks.
func renderOperatorCondition(in Input, out *Objects, meta func(name, namespace string) metav1.ObjectMeta) {
	if len(out.Deployments) == 0 {
		return
	}
	out.OperatorCondition = &omv1.OperatorCondition{
		TypeMeta:   metav1.TypeMeta{APIVersion: omv1.GroupVersion.String(), Kind: "OperatorCondition"},
		ObjectMeta: meta(in.CSVName, in.Namespace),
	}
	accounts := map[string]bool{}
	env := []corev1.EnvVar{{Name: omv1.EnvOperatorConditionName, Value: in.CSVName}}
	for _, d := range out.Deployments {
		sa := d.Spec.Template.Spec.ServiceAccountName
		if sa == "" {
			sa = "default"
		}
		accounts[sa] = true
		for _, cs := range [][]corev1.Container{d.Spec.Template.Spec.InitContainers, d.Spec.Template.Spec.Containers} {
			for i := range cs {
				cs[i].Env = mergeEnv(cs[i].Env, env)
			}
		}
	}
	var subjects []rbacv1.Subject
	for _, sa := range sortedKeys(accounts) {
		subjects = append(subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: in.Namespace})
	}
	name := rbacName(in.CSVName, "operator-condition")
	out.Roles = append(out.Roles, &rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: meta(name, in.Namespace), Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{omv1.Group}, Resources: []string{"operatorconditions"}, ResourceNames: []string{in.CSVName},
			Verbs: []string{"get", "update", "patch"}}}})
	out.RoleBindings = append(out.RoleBindings, &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: meta(name, in.Namespace), Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}})
}

// podServiceAccount is the account a pod runs as: serviceAccountName, or the deprecated
// serviceAccount when only that is set.
func podServiceAccount(spec *corev1.PodSpec) string {
	if spec.ServiceAccountName != "" {
		return spec.ServiceAccountName
	}
	return spec.DeprecatedServiceAccount
}

func deployment(in Input, om metav1.ObjectMeta, d olm.StrategyDeploymentSpec) (*appsv1.Deployment, error) {
	spec := *d.Spec.DeepCopy()
	if spec.Selector == nil {
		return nil, fmt.Errorf("spec.selector is required")
	}
	// Old bundles name the account in the deprecated serviceAccount field. The API server
	// copies it into serviceAccountName only when that is empty, so on an upgrade the
	// previous version's account would stay: serviceAccountName is set here, and owned.
	spec.Template.Spec.ServiceAccountName = podServiceAccount(&spec.Template.Spec)
	om.Labels = mergeMaps(d.Label, om.Labels)
	targets := strings.Join(in.TargetNamespaces, ",")
	ann := map[string]string{AnnotationTargetNamespaces: targets, AnnotationOperatorNamespace: in.Namespace}
	om.Annotations = mergeMaps(om.Annotations, ann)
	spec.Template.Annotations = mergeMaps(spec.Template.Annotations, ann)
	c := in.Config
	if c != nil && c.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(c.Selector)
		if err != nil {
			return nil, fmt.Errorf("the Subscription's spec.config.selector: %w", err)
		}
		if !sel.Matches(labels.Set(spec.Template.Labels)) {
			c = nil // not one of the Deployments the overrides are for
		}
	}
	if c != nil {
		pod := &spec.Template.Spec
		for i := range pod.Containers {
			ctr := &pod.Containers[i]
			ctr.Env = mergeEnv(ctr.Env, c.Env)
			if c.Resources != nil {
				ctr.Resources = *c.Resources.DeepCopy()
			}
			ctr.EnvFrom = mergeEnvFrom(ctr.EnvFrom, c.EnvFrom)
			ctr.VolumeMounts = mergeByName(ctr.VolumeMounts, c.VolumeMounts, func(m corev1.VolumeMount) string { return m.Name })
		}
		if c.NodeSelector != nil {
			pod.NodeSelector = copyMap(c.NodeSelector)
		}
		pod.Tolerations = append(pod.Tolerations, c.Tolerations...)
		pod.Volumes = mergeByName(pod.Volumes, c.Volumes, func(v corev1.Volume) string { return v.Name })
		pod.Affinity = overrideAffinity(pod.Affinity, c.Affinity)
		// The bundle's own annotations win, and so do the manager's (targets, namespace).
		om.Annotations = mergeMaps(c.Annotations, om.Annotations)
		spec.Template.Annotations = mergeMaps(c.Annotations, spec.Template.Annotations)
	}
	return &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: om, Spec: spec}, nil
}

// dedupeContainers removes the repeated entries of a container's keyed lists that the API
// server accepts (with a warning) but server-side apply refuses outright ("duplicate
// entries for key"): env variables of one name, of which the last counts, as the kubelet
// takes it, and identical ports. It says what it removed, a line each.
func dedupeContainers(deployment string, pod *corev1.PodSpec) []string {
	var changes []string
	for _, cs := range [][]corev1.Container{pod.InitContainers, pod.Containers} {
		for i := range cs {
			c := &cs[i]
			last := map[string]int{}
			for j, e := range c.Env {
				last[e.Name] = j
			}
			if len(last) < len(c.Env) {
				kept := make([]corev1.EnvVar, 0, len(last))
				dropped := map[string]int{}
				for j, e := range c.Env {
					if last[e.Name] == j {
						kept = append(kept, e)
					} else {
						dropped[e.Name]++
					}
				}
				for _, name := range sortedKeys(boolKeys(dropped)) {
					changes = append(changes, fmt.Sprintf("deployment %s container %s: env %s was given %d times; the last is kept, as the kubelet would use it",
						deployment, c.Name, name, dropped[name]+1))
				}
				c.Env = kept
			}
			type portKey struct {
				port     int32
				protocol corev1.Protocol
			}
			seen := map[portKey]bool{}
			ports := c.Ports[:0:0]
			for _, p := range c.Ports {
				protocol := p.Protocol
				if protocol == "" {
					protocol = corev1.ProtocolTCP
				}
				k := portKey{p.ContainerPort, protocol}
				if seen[k] {
					changes = append(changes, fmt.Sprintf("deployment %s container %s: port %d/%s was listed more than once; kept once", deployment, c.Name, p.ContainerPort, protocol))
					continue
				}
				seen[k] = true
				ports = append(ports, p)
			}
			if len(c.Ports) > 0 {
				c.Ports = ports
			}
		}
	}
	return changes
}

func boolKeys[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// mergeEnv sets each override by name, replacing a variable of the same name, keeping order.
// mergeEnvFrom appends the sources not already there, as OLM's InjectEnvFromIntoDeployment.
func mergeEnvFrom(base, add []corev1.EnvFromSource) []corev1.EnvFromSource {
	out := append([]corev1.EnvFromSource(nil), base...)
	for _, a := range add {
		if !slices.ContainsFunc(out, func(e corev1.EnvFromSource) bool { return equality.Semantic.DeepEqual(e, a) }) {
			out = append(out, *a.DeepCopy())
		}
	}
	return out
}

// mergeByName replaces every entry of base named as one of overrides (a bundle may name
// an env variable twice; dedupeContainers keeps the last later), and appends the rest.
func mergeByName[T any](base, overrides []T, name func(T) string) []T {
	out := append(make([]T, 0, len(base)+len(overrides)), base...)
	for _, o := range overrides {
		replaced := false
		for i := range out {
			if name(out[i]) == name(o) {
				out[i], replaced = o, true
			}
		}
		if !replaced {
			out = append(out, o)
		}
	}
	return out
}

// overrideAffinity replaces each part of the pod's affinity that the override sets, as
// OLM's OverrideDeploymentAffinity.
func overrideAffinity(base, over *corev1.Affinity) *corev1.Affinity {
	if over == nil {
		return base
	}
	out := &corev1.Affinity{}
	if base != nil {
		out = base.DeepCopy()
	}
	o := over.DeepCopy()
	if o.NodeAffinity != nil {
		out.NodeAffinity = o.NodeAffinity
	}
	if o.PodAffinity != nil {
		out.PodAffinity = o.PodAffinity
	}
	if o.PodAntiAffinity != nil {
		out.PodAntiAffinity = o.PodAntiAffinity
	}
	return out
}

func mergeEnv(base, overrides []corev1.EnvVar) []corev1.EnvVar {
	return mergeByName(base, overrides, func(e corev1.EnvVar) string { return e.Name })
}

// mergeRules joins the rules of permission entries that name the same service account,
// which real bundles do, so each account gets one role.
func mergeRules(perms []olm.StrategyDeploymentPermissions) []olm.StrategyDeploymentPermissions {
	var out []olm.StrategyDeploymentPermissions
	index := map[string]int{}
	for _, p := range perms {
		if i, ok := index[p.ServiceAccountName]; ok {
			out[i].Rules = append(out[i].Rules, p.Rules...)
			continue
		}
		index[p.ServiceAccountName] = len(out)
		out = append(out, olm.StrategyDeploymentPermissions{ServiceAccountName: p.ServiceAccountName, Rules: append([]rbacv1.PolicyRule{}, p.Rules...)})
	}
	return out
}

func clusterRole(om metav1.ObjectMeta, rules []rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"}, ObjectMeta: om, Rules: rules}
}

func clusterRoleBinding(om metav1.ObjectMeta, role string, subjects []rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: om, Subjects: subjects, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}}
}

// rbacName is the name of one service account's role for one CSV, within the 253
// characters object names allow.
func rbacName(csv, sa string) string {
	name := csv + "-" + sa
	if len(name) > 200 {
		name = name[:189] + "-" + LabelValue(name)[53:]
	}
	return name
}

// scopedRBACName names a role of one installation outside its own namespace (cluster-wide,
// or in a namespace it watches): with the installation's namespace, so that two
// installations of one version side by side never share one, within the name limit.
func scopedRBACName(namespace, csv, sa string) string { return rbacName(namespace+"-"+csv, sa) }

// clusterScopedKinds are the kinds a bundle may ship that have no namespace.
var clusterScopedKinds = map[string]bool{
	"ClusterRole": true, "ClusterRoleBinding": true, "PriorityClass": true, "StorageClass": true,
	"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true, "ConsoleYAMLSample": true,
	"ConsoleQuickStart": true, "ConsoleCLIDownload": true, "ConsoleLink": true, "Namespace": true,
}

func namespaced(o *unstructured.Unstructured) bool { return !clusterScopedKinds[o.GetKind()] }

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func mergeMaps(base, over map[string]string) map[string]string {
	out := copyMap(base)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func uniq(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// InApplyOrder lists the objects in the order they are applied: identities and
// permissions first, the bundle's other objects next, then the webhook certificate
// Secrets and Services, the Deployments (which use them), and last the webhook
// configurations and APIServices (registered once their server is being rolled out).
func (o *Objects) InApplyOrder() []client.Object {
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
	if o.OperatorCondition != nil {
		out = append(out, o.OperatorCondition)
	}
	for _, x := range o.Others {
		out = append(out, x)
	}
	for _, x := range o.Secrets {
		out = append(out, x)
	}
	for _, x := range o.Services {
		out = append(out, x)
	}
	for _, x := range o.Deployments {
		out = append(out, x)
	}
	for _, x := range o.ValidatingWebhooks {
		out = append(out, x)
	}
	for _, x := range o.MutatingWebhooks {
		out = append(out, x)
	}
	for _, x := range o.APIServices {
		out = append(out, x)
	}
	return out
}
