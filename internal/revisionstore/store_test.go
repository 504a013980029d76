package revisionstore_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/config"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/revisionstore"
	"github.com/operator-manager/operator-manager/internal/scheme"
	"github.com/operator-manager/operator-manager/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.APIOnly, &env, func(e *testenv.Env) error {
		c, err := client.New(e.Config, client.Options{Scheme: scheme.Scheme})
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		return config.InstallCRDs(ctx, c)
	}))
}

const namespace = "default"

func newClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newStore is a Store as a fresh manager process would have it: nothing in memory.
func newStore(t *testing.T) *revisionstore.Store {
	return &revisionstore.Store{Client: newClient(t, env.Config)}
}

func newBlueprint(t *testing.T, c client.Client, name string) *omv1.Blueprint {
	t.Helper()
	bp := &omv1.Blueprint{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       omv1.BlueprintSpec{ClusterServiceVersionName: "cache-operator.1.1.0"},
	}
	if err := c.Create(context.Background(), bp); err != nil {
		t.Fatalf("creating Blueprint %s: %v", name, err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), bp) })
	return bp
}

// bundle is a CSV and a CRD, plus size bytes of incompressible content.
func bundle(t *testing.T, size int) ([]catalog.File, string) {
	blob := make([]byte, size)
	if _, err := rand.Read(blob); err != nil {
		t.Fatal(err)
	}
	files := []catalog.File{
		{Name: "manifests/cache.clusterserviceversion.yaml", Data: []byte("kind: ClusterServiceVersion\nmetadata: {name: cache-operator.1.1.0}\n")},
		{Name: "manifests/caches.crd.yaml", Data: []byte("kind: CustomResourceDefinition\n")},
		{Name: "manifests/blob.bin", Data: blob},
	}
	return files, catalog.DigestFiles(files)
}

// chunks returns the entry's Secrets, read by the names the format gives them.
func chunks(t *testing.T, c client.Client, blueprint, digest string) []*corev1.Secret {
	t.Helper()
	base := revisionstore.SecretName(blueprint, digest)
	first := &corev1.Secret{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: base}, first); err != nil {
		t.Fatalf("reading Secret %s: %v", base, err)
	}
	n, err := strconv.Atoi(first.Annotations[revisionstore.AnnotationChunks])
	if err != nil {
		t.Fatal(err)
	}
	out := []*corev1.Secret{first}
	for i := 1; i < n; i++ {
		s := &corev1.Secret{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: base + "." + strconv.Itoa(i)}, s); err != nil {
			t.Fatalf("reading chunk %d: %v", i, err)
		}
		out = append(out, s)
	}
	return out
}

func resourceVersions(secrets []*corev1.Secret) string {
	var rvs []string
	for _, s := range secrets {
		rvs = append(rvs, s.Name+"@"+s.ResourceVersion)
	}
	return strings.Join(rvs, " ")
}

// assertGone checks that no Secret of the entry is left, chunk names included.
func assertGone(t *testing.T, c client.Client, blueprint, digest string, n int) {
	t.Helper()
	base := revisionstore.SecretName(blueprint, digest)
	for i := range n + 1 {
		name := base
		if i > 0 {
			name += "." + strconv.Itoa(i)
		}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
			t.Errorf("Secret %s after Delete: %v", name, err)
		}
	}
}

