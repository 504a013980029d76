package e2e

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// TestRepublishedVersionKeepsItsContent: a catalog that republishes the running version
// under the same name (cache-operator.v1.1.0 with another image) does not change what
// runs: a version's content is fixed once it runs. The Subscription says so (Resolved
// reason ContentChangedInCatalog, a Warning event), and a later change of the
// Subscription that keeps the version (a config change) re-renders the installed content,
// with no revision: before, it swapped the content in as an "Upgrade" from 1.1.0 to
// 1.1.0, at whatever moment something made the Subscription write its Blueprint.
func TestRepublishedVersionKeepsItsContent(t *testing.T) {
	ns := "republished"
	newNamespace(t, ns)
	cm, status := pinnedFromConfigMap(t, ns, "republishing", "1.1.0")
	uninstallAtEnd(t, ns, "cache")
	installed := waitRunning(t, ns, "cache", "cache-operator.v1.1.0").Spec.BundleDigest
	image := func() string {
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache-operator"}, d); err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template.Spec.Containers[0].Image
	}
	const original = "registry.example/samples/cache-operator:1.1.0"
	if got := image(); got != original {
		t.Fatalf("image %q installed, want %q", got, original)
	}

	// The same version republished with a rebuilt image.
	digest := getCatalogSource(t, ns, "republishing").Status.Digest
	for k, v := range cm.Data {
		cm.Data[k] = strings.ReplaceAll(v, original, original+"-rebuilt")
	}
	if err := k8s.Update(ctx(), cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the CatalogSource reloaded", func() bool {
		return getCatalogSource(t, ns, "republishing").Status.Digest != digest
	}, status)
	describe := describeSub(t, ns, "cache")
	eventually(t, time.Minute, "the Subscription saying the catalog changed the running version", func() bool {
		c := meta.FindStatusCondition(getSub(t, ns, "cache").Status.Conditions, omv1.ConditionResolved)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == omv1.ReasonContentChangedInCatalog &&
			strings.Contains(c.Message, "the catalog now serves cache-operator.v1.1.0 with other content")
	}, describe)
	if !eventIn(t, ns, corev1.EventTypeWarning, omv1.ReasonContentChangedInCatalog, "which stays") {
		t.Errorf("no Warning event %s in %s", omv1.ReasonContentChangedInCatalog, ns)
	}

	// A config change keeps the version, so it keeps the content installed.
	patchSub(t, ns, "cache", func(s *omv1.Subscription) {
		s.Spec.Config = &omv1.SubscriptionConfig{Env: []corev1.EnvVar{{Name: "FOO", Value: "bar"}}}
	})
	eventually(t, 2*time.Minute, "the config reaching the Deployment", func() bool {
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache-operator"}, d); err != nil {
			t.Fatal(err)
		}
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "FOO" && e.Value == "bar" {
				return true
			}
		}
		return false
	}, describe)
	// Ready again once the gate has judged the new config: the notice is not a fault.
	waitReady(t, ns, "cache", 2*time.Minute)
	bp := waitRunning(t, ns, "cache", "cache-operator.v1.1.0")
	if got := image(); got != original {
		t.Errorf("image %q after the config change, want the installed %q", got, original)
	}
	if bp.Spec.BundleDigest != installed || len(bp.Status.History) != 1 {
		t.Errorf("Blueprint digest %s with %d revisions after the config change, want the installed %s and 1 revision: %+v",
			bp.Spec.BundleDigest, len(bp.Status.History), installed, bp.Status.History)
	}
}

// TestPulledVersionKeepsRunning: a catalog that stops offering the version a Subscription
// pins, while it runs, leaves it running, Ready: Resolved stays True with reason
// NotInCatalog and a Warning event, naming what the catalog has. Before, the Subscription
// turned Ready False (VersionNotFound), a failure an alert pages for, for a version that
// ran and was healthy.
func TestPulledVersionKeepsRunning(t *testing.T) {
	ns := "pulled"
	newNamespace(t, ns)
	cm, status := pinnedFromConfigMap(t, ns, "pulling", "1.1.0", "1.2.0")
	uninstallAtEnd(t, ns, "cache")
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")
	waitReady(t, ns, "cache", time.Minute)

	cm.Data = olmConfigMapData(t, "1.2.0")
	if err := k8s.Update(ctx(), cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the CatalogSource reloaded without 1.1.0", catalogLoaded(t, ns, "pulling", 1, 1), status)
	eventually(t, time.Minute, "the Subscription saying 1.1.0 runs though its catalog no longer offers it", func() bool {
		c := meta.FindStatusCondition(getSub(t, ns, "cache").Status.Conditions, omv1.ConditionResolved)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == omv1.ReasonNotInCatalog &&
			strings.Contains(c.Message, "cache-operator.v1.1.0 runs, as asked, and stays") && strings.Contains(c.Message, "it has 1.2.0")
	}, describeSub(t, ns, "cache"))
	sub := waitReady(t, ns, "cache", time.Minute)
	if sub.Status.InstalledCSV != "cache-operator.v1.1.0" {
		t.Errorf("installed %s, want cache-operator.v1.1.0 still", sub.Status.InstalledCSV)
	}
	if !eventIn(t, ns, corev1.EventTypeWarning, omv1.ReasonNotInCatalog, "no longer offers it") {
		t.Errorf("no Warning event %s", omv1.ReasonNotInCatalog)
	}
	waitDeploymentAvailable(t, ns, "cache-operator")
}

// pinnedFromConfigMap makes an OLM ConfigMap catalog of cache-operator's sample versions
// (polled every 2 s) in ns as CatalogSource name, and the Subscription "cache" pinned to
// 1.1.0 from it. It returns the ConfigMap, for the test to change, and the catalog's status.
func pinnedFromConfigMap(t *testing.T, ns, name string, versions ...string) (*corev1.ConfigMap, func() string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "catalog"}, Data: olmConfigMapData(t, versions...)}
	if err := k8s.Create(ctx(), cm); err != nil {
		t.Fatal(err)
	}
	createStrict(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: CatalogSource
metadata: {name: `+name+`}
spec: {sourceType: configmap, configMap: catalog, updateStrategy: {registryPoll: {interval: 2s}}}
`)
	status := catalogStatus(t, ns, name)
	eventually(t, time.Minute, "the CatalogSource loads its ConfigMap", catalogLoaded(t, ns, name, 1, int32(len(versions))), status)
	createStrict(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {package: cache-operator, version: "1.1.0", catalog: `+name+`}
`)
	return cm, status
}

