package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-manager/operator-manager/internal/render"
	"github.com/operator-manager/operator-manager/internal/servingcert"
)

const (
	guardCRD        = "guards.guard.samples.operator-manager.domain"
	guardValidating = "vguard.guard.samples.operator-manager.domain"
	guardMutating   = "mguard.guard.samples.operator-manager.domain"
)

// TestWebhooks installs the sample guard-operator, whose one Deployment serves a
// validating, a mutating and a conversion webhook. The webhook configurations and the
// CRD's conversion carry a caBundle that verifies the serving certificate mounted in the
// pod for the Service's DNS name (checked by a real TLS handshake against a local server
// holding the mounted key and certificate), scoped to the target namespace; a
// configuration deleted by hand comes back. An upgrade
// keeps them valid with no moment without them, and so does the rotation of a certificate
// near its end; uninstall removes the configurations
// before the Deployment and sets the CRD's conversion back to None.
func TestWebhooks(t *testing.T) {
	ns := "webhooks"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: guard}
spec: {startingCSV: guard-operator.1.0.0, catalog: samples, targetNamespaces: [webhooks]}
`)
	waitReady(t, ns, "guard", 3*time.Minute)
	checkWebhooks(t, ns)

	// A configuration deleted by hand (validation silently off) is put back.
	if err := k8s.Delete(ctx(), &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + guardValidating}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the deleted validating webhook configuration restored", func() bool {
		return k8s.Get(ctx(), client.ObjectKey{Name: ns + "-" + guardValidating}, &admissionregistrationv1.ValidatingWebhookConfiguration{}) == nil
	}, func() string { return "" })
	checkWebhooks(t, ns)

	// Upgrade: the configurations are updated in place, never absent.
	var missing atomic.Int32
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			for _, obj := range []client.Object{&admissionregistrationv1.ValidatingWebhookConfiguration{}, &admissionregistrationv1.MutatingWebhookConfiguration{}} {
				name := ns + "-" + guardValidating
				if _, ok := obj.(*admissionregistrationv1.MutatingWebhookConfiguration); ok {
					name = ns + "-" + guardMutating
				}
				if err := k8s.Get(ctx(), client.ObjectKey{Name: name}, obj); apierrors.IsNotFound(err) {
					missing.Add(1)
				}
			}
		}
	}()
	sub := getSub(t, ns, "guard")
	patch := client.MergeFrom(sub.DeepCopy())
	sub.Spec.StartingCSV = "guard-operator.1.1.0"
	if err := k8s.Patch(ctx(), sub, patch); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, ns, "guard", "guard-operator.v1.1.0")
	close(stop)
	wg.Wait()
	if n := missing.Load(); n > 0 {
		t.Errorf("a webhook configuration was missing %d times during the upgrade", n)
	}
	vwc := checkWebhooks(t, ns)
	if owner := vwc.Labels[render.LabelOwnerName]; owner != "guard-operator.v1.1.0" {
		t.Errorf("the validating configuration belongs to %q after the upgrade, want guard-operator.v1.1.0", owner)
	}
	checkRotation(t, ns)

	// Uninstall: the configurations go before the Deployment.
	var configsGone, deploymentGone time.Time
	done := make(chan struct{})
	go func() {
		defer close(done)
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) && (configsGone.IsZero() || deploymentGone.IsZero()) {
			now := time.Now()
			v := k8s.Get(ctx(), client.ObjectKey{Name: ns + "-" + guardValidating}, &admissionregistrationv1.ValidatingWebhookConfiguration{})
			m := k8s.Get(ctx(), client.ObjectKey{Name: ns + "-" + guardMutating}, &admissionregistrationv1.MutatingWebhookConfiguration{})
			if configsGone.IsZero() && apierrors.IsNotFound(v) && apierrors.IsNotFound(m) {
				configsGone = now
			}
			d := &appsv1.Deployment{}
			err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "guard-operator"}, d)
			if deploymentGone.IsZero() && (apierrors.IsNotFound(err) || (err == nil && d.DeletionTimestamp != nil)) {
				deploymentGone = now
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	if err := k8s.Delete(ctx(), getSub(t, ns, "guard")); err != nil {
		t.Fatal(err)
	}
	<-done
	switch {
	case configsGone.IsZero() || deploymentGone.IsZero():
		t.Fatalf("uninstall did not remove everything: configurations gone %v, Deployment gone %v", configsGone, deploymentGone)
	case deploymentGone.Before(configsGone):
		t.Errorf("the Deployment was removed %s before the webhook configurations", configsGone.Sub(deploymentGone))
	}
	eventually(t, time.Minute, "CRD "+guardCRD+" conversion back to None", func() bool {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		return k8s.Get(ctx(), client.ObjectKey{Name: guardCRD}, crd) == nil && crd.Spec.Conversion != nil &&
			crd.Spec.Conversion.Strategy == apiextensionsv1.NoneConverter && crd.Spec.Conversion.Webhook == nil
	}, func() string { return "" })
}

// checkRotation puts a serving certificate near its end in the Secret (as two years of
// running would) and has the manager look at the CSV: a new certificate and CA are issued,
// the pods roll onto it through the health gate, and every caBundle follows.
func checkRotation(t *testing.T, ns string) {
	t.Helper()
	name := render.WebhookSecretName("guard-operator")
	secret := &corev1.Secret{}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, secret); err != nil {
		t.Fatal(err)
	}
	ending, err := servingcert.Generate(servingcert.DNSNames(render.WebhookServiceName("guard-operator"), ns),
		time.Now().Add(-servingcert.DefaultValidity+30*time.Minute), servingcert.DefaultValidity)
	if err != nil {
		t.Fatal(err)
	}
	secret.Data = ending.SecretData()
	if err := k8s.Update(ctx(), secret); err != nil {
		t.Fatal(err)
	}
	dep := &appsv1.Deployment{}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "guard-operator"}, dep); err != nil {
		t.Fatal(err)
	}
	hashBefore := dep.Spec.Template.Annotations[render.AnnotationServingCertHash]
	// The manager looks again at its next event; an annotation on the Subscription is one.
	sub := getSub(t, ns, "guard")
	patch := client.MergeFrom(sub.DeepCopy())
	if sub.Annotations == nil {
		sub.Annotations = map[string]string{}
	}
	sub.Annotations["test.operator-manager.domain/poke"] = time.Now().Format(time.RFC3339Nano)
	if err := k8s.Patch(ctx(), sub, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "a new serving certificate issued in place of the ending one", func() bool {
		s := &corev1.Secret{}
		return k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, s) == nil &&
			!bytes.Equal(s.Data["ca.crt"], ending.CA) && servingcert.Check(servingcert.FromSecretData(s.Data),
			servingcert.DNSNames(render.WebhookServiceName("guard-operator"), ns), time.Now()) == ""
	}, func() string { return "" })
	eventually(t, 2*time.Minute, "the pods rolled onto the new certificate and the CSV Succeeded", func() bool {
		d := &appsv1.Deployment{}
		csv := getCSV(t, ns, "guard-operator.v1.1.0")
		return k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "guard-operator"}, d) == nil &&
			d.Spec.Template.Annotations[render.AnnotationServingCertHash] != hashBefore &&
			d.Status.ObservedGeneration == d.Generation && d.Status.UpdatedReplicas == d.Status.Replicas &&
			csv.Status.Phase == "Succeeded"
	}, describeSub(t, ns, "guard"))
	checkWebhooks(t, ns)
	events := &eventsv1.EventList{}
	if err := k8s.List(ctx(), events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	rotated := false
	for _, e := range events.Items {
		rotated = rotated || (e.Reason == "CertificateRotated" && e.Regarding.Name == "guard-operator.v1.1.0")
	}
	if !rotated {
		t.Error("no CertificateRotated event on the CSV")
	}
}

// TestConversionWebhookSideBySide runs guard-operator at two versions side by side, both
// serving the conversion webhook of the one CRD they share. The newest converts once it
// has passed its health gate, whichever reconciled last: an older operator may not know
// the newest schema the CRD is kept at.
// When the newest is uninstalled, the other takes the CRD's conversion over, rather than
// leaving it to None while an operator still serves it; when the last goes, it is None.
func TestConversionWebhookSideBySide(t *testing.T) {
	older, newer := "conv-older", "conv-newer"
	for _, ns := range []string{older, newer} {
		newNamespace(t, ns)
	}
	install := func(ns, version string) {
		t.Helper()
		applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: guard}
spec: {package: guard-operator, version: `+version+`, catalog: samples, targetNamespaces: [`+ns+`]}
`)
		waitReady(t, ns, "guard", 3*time.Minute)
	}
	install(older, "1.0.0")
	waitConversion(t, older)

	install(newer, "1.1.0")
	waitConversion(t, newer)

	// The older one reconciles again (its webhook Service deleted by hand, which it puts
	// back) and leaves the CRD to the newest.
	svc := &corev1.Service{}
	key := client.ObjectKey{Namespace: older, Name: render.WebhookServiceName("guard-operator")}
	if err := k8s.Get(ctx(), key, svc); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx(), svc); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the deleted Service "+key.String()+" put back by its operator", func() bool {
		again := &corev1.Service{}
		return k8s.Get(ctx(), key, again) == nil && again.UID != svc.UID
	}, func() string { return "" })
	// Its reconcile goes on to the conversions after the Service is back: watched for
	// a while, the CRD must keep converting through the newest.
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if got := conversionService(t); got != newer {
			t.Fatalf("after %s's operator reconciled again, the CRD converts through %q, want %s (the newest)", older, got, newer)
		}
	}

	// status says which installation converts, on the older's page too.
	out, err := cli("status", "guard", "-n", older)
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	if !strings.Contains(out, "CONVERTS THROUGH") || !strings.Contains(out, newer+"/"+render.WebhookServiceName("guard-operator")) {
		t.Errorf("status of %s does not say the CRD converts through %s's Service:\n%s", older, newer, out)
	}

	if err := k8s.Delete(ctx(), getSub(t, newer, "guard")); err != nil {
		t.Fatal(err)
	}
	waitConversion(t, older)

	if err := k8s.Delete(ctx(), getSub(t, older, "guard")); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "CRD "+guardCRD+" conversion back to None with no operator serving it", func() bool {
		return conversionService(t) == "None"
	}, func() string { return conversionService(t) })
}

