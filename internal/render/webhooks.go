package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	olm "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ServingCert is the TLS serving certificate of one webhook Deployment, PEM encoded. The
// caller makes it (for the DNS names of WebhookServiceName) and keeps it; Render only
// places it.
type ServingCert struct {
	CA, Cert, Key []byte
	// Hash is a short digest that changes when the certificate does: it is put on the
	// pod template so a rotated certificate rolls the pods.
	Hash string
}

// CRDConversion is how one CRD's spec.conversion webhook is to be set (fields of
// apiextensions.k8s.io/v1 ServiceReference and WebhookConversion). Conversion webhooks
// are not objects of their own: the caller patches the CRD.
type CRDConversion struct {
	// CRD is the CRD's name, <plural>.<group>.
	CRD string
	// Service the API server calls.
	Namespace, Name, Path string
	Port                  int32
	CABundle              []byte
	// ReviewVersions are the ConversionReview versions the webhook accepts.
	ReviewVersions []string
}

// ConversionService is the Service a CRD's spec.conversion calls, as namespace/name, or ""
// when it calls none (no webhook strategy, or a URL).
func ConversionService(conv *apiextensionsv1.CustomResourceConversion) string {
	if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil ||
		conv.Webhook.ClientConfig == nil || conv.Webhook.ClientConfig.Service == nil {
		return ""
	}
	return conv.Webhook.ClientConfig.Service.Namespace + "/" + conv.Webhook.ClientConfig.Service.Name
}

// AnnotationServingCertHash on a webhook Deployment's pod template carries
// ServingCert.Hash, so a new certificate rolls the pods.
const AnnotationServingCertHash = "operator-manager.domain/serving-cert-hash"

// Where the serving certificate is mounted in every container of a webhook Deployment:
// OLM's path (which operators built for OLM read) and controller-runtime's default.
const (
	apiServiceCertVolume = "apiservice-cert"
	apiServiceCertPath   = "/apiserver.local.config/certificates"
	webhookCertVolume    = "webhook-cert"
	webhookCertPath      = "/tmp/k8s-webhook-server/serving-certs"
	// caCertKey is the Secret key of the CA that signed the certificate.
	caCertKey = "ca.crt"
)

// defaultReviewVersions are used when a definition declares no admissionReviewVersions,
// which admissionregistration.k8s.io/v1 requires.
var defaultReviewVersions = []string{"v1", "v1beta1"}

// WebhookServiceName is the Service in front of a webhook Deployment, named as OLM names
// it: <deployment>-service, dots replaced by dashes (a Service name is a DNS label).
func WebhookServiceName(deployment string) string {
	return strings.ReplaceAll(deployment, ".", "-") + "-service"
}

// WebhookSecretName is the Secret holding a webhook Deployment's serving certificate:
// <deployment>-service-cert, as OLM names it.
func WebhookSecretName(deployment string) string {
	return WebhookServiceName(deployment) + "-cert"
}

// ServingDeployments are the Deployments that serve a webhook of any type or an owned
// APIService, sorted, each once: the ones Input.WebhookCerts needs a certificate for.
func ServingDeployments(spec *olm.ClusterServiceVersionSpec) []string {
	deps := map[string]bool{}
	for _, w := range spec.WebhookDefinitions {
		if w.DeploymentName != "" && knownWebhookType(w.Type) {
			deps[w.DeploymentName] = true
		}
	}
	for _, a := range spec.APIServiceDefinitions.Owned {
		if a.DeploymentName != "" {
			deps[a.DeploymentName] = true
		}
	}
	return sortedKeys(deps)
}

// serves says what a serving Deployment serves, for messages.
func serves(spec *olm.ClusterServiceVersionSpec, deployment string) string {
	var webhooks, apis bool
	for _, w := range spec.WebhookDefinitions {
		webhooks = webhooks || w.DeploymentName == deployment
	}
	for _, a := range spec.APIServiceDefinitions.Owned {
		apis = apis || a.DeploymentName == deployment
	}
	switch {
	case webhooks && apis:
		return "webhooks (spec.webhookdefinitions) and APIServices (spec.apiservicedefinitions.owned)"
	case apis:
		return "APIServices (spec.apiservicedefinitions.owned)"
	}
	return "webhooks (spec.webhookdefinitions)"
}

