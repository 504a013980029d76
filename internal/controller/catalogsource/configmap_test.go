package catalogsource_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog/configmapcatalog"
)

// configMapData is an OLM ConfigMap catalog of the sample files named (paths below the
// sample catalog, or a manifest written inline), one package per "packageName/currentCSV".
func configMapData(t *testing.T, crds, csvs, heads []string) map[string]string {
	t.Helper()
	read := func(rels []string) [][]byte {
		var out [][]byte
		for _, rel := range rels {
			if strings.Contains(rel, "\n") {
				out = append(out, []byte(rel))
				continue
			}
			data, err := os.ReadFile(filepath.Join(sample, rel))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, data)
		}
		return out
	}
	var pkgs [][]byte
	for _, h := range heads {
		pkg, head, _ := strings.Cut(h, "/")
		pkgs = append(pkgs, []byte("packageName: "+pkg+"\nchannels: [{name: stable, currentCSV: "+head+"}]\n"))
	}
	data, err := configmapcatalog.Data(read(crds), read(csvs), pkgs)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestConfigMapSource: an OLM ConfigMap catalog (here by OLM's older sourceType name,
// internal) loads; polls of an unchanged ConfigMap write nothing; an edit is read at the
// next poll, a stray CSV named by its key and index; a deleted ConfigMap is said so, and
// the catalog read last stays in use.
func TestConfigMapSource(t *testing.T) {
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "olm-catalog", Namespace: "default"},
		Data: configMapData(t, []string{"cache-operator/1.2.0/caches.crd.yaml"},
			[]string{"cache-operator/1.1.0/cache-operator.v1.1.0.clusterserviceversion.yaml", "cache-operator/1.2.0/cache-operator.v1.2.0.clusterserviceversion.yaml"},
			[]string{"cache-operator/cache-operator.v1.2.0"})}
	if err := k8s.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	cs := &omv1.CatalogSource{
		ObjectMeta: metav1.ObjectMeta{Name: "from-configmap", Namespace: "default"},
		Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceInternal, ConfigMap: "olm-catalog",
			PollInterval: &metav1.Duration{Duration: 500 * time.Millisecond}},
	}
	if err := k8s.Create(ctx, cs); err != nil {
		t.Fatal(err)
	}
	first := waitFor(t, cs.Name, func(cs *omv1.CatalogSource) bool { return cs.Status.Bundles == 2 })
	ref := first.Status.ConfigMapReference
	if c := ready(first); c.Status != metav1.ConditionTrue || first.Status.Packages != 1 || first.Status.RejectedCount != 0 ||
		ref == nil || ref.Name != "olm-catalog" || ref.Namespace != "default" || ref.UID != cm.UID || ref.ResourceVersion != cm.ResourceVersion {
		t.Fatalf("Ready %+v, %d packages, rejected %v, configMapReference %+v (ConfigMap %s at %s)", c, first.Status.Packages,
			first.Status.Rejected, ref, cm.UID, cm.ResourceVersion)
	}

	time.Sleep(3 * time.Second) // six polls
	if again := waitFor(t, cs.Name, func(*omv1.CatalogSource) bool { return true }); again.ResourceVersion != first.ResourceVersion {
		t.Errorf("an unchanged ConfigMap was written: resourceVersion %s -> %s", first.ResourceVersion, again.ResourceVersion)
	}

	stray := "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata: {name: stray.v1.0.0}\nspec: {version: 1.0.0}\n"
	edited := configMapData(t, []string{"cache-operator/1.2.0/caches.crd.yaml"},
		[]string{"cache-operator/1.1.0/cache-operator.v1.1.0.clusterserviceversion.yaml", "cache-operator/1.2.0/cache-operator.v1.2.0.clusterserviceversion.yaml",
			"reloader-operator/0.1.0/reloader-operator.v0.1.0.clusterserviceversion.yaml", "reloader-operator/0.2.0/reloader-operator.v0.2.0.clusterserviceversion.yaml", stray},
		[]string{"cache-operator/cache-operator.v1.2.0", "reloader-operator/reloader-operator.v0.2.0"})
	cm.Data = edited
	if err := k8s.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	changed := waitFor(t, cs.Name, func(cs *omv1.CatalogSource) bool { return cs.Status.Bundles == 4 })
	if changed.Status.Packages != 2 || changed.Status.RejectedCount != 1 ||
		changed.Status.Rejected[0].Path != "clusterServiceVersions[4] (stray.v1.0.0)" || !strings.Contains(changed.Status.Rejected[0].Reason, "in no package") {
		t.Errorf("%d packages, rejected %v: want 2, and the stray CSV named by key and index", changed.Status.Packages, changed.Status.Rejected)
	}
	if r := changed.Status.ConfigMapReference; r == nil || r.ResourceVersion != cm.ResourceVersion {
		t.Errorf("configMapReference %+v, want resourceVersion %s", r, cm.ResourceVersion)
	}

	if err := k8s.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	gone := waitFor(t, cs.Name, func(cs *omv1.CatalogSource) bool { return ready(cs).Status == metav1.ConditionFalse })
	if c := ready(gone); c.Reason != omv1.ReasonLoadFailed || !strings.Contains(c.Message, "ConfigMap default/olm-catalog, named by spec.configMap, does not exist") ||
		!strings.Contains(c.Message, "still used") || gone.Status.Bundles != 4 {
		t.Errorf("Ready %+v with %d bundles: want LoadFailed naming the ConfigMap, the 4 bundles still used", c, gone.Status.Bundles)
	}
}

// TestConfigMapSourceRefusals: the API server refuses a configmap source with no
// ConfigMap named, saying which field; a ConfigMap that is not a catalog is said so on
// the CatalogSource, naming the ConfigMap and the key it lacks.
func TestConfigMapSourceRefusals(t *testing.T) {
	ctx := context.Background()
	cs := &omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Name: "no-configmap", Namespace: "default"},
		Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceConfigMap}}
	err := k8s.Create(ctx, cs)
	if err == nil || !strings.Contains(err.Error(), "spec.configMap") {
		t.Fatalf("created, or refused without naming spec.configMap: %v", err)
	}

	if err := k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "default"},
		Data: map[string]string{"log-level": "debug"}}); err != nil {
		t.Fatal(err)
	}
	cs = &omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Name: "not-a-catalog", Namespace: "default"},
		Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceConfigMap, ConfigMap: "settings"}}
	if err := k8s.Create(ctx, cs); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, cs.Name, func(cs *omv1.CatalogSource) bool { return ready(cs) != nil })
	if c := ready(got); c.Status != metav1.ConditionFalse || c.Reason != omv1.ReasonLoadFailed ||
		!strings.Contains(c.Message, "ConfigMap default/settings: key customResourceDefinitions: missing") {
		t.Errorf("Ready %+v: want LoadFailed naming the ConfigMap and the key it lacks", c)
	}
}
