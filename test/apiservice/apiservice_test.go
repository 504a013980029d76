// Package apiservice installs an operator that serves an aggregated API (an owned
// APIService) on its own full local cluster, and lets the real kube-apiserver's
// aggregator prove the installation: it reaches the operator's server through the Service
// the manager made, and trusts it only through the caBundle the manager put in the
// APIService.
//
// Under kwok no operator process runs, so the test serves the API itself: the operator's
// pod uses the host network, kwok gives it the fake node's address (this machine's own
// address, set with --node-ip), the API server calls Service endpoints directly
// (--enable-aggregator-routing), and the test listens there with the serving certificate
// the manager mounted for the pod. The cluster is the package's own: an APIService that is
// unavailable for a while makes discovery partial, which other packages' tests should not
// have to live with. Two fake nodes (both at this machine's address): a host-network pod
// holds its port on its node, so a rolling update's new pod needs another node.
package apiservice

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/testenv"
	"github.com/operator-manager/operator-manager/test/harness"
)

var (
	cluster *harness.Cluster
	mgr     *harness.Manager
	// hostIP is this machine's own non-loopback address: the fake node's, and so the
	// host-network pod's.
	hostIP string
)

const (
	group   = "metrics.apiservice.samples.operator-manager.domain"
	version = "v1alpha1"
)

func TestMain(m *testing.M) {
	hostIP = ownAddress()
	if hostIP == "" {
		// Endpoint addresses may not be loopback, so the test needs a real interface.
		fmt.Fprintln(os.Stderr, "SKIP: test/apiservice needs a non-loopback IPv4 address on this machine for the aggregator to call; none found")
		os.Exit(0)
	}
	os.Exit(harness.MainWith(m, testenv.Options{NodeIP: hostIP, AggregatorRouting: true, Nodes: 2}, &cluster, func(c *harness.Cluster) error {
		var err error
		mgr, err = c.StartManager("manager", harness.Options{SamplesAsDefault: true})
		return err
	}))
}

// ownAddress is the first IPv4 address of an interface that is up and not loopback.
func ownAddress() string {
	ifaces, err := net.Interfaces()
	if err != nil {
		return ""
	}
	for _, i := range ifaces {
		if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() && !ipn.IP.IsLinkLocalUnicast() {
				return ipn.IP.String()
			}
		}
	}
	return ""
}

func ctx() context.Context { return context.Background() }

func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool, describe func() string) {
	t.Helper()
	harness.Eventually(t, timeout, 250*time.Millisecond, what, cond, describe, func() string { return mgr.LogTail(4000) })
}

const csvTemplate = `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata: {name: metrics-api-operator.v%[1]s}
spec:
  displayName: Metrics API Operator
  version: %[1]s
  %[3]s
  installModes: [{type: AllNamespaces, supported: true}, {type: OwnNamespace, supported: true}]
  apiservicedefinitions:
    owned:
    - {group: %[4]s, version: %[5]s, kind: NodeMetric, name: nodemetrics, displayName: Node metrics, deploymentName: metrics-api, containerPort: %[2]d}
  install:
    strategy: deployment
    spec:
      deployments:
      - name: metrics-api
        spec:
          replicas: 1
          selector: {matchLabels: {app: metrics-api}}
          template:
            metadata: {labels: {app: metrics-api}}
            spec:
              hostNetwork: true
              containers: [{name: server, image: "registry.example/metrics-api:%[1]s", ports: [{containerPort: %[2]d}]}]
`

const consumerCSV = `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata: {name: metrics-consumer.v1.0.0}
spec:
  displayName: Metrics Consumer
  version: 1.0.0
  installModes: [{type: AllNamespaces, supported: true}]
  apiservicedefinitions:
    required:
    - {group: %[1]s, version: %[2]s, kind: NodeMetric, name: nodemetrics, displayName: Node metrics}
  install:
    strategy: deployment
    spec:
      deployments:
      - name: metrics-consumer
        spec:
          replicas: 1
          selector: {matchLabels: {app: metrics-consumer}}
          template:
            metadata: {labels: {app: metrics-consumer}}
            spec: {containers: [{name: consumer, image: "registry.example/metrics-consumer:1.0.0"}]}
`