func knownWebhookType(t olm.WebhookAdmissionType) bool {
	switch t {
	case olm.ValidatingAdmissionWebhook, olm.MutatingAdmissionWebhook, olm.ConversionWebhook:
		return true
	}
	return false
}

// webhookPort is the Service port of a definition: containerPort, 443 when unset.
func webhookPort(w *olm.WebhookDescription) int32 {
	if w.ContainerPort == 0 {
		return 443
	}
	return w.ContainerPort
}

// renderWebhooks adds the webhooks of the CSV to out, whose Deployments are rendered:
// a Secret and a Service per webhook Deployment, the certificate mounted in its pods,
// one webhook configuration per admission webhook, and the CRD conversions.
func renderWebhooks(in Input, out *Objects, meta func(name, namespace string) metav1.ObjectMeta) error {
	defs := in.Spec.WebhookDefinitions
	apis := in.Spec.APIServiceDefinitions.Owned
	if len(defs) == 0 && len(apis) == 0 {
		return nil
	}
	deps := map[string]*appsv1.Deployment{}
	for _, d := range out.Deployments {
		if _, ok := deps[d.Name]; !ok {
			deps[d.Name] = d
		}
	}
	// Check every definition before anything is built, so the error names the field at
	// fault rather than a certificate the caller could not know to make.
	type configKey struct {
		kind olm.WebhookAdmissionType
		name string
	}
	seen := map[configKey]int{}
	converted := map[string]int{}
	for i := range defs {
		w := &defs[i]
		if !knownWebhookType(w.Type) {
			return fmt.Errorf("spec.webhookdefinitions[%d].type %q is not one of %s, %s, %s", i, w.Type,
				olm.ValidatingAdmissionWebhook, olm.MutatingAdmissionWebhook, olm.ConversionWebhook)
		}
		if deps[w.DeploymentName] == nil {
			return fmt.Errorf("spec.webhookdefinitions[%d].deploymentName %q names no deployment of spec.install.spec.deployments", i, w.DeploymentName)
		}
		if w.Type == olm.ConversionWebhook {
			for _, crd := range w.ConversionCRDs {
				if j, ok := converted[crd]; ok {
					return fmt.Errorf("spec.webhookdefinitions[%d].conversionCRDs: %s is converted by spec.webhookdefinitions[%d] already", i, crd, j)
				}
				converted[crd] = i
			}
			continue
		}
		if w.GenerateName == "" {
			return fmt.Errorf("spec.webhookdefinitions[%d].generateName is empty", i)
		}
		k := configKey{w.Type, w.GenerateName}
		if j, ok := seen[k]; ok {
			return fmt.Errorf("spec.webhookdefinitions[%d].generateName %q is used by spec.webhookdefinitions[%d] too", i, w.GenerateName, j)
		}
		seen[k] = i
	}
	if err := checkAPIServices(apis, deps); err != nil {
		return err
	}

	// Per Deployment: its certificate, Secret and Service, and the certificate in its pods.
	certs := map[string]ServingCert{}
	for _, name := range ServingDeployments(in.Spec) {
		cert, ok := in.WebhookCerts[name]
		if !ok || len(cert.CA) == 0 || len(cert.Cert) == 0 || len(cert.Key) == 0 {
			return fmt.Errorf("deployment %s serves %s but no serving certificate (CA, certificate and key) was given for it", name, serves(in.Spec, name))
		}
		certs[name] = cert
		dep := deps[name]
		if dep.Spec.Selector == nil || len(dep.Spec.Selector.MatchLabels) == 0 {
			return fmt.Errorf("deployment %s serves %s but its spec.selector has no matchLabels for its Service to select", name, serves(in.Spec, name))
		}
		ports, err := servicePorts(defs, apis, name)
		if err != nil {
			return err
		}
		secret := WebhookSecretName(name)
		out.Secrets = append(out.Secrets, &corev1.Secret{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: meta(secret, in.Namespace),
			Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{
				corev1.TLSCertKey:       clone(cert.Cert),
				corev1.TLSPrivateKeyKey: clone(cert.Key),
				caCertKey:               clone(cert.CA),
			},
		})
		out.Services = append(out.Services, &corev1.Service{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: meta(WebhookServiceName(name), in.Namespace),
			Spec: corev1.ServiceSpec{Selector: copyMap(dep.Spec.Selector.MatchLabels), Ports: ports},
		})
		mountServingCert(&dep.Spec.Template.Spec, secret)
		hash := cert.Hash
		if hash == "" { // not filled: a digest of the certificate does the same
			sum := sha256.Sum256(cert.Cert)
			hash = hex.EncodeToString(sum[:])[:16]
		}
		dep.Spec.Template.Annotations = mergeMaps(dep.Spec.Template.Annotations, map[string]string{AnnotationServingCertHash: hash})
	}
	// The generated Secrets and Services replace bundle manifests of the same name, as
	// OLM's do, rather than being applied twice with different contents.
	generated := map[string]bool{}
	for _, s := range out.Secrets {
		generated["Secret/"+s.Name] = true
	}
	for _, s := range out.Services {
		generated["Service/"+s.Name] = true
	}
	others := out.Others[:0:0]
	for _, o := range out.Others {
		if o.GroupVersionKind().Group == "" && o.GetNamespace() == in.Namespace && generated[o.GetKind()+"/"+o.GetName()] {
			continue
		}
		others = append(others, o)
	}
	out.Others = others

	// Admission webhooks scoped to the namespaces the operator watches, as OLM scopes
	// them to its OperatorGroup's namespaces; all namespaces when it watches all.
	var nsSelector *metav1.LabelSelector
	if len(in.TargetNamespaces) > 0 {
		targets := uniq(in.TargetNamespaces)
		sort.Strings(targets)
		nsSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: targets}}}
	}
	for i := range defs {
		w := defs[i].DeepCopy()
		cert := certs[w.DeploymentName]
		switch w.Type {
		case olm.ConversionWebhook:
			for _, crd := range w.ConversionCRDs {
				out.Conversions = append(out.Conversions, CRDConversion{CRD: crd, Namespace: in.Namespace,
					Name: WebhookServiceName(w.DeploymentName), Path: deref(w.WebhookPath), Port: webhookPort(w),
					CABundle: clone(cert.CA), ReviewVersions: reviewVersions(w)})
			}
		case olm.ValidatingAdmissionWebhook:
			out.ValidatingWebhooks = append(out.ValidatingWebhooks, &admissionregistrationv1.ValidatingWebhookConfiguration{
				TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
				ObjectMeta: meta(webhookConfigName(in.Namespace, w.GenerateName), ""),
				Webhooks: []admissionregistrationv1.ValidatingWebhook{{
					Name: w.GenerateName, ClientConfig: clientConfig(in.Namespace, w, cert.CA),
					Rules: w.Rules, FailurePolicy: w.FailurePolicy, MatchPolicy: w.MatchPolicy,
					NamespaceSelector: nsSelector.DeepCopy(), ObjectSelector: w.ObjectSelector,
					SideEffects: sideEffects(w), TimeoutSeconds: w.TimeoutSeconds, AdmissionReviewVersions: reviewVersions(w),
				}},
			})
		case olm.MutatingAdmissionWebhook:
			out.MutatingWebhooks = append(out.MutatingWebhooks, &admissionregistrationv1.MutatingWebhookConfiguration{
				TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
				ObjectMeta: meta(webhookConfigName(in.Namespace, w.GenerateName), ""),
				Webhooks: []admissionregistrationv1.MutatingWebhook{{
					Name: w.GenerateName, ClientConfig: clientConfig(in.Namespace, w, cert.CA),
					Rules: w.Rules, FailurePolicy: w.FailurePolicy, MatchPolicy: w.MatchPolicy,
					NamespaceSelector: nsSelector.DeepCopy(), ObjectSelector: w.ObjectSelector,
					SideEffects: sideEffects(w), TimeoutSeconds: w.TimeoutSeconds, AdmissionReviewVersions: reviewVersions(w),
					ReinvocationPolicy: w.ReinvocationPolicy,
				}},
			})
		}
	}
	sort.SliceStable(out.Conversions, func(a, b int) bool { return out.Conversions[a].CRD < out.Conversions[b].CRD })
	for i := range apis {
		a := &apis[i]
		out.APIServices = append(out.APIServices, apiService(in.Namespace, a, certs[a.DeploymentName].CA, meta))
	}
	return nil
}