func TestSaveLoadDelete(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, env.Config)
	bp := newBlueprint(t, c, "cache-operator")
	files, digest := bundle(t, 1000)
	s := newStore(t)
	if _, err := s.Load(ctx, namespace, bp.Name, digest); !errors.Is(err, revisionstore.ErrNotStored) {
		t.Fatalf("Load before Save = %v, want ErrNotStored", err)
	}
	if err := s.Save(ctx, bp, digest, files[:2]); err == nil {
		t.Error("Save accepted files under a digest they do not have")
	}
	if err := s.Save(ctx, bp, digest, files); err != nil {
		t.Fatal(err)
	}
	// Another manager process, with nothing cached, reads it back.
	got, err := newStore(t).Load(ctx, namespace, bp.Name, digest)
	if err != nil || catalog.DigestFiles(got) != digest {
		t.Fatalf("Load = %d files, %v", len(got), err)
	}
	secrets := chunks(t, c, bp.Name, digest)
	if len(secrets) != 1 {
		t.Fatalf("%d Secrets for a small bundle", len(secrets))
	}
	// Another process saving it again (a restart) finds it there and changes nothing.
	if err := newStore(t).Save(ctx, bp, digest, files); err != nil {
		t.Fatalf("a second process's Save of a stored bundle: %v", err)
	}
	if after := resourceVersions(chunks(t, c, bp.Name, digest)); after != resourceVersions(secrets) {
		t.Errorf("a second process's Save wrote: %s, then %s", resourceVersions(secrets), after)
	}
	sec := secrets[0]
	if sec.Type != revisionstore.SecretType || sec.Immutable == nil || !*sec.Immutable {
		t.Errorf("Secret type %s, immutable %v", sec.Type, sec.Immutable)
	}
	if refs := sec.OwnerReferences; len(refs) != 1 || refs[0].UID != bp.UID || refs[0].Kind != "Blueprint" || refs[0].APIVersion != omv1.GroupVersion.String() {
		t.Errorf("owner references %+v, want the Blueprint %s", refs, bp.UID)
	}
	if sec.Labels[revisionstore.LabelBlueprint] != bp.Name || sec.Labels["app.kubernetes.io/managed-by"] != "operator-manager" ||
		!strings.HasPrefix(digest, "sha256:"+sec.Labels[revisionstore.LabelBundleDigest]) {
		t.Errorf("labels %v", sec.Labels)
	}
	if _, err := s.Load(ctx, namespace, "other-blueprint", digest); !errors.Is(err, revisionstore.ErrNotStored) {
		t.Errorf("Load for another Blueprint = %v", err)
	}
	if err := s.Delete(ctx, namespace, bp.Name, digest); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx, namespace, bp.Name, digest); !errors.Is(err, revisionstore.ErrNotStored) {
		t.Errorf("Load after Delete = %v", err)
	}
	if err := s.Delete(ctx, namespace, bp.Name, digest); err != nil {
		t.Errorf("Delete of an absent entry = %v", err)
	}
}

