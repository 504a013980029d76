package testenv

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/operator-manager/operator-manager/config"
)

// managerClient builds a client from the manager's kubeconfig file alone.
func managerClient(t *testing.T, path string) kubernetes.Interface {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if rc.CertData != nil || rc.KeyData != nil || rc.CertFile != "" || rc.KeyFile != "" {
		t.Fatalf("the manager's client configuration carries a client certificate")
	}
	return kubernetes.NewForConfigOrDie(rc)
}

func whoAmI(ctx context.Context, t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectReview: %v", err)
	}
	return r.Status.UserInfo.Username
}

func allowed(ctx context.Context, t *testing.T, cs kubernetes.Interface, attrs authorizationv1.ResourceAttributes) bool {
	t.Helper()
	r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectAccessReview %+v: %v", attrs, err)
	}
	return r.Status.Allowed
}

// tokenExpiry reads the exp claim of a JWT without verifying it.
func tokenExpiry(t *testing.T, token string) time.Time {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token is not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	return time.Unix(claims.Exp, 0)
}

// TestManagerKubeconfig: the manager's kubeconfig holds only its ServiceAccount's token,
// the API server knows it as that ServiceAccount, and it has what config/rbac grants and
// no more: it is not a cluster administrator.
func TestManagerKubeconfig(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path, err := env.ManagerKubeconfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw.AuthInfos) != 1 {
		t.Errorf("kubeconfig has %d users, want 1", len(raw.AuthInfos))
	}
	var token string
	for name, a := range raw.AuthInfos {
		if len(a.ClientCertificateData) > 0 || a.ClientCertificate != "" || len(a.ClientKeyData) > 0 || a.ClientKey != "" ||
			a.Username != "" || a.Password != "" || a.Exec != nil || a.AuthProvider != nil || a.TokenFile != "" || a.Impersonate != "" {
			t.Errorf("user %s of the manager's kubeconfig holds more than a token: %+v", name, a)
		}
		token = a.Token
	}
	if token == "" {
		t.Fatal("the manager's kubeconfig holds no token")
	}
	if left := time.Until(tokenExpiry(t, token)); left < 47*time.Hour {
		t.Errorf("the manager's token expires in %s, want about 48h", left.Round(time.Second))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "client-certificate") || strings.Contains(string(data), "client-key") {
		t.Errorf("the manager's kubeconfig mentions a client certificate:\n%s", data)
	}
	if c := raw.Contexts[raw.CurrentContext]; c == nil || c.Namespace != config.ManagerNamespace {
		t.Errorf("current context %q = %+v, want namespace %s", raw.CurrentContext, c, config.ManagerNamespace)
	}

	cs := managerClient(t, path)
	want := "system:serviceaccount:" + config.ManagerNamespace + ":" + config.ManagerServiceAccount
	if got := whoAmI(ctx, t, cs); got != want || got != ManagerUser {
		t.Fatalf("the manager's client is %q, want %q", got, want)
	}
	const group = "operators.coreos.com.operator-manager.domain"
	for _, a := range []authorizationv1.ResourceAttributes{
		{Verb: "list", Group: group, Resource: "subscriptions"},
		{Verb: "watch", Group: group, Resource: "subscriptions", Namespace: "default"},
		{Verb: "update", Group: group, Resource: "blueprints", Subresource: "status"},
		{Verb: "create", Group: "coordination.k8s.io", Resource: "leases", Namespace: config.ManagerNamespace},
	} {
		if !allowed(ctx, t, cs, a) {
			t.Errorf("the manager may not %s %s.%s/%s in %q; config/rbac grants it", a.Verb, a.Resource, a.Group, a.Subresource, a.Namespace)
		}
	}
	for _, a := range []authorizationv1.ResourceAttributes{
		{Verb: "delete", Resource: "nodes"},
		{Verb: "create", Resource: "namespaces"},
		{Verb: "*", Group: "*", Resource: "*"},
	} {
		if allowed(ctx, t, cs, a) {
			t.Errorf("the manager may %s %s.%s in %q: it must not be a cluster administrator", a.Verb, a.Resource, a.Group, a.Namespace)
		}
	}

	// Again: the same file with a fresh token, and the RBAC applied once more.
	again, err := env.ManagerKubeconfig(ctx)
	if err != nil {
		t.Fatalf("second ManagerKubeconfig: %v", err)
	}
	if again != path {
		t.Errorf("second ManagerKubeconfig wrote %s, first %s", again, path)
	}
	raw2, err := clientcmd.LoadFromFile(again)
	if err != nil {
		t.Fatal(err)
	}
	if raw2.AuthInfos[raw2.Contexts[raw2.CurrentContext].AuthInfo].Token == token {
		t.Errorf("second ManagerKubeconfig did not issue a fresh token")
	}
	if got := whoAmI(ctx, t, managerClient(t, again)); got != want {
		t.Errorf("after the second ManagerKubeconfig the client is %q", got)
	}

	rc, err := env.ManagerConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := whoAmI(ctx, t, kubernetes.NewForConfigOrDie(rc)); got != want {
		t.Errorf("ManagerConfig's client is %q, want %q", got, want)
	}
}

// TestRestartAPIServer: kube-apiserver goes down for two seconds and comes back on the same
// port; clients work again, the manager's token is still accepted, the other components
// kept running and reconnected (a Deployment created afterwards becomes Available).
func TestRestartAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	managerKubeconfig, err := env.ManagerKubeconfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]int{}
	for _, p := range env.Processes {
		before[p.Name] = p.PID
	}
	start := time.Now()
	if err := env.RestartAPIServer(ctx, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("restart took %s", time.Since(start).Round(time.Millisecond))
	for _, s := range env.Status() {
		if !s.Running {
			t.Errorf("%s is not running after the restart; see %s", s.Name, s.Log)
		}
		switch {
		case s.Name == binAPIServer && s.PID == before[s.Name]:
			t.Errorf("kube-apiserver has the same pid %d after a restart", s.PID)
		case s.Name != binAPIServer && s.PID != before[s.Name]:
			t.Errorf("%s changed pid from %d to %d", s.Name, before[s.Name], s.PID)
		}
	}
	cs := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := cs.Discovery().ServerVersion(); err != nil {
		t.Fatalf("the admin client fails after the restart: %v", err)
	}
	if got := whoAmI(ctx, t, managerClient(t, managerKubeconfig)); got != ManagerUser {
		t.Errorf("the manager's token after the restart is %q", got)
	}
	loaded, err := Load(env.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range loaded.Processes {
		if p.Name == binAPIServer && (p.PID == before[binAPIServer] || len(p.Args) == 0) {
			t.Errorf("state file records kube-apiserver as pid %d with %d arguments, want the new process", p.PID, len(p.Args))
		}
	}

	if env.Flavour != Full {
		return
	}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, deployment("after-restart", 1, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		d, err := cs.AppsV1().Deployments("default").Get(ctx, "after-restart", metav1.GetOptions{})
		if err != nil {
			d = &appsv1.Deployment{}
		} else {
			if c := condition(d, appsv1.DeploymentAvailable); c != nil && c.Status == corev1.ConditionTrue && d.Status.AvailableReplicas == 1 {
				break
			}
		}
		select {
		case <-ctx.Done():
			for _, p := range env.Processes {
				if p.Name != binEtcd {
					t.Logf("end of %s:\n%s", p.Log, tail(p.Log, 3000))
				}
			}
			t.Fatalf("a Deployment created after the restart never became Available (err %v, status %+v): the other components did not reconnect", err, d.Status)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