// servicePorts are the ports of a serving Deployment's Service, one per distinct
// containerPort of its webhooks, and 443 for its APIServices (the port the aggregator
// calls) to their containerPort, ordered by port.
func servicePorts(defs []olm.WebhookDescription, apis []olm.APIServiceDescription, deployment string) ([]corev1.ServicePort, error) {
	byPort := map[int32]corev1.ServicePort{}
	from := map[int32]string{}
	for i := range apis {
		a := &apis[i]
		if a.DeploymentName != deployment {
			continue
		}
		target := intstr.FromInt32(apiServicePort(a))
		field := fmt.Sprintf("spec.apiservicedefinitions.owned[%d]", i)
		if p, ok := byPort[apiServiceServicePort]; ok && p.TargetPort != target {
			return nil, fmt.Errorf("%s.containerPort %s differs from the containerPort %s of %s: the Service of deployment %s has one port %d for APIServices",
				field, target.String(), p.TargetPort.String(), from[apiServiceServicePort], deployment, apiServiceServicePort)
		}
		byPort[apiServiceServicePort] = corev1.ServicePort{Name: fmt.Sprint(apiServiceServicePort), Port: apiServiceServicePort, TargetPort: target}
		from[apiServiceServicePort] = field
	}
	for i := range defs {
		w := &defs[i]
		if w.DeploymentName != deployment {
			continue
		}
		port := webhookPort(w)
		target := intstr.FromInt32(port)
		if w.TargetPort != nil {
			target = *w.TargetPort
		}
		if p, ok := byPort[port]; ok {
			if p.TargetPort != target {
				return nil, fmt.Errorf("spec.webhookdefinitions[%d].targetPort %s differs from the targetPort %s of %s, on the same port %d of deployment %s's Service",
					i, target.String(), p.TargetPort.String(), from[port], port, deployment)
			}
			continue
		}
		byPort[port] = corev1.ServicePort{Name: fmt.Sprint(port), Port: port, TargetPort: target}
		from[port] = fmt.Sprintf("spec.webhookdefinitions[%d]", i)
	}
	ports := make([]corev1.ServicePort, 0, len(byPort))
	for _, p := range byPort {
		ports = append(ports, p)
	}
	sort.Slice(ports, func(a, b int) bool { return ports[a].Port < ports[b].Port })
	return ports, nil
}