// TestChunkedBundle stores a bundle bigger than two Secrets can hold and checks the round
// trip, that a second Save writes nothing, that a damaged chunk is refused by name and
// repaired by Save, and that Delete leaves no chunk behind.
func TestChunkedBundle(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, env.Config)
	// A long name, so the Secret names are shortened too.
	bp := newBlueprint(t, c, "chunked-"+strings.Repeat("x", 230))
	files, digest := bundle(t, 2<<20+300<<10)
	s := newStore(t)
	start := time.Now()
	if err := s.Save(ctx, bp, digest, files); err != nil {
		t.Fatal(err)
	}
	secrets := chunks(t, c, bp.Name, digest)
	t.Logf("saved 2.3 MiB in %v as %d Secrets, the first %s", time.Since(start), len(secrets), secrets[0].Name)
	if len(secrets) < 3 {
		t.Fatalf("%d Secrets for 2.3 MiB of incompressible content", len(secrets))
	}
	for _, sec := range secrets {
		if len(sec.Data["bundle"]) > revisionstore.ChunkSize || len(sec.OwnerReferences) != 1 || sec.OwnerReferences[0].UID != bp.UID {
			t.Errorf("Secret %s: %d bytes, owners %+v", sec.Name, len(sec.Data["bundle"]), sec.OwnerReferences)
		}
	}
	got, err := newStore(t).Load(ctx, namespace, bp.Name, digest)
	if err != nil || catalog.DigestFiles(got) != digest {
		t.Fatalf("Load = %d files, %v", len(got), err)
	}
	// Stat (what `history` shows) counts every chunk.
	total := 0
	for _, sec := range secrets {
		total += len(sec.Data["bundle"])
	}
	if st, err := newStore(t).Stat(ctx, namespace, bp.Name, digest); err != nil || st == nil || st.Secret != secrets[0].Name || st.Chunks != len(secrets) || st.Bytes != total {
		t.Errorf("Stat = %+v, %v; want %s, %d chunks, %d bytes", st, err, secrets[0].Name, len(secrets), total)
	}

	before := resourceVersions(secrets)
	if err := s.Save(ctx, bp, digest, files); err != nil {
		t.Fatal(err)
	}
	if after := resourceVersions(chunks(t, c, bp.Name, digest)); after != before {
		t.Errorf("a second Save wrote: %s, then %s", before, after)
	}

	// Secrets are immutable: damage a chunk by deleting it and creating it again.
	victim := secrets[1].DeepCopy()
	if err := c.Delete(ctx, victim); err != nil {
		t.Fatal(err)
	}
	victim.ResourceVersion, victim.UID, victim.CreationTimestamp = "", "", metav1.Time{}
	victim.Data["bundle"][100] ^= 0xff
	if err := c.Create(ctx, victim); err != nil {
		t.Fatal(err)
	}
	_, err = newStore(t).Load(ctx, namespace, bp.Name, digest)
	if !errors.Is(err, revisionstore.ErrCorrupt) || !strings.Contains(err.Error(), namespace+"/"+victim.Name) {
		t.Errorf("Load of a damaged chunk = %v, want ErrCorrupt naming %s", err, victim.Name)
	}
	t.Logf("Load of a damaged chunk: %v", err)
	// A Store that has not seen the entry complete (a restarted manager; this process's
	// Store trusts an entry it saved for a while, until its own Load finds it damaged).
	if err := newStore(t).Save(ctx, bp, digest, files); err != nil {
		t.Fatalf("Save over a damaged entry: %v", err)
	}
	if got, err := newStore(t).Load(ctx, namespace, bp.Name, digest); err != nil || catalog.DigestFiles(got) != digest {
		t.Fatalf("Load after the repair = %d files, %v", len(got), err)
	}

	if err := s.Delete(ctx, namespace, bp.Name, digest); err != nil {
		t.Fatal(err)
	}
	assertGone(t, c, bp.Name, digest, len(secrets))
	if st, err := newStore(t).Stat(ctx, namespace, bp.Name, digest); st != nil || err != nil {
		t.Errorf("Stat of a deleted entry = %+v, %v; want nothing kept", st, err)
	}
}

// TestInterruptedSaveAndDelete leaves the chunks a crash would leave and checks that the
// entry is not readable meanwhile, that a retried Save completes it without rewriting
// them, and that Delete finds chunks without a first Secret.
func TestInterruptedSaveAndDelete(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, env.Config)
	bp := newBlueprint(t, c, "interrupted")
	files, digest := bundle(t, 2<<20)
	s := newStore(t)
	if err := s.Save(ctx, bp, digest, files); err != nil {
		t.Fatal(err)
	}
	secrets := chunks(t, c, bp.Name, digest)
	// A Save that crashed before its last write: every chunk but the first.
	if err := c.Delete(ctx, secrets[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx, namespace, bp.Name, digest); !errors.Is(err, revisionstore.ErrNotStored) {
		t.Errorf("Load of an unfinished Save = %v, want ErrNotStored", err)
	}
	if err := s.Save(ctx, bp, digest, files); err != nil {
		t.Fatal(err)
	}
	after := chunks(t, c, bp.Name, digest)
	if got, want := resourceVersions(after[1:]), resourceVersions(secrets[1:]); got != want {
		t.Errorf("the retried Save rewrote chunks: %s, then %s", want, got)
	}
	if _, err := s.Load(ctx, namespace, bp.Name, digest); err != nil {
		t.Errorf("Load after the retried Save = %v", err)
	}
	// The same crash again, then a Delete (pruning) instead of a retry.
	if err := c.Delete(ctx, after[0]); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, namespace, bp.Name, digest); err != nil {
		t.Fatal(err)
	}
	assertGone(t, c, bp.Name, digest, len(secrets))
	// A Delete that crashed after removing the last chunk: the first Secret still counts them.
	if err := s.Save(ctx, bp, digest, files); err != nil {
		t.Fatal(err)
	}
	secrets = chunks(t, c, bp.Name, digest)
	if err := c.Delete(ctx, secrets[len(secrets)-1]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx, namespace, bp.Name, digest); !errors.Is(err, revisionstore.ErrCorrupt) || !strings.Contains(err.Error(), secrets[len(secrets)-1].Name+" is missing") {
		t.Errorf("Load of a torn entry = %v", err)
	}
	if err := s.Delete(ctx, namespace, bp.Name, digest); err != nil {
		t.Fatal(err)
	}
	assertGone(t, c, bp.Name, digest, len(secrets))
	if st, err := newStore(t).Stat(ctx, namespace, bp.Name, digest); st != nil || err != nil {
		t.Errorf("Stat of a deleted entry = %+v, %v; want nothing kept", st, err)
	}
}