// conversionService is the namespace of the Service the guard CRD converts through, or
// its strategy when it names none.
func conversionService(t *testing.T) string {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := k8s.Get(ctx(), client.ObjectKey{Name: guardCRD}, crd); err != nil {
		t.Fatal(err)
	}
	conv := crd.Spec.Conversion
	if conv == nil || conv.Webhook == nil || conv.Webhook.ClientConfig == nil || conv.Webhook.ClientConfig.Service == nil {
		if conv == nil {
			return ""
		}
		return string(conv.Strategy)
	}
	return conv.Webhook.ClientConfig.Service.Namespace
}

// waitConversion waits for the guard CRD to convert through ns's Service, with the CA of
// ns's serving certificate.
func waitConversion(t *testing.T, ns string) {
	t.Helper()
	secret := &corev1.Secret{}
	eventually(t, time.Minute, "CRD "+guardCRD+" converting through "+ns+"'s Service with its CA", func() bool {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		return k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: render.WebhookSecretName("guard-operator")}, secret) == nil &&
			k8s.Get(ctx(), client.ObjectKey{Name: guardCRD}, crd) == nil && conversionService(t) == ns &&
			crd.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter &&
			bytes.Equal(crd.Spec.Conversion.Webhook.ClientConfig.CABundle, secret.Data["ca.crt"])
	}, func() string { return "it converts through " + conversionService(t) })
}