// mountServingCert mounts the certificate Secret in every container, at OLM's path and
// at controller-runtime's, replacing volumes and mounts of the same names or paths.
func mountServingCert(pod *corev1.PodSpec, secret string) {
	certVolume := func(name string, items ...corev1.KeyToPath) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret, Items: items}}}
	}
	volumes := []corev1.Volume{
		certVolume(apiServiceCertVolume, corev1.KeyToPath{Key: corev1.TLSCertKey, Path: "apiserver.crt"}, corev1.KeyToPath{Key: corev1.TLSPrivateKeyKey, Path: "apiserver.key"}),
		certVolume(webhookCertVolume, corev1.KeyToPath{Key: corev1.TLSCertKey, Path: corev1.TLSCertKey}, corev1.KeyToPath{Key: corev1.TLSPrivateKeyKey, Path: corev1.TLSPrivateKeyKey}),
	}
	mounts := []corev1.VolumeMount{
		{Name: apiServiceCertVolume, MountPath: apiServiceCertPath, ReadOnly: true},
		{Name: webhookCertVolume, MountPath: webhookCertPath, ReadOnly: true},
	}
	ours := func(m corev1.VolumeMount) bool {
		for _, o := range mounts {
			if m.Name == o.Name || strings.TrimSuffix(m.MountPath, "/") == o.MountPath {
				return true
			}
		}
		return false
	}
	// Volumes the replaced mounts used: dropped below if nothing mounts them any more (a
	// bundle's own certificate volume names a Secret that would keep the pod from starting).
	replaced := map[string]bool{}
	for i := range pod.Containers {
		c := &pod.Containers[i]
		kept := make([]corev1.VolumeMount, 0, len(c.VolumeMounts)+len(mounts))
		for _, m := range c.VolumeMounts {
			if ours(m) {
				replaced[m.Name] = true
				continue
			}
			kept = append(kept, m)
		}
		c.VolumeMounts = append(kept, mounts...)
	}
	used := map[string]bool{}
	for _, cs := range [][]corev1.Container{pod.InitContainers, pod.Containers} {
		for _, c := range cs {
			for _, m := range c.VolumeMounts {
				used[m.Name] = true
			}
		}
	}
	for _, c := range pod.EphemeralContainers {
		for _, m := range c.VolumeMounts {
			used[m.Name] = true
		}
	}
	kept := make([]corev1.Volume, 0, len(pod.Volumes)+len(volumes))
	for _, v := range pod.Volumes {
		if v.Name == apiServiceCertVolume || v.Name == webhookCertVolume || (replaced[v.Name] && !used[v.Name]) {
			continue
		}
		kept = append(kept, v)
	}
	pod.Volumes = append(kept, volumes...)
}