// TestRecreatedBlueprint checks that an entry owned by a deleted Blueprint of the same
// name, which the garbage collector will remove, is written anew for the new one.
func TestRecreatedBlueprint(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, env.Config)
	old := newBlueprint(t, c, "recreated")
	files, digest := bundle(t, 1000)
	s := newStore(t)
	if err := s.Save(ctx, old, digest, files); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	var bp *omv1.Blueprint
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		err := c.Get(ctx, client.ObjectKeyFromObject(old), &omv1.Blueprint{})
		if apierrors.IsNotFound(err) {
			bp = newBlueprint(t, c, "recreated")
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Blueprint still there: %v", err)
		}
	}
	if err := s.Save(ctx, bp, digest, files); err != nil {
		t.Fatal(err)
	}
	for _, sec := range chunks(t, c, bp.Name, digest) {
		if refs := sec.OwnerReferences; len(refs) != 1 || refs[0].UID != bp.UID {
			t.Errorf("Secret %s owned by %+v, want the new Blueprint %s", sec.Name, refs, bp.UID)
		}
	}
}

// TestNeedsOnlyGetCreateDelete runs the store as a user that may only get, create and
// delete Secrets: no list, no watch, nothing on Blueprints.
func TestNeedsOnlyGetCreateDelete(t *testing.T) {
	ctx := context.Background()
	admin := newClient(t, env.Config)
	const user = "revisionstore-test"
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: user},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "create", "delete"}}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.Delete(context.Background(), o) })
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	s := &revisionstore.Store{Client: newClient(t, cfg)}
	bp := newBlueprint(t, admin, "least-privilege")
	files, digest := bundle(t, 1<<20)
	// The authorizer learns of the binding through a watch: wait until it allows a get.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err := s.Load(ctx, namespace, bp.Name, digest)
		if errors.Is(err, revisionstore.ErrNotStored) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Load as %s = %v", user, err)
		}
	}
	if err := s.Save(ctx, bp, digest, files); err != nil {
		t.Fatal(err)
	}
	if n := len(chunks(t, admin, bp.Name, digest)); n < 2 {
		t.Fatalf("%d Secrets: the test wants a chunked entry", n)
	}
	if err := s.Save(ctx, bp, digest, files); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Load(ctx, namespace, bp.Name, digest); err != nil || catalog.DigestFiles(got) != digest {
		t.Fatalf("Load = %d files, %v", len(got), err)
	}
	if err := s.Delete(ctx, namespace, bp.Name, digest); err != nil {
		t.Fatal(err)
	}
	assertGone(t, admin, bp.Name, digest, 2)
	// And the user really cannot list Secrets.
	if err := s.Client.List(ctx, &corev1.SecretList{}, client.InNamespace(namespace)); !apierrors.IsForbidden(err) {
		t.Errorf("list as %s = %v, want Forbidden", user, fmt.Sprint(err))
	}
}

