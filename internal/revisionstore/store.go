// Package revisionstore keeps the bundle of each retained revision in the cluster, so that
// rollback, re-install and downgrade work with the catalog unreachable and an empty local
// cache, on a manager that never saw the original install. The local bundle cache is only
// an accelerator in front of it.
//
// In the manner of Helm's release Secrets, an entry is the bundle's files as JSON,
// gzip-compressed, in immutable Secrets of type SecretType in the Blueprint's namespace,
// owned by the Blueprint so that the garbage collector removes them with it. A payload
// larger than ChunkSize is cut into chunks, one Secret each; the first Secret records the
// count and digests, and the others are named after it, so the manager reads and deletes
// by name and needs no list or watch on Secrets, only get, create and delete.
package revisionstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog"
)

// Store keeps bundles in Secrets. Calls for one Blueprint are expected one at a time, as a
// controller reconciles one object at a time.
type Store struct {
	// Client writes the Secrets, and reads them when Reader is nil.
	Client client.Client
	// Reader reads the Secrets. With a manager's cached client, set it to the manager's
	// APIReader: a cached Get of a Secret would start an informer on every Secret of the
	// cluster, which needs list and watch and holds them all in memory.
	Reader client.Reader

	// saved remembers, for a while, the entries this Store wrote or found complete: the
	// passes of one revision keep a bundle, and each would read its first Secret again.
	mu    sync.Mutex
	saved map[string]time.Time
}

// savedFor is how long an entry found complete is trusted without a read: the passes of
// one revision, not the life of the process (an entry deleted behind the manager's back is
// written again by the next revision that keeps it after that).
const savedFor = 2 * time.Minute

func savedKey(owner *omv1.Blueprint, digest string) string {
	return owner.Namespace + "/" + owner.Name + "/" + string(owner.UID) + "/" + digest
}

func (s *Store) knownSaved(key string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.saved[key]
	return ok && now.Sub(at) < savedFor
}

func (s *Store) markSaved(key string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.saved == nil {
		s.saved = map[string]time.Time{}
	}
	if len(s.saved) >= 1024 {
		for k, at := range s.saved {
			if now.Sub(at) >= savedFor {
				delete(s.saved, k)
			}
		}
	}
	s.saved[key] = now
}

func (s *Store) forgetSaved(namespace, blueprint, digest string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prefix := namespace + "/" + blueprint + "/"
	for k := range s.saved {
		if strings.HasPrefix(k, prefix) && strings.HasSuffix(k, "/"+digest) {
			delete(s.saved, k)
		}
	}
}

func (s *Store) reader() client.Reader {
	if s.Reader != nil {
		return s.Reader
	}
	return s.Client
}

func (s *Store) get(ctx context.Context, namespace string) getter {
	return func(name string) (*corev1.Secret, error) {
		sec := &corev1.Secret{}
		return sec, s.reader().Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, sec)
	}
}

// Save stores a bundle under its Blueprint, after checking the files have digest. An
// existing complete entry owned by this Blueprint is left alone (nothing changed); a torn or
// damaged one, or one owned by a deleted Blueprint of the same name (which the garbage
// collector is about to remove), is written anew.
func (s *Store) Save(ctx context.Context, owner *omv1.Blueprint, digest string, files []catalog.File) error {
	if !catalog.ValidDigest(digest) {
		return fmt.Errorf("storing bundle: invalid digest %q", digest)
	}
	if err := catalog.VerifyFiles(files, digest); err != nil {
		return fmt.Errorf("storing bundle %s: %w", digest, err)
	}
	if owner.UID == "" {
		return fmt.Errorf("storing bundle %s: Blueprint %s/%s has no UID to own it", digest, owner.Namespace, owner.Name)
	}
	key := savedKey(owner, digest)
	if s.knownSaved(key, time.Now()) {
		return nil
	}
	if err := s.save(ctx, owner, digest, files); err != nil {
		return err
	}
	s.markSaved(key, time.Now())
	return nil
}