// TestCatalogGoneKeepsRunning: the CatalogSource of a Subscription whose version runs, as
// asked, is deleted; then the manager restarts with it gone. The Subscription stays Ready
// all along (its Ready condition never moves), Resolved True with reason
// CatalogUnavailable naming the missing CatalogSource, with a Warning event. Its catalog
// back, it resolves as before. Before, the Subscription turned Ready False
// (CatalogNotReady), an alert for an operator that ran and was healthy.
func TestCatalogGoneKeepsRunning(t *testing.T) {
	ns := "catalog-gone"
	newNamespace(t, ns)
	_, status := pinnedFromConfigMap(t, ns, "vanishing", "1.1.0")
	uninstallAtEnd(t, ns, "cache")
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")
	waitReady(t, ns, "cache", time.Minute)
	since := readySince(t, ns, "cache")
	stillReady := func(when string) { t.Helper(); stayedReady(t, ns, "cache", since, when) }
	unavailable := func() bool {
		c := condition(getSub(t, ns, "cache").Status.Conditions, omv1.ConditionResolved)
		return c.Status == metav1.ConditionTrue && c.Reason == omv1.ReasonCatalogUnavailable &&
			strings.Contains(c.Message, "cache-operator.v1.1.0 runs, as asked, and stays") && strings.Contains(c.Message, "CatalogSource "+ns+"/vanishing does not exist")
	}

	cs := &omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vanishing"}}
	if err := k8s.Delete(ctx(), cs); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the Subscription saying its catalog cannot be read while its version runs", unavailable, describeSub(t, ns, "cache"))
	stillReady("catalog deleted")
	if !eventIn(t, ns, corev1.EventTypeWarning, omv1.ReasonCatalogUnavailable, "cannot be read") {
		t.Errorf("no Warning event %s", omv1.ReasonCatalogUnavailable)
	}

	killManager(t)
	if err := startManager(); err != nil {
		t.Fatal(err)
	}
	// The restarted manager has no copy of the catalog and never will: it says so again,
	// and nothing moves.
	time.Sleep(5 * time.Second)
	eventually(t, time.Minute, "the restarted manager saying the same", unavailable, describeSub(t, ns, "cache"))
	stillReady("manager restarted, catalog gone")

	createStrict(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: CatalogSource
metadata: {name: vanishing}
spec: {sourceType: configmap, configMap: catalog, updateStrategy: {registryPoll: {interval: 2s}}}
`)
	eventually(t, time.Minute, "the Subscription resolving from its catalog again", func() bool {
		c := condition(getSub(t, ns, "cache").Status.Conditions, omv1.ConditionResolved)
		return c.Status == metav1.ConditionTrue && c.Reason == "Resolved"
	}, status)
	stillReady("catalog back")
	if h := historyOf(getBlueprint(t, ns, "cache")); h != "1:cache-operator.v1.1.0:Install:Succeeded" {
		t.Errorf("history %s: the catalog going and coming changed the installation", h)
	}
}

// TestHeldVersionKeepsRunningWithoutCatalog: a version a person rolled back to by hand
// stands until the Subscription's spec changes; when the catalog is then deleted, it
// stays Ready, Resolved True CatalogUnavailable naming the hold. Before, only a version
// the spec asks for was kept so, and this one turned Ready False (CatalogNotReady).
func TestHeldVersionKeepsRunningWithoutCatalog(t *testing.T) {
	ns := "held-catalog-gone"
	newNamespace(t, ns)
	pinnedFromConfigMap(t, ns, "held", "1.1.0", "1.2.0")
	uninstallAtEnd(t, ns, "cache")
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")
	patchSub(t, ns, "cache", func(s *omv1.Subscription) { s.Spec.Version = "1.2.0" })
	waitRunning(t, ns, "cache", "cache-operator.v1.2.0")
	if out, err := cli("rollback", "cache", "-n", ns, "--wait", "--timeout", "2m"); err != nil {
		t.Fatalf("rollback: %v\n%s", err, out)
	}
	waitReady(t, ns, "cache", time.Minute)
	since := readySince(t, ns, "cache")

	if err := k8s.Delete(ctx(), &omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "held"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "Resolved True CatalogUnavailable naming the hold", func() bool {
		c := condition(getSub(t, ns, "cache").Status.Conditions, omv1.ConditionResolved)
		return c.Status == metav1.ConditionTrue && c.Reason == omv1.ReasonCatalogUnavailable &&
			strings.Contains(c.Message, "cache-operator.v1.1.0 runs, held after a manual rollback from 1.2.0, and stays") &&
			strings.Contains(c.Message, "CatalogSource "+ns+"/held does not exist")
	}, describeSub(t, ns, "cache"))
	stayedReady(t, ns, "cache", since, "catalog deleted under a version held by hand")
	if h := historyOf(getBlueprint(t, ns, "cache")); !strings.HasSuffix(h, ":cache-operator.v1.1.0:Downgrade:Succeeded") {
		t.Errorf("history %s", h)
	}
}
