package revisionstore

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/operator-manager/operator-manager/internal/catalog"
)

// storedBundle is the JSON of an entry. It has its own field names rather than
// catalog.File's, so that renaming a Go field can never make stored revisions unreadable.
type storedBundle struct {
	Digest string       `json:"digest"`
	Files  []storedFile `json:"files"`
}

type storedFile struct {
	Name string `json:"name"`
	Data []byte `json:"data"`
}

// gzipWriters are reused: a gzip writer allocates about a MiB of compressor state, which
// was most of the garbage storing a bundle made. The fastest level: each installation
// stores its bundle once, while a fleet of them is being installed and the CPU is what
// limits it. Over the community catalog's bundles it is 2.5 times as fast as gzip's
// default level for a fifth more bytes (BENCHMARKS.md); readers do not care which level
// wrote it.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed) // errors only on an unknown level
	return zw
}}

// encode returns the compressed payload of a bundle.
func encode(digest string, files []catalog.File) ([]byte, error) {
	raw, err := marshal(digest, files)
	if err != nil {
		return nil, fmt.Errorf("encoding bundle %s: %w", digest, err)
	}
	// Never write what decode would refuse to read.
	if len(raw) > maxDecoded {
		return nil, fmt.Errorf("bundle %s is too large to store: %d bytes of JSON, at most %d", digest, len(raw), maxDecoded)
	}
	var buf bytes.Buffer
	buf.Grow(len(raw) / 3)
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(&buf)
	if _, err := zw.Write(raw); err != nil {
		return nil, fmt.Errorf("compressing bundle %s: %w", digest, err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compressing bundle %s: %w", digest, err)
	}
	return buf.Bytes(), nil
}

// marshal is the JSON of an entry, before compression.
func marshal(digest string, files []catalog.File) ([]byte, error) {
	sb := storedBundle{Digest: digest, Files: make([]storedFile, len(files))}
	for i, f := range files {
		sb.Files[i] = storedFile{Name: f.Name, Data: f.Data}
	}
	return json.Marshal(sb)
}

// decode returns the files of a compressed payload, checked against digest: both the
// digest the entry claims and the digest of the files themselves.
func decode(digest string, payload []byte) ([]catalog.File, error) {
	zr, err := gzip.NewReader(bytes.NewReader(payload))
	if err != nil {
		return nil, fmt.Errorf("decompressing: %w", err)
	}
	// Reading to the end makes gzip check its CRC and length.
	raw, err := io.ReadAll(io.LimitReader(zr, maxDecoded+1))
	if err != nil {
		return nil, fmt.Errorf("decompressing: %w", err)
	}
	if len(raw) > maxDecoded {
		return nil, fmt.Errorf("decompressed content exceeds %d bytes", maxDecoded)
	}
	var sb storedBundle
	if err := json.Unmarshal(raw, &sb); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	if sb.Digest != digest {
		return nil, fmt.Errorf("it holds bundle %s", sb.Digest)
	}
	files := make([]catalog.File, len(sb.Files))
	for i, f := range sb.Files {
		files[i] = catalog.File{Name: f.Name, Data: f.Data}
	}
	if err := catalog.VerifyFiles(files, digest); err != nil {
		return nil, err
	}
	return files, nil
}

// split cuts a payload into chunks of at most size bytes; an empty payload is one chunk.
func split(payload []byte, size int) [][]byte {
	var chunks [][]byte
	for len(payload) > size {
		chunks = append(chunks, payload[:size:size])
		payload = payload[size:]
	}
	return append(chunks, payload)
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