func (s *Store) save(ctx context.Context, owner *omv1.Blueprint, digest string, files []catalog.File) error {
	secrets, err := build(owner, digest, files, ChunkSize)
	if err != nil {
		return err
	}
	var refused error // the outright create's refusal, other than "already there"
	if len(secrets) == 1 {
		// Most bundles fit one Secret, and most Saves store a bundle the cluster does not
		// hold yet: create it outright, and read what is there only when something is.
		err := s.Client.Create(ctx, secrets[0].DeepCopy())
		if err == nil {
			return nil
		} else if !apierrors.IsAlreadyExists(err) {
			// A create can be refused before the API server looks at the name: a namespace
			// at its Secret quota refuses even a Secret it holds. The entry already there,
			// complete and this Blueprint's, is all a Save wants (a rollback to a version
			// stored before the quota filled goes on); anything else is the refusal.
			refused = fmt.Errorf("storing bundle %s: creating Secret %s/%s: %w", digest, secrets[0].Namespace, secrets[0].Name, err)
		}
	}
	_, existing, err := assemble(owner.Namespace, owner.Name, digest, s.get(ctx, owner.Namespace))
	switch {
	case err == nil && ownedBy(existing, owner.UID):
		return nil
	case refused != nil:
		return refused
	case err == nil, errors.Is(err, ErrCorrupt):
		if err := s.Delete(ctx, owner.Namespace, owner.Name, digest); err != nil {
			return fmt.Errorf("replacing stored bundle %s: %w", digest, err)
		}
	case !errors.Is(err, ErrNotStored):
		return fmt.Errorf("storing bundle %s: %w", digest, err)
	}
	// The other chunks before the first, in order: the first Secret makes the entry
	// readable, so a crash leaves either nothing readable or a complete entry, and the
	// chunks it leaves are 1..k, which Delete finds by name.
	for _, sec := range secrets[1:] {
		if err := s.createChunk(ctx, sec, owner.UID); err != nil {
			return err
		}
	}
	if err := s.Client.Create(ctx, secrets[0].DeepCopy()); err != nil {
		return fmt.Errorf("storing bundle %s: creating Secret %s/%s: %w", digest, secrets[0].Namespace, secrets[0].Name, err)
	}
	return nil
}

// createChunk creates a chunk Secret other than the first. One already there was left by a
// Save that did not finish: it is kept when it is what this Save would write, and
// replaced otherwise (another owner, or a payload compressed differently).
func (s *Store) createChunk(ctx context.Context, want *corev1.Secret, owner types.UID) error {
	id := want.Namespace + "/" + want.Name
	err := s.Client.Create(ctx, want.DeepCopy())
	if err == nil {
		return nil
	} else if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating bundle chunk Secret %s: %w", id, err)
	}
	have := &corev1.Secret{}
	if err := s.reader().Get(ctx, client.ObjectKeyFromObject(want), have); err != nil {
		return fmt.Errorf("reading bundle chunk Secret %s: %w", id, err)
	}
	if have.Type == want.Type && ownedBy([]*corev1.Secret{have}, owner) &&
		have.Annotations[AnnotationBundleDigest] == want.Annotations[AnnotationBundleDigest] &&
		have.Annotations[AnnotationChunk] == want.Annotations[AnnotationChunk] &&
		bytes.Equal(have.Data[dataKey], want.Data[dataKey]) {
		return nil
	}
	if err := s.deleteSecret(ctx, want.Namespace, want.Name); err != nil {
		return err
	}
	if err := s.Client.Create(ctx, want.DeepCopy()); err != nil {
		return fmt.Errorf("replacing bundle chunk Secret %s: %w", id, err)
	}
	return nil
}

func ownedBy(secrets []*corev1.Secret, uid types.UID) bool {
	for _, s := range secrets {
		owned := false
		for _, r := range s.OwnerReferences {
			owned = owned || r.UID == uid
		}
		if !owned {
			return false
		}
	}
	return true
}

// Load returns a stored bundle's files, verified against digest. It wraps ErrNotStored
// when the cluster holds no entry for digest, and ErrCorrupt, naming the Secret, when the
// entry is torn or damaged.
func (s *Store) Load(ctx context.Context, namespace, blueprint, digest string) ([]catalog.File, error) {
	if !catalog.ValidDigest(digest) {
		return nil, fmt.Errorf("loading stored bundle: invalid digest %q", digest)
	}
	files, _, err := assemble(namespace, blueprint, digest, s.get(ctx, namespace))
	if errors.Is(err, ErrNotStored) || errors.Is(err, ErrCorrupt) {
		s.forgetSaved(namespace, blueprint, digest) // the next Save writes it again
	}
	return files, err
}