// writeCatalog writes the two versions of the metrics API operator (serving on port) and
// an operator that requires its API, in the original flat layout.
func writeCatalog(t *testing.T, port int) string {
	t.Helper()
	dir := filepath.Join(cluster.Work, "catalogs", "apiservice")
	files := map[string]string{
		"metrics-api-operator/1.0.0/csv.yaml": fmt.Sprintf(csvTemplate, "1.0.0", port, "", group, version),
		"metrics-api-operator/1.1.0/csv.yaml": fmt.Sprintf(csvTemplate, "1.1.0", port, "replaces: metrics-api-operator.v1.0.0", group, version),
		"metrics-consumer/1.0.0/csv.yaml":     fmt.Sprintf(consumerCSV, group, version),
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// apiServer serves the aggregated API as the operator would: discovery of its one group
// version, with the certificate from the Secret the manager mounts in the operator's pod.
type apiServer struct {
	listener net.Listener
	server   *http.Server
}

func serveAPI(t *testing.T, l net.Listener, ns string) *apiServer {
	t.Helper()
	secret := &corev1.Secret{}
	if err := cluster.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "metrics-api-service-cert"}, secret); err != nil {
		t.Fatalf("the serving certificate Secret of the APIService's Deployment: %v", err)
	}
	cert, err := tls.X509KeyPair(secret.Data["tls.crt"], secret.Data["tls.key"])
	if err != nil {
		t.Fatalf("the mounted serving certificate does not load: %v", err)
	}
	mux := http.NewServeMux()
	writeJSON := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("/apis/"+group+"/"+version, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: group + "/" + version,
			APIResources: []metav1.APIResource{{Name: "nodemetrics", Kind: "NodeMetric", Namespaced: false, Verbs: []string{"get", "list"}}}})
	})
	mux.HandleFunc("/apis", func(w http.ResponseWriter, _ *http.Request) {
		gv := metav1.GroupVersionForDiscovery{GroupVersion: group + "/" + version, Version: version}
		writeJSON(w, metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
			Groups: []metav1.APIGroup{{Name: group, Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv}}})
	})
	s := &apiServer{listener: l, server: &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}},
		ReadHeaderTimeout: 10 * time.Second, ErrorLog: nil}}
	go func() { _ = s.server.ServeTLS(l, "", "") }()
	return s
}

func (s *apiServer) stop() { _ = s.server.Close() }

func apiService(t *testing.T) *apiregistrationv1.APIService {
	t.Helper()
	a := &apiregistrationv1.APIService{}
	if err := cluster.Client.Get(ctx(), client.ObjectKey{Name: version + "." + group}, a); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatal(err)
	}
	return a
}

func available(a *apiregistrationv1.APIService) (bool, string) {
	if a == nil {
		return false, "no APIService"
	}
	for _, c := range a.Status.Conditions {
		if c.Type == apiregistrationv1.Available {
			return c.Status == apiregistrationv1.ConditionTrue, c.Reason + ": " + c.Message
		}
	}
	return false, "not checked yet"
}

func csvPhase(t *testing.T, ns, name string) (omv1alpha1.CSVPhase, string) {
	t.Helper()
	csv := &omv1alpha1.ClusterServiceVersion{}
	if err := cluster.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, csv); err != nil {
		return "", err.Error()
	}
	return csv.Status.Phase, csv.Status.Message
}

func createYAML(t *testing.T, ns, doc string) {
	t.Helper()
	sub := &omv1.Subscription{}
	if err := yaml.Unmarshal([]byte(doc), sub); err != nil {
		t.Fatal(err)
	}
	sub.Namespace = ns
	if err := cluster.Client.Create(ctx(), sub); err != nil {
		t.Fatal(err)
	}
}