// countingReader counts the reads a Store makes.
type countingReader struct {
	client.Reader
	gets int
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets++
	return c.Reader.Get(ctx, key, obj, opts...)
}

// TestSaveTrustsWhatItSaved: the passes of one revision keep its bundle again and again;
// after the first Save the Store reads nothing for it. Once its own Load finds the entry
// gone, the next Save writes it again.
func TestSaveTrustsWhatItSaved(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, env.Config)
	bp := newBlueprint(t, c, "trusted")
	files, digest := bundle(t, 1<<10)
	reads := &countingReader{Reader: c}
	s := &revisionstore.Store{Client: c, Reader: reads}
	if err := s.Save(ctx, bp, digest, files); err != nil {
		t.Fatal(err)
	}
	first := reads.gets
	for range 3 {
		if err := s.Save(ctx, bp, digest, files); err != nil {
			t.Fatal(err)
		}
	}
	if reads.gets != first {
		t.Errorf("Saves of an entry this Store saved read %d Secrets", reads.gets-first)
	}
	for _, sec := range chunks(t, c, bp.Name, digest) {
		if err := c.Delete(ctx, sec); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Load(ctx, namespace, bp.Name, digest); !errors.Is(err, revisionstore.ErrNotStored) {
		t.Fatalf("Load of a deleted entry = %v, want ErrNotStored", err)
	}
	if err := s.Save(ctx, bp, digest, files); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Load(ctx, namespace, bp.Name, digest); err != nil || catalog.DigestFiles(got) != digest {
		t.Errorf("Load after the Save that followed = %d files, %v", len(got), err)
	}
}

// TestSaveAtSecretQuota: in a namespace at its Secret quota the API server refuses every
// create, even of a Secret it holds (quota admission runs before the name is looked at).
// A Save of an entry stored before (a rollback, or a fresh process keeping the running
// version) finds it there and succeeds; a Save of a new bundle fails with the API
// server's refusal, naming the quota.
func TestSaveAtSecretQuota(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, env.Config)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "secret-quota"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	bp := &omv1.Blueprint{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "cache"},
		Spec: omv1.BlueprintSpec{ClusterServiceVersionName: "cache-operator.1.1.0"}}
	if err := c.Create(ctx, bp); err != nil {
		t.Fatal(err)
	}
	files, digest := bundle(t, 1000)
	if err := newStore(t).Save(ctx, bp, digest, files); err != nil {
		t.Fatal(err)
	}
	// This API server runs no quota controller: the quota's usage is written here, at its
	// limit, as the controller would have counted the one Secret.
	hard := corev1.ResourceList{corev1.ResourceSecrets: resource.MustParse("1")}
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "no-more-secrets"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}}
	if err := c.Create(ctx, quota); err != nil {
		t.Fatal(err)
	}
	quota.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: hard}
	if err := c.Status().Update(ctx, quota); err != nil {
		t.Fatal(err)
	}
	// The quota admission plugin sees the quota through its informer: wait until it does.
	for i := 0; ; i++ {
		probe := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "probe-" + strconv.Itoa(i)}}
		err := c.Create(ctx, probe)
		if apierrors.IsForbidden(err) {
			break
		}
		if i == 100 {
			t.Fatalf("the quota does not refuse a create: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := newStore(t).Save(ctx, bp, digest, files); err != nil {
		t.Errorf("Save of an entry stored before the quota filled: %v", err)
	}
	other, otherDigest := bundle(t, 1000)
	err := newStore(t).Save(ctx, bp, otherDigest, other)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "no-more-secrets") {
		t.Errorf("Save of a new bundle at the quota = %v, want the refusal naming the quota", err)
	}
}
