package manager_test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/operator-manager/operator-manager/internal/manager"
	"github.com/operator-manager/operator-manager/internal/scheme"
	"github.com/operator-manager/operator-manager/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, testenv.APIOnly, &env)) }

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestManagerServesProbesMetricsAndElectsALeader starts the manager as `run` does, with
// leader election on as in a cluster, and checks what a cluster relies on: the probes
// answer, /metrics serves Prometheus text, and the Lease names the leader.
func TestManagerServesProbesMetricsAndElectsALeader(t *testing.T) {
	ports, err := testenv.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	metrics := "127.0.0.1:" + strconv.Itoa(ports[0])
	probes := "127.0.0.1:" + strconv.Itoa(ports[1])
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- manager.Run(ctx, env.Config, manager.Options{
			MetricsAddr: metrics, ProbeAddr: probes, LeaderElect: true, LeaderElectionNamespace: "default", Namespace: "default",
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager ended with %v", err)
		}
	}()

	deadline := time.Now().Add(time.Minute)
	for {
		code, _ := get(t, "http://"+probes+"/readyz")
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never answered 200 (last %d)", code)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, body := get(t, "http://"+probes+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d %s", code, body)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	var lease coordinationv1.Lease
	for {
		err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: manager.LeaderElectionID}, &lease)
		if err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leader in Lease %s: %v", manager.LeaderElectionID, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The series the shipped alert OperatorManagerNoLeader reads (config/prometheus), set
	// just after the Lease is taken.
	want := `leader_election_master_status{name="` + manager.LeaderElectionID + `"} 1`
	for {
		code, body := get(t, "http://"+metrics+"/metrics")
		if code == http.StatusOK && strings.Contains(body, want) && strings.Contains(body, "# TYPE") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics = %d, want Prometheus text with %s:\n%.500s", code, want, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSecureMetricsAuthenticateAndAuthorize runs the manager as in a cluster, /metrics over
// HTTPS behind controller-runtime's filters, and checks who gets in: nobody without a
// token, not a ServiceAccount without the right, and one bound to the shipped
// operator-manager-metrics-reader ClusterRole.
func TestSecureMetricsAuthenticateAndAuthorize(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}

	// The shipped role, and two ServiceAccounts: one bound to it, one not.
	var role rbacv1.ClusterRole
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "rbac", "metrics_reader_role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, &role); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const ns = "default"
	token := map[string]string{}
	for _, name := range []string{"scraper", "stranger"} {
		if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		token[name] = tr.Status.Token
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "scraper-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "scraper", Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The filter caches a denial for 30 seconds: ask only once the API server's RBAC
	// authorizer has seen the binding.
	for {
		sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User:                  "system:serviceaccount:" + ns + ":scraper",
				Groups:                []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
				NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sar.Status.Allowed {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the binding to the metrics reader role never took effect")
		}
		time.Sleep(100 * time.Millisecond)
	}

	ports, err := testenv.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	metrics := "127.0.0.1:" + strconv.Itoa(ports[0])
	probes := "127.0.0.1:" + strconv.Itoa(ports[1])
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- manager.Run(mctx, env.Config, manager.Options{
			MetricsAddr: metrics, SecureMetrics: true, ProbeAddr: probes, Namespace: ns,
		})
	}()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("manager ended with %v", err)
		}
	}()

	// The certificate is self-signed: this test checks who gets in, not the certificate.
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
	scrape := func(bearer string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+metrics+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		code, body := scrape("")
		if code == http.StatusUnauthorized {
			break
		}
		if code != 0 {
			t.Fatalf("/metrics without a token = %d, want 401:\n%.300s", code, body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the secure metrics endpoint never answered: %s", body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A token the API server rejects comes back from the TokenReview with an error, which
	// controller-runtime's filter answers with 500 rather than 401: refused either way.
	if code, body := scrape("not-a-token"); code != http.StatusUnauthorized && code != http.StatusInternalServerError {
		t.Errorf("/metrics with a made-up token = %d, want refused (401 or 500):\n%.300s", code, body)
	}
	if code, body := scrape(token["stranger"]); code != http.StatusForbidden {
		t.Errorf("/metrics as a ServiceAccount without the metrics reader role = %d, want 403:\n%.300s", code, body)
	}
	code, body := scrape(token["scraper"])
	if code != http.StatusOK || !strings.Contains(body, "# TYPE") || !strings.Contains(body, "controller_runtime_") {
		t.Errorf("/metrics as the metrics reader = %d, want 200 with Prometheus text:\n%.500s", code, body)
	}
	// Not served in plain HTTP, with or without a token.
	if code, body := get(t, "http://"+metrics+"/metrics"); code == http.StatusOK {
		t.Errorf("plain http://%s/metrics = 200, want refused:\n%.300s", metrics, body)
	}
	// The probes stay plain HTTP for the kubelet.
	if code, body := get(t, "http://"+probes+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz = %d %s", code, body)
	}
}