// TestOwnedAPIService: the install waits, with the aggregator's reason, until the API is
// served; the aggregator then reaches the operator's server through the manager's Service
// and trusts it through the caBundle alone (Available, and a request through the API
// server is answered by the test's server); an operator requiring the API installs only
// once it is available; an upgrade keeps it available; uninstall removes the APIService
// before the Deployment.
func TestOwnedAPIService(t *testing.T) {
	ns := "metrics"
	l, err := net.Listen("tcp", net.JoinHostPort(hostIP, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	dir := writeCatalog(t, port)
	if err := cluster.Client.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Client.Create(ctx(), &omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Name: "apis", Namespace: ns},
		Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceDirectory, Directory: dir}}); err != nil {
		t.Fatal(err)
	}
	createYAML(t, ns, `{metadata: {name: metrics-api}, spec: {startingCSV: metrics-api-operator.1.0.0, catalog: apis, health: {timeout: 5m}}}`)
	createYAML(t, ns, `{metadata: {name: consumer}, spec: {startingCSV: metrics-consumer.1.0.0, catalog: apis}}`)

	// Registered with the CA, and not available while nothing serves it: the operator is
	// not healthy yet, and the consumer's requirement is not met.
	eventually(t, 2*time.Minute, "the APIService is registered with a caBundle", func() bool {
		a := apiService(t)
		return a != nil && len(a.Spec.CABundle) > 0
	}, func() string { return fmt.Sprintf("%+v", apiService(t)) })
	eventually(t, 2*time.Minute, "the install waits for the APIService", func() bool {
		phase, msg := csvPhase(t, ns, "metrics-api-operator.v1.0.0")
		return phase == omv1alpha1.CSVInstalling && strings.Contains(msg, "APIService "+version+"."+group+" is not available")
	}, func() string { p, m := csvPhase(t, ns, "metrics-api-operator.v1.0.0"); return string(p) + ": " + m })
	if phase, msg := csvPhase(t, ns, "metrics-consumer.v1.0.0"); phase == omv1alpha1.CSVSucceeded || !strings.Contains(msg, "APIService "+version+"."+group) {
		t.Errorf("the consumer is %s before the API it requires is available: %s", phase, msg)
	}
	a := apiService(t)
	if a.Spec.Service == nil || a.Spec.Service.Namespace != ns || a.Spec.Service.Name != "metrics-api-service" || a.Spec.InsecureSkipTLSVerify {
		t.Errorf("APIService service = %+v, insecure %v", a.Spec.Service, a.Spec.InsecureSkipTLSVerify)
	}

	// The operator's server (the test, with the mounted certificate) comes up.
	srv := serveAPI(t, l, ns)
	defer srv.stop()
	eventually(t, 2*time.Minute, "the aggregator finds the API available", func() bool {
		ok, _ := available(apiService(t))
		return ok
	}, func() string { _, why := available(apiService(t)); return why })
	eventually(t, 2*time.Minute, "the operator and its consumer Succeeded", func() bool {
		p1, _ := csvPhase(t, ns, "metrics-api-operator.v1.0.0")
		p2, _ := csvPhase(t, ns, "metrics-consumer.v1.0.0")
		return p1 == omv1alpha1.CSVSucceeded && p2 == omv1alpha1.CSVSucceeded
	}, func() string {
		p1, m1 := csvPhase(t, ns, "metrics-api-operator.v1.0.0")
		p2, m2 := csvPhase(t, ns, "metrics-consumer.v1.0.0")
		return fmt.Sprintf("operator %s: %s; consumer %s: %s", p1, m1, p2, m2)
	})
	// A second installation of the package, watching only its own namespace, is refused
	// all the same: the APIService is the cluster's one of that name.
	ns2 := "metrics-2"
	if err := cluster.Client.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns2}}); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Client.Create(ctx(), &omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Name: "apis", Namespace: ns2},
		Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceDirectory, Directory: dir}}); err != nil {
		t.Fatal(err)
	}
	createYAML(t, ns2, `{metadata: {name: metrics-api}, spec: {startingCSV: metrics-api-operator.1.0.0, catalog: apis, targetNamespaces: [metrics-2]}}`)
	second := &omv1.Subscription{}
	eventually(t, time.Minute, "the second installation refused", func() bool {
		if err := cluster.Client.Get(ctx(), client.ObjectKey{Namespace: ns2, Name: "metrics-api"}, second); err != nil {
			return false
		}
		c := meta.FindStatusCondition(second.Status.Conditions, omv1.ConditionResolved)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == "APIServiceExclusive" &&
			strings.Contains(c.Message, "Subscription metrics/metrics-api") && strings.Contains(c.Message, version+"."+group)
	}, func() string { return fmt.Sprintf("%+v", second.Status.Conditions) })
	if err := cluster.Client.Get(ctx(), client.ObjectKey{Namespace: ns2, Name: "metrics-api"}, &omv1.Blueprint{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused installation has a Blueprint: %v", err)
	}
	if err := cluster.Client.Delete(ctx(), second); err != nil {
		t.Fatal(err)
	}

	// A request through the API server reaches the operator's server.
	dc, err := discovery.NewDiscoveryClientForConfig(cluster.Env.Config)
	if err != nil {
		t.Fatal(err)
	}
	res, err := dc.ServerResourcesForGroupVersion(group + "/" + version)
	if err != nil || len(res.APIResources) != 1 || res.APIResources[0].Name != "nodemetrics" {
		t.Errorf("discovery through the API server: %v %+v", err, res)
	}

	// An upgrade keeps the API available (same Service, same certificate).
	caBefore := string(apiService(t).Spec.CABundle)
	sub := &omv1.Subscription{}
	if err := cluster.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "metrics-api"}, sub); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(sub.DeepCopy())
	sub.Spec.StartingCSV = "metrics-api-operator.1.1.0"
	if err := cluster.Client.Patch(ctx(), sub, patch); err != nil {
		t.Fatal(err)
	}
	unavailable := ""
	eventually(t, 3*time.Minute, "1.1.0 Succeeded", func() bool {
		if ok, why := available(apiService(t)); !ok && unavailable == "" {
			unavailable = why
		}
		p, _ := csvPhase(t, ns, "metrics-api-operator.v1.1.0")
		return p == omv1alpha1.CSVSucceeded
	}, func() string { p, m := csvPhase(t, ns, "metrics-api-operator.v1.1.0"); return string(p) + ": " + m })
	if unavailable != "" {
		t.Errorf("the API was unavailable during the upgrade: %s", unavailable)
	}
	if got := string(apiService(t).Spec.CABundle); got != caBefore {
		t.Error("the upgrade changed the CA of a certificate that was still good")
	}
	if a := apiService(t); a.Annotations["operator-manager.domain/owner"] != ns+"/metrics-api-operator.v1.1.0" {
		t.Errorf("the APIService belongs to %q after the upgrade", a.Annotations["operator-manager.domain/owner"])
	}

	// Uninstall: the APIService goes before the Deployment that serves it.
	if err := cluster.Client.Delete(ctx(), &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "consumer"}}); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Client.Delete(ctx(), &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "metrics-api"}}); err != nil {
		t.Fatal(err)
	}
	deploymentGone := func() bool {
		err := cluster.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "metrics-api"}, &appsv1.Deployment{})
		return apierrors.IsNotFound(err)
	}
	eventually(t, 2*time.Minute, "the APIService and then the Deployment are removed", func() bool {
		registered := apiService(t) != nil
		if registered && deploymentGone() {
			t.Fatal("the Deployment was removed while the APIService still pointed at it")
		}
		return !registered && deploymentGone()
	}, func() string { return fmt.Sprintf("APIService %+v", apiService(t)) })
}