func clientConfig(namespace string, w *olm.WebhookDescription, ca []byte) admissionregistrationv1.WebhookClientConfig {
	port := webhookPort(w)
	return admissionregistrationv1.WebhookClientConfig{
		Service: &admissionregistrationv1.ServiceReference{Namespace: namespace, Name: WebhookServiceName(w.DeploymentName),
			Path: w.WebhookPath, Port: &port},
		CABundle: clone(ca),
	}
}

// sideEffects as declared; None when the bundle does not say, as OLM does for v1, which
// requires the field (bundles written for v1beta1 often leave it out).
func sideEffects(w *olm.WebhookDescription) *admissionregistrationv1.SideEffectClass {
	if w.SideEffects != nil {
		return w.SideEffects
	}
	none := admissionregistrationv1.SideEffectClassNone
	return &none
}

func reviewVersions(w *olm.WebhookDescription) []string {
	if len(w.AdmissionReviewVersions) == 0 {
		return append([]string{}, defaultReviewVersions...)
	}
	return append([]string{}, w.AdmissionReviewVersions...)
}

// webhookConfigName is <namespace>-<generateName>: the same for every version of the
// operator in the namespace, so an upgrade updates the configuration in place. Names
// longer than 253 characters are cut and suffixed with a digest of the whole name.
func webhookConfigName(namespace, generateName string) string {
	name := namespace + "-" + generateName
	if len(name) <= 253 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	// A DNS subdomain's labels start and end alphanumeric: no "." or "-" before the suffix.
	return strings.TrimRight(name[:242], ".-") + "-" + hex.EncodeToString(sum[:])[:10]
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// PlaceholderCerts stands in for the serving certificates of the CSV's webhook
// Deployments where only the list of objects matters (the access check, the permissions
// preview): the objects are the same, only the certificate bytes differ.
func PlaceholderCerts(spec *olm.ClusterServiceVersionSpec) map[string]ServingCert {
	deps := ServingDeployments(spec)
	if len(deps) == 0 {
		return nil
	}
	out := make(map[string]ServingCert, len(deps))
	for _, d := range deps {
		out[d] = ServingCert{CA: []byte("placeholder"), Cert: []byte("placeholder"), Key: []byte("placeholder"), Hash: "placeholder"}
	}
	return out
}
