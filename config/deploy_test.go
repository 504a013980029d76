package config_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-manager/operator-manager/internal/testenv"
)

const managerNamespace = "operator-manager-system"

// TestDeployManifestsApply applies config/default as the README says an administrator
// would (kubectl, server-side, kustomize built in), so the in-cluster manifests stay valid,
// and checks what the Deployment promises: hardening, probes, resources, secure metrics.
func TestDeployManifestsApply(t *testing.T) {
	bins, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(bins, testenv.BinKubectl), "--kubeconfig", env.Kubeconfig,
		"apply", "--server-side", "--force-conflicts", "-k", "default").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply -k config/default: %v\n%s", err, out)
	}
	for _, want := range []string{"namespace/" + managerNamespace, "serviceaccount/operator-manager",
		"deployment.apps/operator-manager", "service/operator-manager-metrics",
		"clusterrole.rbac.authorization.k8s.io/operator-manager", "clusterrole.rbac.authorization.k8s.io/operator-manager-metrics-reader",
		"customresourcedefinition.apiextensions.k8s.io/subscriptions.operators.coreos.com.operator-manager.domain",
		"mutatingadmissionpolicy.admissionregistration.k8s.io/operator-manager-subscription-cleanup",
		"mutatingadmissionpolicybinding.admissionregistration.k8s.io/operator-manager-subscription-cleanup"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("kubectl apply output lacks %s:\n%s", want, out)
		}
	}
	// The namespace asks Pod Security admission to warn about pods that are not
	// "restricted": the manager's own must draw no warning.
	if strings.Contains(string(out), "PodSecurity") {
		t.Errorf("the Deployment violates the restricted Pod Security Standard:\n%s", out)
	}

	var d appsv1.Deployment
	if err := k8s.Get(ctx(t), client.ObjectKey{Namespace: managerNamespace, Name: "operator-manager"}, &d); err != nil {
		t.Fatal(err)
	}
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	for _, arg := range []string{"run", "--leader-elect", "--metrics-secure", "--metrics-bind-address=:8443"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("args %q lack %s", c.Args, arg)
		}
	}
	psc, sc := pod.SecurityContext, c.SecurityContext
	switch {
	case psc == nil || sc == nil:
		t.Fatalf("pod or container securityContext missing")
	case psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot, psc.RunAsUser == nil || *psc.RunAsUser != 65532:
		t.Errorf("pod securityContext %+v, want runAsNonRoot and runAsUser 65532", psc)
	case psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Errorf("pod seccompProfile = %+v, want RuntimeDefault", psc.SeccompProfile)
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Errorf("container root filesystem is writable")
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Errorf("container allows privilege escalation")
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
		t.Errorf("container capabilities = %+v, want drop ALL", sc.Capabilities)
	}
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.PeriodSeconds == 0 {
			t.Errorf("%s probe = %+v, want an HTTP probe with timings", name, p)
		}
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Requests[r]; !ok {
			t.Errorf("no %s request", r)
		}
		if _, ok := c.Resources.Limits[r]; !ok {
			t.Errorf("no %s limit", r)
		}
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/tmp" && !m.ReadOnly }) {
		t.Errorf("no writable /tmp: %+v", c.VolumeMounts)
	}

	var svc corev1.Service
	if err := k8s.Get(ctx(t), client.ObjectKey{Namespace: managerNamespace, Name: "operator-manager-metrics"}, &svc); err != nil {
		t.Fatal(err)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8443 || svc.Spec.Ports[0].Name != "https" ||
		svc.Spec.Ports[0].TargetPort.String() != "metrics" {
		t.Errorf("metrics Service ports = %+v, want https 8443 -> metrics", svc.Spec.Ports)
	}
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" && p.ContainerPort == 8443 }) {
		t.Errorf("container ports = %+v, want metrics 8443", c.Ports)
	}

	// Enforced, not only warned: a pod of the template is admitted in a namespace that
	// enforces the restricted standard (server-side dry run).
	restricted := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "deploy-test-restricted",
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}
	if err := k8s.Create(ctx(t), restricted); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx(t), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: restricted.Name, Name: pod.ServiceAccountName}}); err != nil {
		t.Fatal(err)
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: restricted.Name, Name: "operator-manager"}, Spec: pod}
	if err := k8s.Create(ctx(t), p, client.DryRunAll); err != nil {
		t.Errorf("a pod of the Deployment's template is refused where the restricted standard is enforced: %v", err)
	}
}

// TestMakeDeploy runs `make deploy IMG=...` as an administrator would, with the local
// control plane's kubectl: config/default applied with the image replaced.
func TestMakeDeploy(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	bins, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range []string{
		"registry.example:5000/team/operator-manager:v1.2.3",
		"registry.example/operator-manager@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	} {
		cmd := exec.Command("make", "--no-print-directory", "-C", "..", "deploy", "IMG="+img,
			"KUBECTL="+filepath.Join(bins, testenv.BinKubectl))
		cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make deploy IMG=%s: %v\n%s", img, err, out)
		}
		var d appsv1.Deployment
		if err := k8s.Get(ctx(t), client.ObjectKey{Namespace: managerNamespace, Name: "operator-manager"}, &d); err != nil {
			t.Fatal(err)
		}
		if got := d.Spec.Template.Spec.Containers[0].Image; got != img {
			t.Errorf("after make deploy IMG=%s the Deployment runs %s\n%s", img, got, out)
		}
	}
	if leftovers, _ := filepath.Glob("../bin/.deploy-*"); len(leftovers) > 0 {
		t.Errorf("make deploy left its overlay behind: %v", leftovers)
	}
}
