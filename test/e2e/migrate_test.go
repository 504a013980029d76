package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/migration"
	"github.com/operator-manager/operator-manager/internal/revisionstore"
	"github.com/operator-manager/operator-manager/internal/testenv"
	"github.com/operator-manager/operator-manager/test/harness"
)

// TestExportImport moves a namespace's installations to a second cluster through one
// archive: export from this cluster, then on a fresh cluster whose manager has no catalog
// holding them, import --dry-run changes nothing, import --wait brings both operators up at
// the same versions in dependency order from the archive alone (with the older retained
// revision's bundle stored for rollbacks), a second import reports no change and writes
// nothing, and an archive holding a version the cluster cannot run is refused before
// anything is applied.
func TestExportImport(t *testing.T) {
	ns := "migrate"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.1.0, catalog: samples, targetNamespaces: [migrate], health: {timeout: 2m}}
`)
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")
	setStartingCSV(t, ns, "cache", "cache-operator.1.2.0")
	waitRunning(t, ns, "cache", "cache-operator.v1.2.0")
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: backup}
spec: {startingCSV: backup-operator.0.2.0, catalog: samples, targetNamespaces: [migrate]}
`)
	waitRunning(t, ns, "backup", "backup-operator.v0.2.0")

	archive := filepath.Join(t.TempDir(), "migrate.tgz")
	var summary struct {
		Installations []string
		Bundles       int
	}
	r0 := mustJSON(t, &summary, "export", "-n", ns, "-f", archive)
	if !strings.Contains(r0.stderr, "exported 2 installation(s) and 3 bundle(s)") || len(summary.Installations) != 2 || summary.Bundles != 3 {
		t.Fatalf("export: %+v\n%s%s", summary, r0.stdout, r0.stderr)
	}

	// A second cluster. Its manager's only catalog is empty: the operators can come from
	// nowhere but the archive.
	e2, err := testenv.Start(ctx(), testenv.Options{Flavour: testenv.Full, Dir: filepath.Join(work, "cluster2")})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Stop()
	c2, err := harness.NewCluster(e2)
	if err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	m2, err := c2.StartManager("manager2", harness.Options{Args: []string{"--catalog=" + empty}})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Kill()
	on2 := func(args ...string) scriptRun {
		t.Helper()
		return scriptOn(t, e2.Kubeconfig, args...)
	}
	type plan struct {
		Changed       bool
		Installations []struct{ Namespace, Name, Version, Action string }
		Problems      []string
	}
	var dry plan
	r := on2("import", "-f", archive, "--dry-run", "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &dry); r.code != 0 || err != nil || len(dry.Installations) != 2 ||
		dry.Installations[0].Name != "cache" || dry.Installations[1].Name != "backup" || dry.Installations[0].Action != "create" || !dry.Changed {
		t.Fatalf("import --dry-run: exit %d, %v; want cache then backup (which depends on it), both to create\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if err := c2.Client.Get(ctx(), client.ObjectKey{Name: ns}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Fatalf("import --dry-run changed the cluster: namespace %s (%v)", ns, err)
	}

	start := time.Now()
	if r = on2("import", "-f", archive, "--wait", "--timeout", "3m"); r.code != 0 {
		t.Fatalf("import --wait: exit %d\n%s%s\n--- manager2 log ---\n%s", r.code, r.stdout, r.stderr, m2.LogTail(4000))
	}
	t.Logf("import --wait took %s:\n%s", time.Since(start).Round(time.Millisecond), r.stdout)
	store := &revisionstore.Store{Client: c2.Client}
	versions := map[string]string{"cache": "cache-operator.v1.2.0", "backup": "backup-operator.v0.2.0"}
	rvs := map[string]string{}
	for name, csv := range versions {
		bp := &omv1.Blueprint{}
		if err := c2.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, bp); err != nil {
			t.Fatal(err)
		}
		if bp.Status.Phase != omv1.BlueprintSucceeded || bp.Status.CurrentCSV != csv {
			t.Errorf("on the second cluster %s runs %q (phase %s), want %s Succeeded", name, bp.Status.CurrentCSV, bp.Status.Phase, csv)
		}
		d := &appsv1.Deployment{}
		if err := c2.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: csv[:strings.Index(csv, ".v")]}, d); err != nil {
			t.Errorf("%s's Deployment on the second cluster: %v", name, err)
		} else if d.Status.AvailableReplicas < 1 {
			t.Errorf("%s's Deployment on the second cluster is not available: %+v", name, d.Status)
		}
		sub := &omv1.Subscription{}
		if err := c2.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, sub); err != nil {
			t.Fatal(err)
		}
		rvs[name] = sub.ResourceVersion + "/" + bp.ResourceVersion
	}
	// The older retained revision of cache (1.1.0) came along, stored for a rollback.
	a, err := readArchive(archive)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range a.Installations {
		for _, rev := range in.Revisions {
			if st, err := store.Stat(ctx(), ns, in.Name, rev.BundleDigest); st == nil || err != nil {
				t.Errorf("the bundle of %s's revision %d (%s) is not stored on the second cluster: %v", in.Name, rev.Revision, rev.CSV, err)
			}
		}
	}
	if err := c2.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "samples"}, &omv1.CatalogSource{}); !apierrors.IsNotFound(err) {
		t.Errorf("the second cluster has a CatalogSource samples (%v): the test must install without one", err)
	}

	// A second import changes nothing.
	var again plan
	r = on2("import", "-f", archive, "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &again); r.code != 0 || err != nil || again.Changed ||
		again.Installations[0].Action != "unchanged" || again.Installations[1].Action != "unchanged" {
		t.Errorf("second import: exit %d, %v; want no change\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	for name := range versions {
		sub, bp := &omv1.Subscription{}, &omv1.Blueprint{}
		_ = c2.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, sub)
		_ = c2.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, bp)
		if got := sub.ResourceVersion + "/" + bp.ResourceVersion; got != rvs[name] {
			t.Errorf("the second import wrote %s: %s, then %s", name, rvs[name], got)
		}
	}

	// The history came along: the revisions cache retained on the first cluster are in
	// its history here, marked imported, and a rollback by hand returns to one from the
	// bundle stored with it, on a cluster with no catalog offering cache-operator.
	bp2 := &omv1.Blueprint{}
	if err := c2.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache"}, bp2); err != nil {
		t.Fatal(err)
	}
	var older *omv1.Revision
	for i, h := range bp2.Status.History {
		if h.Imported && h.CSVName == "cache-operator.v1.1.0" && h.Outcome == omv1.OutcomeSucceeded {
			older = &bp2.Status.History[i]
		}
	}
	if older == nil {
		t.Fatalf("cache's history on the second cluster has no imported revision of 1.1.0: %+v", bp2.Status.History)
	}
	if r = on2("history", "-n", ns, "cache"); r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("%d (imported)", older.Revision)) {
		t.Errorf("history on the second cluster: exit %d, want revision %d marked imported\n%s%s", r.code, older.Revision, r.stdout, r.stderr)
	}

	// cache is of package cache-operator here too, though no catalog here says so: backup
	// depends on it, so its uninstall is refused, as on the first cluster.
	if r = on2("uninstall", "-n", ns, "cache", "--wait", "--timeout", "1m"); r.code != 3 || !strings.Contains(r.stderr, "backup still depends on package cache-operator") {
		t.Errorf("uninstall of cache, which backup depends on, on the second cluster: exit %d, want 3 (RequiredByOthers)\n%s%s", r.code, r.stdout, r.stderr)
	}
	sub := &omv1.Subscription{}
	if err := c2.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache"}, sub); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(sub.DeepCopy())
	sub.Spec.Option = omv1.OptionCreate
	if err := c2.Client.Patch(ctx(), sub, patch); err != nil {
		t.Fatal(err)
	}

	r = on2("rollback", "-n", ns, "cache", "--to-revision", strconv.FormatInt(older.Revision, 10), "--wait", "--timeout", "3m")
	if r.code != 0 {
		t.Fatalf("rollback to the imported revision %d: exit %d\n%s%s\n--- manager2 log ---\n%s", older.Revision, r.code, r.stdout, r.stderr, m2.LogTail(4000))
	}
	if err := c2.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache"}, bp2); err != nil {
		t.Fatal(err)
	}
	if bp2.Status.CurrentCSV != "cache-operator.v1.1.0" || bp2.Status.Phase != omv1.BlueprintSucceeded {
		t.Errorf("after the rollback cache runs %q (phase %s), want cache-operator.v1.1.0 Succeeded", bp2.Status.CurrentCSV, bp2.Status.Phase)
	}

	// An installation that ran as a tenant's ServiceAccount the cluster does not have is
	// refused before anything is applied, naming it.
	tenant := filepath.Join(t.TempDir(), "tenant.tgz")
	if err := rewriteArchive(archive, tenant, func(a *migration.Archive) {
		for i := range a.Installations {
			a.Installations[i].Namespace = "migrate-sa"
			a.Installations[i].Spec.ServiceAccountName = "installer"
		}
	}); err != nil {
		t.Fatal(err)
	}
	r = on2("import", "-f", tenant)
	if r.code != 1 || !strings.Contains(r.stdout, "it installs as ServiceAccount migrate-sa/installer (spec.serviceAccountName), which this cluster does not have") {
		t.Errorf("import of installations whose ServiceAccount is missing: exit %d, want 1 naming it\n%s%s", r.code, r.stdout, r.stderr)
	}
	if err := c2.Client.Get(ctx(), client.ObjectKey{Name: "migrate-sa"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused import changed the cluster: namespace migrate-sa (%v)", err)
	}

	// An installation whose dependency is neither in the archive nor on the cluster would
	// run without what it needs: refused before anything is applied, naming it.
	lonely := filepath.Join(t.TempDir(), "lonely.tgz")
	if err := rewriteArchive(archive, lonely, func(a *migration.Archive) {
		var kept []migration.Installation
		for _, in := range a.Installations {
			if in.Name == "backup" {
				in.Namespace, in.DependsOn = "migrate-dep", nil
				kept = append(kept, in)
			}
		}
		a.Installations = kept
	}); err != nil {
		t.Fatal(err)
	}
	r = on2("import", "-f", lonely)
	if r.code != 1 || !strings.Contains(r.stdout, "depends on package cache-operator which is neither in the archive nor installed here") {
		t.Errorf("import of an installation without its dependency: exit %d, want 1 naming it\n%s%s", r.code, r.stdout, r.stderr)
	}
	if err := c2.Client.Get(ctx(), client.ObjectKey{Name: "migrate-dep"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused import changed the cluster: namespace migrate-dep (%v)", err)
	}

	// A person who may not do all that import does in a namespace (here: the shipped
	// operator-manager-edit, which creates no Blueprints and no Secrets) is told what
	// before anything is applied, not halfway.
	people := "migrate-people"
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: people}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "carol", Namespace: people}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "carol", Namespace: people},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "operator-manager-edit"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "carol", Namespace: people}}},
	} {
		if err := c2.Client.Create(ctx(), o); err != nil {
			t.Fatal(err)
		}
	}
	carol := filepath.Join(t.TempDir(), "carol.kubeconfig")
	if err := e2.TokenKubeconfig(ctx(), people, "carol", carol); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(t.TempDir(), "people.tgz")
	if err := rewriteArchive(archive, theirs, func(a *migration.Archive) {
		for i := range a.Installations {
			a.Installations[i].Namespace = people
		}
	}); err != nil {
		t.Fatal(err)
	}
	r = scriptOn(t, carol, "import", "-f", theirs)
	if r.code != 1 || !strings.Contains(r.stdout, "namespace migrate-people: you may not create blueprints.operators.coreos.com.operator-manager.domain, create secrets, which import needs") ||
		!strings.Contains(r.stdout, "CRDs not checked for another package's: you may not read them") {
		t.Errorf("import by a person without the rights it needs: exit %d, want 1 naming them\n%s%s", r.code, r.stdout, r.stderr)
	}
	if bps := (&omv1.BlueprintList{}); c2.Client.List(ctx(), bps, client.InNamespace(people)) != nil || len(bps.Items) > 0 {
		t.Errorf("a refused import applied %d Blueprint(s) in %s", len(bps.Items), people)
	}

	// A version the cluster cannot run is refused before anything is applied.
	bad := filepath.Join(t.TempDir(), "bad.tgz")
	if err := writeUnrunnable(archive, bad, "migrate-bad"); err != nil {
		t.Fatal(err)
	}
	r = on2("import", "-f", bad)
	if r.code != 1 || !strings.Contains(r.stdout, "needs Kubernetes 99.0.0 or newer") {
		t.Errorf("import of a version needing Kubernetes 99: exit %d, want 1 naming the requirement\n%s%s", r.code, r.stdout, r.stderr)
	}
	if err := c2.Client.Get(ctx(), client.ObjectKey{Name: "migrate-bad"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused import changed the cluster: namespace migrate-bad (%v)", err)
	}
}

