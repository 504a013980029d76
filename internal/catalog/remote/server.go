// Package remote serves a loaded catalog over HTTP and fetches bundles from such a server
// into a local cache keyed by content digest, so that a bundle once fetched (the version a
// rollback returns to) is available without the network.
//
// The protocol is two resources:
//
//	GET /index.json          the index: catalog digest, packages with channels, bundles
//	                         with their digests. ETag is the catalog digest.
//	GET /bundles/<digest>    an uncompressed tar of the bundle's files. ETag is the digest.
//
// Both honour If-None-Match with 304 Not Modified. Client.Catalog turns a fetched index
// into a catalog.Catalog whose bundle files come through the client's cache.
package remote

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/operator-manager/operator-manager/internal/catalog"
)

// Index is the body of GET /index.json.
type Index struct {
	Digest   string             `json:"digest"`
	Packages []*catalog.Package `json:"packages"`
	Bundles  []*catalog.Bundle  `json:"bundles"`
	// Rejections are what the server could not load from its directory, for people
	// (`catalog validate --url`). They are not part of Digest, so not of the ETag: a
	// conditional request does not see a change in them alone.
	Rejections []catalog.Rejection `json:"rejections,omitempty"`
}

// Handler serves cat. The index is encoded once; bundles are read from the catalog
// directory per request and checked against their digests, so a catalog changed on disk
// is reported instead of served wrong.
func Handler(cat *catalog.Catalog) http.Handler {
	index, err := json.Marshal(Index{Digest: cat.Digest, Packages: cat.Packages(), Bundles: cat.Bundles(), Rejections: cat.Rejections})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /index.json", func(w http.ResponseWriter, r *http.Request) {
		if err != nil {
			http.Error(w, "encoding the catalog index: "+err.Error(), http.StatusInternalServerError)
			return
		}
		serve(w, r, cat.Digest, "application/json", index)
	})
	mux.HandleFunc("GET /bundles/{digest}", func(w http.ResponseWriter, r *http.Request) {
		digest := r.PathValue("digest")
		// The digest is checked before anything is looked up with it, so a request can
		// only ever name a bundle of the index, never a path.
		if !catalog.ValidDigest(digest) {
			http.Error(w, "invalid digest: want sha256:<64 hex digits>", http.StatusBadRequest)
			return
		}
		b := cat.BundleByDigest(digest)
		if b == nil {
			http.Error(w, "no bundle with digest "+digest, http.StatusNotFound)
			return
		}
		if etagMatch(r, digest) {
			w.Header().Set("ETag", quote(digest))
			w.WriteHeader(http.StatusNotModified)
			return
		}
		files, err := cat.Files(b)
		if err != nil {
			status := http.StatusInternalServerError
			if errors.Is(err, catalog.ErrDigestMismatch) {
				status = http.StatusServiceUnavailable // the catalog must be reloaded
			}
			http.Error(w, err.Error(), status)
			return
		}
		var buf bytes.Buffer
		if err := writeArchive(&buf, files); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		serve(w, r, digest, "application/x-tar", buf.Bytes())
	})
	return mux
}

// serve writes body with an ETag, or 304 when the client already has it.
func serve(w http.ResponseWriter, r *http.Request, etag, contentType string, body []byte) {
	w.Header().Set("ETag", quote(etag))
	if etagMatch(r, etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", contentType)
	_, _ = w.Write(body)
}

func quote(etag string) string { return `"` + etag + `"` }

// etagMatch implements If-None-Match for strong ETags: a list of quoted tags or "*".
func etagMatch(r *http.Request, etag string) bool {
	for _, v := range r.Header.Values("If-None-Match") {
		for _, t := range strings.Split(v, ",") {
			t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
			if t == "*" || t == quote(etag) {
				return true
			}
		}
	}
	return false
}
