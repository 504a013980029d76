package revisionstore

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/operator-manager/operator-manager/internal/render"
)

// SecretType marks a Secret as one chunk of a stored bundle. The version is that of the
// stored format (gzip-compressed JSON of storedBundle); a new format gets a new type.
const SecretType = "operator-manager.domain/bundle.v1"

// Labels on every chunk Secret, for people and scripts (`kubectl get secrets -l`); the
// manager itself never selects by them, it addresses chunks by name.
const (
	LabelBlueprint    = "operator-manager.domain/blueprint"
	LabelBundleDigest = "operator-manager.domain/bundle-digest"
)

// Annotations on the chunk Secrets. The first Secret describes the whole entry, so that a
// reader needs no list to find the rest.
const (
	// AnnotationBlueprint is the Blueprint's full name; the label may be shortened.
	AnnotationBlueprint = "operator-manager.domain/blueprint"
	// AnnotationBundleDigest is the bundle's content digest ("sha256:<hex>"), on every chunk.
	AnnotationBundleDigest = "operator-manager.domain/bundle-digest"
	// AnnotationChunks, on the first Secret, is how many chunk Secrets the entry has.
	AnnotationChunks = "operator-manager.domain/bundle-chunks"
	// AnnotationPayloadDigest, on the first Secret, is the sha256 of the whole compressed
	// payload, the chunks' data concatenated in order.
	AnnotationPayloadDigest = "operator-manager.domain/bundle-payload-digest"
	// AnnotationChunkDigests, on the first Secret, lists each chunk's sha256 in order,
	// comma-separated, so that a damaged chunk is named, not just detected.
	AnnotationChunkDigests = "operator-manager.domain/bundle-chunk-digests"
	// AnnotationChunk is a chunk Secret's index in its entry (0 for the first).
	AnnotationChunk = "operator-manager.domain/bundle-chunk"
)

// dataKey is the key of a chunk's bytes in its Secret's data.
const dataKey = "bundle"

const (
	// ChunkSize is the most payload one Secret holds: Kubernetes refuses Secrets whose
	// data exceeds 1 MiB, and the first Secret's annotations need room too.
	ChunkSize = 768 << 10
	// maxChunks bounds an entry (192 MiB compressed), so that a damaged chunk count cannot
	// make Load or Delete issue an unbounded number of requests.
	maxChunks = 256
	// maxDecoded bounds the decompressed JSON, so that a damaged entry cannot exhaust memory.
	maxDecoded = 512 << 20
)

const (
	namePrefix = "operator-manager.bundle.v1."
	digestPart = 16 // hex characters of the digest in a name
	// maxBlueprintPart leaves room, in the 253 characters of a DNS subdomain, for the
	// prefix, ".<16 hex>" and the largest chunk suffix (".255").
	maxBlueprintPart = 253 - len(namePrefix) - 1 - digestPart - 4
)

// SecretName is the name of an entry's first Secret:
// "operator-manager.bundle.v1.<blueprint>.<first 16 hex of the digest>". Chunk i > 0 is
// "<first>.<i>". digest must be valid (catalog.ValidDigest).
func SecretName(blueprint, digest string) string {
	return namePrefix + blueprintPart(blueprint) + "." + digestHex(digest)[:digestPart]
}

func chunkName(base string, i int) string {
	if i == 0 {
		return base
	}
	return base + "." + strconv.Itoa(i)
}

// blueprintPart fits a Blueprint name (itself a DNS subdomain of up to 253 characters)
// into a Secret name: a long one is cut and suffixed with a hash of the whole, so two
// long names that share a beginning still get different Secrets.
func blueprintPart(name string) string {
	if len(name) <= maxBlueprintPart {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	// A cut ending in '.' or '-' followed by "-<hash>" would start a DNS label with '-'.
	cut := strings.TrimRight(name[:maxBlueprintPart-11], ".-")
	return cut + "-" + hex.EncodeToString(sum[:])[:10]
}

func digestHex(digest string) string { return strings.TrimPrefix(digest, "sha256:") }

// labels are the labels of every chunk Secret of an entry. The digest's hex is cut to
// the 63 characters of a label value; the annotation holds it whole.
func labels(blueprint, digest string) map[string]string {
	return map[string]string{
		LabelBlueprint:        render.LabelValue(blueprint),
		LabelBundleDigest:     digestHex(digest)[:63],
		render.LabelManagedBy: render.ManagedBy,
	}
}
