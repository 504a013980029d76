package revisionstore

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog"
)

var (
	// ErrNotStored is wrapped by Load for a bundle the cluster does not hold.
	ErrNotStored = errors.New("bundle not stored in the cluster")
	// ErrCorrupt is wrapped by Load for an entry that is torn (a chunk Secret missing) or
	// damaged (content not matching its digests). Save repairs such an entry.
	ErrCorrupt = errors.New("stored bundle is corrupt")
)

// build returns the Secrets of an entry, the first Secret first. Only the first carries
// the chunk count and digests, so it alone makes an entry readable.
func build(owner *omv1.Blueprint, digest string, files []catalog.File, chunkSize int) ([]*corev1.Secret, error) {
	payload, err := encode(digest, files)
	if err != nil {
		return nil, err
	}
	chunks := split(payload, chunkSize)
	if len(chunks) > maxChunks {
		return nil, fmt.Errorf("bundle %s is too large to store: %d chunks of %d bytes, at most %d", digest, len(chunks), chunkSize, maxChunks)
	}
	base := SecretName(owner.Name, digest)
	ref := metav1.OwnerReference{
		APIVersion: omv1.GroupVersion.String(), Kind: "Blueprint", Name: owner.Name, UID: owner.UID,
		// Not blocking the owner's deletion needs no permission on blueprints/finalizers,
		// and a Blueprint has nothing to wait for: its bundles go with it.
		Controller: ptr.To(false), BlockOwnerDeletion: ptr.To(false),
	}
	digests := make([]string, len(chunks))
	secrets := make([]*corev1.Secret, len(chunks))
	for i, c := range chunks {
		digests[i] = sha(c)
		secrets[i] = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Name: chunkName(base, i), Namespace: owner.Namespace,
				Labels: labels(owner.Name, digest),
				Annotations: map[string]string{
					AnnotationBlueprint: owner.Name, AnnotationBundleDigest: digest, AnnotationChunk: strconv.Itoa(i),
				},
				OwnerReferences: []metav1.OwnerReference{ref},
			},
			Type: SecretType,
			// Content-addressed: an entry never changes, and immutable Secrets cost the
			// API server no watch.
			Immutable: ptr.To(true),
			Data:      map[string][]byte{dataKey: c},
		}
	}
	a := secrets[0].Annotations
	a[AnnotationChunks] = strconv.Itoa(len(chunks))
	a[AnnotationPayloadDigest] = sha(payload)
	a[AnnotationChunkDigests] = strings.Join(digests, ",")
	return secrets, nil
}

// getter reads one Secret by name; it returns a NotFound API error for an absent one.
type getter func(name string) (*corev1.Secret, error)

// assemble reads an entry through get and verifies it: every chunk against the digest
// the first Secret records for it, the payload against the payload digest, and the files
// against digest. It returns the Secrets it read too, for Save to judge who owns them.
func assemble(namespace, blueprint, digest string, get getter) ([]catalog.File, []*corev1.Secret, error) {
	base := SecretName(blueprint, digest)
	id := namespace + "/" + base
	first, err := get(base)
	if apierrors.IsNotFound(err) {
		return nil, nil, fmt.Errorf("%w: bundle %s of Blueprint %s/%s (no Secret %s)", ErrNotStored, digest, namespace, blueprint, id)
	} else if err != nil {
		return nil, nil, fmt.Errorf("reading bundle Secret %s: %w", id, err)
	}
	if first.Type != SecretType {
		return nil, nil, fmt.Errorf("reading bundle Secret %s: its type is %q, not %s", id, first.Type, SecretType)
	}
	if got := first.Annotations[AnnotationBundleDigest]; got != digest {
		// Two digests of one Blueprint sharing 16 hex characters, or a tampered Secret.
		return nil, nil, fmt.Errorf("reading bundle Secret %s: it holds bundle %q, not %s", id, got, digest)
	}
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("%w: Secret %s: %s", ErrCorrupt, id, fmt.Sprintf(format, args...))
	}
	n, err := strconv.Atoi(first.Annotations[AnnotationChunks])
	if err != nil || n < 1 || n > maxChunks {
		return nil, nil, corrupt("invalid chunk count %q", first.Annotations[AnnotationChunks])
	}
	chunkDigests := strings.Split(first.Annotations[AnnotationChunkDigests], ",")
	if len(chunkDigests) != n {
		return nil, nil, corrupt("%d chunk digests for %d chunks", len(chunkDigests), n)
	}
	secrets := []*corev1.Secret{first}
	var payload []byte
	for i := range n {
		s := first
		if i > 0 {
			if s, err = get(chunkName(base, i)); apierrors.IsNotFound(err) {
				return nil, nil, fmt.Errorf("%w: entry %s is torn: chunk Secret %s/%s is missing", ErrCorrupt, id, namespace, chunkName(base, i))
			} else if err != nil {
				return nil, nil, fmt.Errorf("reading bundle chunk Secret %s/%s: %w", namespace, chunkName(base, i), err)
			}
			secrets = append(secrets, s)
		}
		if err := checkChunk(s, digest, i, chunkDigests[i]); err != nil {
			return nil, nil, fmt.Errorf("%w: chunk Secret %s/%s of entry %s: %v", ErrCorrupt, namespace, s.Name, id, err)
		}
		payload = append(payload, s.Data[dataKey]...)
	}
	if got, want := sha(payload), first.Annotations[AnnotationPayloadDigest]; got != want {
		return nil, nil, corrupt("its chunks' payload has digest %s, the entry records %s", got, want)
	}
	files, err := decode(digest, payload)
	if err != nil {
		return nil, nil, corrupt("%v", err)
	}
	return files, secrets, nil
}

// checkChunk verifies that s is chunk i of the entry for digest and holds the bytes whose
// digest the first Secret recorded.
func checkChunk(s *corev1.Secret, digest string, i int, want string) error {
	if s.Type != SecretType {
		return fmt.Errorf("type %q, not %s", s.Type, SecretType)
	}
	if got := s.Annotations[AnnotationBundleDigest]; got != digest {
		return fmt.Errorf("it belongs to bundle %q", got)
	}
	if got := s.Annotations[AnnotationChunk]; got != strconv.Itoa(i) {
		return fmt.Errorf("it is chunk %q, not %d", got, i)
	}
	if got := sha(s.Data[dataKey]); got != want {
		return fmt.Errorf("its data has digest %s, the entry records %s", got, want)
	}
	return nil
}
