package revisionstore

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/catalog/catalogtest"
)

func randomBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// testBundle is a CSV, a CRD and an incompressible blob of size bytes.
func testBundle(t testing.TB, size int) ([]catalog.File, string) {
	files := []catalog.File{
		{Name: "manifests/cache.clusterserviceversion.yaml", Data: []byte("kind: ClusterServiceVersion\nmetadata: {name: cache-operator.1.1.0}\n")},
		{Name: "manifests/caches.crd.yaml", Data: []byte("kind: CustomResourceDefinition\n")},
		{Name: "manifests/blob.bin", Data: randomBytes(t, size)},
	}
	return files, catalog.DigestFiles(files)
}

var testOwner = &omv1.Blueprint{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cache-operator", UID: "uid-1"}}

// secretMap is an entry's Secrets by name, read through its getter as the API would.
type secretMap map[string]*corev1.Secret

func mapOf(secrets []*corev1.Secret) secretMap {
	m := secretMap{}
	for _, s := range secrets {
		m[s.Name] = s
	}
	return m
}

func (m secretMap) get(name string) (*corev1.Secret, error) {
	if s, ok := m[name]; ok {
		return s.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct{ n, size, chunks int }{{0, 4, 1}, {3, 4, 1}, {4, 4, 1}, {5, 4, 2}, {12, 4, 3}, {13, 4, 4}} {
		payload := randomBytes(t, tc.n)
		chunks := split(payload, tc.size)
		if len(chunks) != tc.chunks || !bytes.Equal(bytes.Join(chunks, nil), payload) {
			t.Errorf("split(%d bytes, %d) = %d chunks, want %d joining back to the payload", tc.n, tc.size, len(chunks), tc.chunks)
		}
		for _, c := range chunks {
			if len(c) > tc.size {
				t.Errorf("split(%d bytes, %d): a chunk of %d bytes", tc.n, tc.size, len(c))
			}
		}
	}
}

func TestEncodeDecode(t *testing.T) {
	files, digest := testBundle(t, 1000)
	payload, err := encode(digest, files)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decode(digest, payload)
	if err != nil || catalog.DigestFiles(got) != digest || len(got) != len(files) {
		t.Fatalf("decode = %d files, %v", len(got), err)
	}
	// A small text bundle is compressed.
	text := []catalog.File{{Name: "csv.yaml", Data: bytes.Repeat([]byte("spec: {install: {}}\n"), 1000)}}
	if p, _ := encode(catalog.DigestFiles(text), text); len(p) > 2000 {
		t.Errorf("20000 bytes of YAML encoded to %d bytes", len(p))
	}
	other, otherDigest := testBundle(t, 10)
	if _, err := decode(otherDigest, payload); err == nil || !strings.Contains(err.Error(), "holds bundle "+digest) {
		t.Errorf("decode under another digest = %v", err)
	}
	// An entry whose JSON claims the digest but holds other files.
	lying, _ := encode(digest, other)
	if _, err := decode(digest, lying); err == nil || !strings.Contains(err.Error(), "its files have digest "+otherDigest) {
		t.Errorf("decode of other files = %v", err)
	}
	if _, err := decode(digest, payload[:len(payload)-5]); err == nil {
		t.Error("decode accepted a truncated payload")
	}
}

// TestBuildAssembleChunked round-trips a bundle cut into many chunks and checks what each
// Secret carries.
func TestBuildAssembleChunked(t *testing.T) {
	files, digest := testBundle(t, 10_000)
	secrets, err := build(testOwner, digest, files, 1024)
	if err != nil {
		t.Fatal(err)
	}
	if len(secrets) < 10 {
		t.Fatalf("%d Secrets for 10000 incompressible bytes in chunks of 1024", len(secrets))
	}
	base := SecretName(testOwner.Name, digest)
	for i, s := range secrets {
		if s.Name != chunkName(base, i) || s.Namespace != "ns" || s.Type != SecretType || s.Immutable == nil || !*s.Immutable {
			t.Errorf("Secret %d: %s/%s type %s immutable %v", i, s.Namespace, s.Name, s.Type, s.Immutable)
		}
		if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != "uid-1" || s.OwnerReferences[0].Kind != "Blueprint" ||
			*s.OwnerReferences[0].BlockOwnerDeletion {
			t.Errorf("Secret %s owner references: %+v", s.Name, s.OwnerReferences)
		}
		if s.Labels[LabelBlueprint] != "cache-operator" || s.Annotations[AnnotationBundleDigest] != digest {
			t.Errorf("Secret %s labels %v annotations %v", s.Name, s.Labels, s.Annotations)
		}
	}
	if got := secrets[0].Annotations[AnnotationChunks]; got != fmt.Sprint(len(secrets)) {
		t.Errorf("chunk count annotation %q for %d Secrets", got, len(secrets))
	}
	got, read, err := assemble("ns", testOwner.Name, digest, mapOf(secrets).get)
	if err != nil || catalog.DigestFiles(got) != digest || len(read) != len(secrets) {
		t.Fatalf("assemble = %d files, %d Secrets, %v", len(got), len(read), err)
	}
	// One chunk when the payload fits.
	if one, _ := build(testOwner, digest, files, ChunkSize); len(one) != 1 {
		t.Errorf("%d Secrets at the real chunk size", len(one))
	}
}

// TestAssembleRefusesDamage damages a chunked entry in every way that matters and checks
// that Load would refuse it, naming the Secret at fault.
func TestAssembleRefusesDamage(t *testing.T) {
	files, digest := testBundle(t, 5000)
	secrets, err := build(testOwner, digest, files, 1024)
	if err != nil {
		t.Fatal(err)
	}
	base := SecretName(testOwner.Name, digest)
	chunk2 := chunkName(base, 2)
	otherFiles, _ := testBundle(t, 5000)
	// Self-consistent chunks and digests, but of other files.
	impostor, err := build(testOwner, digest, otherFiles, 1024)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		damage func(m secretMap)
		is     error
		want   string
	}{
		{"flipped byte in a chunk", func(m secretMap) { m[chunk2].Data[dataKey][7] ^= 1 }, ErrCorrupt, "chunk Secret ns/" + chunk2},
		{"missing chunk", func(m secretMap) { delete(m, chunk2) }, ErrCorrupt, "chunk Secret ns/" + chunk2 + " is missing"},
		{"chunks swapped", func(m secretMap) {
			m[chunk2].Data, m[chunkName(base, 3)].Data = m[chunkName(base, 3)].Data, m[chunk2].Data
		}, ErrCorrupt, chunk2},
		{"chunk of another entry", func(m secretMap) { m[chunk2].Annotations[AnnotationBundleDigest] = testDigest }, ErrCorrupt, "belongs to bundle"},
		{"chunk that says it is another", func(m secretMap) { m[chunk2].Annotations[AnnotationChunk] = "3" }, ErrCorrupt, "is chunk \"3\""},
		{"bad chunk count", func(m secretMap) { m[base].Annotations[AnnotationChunks] = "100000" }, ErrCorrupt, "ns/" + base + ": invalid chunk count"},
		{"fewer chunks counted", func(m secretMap) { m[base].Annotations[AnnotationChunks] = "2" }, ErrCorrupt, "chunk digests for 2 chunks"},
		{"payload digest", func(m secretMap) { m[base].Annotations[AnnotationPayloadDigest] = testDigest }, ErrCorrupt, "payload has digest"},
		{"other files", func(m secretMap) { maps.Copy(m, mapOf(impostor)) }, ErrCorrupt, "ns/" + base + ": its files have digest"},
		{"not a bundle Secret", func(m secretMap) { m[base].Type = corev1.SecretTypeOpaque }, nil, "ns/" + base + ": its type is"},
		{"another digest under the name", func(m secretMap) { m[base].Annotations[AnnotationBundleDigest] = testDigest }, nil, "holds bundle"},
		{"absent", func(m secretMap) { delete(m, base) }, ErrNotStored, "no Secret ns/" + base},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := secretMap{}
			for _, s := range secrets {
				m[s.Name] = s.DeepCopy()
			}
			tc.damage(m)
			_, _, err := assemble("ns", testOwner.Name, digest, m.get)
			if err == nil {
				t.Fatal("assemble accepted it")
			}
			if tc.is != nil && !errors.Is(err, tc.is) || tc.is == nil && (errors.Is(err, ErrCorrupt) || errors.Is(err, ErrNotStored)) {
				t.Errorf("error %v, want one wrapping %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

func TestBuildRefusesWhatItCouldNotRead(t *testing.T) {
	files, digest := testBundle(t, 300*1024)
	if _, err := build(testOwner, digest, files, 1024); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("build of %d chunks = %v", 300, err)
	}
}

// communityBundles reads the files of the shared community catalog's bundles (the
// catalog's own loader, outside the timing); skips when the catalog is absent.
func communityBundles(b *testing.B) [][]catalog.File {
	cat, err := catalog.Load(catalogtest.CommunityPath(b), catalog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var out [][]catalog.File
	for _, bundle := range cat.Bundles() {
		files, err := cat.Files(bundle)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, files)
	}
	return out
}

// Storing a bundle is part of every installation's first pass. Its floor is the JSON
// encoding alone, which any stored form needs; the ratio says what compressing costs.
// Run: go test -run=^$ -bench=Community -benchmem -count=3 ./internal/revisionstore/
func BenchmarkEncodeCommunity(b *testing.B) {
	bundles := communityBundles(b)
	var in, out int
	b.ReportAllocs()
	for b.Loop() {
		in, out = 0, 0
		for _, files := range bundles {
			payload, err := encode("sha256:x", files)
			if err != nil {
				b.Fatal(err)
			}
			out += len(payload)
			for _, f := range files {
				in += len(f.Data)
			}
		}
	}
	b.ReportMetric(float64(out)/float64(in), "stored/raw")
}

func BenchmarkEncodeFloorCommunity(b *testing.B) {
	bundles := communityBundles(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, files := range bundles {
			if _, err := marshal("sha256:x", files); err != nil {
				b.Fatal(err)
			}
		}
	}
}
