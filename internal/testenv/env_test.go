package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

var env *Env

func TestMain(m *testing.M) { os.Exit(Main(m, Full, &env)) }

func TestVersionIsStamped(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(env.Config)
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != KubernetesVersion {
		t.Fatalf("/version reports %q, want %q: minKubeVersion checks depend on it", v.GitVersion, KubernetesVersion)
	}
}

// TestToolsModulesMatchVersions keeps the binary cache key honest: the versions that key
// the cache are the versions the tools modules build.
func TestToolsModulesMatchVersions(t *testing.T) {
	for file, want := range map[string][]string{
		"../../tools/kube/go.mod": {"k8s.io/kubernetes " + KubernetesVersion, "go.etcd.io/etcd/server/v3 " + EtcdVersion},
		"../../tools/kwok/go.mod": {"sigs.k8s.io/kwok " + KwokVersion},
	} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(string(data), w) {
				t.Errorf("%s does not require %q", file, w)
			}
		}
	}
}

func deployment(name string, replicas int32, podLabels map[string]string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	for k, v := range podLabels {
		labels[k] = v
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas:                ptr.To(replicas),
			ProgressDeadlineSeconds: ptr.To[int32](15),
			Selector:                &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "example.invalid/" + name + ":1"}}},
			},
		},
	}
}

func condition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range d.Status.Conditions {
		if d.Status.Conditions[i].Type == t {
			return &d.Status.Conditions[i]
		}
	}
	return nil
}

// TestDeploymentBecomesAvailable is the point of the full flavour: the real Deployment and
// ReplicaSet controllers, the real scheduler and kwok's fake kubelet take a Deployment to
// Available with all replicas updated.
func TestDeploymentBecomesAvailable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, deployment("healthy", 2, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		d, err := cs.AppsV1().Deployments("default").Get(ctx, "healthy", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if c := condition(d, appsv1.DeploymentAvailable); c != nil && c.Status == corev1.ConditionTrue &&
			d.Status.UpdatedReplicas == 2 && d.Status.AvailableReplicas == 2 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("deployment never became Available: %+v", d.Status)
		case <-time.After(200 * time.Millisecond):
		}
	}
	pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=healthy"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning {
			t.Errorf("pod %s: node %q phase %s, want scheduled and Running", p.Name, p.Spec.NodeName, p.Status.Phase)
		}
	}
}

// TestNeverReadyStage shows the failure stage tests use to break an operator for real:
// the pods run but never become Ready, and the Deployment exceeds its progress deadline.
func TestNeverReadyStage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	d := deployment("broken", 1, map[string]string{StageLabel: StageNeverReady})
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		d, err := cs.AppsV1().Deployments("default").Get(ctx, "broken", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if c := condition(d, appsv1.DeploymentProgressing); c != nil && c.Reason == "ProgressDeadlineExceeded" {
			if d.Status.AvailableReplicas != 0 {
				t.Fatalf("broken deployment has %d available replicas", d.Status.AvailableReplicas)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("deployment never exceeded its progress deadline: %+v", d.Status)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// TestStopLeavesNoProcess starts a second, API-only environment, stops it, and checks
// that none of its processes survive and its temporary directory is gone.
func TestStopLeavesNoProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e, err := Start(ctx, Options{Flavour: APIOnly})
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, p := range e.Processes {
		pids = append(pids, p.PID)
	}
	if len(pids) != 2 {
		t.Fatalf("API-only flavour runs %d processes, want etcd and kube-apiserver", len(pids))
	}
	e.Stop()
	for _, pid := range pids {
		if pidAlive(pid) {
			t.Errorf("process %d still runs after Stop", pid)
		}
	}
	if _, err := os.Stat(e.Dir); !os.IsNotExist(err) {
		t.Errorf("temporary directory %s remains after Stop", e.Dir)
	}
}

// TestDetachedEnvironmentOutlivesItsStarter is what `dev up` relies on: a detached
// environment keeps running after the process that started it exits, and Load(dir).Stop
// ends it. The starter here is a child test binary.
func TestDetachedEnvironmentOutlivesItsStarter(t *testing.T) {
	if os.Getenv("OPM_TESTENV_CHILD") != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := Start(ctx, Options{Flavour: APIOnly, Dir: os.Getenv("OPM_TESTENV_CHILD"), Detached: true}); err != nil {
			t.Fatal(err)
		}
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDetachedEnvironmentOutlivesItsStarter$")
	cmd.Env = append(os.Environ(), "OPM_TESTENV_CHILD="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	loaded, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer loaded.Stop()
	for _, s := range loaded.Status() {
		if !s.Running {
			t.Errorf("%s (pid %d) is not running after its starter exited; log %s", s.Name, s.PID, s.Log)
		}
	}
	cs := kubernetes.NewForConfigOrDie(loaded.Config)
	if _, err := cs.Discovery().ServerVersion(); err != nil {
		t.Fatalf("detached apiserver does not answer: %v", err)
	}
	loaded.Stop()
	for _, s := range loaded.Status() {
		if s.Running {
			t.Errorf("%s (pid %d) still runs after Stop", s.Name, s.PID)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, stateFile)); !os.IsNotExist(err) {
		t.Errorf("state file remains after Stop")
	}
}