func readArchive(path string) (*migration.Archive, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return migration.Read(f, path)
}

// rewriteArchive writes the archive from, changed by edit, to to.
func rewriteArchive(from, to string, edit func(*migration.Archive)) error {
	a, err := readArchive(from)
	if err != nil {
		return err
	}
	edit(a)
	f, err := os.Create(to)
	if err != nil {
		return err
	}
	defer f.Close()
	return migration.Write(f, a)
}

// writeUnrunnable rewrites an archive into namespace ns with cache's bundle asking for
// Kubernetes 99.
func writeUnrunnable(from, to, ns string) error {
	return rewriteArchive(from, to, func(a *migration.Archive) {
		for i := range a.Installations {
			in := &a.Installations[i]
			in.Namespace = ns
			if in.Name != "cache" {
				continue
			}
			var files []catalog.File
			for _, f := range a.Bundles[in.BundleDigest] {
				data := f.Data
				if strings.Contains(string(data), "kind: ClusterServiceVersion") {
					data = regexp.MustCompile(`minKubeVersion: \S+`).ReplaceAll(data, []byte("minKubeVersion: 99.0.0"))
				}
				files = append(files, catalog.File{Name: f.Name, Data: data})
			}
			in.BundleDigest = catalog.DigestFiles(files)
			a.Bundles[in.BundleDigest] = files
			in.Revisions = nil
		}
	})
}