// checkWebhooks asserts that both webhook configurations and the CRD's conversion point at
// the operator's Service with a CA that verifies the certificate its pods mount, and that
// the webhooks are scoped to the target namespace. It returns the validating configuration.
func checkWebhooks(t *testing.T, ns string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	service := render.WebhookServiceName("guard-operator")
	secret := &corev1.Secret{}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: render.WebhookSecretName("guard-operator")}, secret); err != nil {
		t.Fatalf("the serving certificate's Secret: %v", err)
	}
	// The pods mount that Secret where OLM's and controller-runtime's operators look.
	dep := &appsv1.Deployment{}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "guard-operator"}, dep); err != nil {
		t.Fatal(err)
	}
	mounts := map[string]string{}
	for _, m := range dep.Spec.Template.Spec.Containers[0].VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	secretOf := map[string]string{}
	for _, v := range dep.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			secretOf[v.Name] = v.Secret.SecretName
		}
	}
	for _, path := range []string{"/apiserver.local.config/certificates", "/tmp/k8s-webhook-server/serving-certs"} {
		if secretOf[mounts[path]] != secret.Name {
			t.Errorf("%s is not mounted from Secret %s: mounts %v, volumes %v", path, secret.Name, mounts, secretOf)
		}
	}
	svc := &corev1.Service{}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: service}, svc); err != nil {
		t.Fatalf("the webhook Service: %v", err)
	}
	if svc.Spec.Selector["app.kubernetes.io/name"] != "guard-operator" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 443 ||
		svc.Spec.Ports[0].TargetPort.IntValue() != 9443 {
		t.Errorf("Service %s: selector %v, ports %+v", service, svc.Spec.Selector, svc.Spec.Ports)
	}

	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := k8s.Get(ctx(), client.ObjectKey{Name: ns + "-" + guardValidating}, vwc); err != nil {
		t.Fatalf("the validating webhook configuration: %v", err)
	}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := k8s.Get(ctx(), client.ObjectKey{Name: ns + "-" + guardMutating}, mwc); err != nil {
		t.Fatalf("the mutating webhook configuration: %v", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	eventually(t, time.Minute, "CRD "+guardCRD+" converting through the operator's Service", func() bool {
		return k8s.Get(ctx(), client.ObjectKey{Name: guardCRD}, crd) == nil && crd.Spec.Conversion != nil &&
			crd.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter
	}, func() string { return "" })

	type ref struct {
		what      string
		namespace string
		name      string
		path      string
		ca        []byte
	}
	v, m := vwc.Webhooks[0], mwc.Webhooks[0]
	cc := crd.Spec.Conversion.Webhook.ClientConfig
	refs := []ref{
		{"validating webhook", v.ClientConfig.Service.Namespace, v.ClientConfig.Service.Name, *v.ClientConfig.Service.Path, v.ClientConfig.CABundle},
		{"mutating webhook", m.ClientConfig.Service.Namespace, m.ClientConfig.Service.Name, *m.ClientConfig.Service.Path, m.ClientConfig.CABundle},
		{"CRD conversion", cc.Service.Namespace, cc.Service.Name, *cc.Service.Path, cc.CABundle},
	}
	for _, r := range refs {
		if r.namespace != ns || r.name != service {
			t.Errorf("%s calls Service %s/%s, want %s/%s", r.what, r.namespace, r.name, ns, service)
		}
		if !bytes.Equal(r.ca, secret.Data["ca.crt"]) {
			t.Errorf("%s: caBundle is not the CA of the mounted certificate", r.what)
		}
		tlsHandshake(t, r.what, r.ca, secret.Data["tls.crt"], secret.Data["tls.key"], service+"."+ns+".svc")
	}
	if v.Name != guardValidating || *v.FailurePolicy != admissionregistrationv1.Fail || *v.SideEffects != admissionregistrationv1.SideEffectClassNone {
		t.Errorf("validating webhook %s: failurePolicy %v, sideEffects %v", v.Name, *v.FailurePolicy, *v.SideEffects)
	}
	if m.ReinvocationPolicy == nil || *m.ReinvocationPolicy != admissionregistrationv1.IfNeededReinvocationPolicy {
		t.Errorf("mutating webhook reinvocationPolicy %v, want IfNeeded", m.ReinvocationPolicy)
	}
	// Scoped to the target namespace, as OLM scopes webhooks to the operator's namespaces.
	for what, sel := range map[string]*metav1.LabelSelector{"validating": v.NamespaceSelector, "mutating": m.NamespaceSelector} {
		if sel == nil || len(sel.MatchExpressions) != 1 || sel.MatchExpressions[0].Key != "kubernetes.io/metadata.name" ||
			len(sel.MatchExpressions[0].Values) != 1 || sel.MatchExpressions[0].Values[0] != ns {
			t.Errorf("%s webhook namespaceSelector %+v, want metadata.name In [%s]", what, sel, ns)
		}
	}
	return vwc
}

// tlsHandshake serves TLS on a local port with the mounted certificate and key, as the
// operator's webhook server does, and connects as the API server would: trusting only the
// caBundle, asking for the Service's DNS name.
func tlsHandshake(t *testing.T, what string, caBundle, certPEM, keyPEM []byte, serverName string) {
	t.Helper()
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatalf("%s: the mounted certificate and key do not pair: %v", what, err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caBundle) {
		t.Fatalf("%s: caBundle holds no PEM certificate", what)
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ln.Addr().String(), &tls.Config{RootCAs: pool, ServerName: serverName})
	if err != nil {
		t.Fatalf("%s: TLS handshake for %s with the caBundle: %v", what, serverName, err)
	}
	conn.Close()
}