// Delete removes every chunk Secret of an entry; an absent entry is no error.
func (s *Store) Delete(ctx context.Context, namespace, blueprint, digest string) error {
	if !catalog.ValidDigest(digest) {
		return fmt.Errorf("deleting stored bundle: invalid digest %q", digest)
	}
	s.forgetSaved(namespace, blueprint, digest)
	base := SecretName(blueprint, digest)
	first := &corev1.Secret{}
	err := s.reader().Get(ctx, client.ObjectKey{Namespace: namespace, Name: base}, first)
	switch {
	case apierrors.IsNotFound(err):
		first = nil
	case err != nil:
		return fmt.Errorf("deleting stored bundle %s: reading Secret %s/%s: %w", digest, namespace, base, err)
	case first.Type != SecretType || first.Annotations[AnnotationBundleDigest] != digest:
		return fmt.Errorf("deleting stored bundle %s: Secret %s/%s is not its entry (type %q, bundle %q)",
			digest, namespace, base, first.Type, first.Annotations[AnnotationBundleDigest])
	}
	// Chunks 1..n-1 by the first Secret's count, and any after them: those are left by a
	// Save that did not finish, which also leaves chunks without a first Secret.
	n := 1
	if first != nil {
		if c, err := strconv.Atoi(first.Annotations[AnnotationChunks]); err == nil && c >= 1 && c <= maxChunks {
			n = c
		}
	}
	for n < maxChunks {
		found, err := s.exists(ctx, namespace, chunkName(base, n))
		if err != nil {
			return fmt.Errorf("deleting stored bundle %s: %w", digest, err)
		}
		if !found {
			break
		}
		n++
	}
	// The last chunk first and the first Secret last, so that a crash leaves chunks 1..k
	// and, while any remain, the first Secret whose count finds them again.
	for i := n - 1; i >= 1; i-- {
		if err := s.deleteSecret(ctx, namespace, chunkName(base, i)); err != nil {
			return fmt.Errorf("deleting stored bundle %s: %w", digest, err)
		}
	}
	if first != nil {
		if err := s.deleteSecret(ctx, namespace, base); err != nil {
			return fmt.Errorf("deleting stored bundle %s: %w", digest, err)
		}
	}
	return nil
}

// exists tells whether a Secret exists, reading only its metadata: a chunk's data is
// most of a megabyte.
func (s *Store) exists(ctx context.Context, namespace, name string) (bool, error) {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	err := s.reader().Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, m)
	if apierrors.IsNotFound(err) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("reading Secret %s/%s: %w", namespace, name, err)
	}
	return true, nil
}

// deleteSecret deletes a Secret by name; an absent one is no error.
func (s *Store) deleteSecret(ctx context.Context, namespace, name string) error {
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := s.Client.Delete(ctx, sec); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Secret %s/%s: %w", namespace, name, err)
	}
	return nil
}

// Stored describes what the cluster keeps of one retained revision's bundle.
type Stored struct {
	// Secret is the name of the entry's first Secret, in the Blueprint's namespace.
	Secret string `json:"secret"`
	// Chunks is how many Secrets the entry spans.
	Chunks int `json:"chunks"`
	// Bytes is the size of the compressed payload, all chunks together.
	Bytes int `json:"bytes"`
}

// Stat says what the cluster keeps of a bundle, or nil when it keeps nothing (the
// revision was pruned, or stored before revisions were). It reads the Secrets without
// checking the payload; Load checks it.
func (s *Store) Stat(ctx context.Context, namespace, blueprint, digest string) (*Stored, error) {
	if !catalog.ValidDigest(digest) {
		return nil, fmt.Errorf("invalid bundle digest %q", digest)
	}
	get := s.get(ctx, namespace)
	base := SecretName(blueprint, digest)
	first, err := get(base)
	if apierrors.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", namespace, base, err)
	}
	if first.Type != SecretType || first.Annotations[AnnotationBundleDigest] != digest {
		return nil, nil
	}
	st := &Stored{Secret: base, Chunks: 1, Bytes: len(first.Data[dataKey])}
	if c, err := strconv.Atoi(first.Annotations[AnnotationChunks]); err == nil && c > 1 && c <= maxChunks {
		st.Chunks = c
	}
	for i := 1; i < st.Chunks; i++ {
		sec, err := get(chunkName(base, i))
		if err != nil {
			return nil, fmt.Errorf("reading Secret %s/%s: %w", namespace, chunkName(base, i), err)
		}
		st.Bytes += len(sec.Data[dataKey])
	}
	return st, nil
}
