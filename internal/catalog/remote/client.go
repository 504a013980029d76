package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/operator-manager/operator-manager/internal/atomicfile"
	"github.com/operator-manager/operator-manager/internal/catalog"
)

// Client fetches from a catalog server. Bundles are kept in CacheDir, one
// <sha256-hex>.tar per bundle, checked against the digest when written and when read, so
// Fetch of a bundle fetched before works with the server down.
type Client struct {
	// BaseURL is the server's root, such as "http://catalog.example:8080".
	BaseURL  string
	CacheDir string
	// HTTP is the client used; nil means http.DefaultClient.
	HTTP *http.Client
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

// Index fetches the catalog index. With previous, the request is conditional: when the
// catalog digest is unchanged the server answers 304 and previous is returned as is.
func (c *Client) Index(ctx context.Context, previous *Index) (*Index, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(c.BaseURL, "/")+"/index.json", nil)
	if err != nil {
		return nil, fmt.Errorf("fetching catalog index: %w", err)
	}
	if previous != nil {
		req.Header.Set("If-None-Match", quote(previous.Digest))
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching catalog index: %w", err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotModified && previous != nil:
		return previous, nil
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("fetching catalog index from %s: %s", req.URL, resp.Status)
	}
	var idx Index
	if err := json.NewDecoder(io.LimitReader(resp.Body, MaxArchiveSize)).Decode(&idx); err != nil {
		return nil, fmt.Errorf("decoding catalog index from %s: %w", req.URL, err)
	}
	if !catalog.ValidDigest(idx.Digest) {
		return nil, fmt.Errorf("catalog index from %s has an invalid digest %q", req.URL, idx.Digest)
	}
	return &idx, nil
}

// Fetch returns a bundle's files: from the cache when it holds them intact, else from
// the server, caching them. The digest is checked either way.
func (c *Client) Fetch(ctx context.Context, digest string) ([]catalog.File, error) {
	if !catalog.ValidDigest(digest) {
		return nil, fmt.Errorf("fetching bundle: invalid digest %q", digest)
	}
	file := c.cachePath(digest)
	files, cacheErr := readCached(file, digest)
	if cacheErr == nil {
		return files, nil
	}
	if !errors.Is(cacheErr, os.ErrNotExist) {
		// A damaged entry is dropped so the download below replaces it.
		_ = os.Remove(file)
	}
	data, err := c.download(ctx, digest)
	if err != nil {
		if !errors.Is(cacheErr, os.ErrNotExist) {
			return nil, fmt.Errorf("%w (and the cached copy was unusable: %v)", err, cacheErr)
		}
		return nil, err
	}
	if files, err = verify(data, digest); err != nil {
		return nil, fmt.Errorf("fetching bundle %s from %s: %w", digest, c.BaseURL, err)
	}
	if err := atomicfile.Write(file, data, 0o644); err != nil {
		return nil, fmt.Errorf("caching bundle %s: %w", digest, err)
	}
	return files, nil
}

// Cached reports whether the cache holds an intact copy of the bundle.
func (c *Client) Cached(digest string) bool {
	if !catalog.ValidDigest(digest) {
		return false
	}
	_, err := readCached(c.cachePath(digest), digest)
	return err == nil
}

// CachedFiles returns the files of a cached bundle, checked against digest, without
// fetching anything.
func (c *Client) CachedFiles(digest string) ([]catalog.File, error) {
	if !catalog.ValidDigest(digest) {
		return nil, fmt.Errorf("invalid bundle digest %q", digest)
	}
	return readCached(c.cachePath(digest), digest)
}

// cachePath is only called with a validated digest, so the name is 64 hex digits.
func (c *Client) cachePath(digest string) string {
	return filepath.Join(c.CacheDir, strings.TrimPrefix(digest, "sha256:")+".tar")
}

func (c *Client) download(ctx context.Context, digest string) ([]byte, error) {
	url := strings.TrimSuffix(c.BaseURL, "/") + "/bundles/" + digest
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("fetching bundle %s: %w", digest, err)
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching bundle %s: %w", digest, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("fetching bundle from %s: %s: %s", url, resp.Status, strings.TrimSpace(string(msg)))
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxArchiveSize+1))
	if err != nil {
		return nil, fmt.Errorf("fetching bundle from %s: %w", url, err)
	}
	return data, nil
}

func readCached(file, digest string) ([]catalog.File, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	files, err := verify(data, digest)
	if err != nil {
		return nil, fmt.Errorf("cached bundle %s: %w", file, err)
	}
	return files, nil
}

// verify parses an archive and checks that its files have the expected digest.
func verify(data []byte, digest string) ([]catalog.File, error) {
	files, err := readArchive(data)
	if err != nil {
		return nil, err
	}
	if err := catalog.VerifyFiles(files, digest); err != nil {
		return nil, err
	}
	return files, nil
}

// FetchTimeout bounds one bundle download made for Catalog.Files, whose callers pass no
// context.
const FetchTimeout = 2 * time.Minute

// Catalog builds a catalog from an index this client fetched (catalog.FromIndex): lookups
// work at once, and a bundle's files (Files, Content) come through Fetch, so from the
// cache when it holds them, and otherwise from the server, digest checked either way.
func (c *Client) Catalog(idx *Index) (*catalog.Catalog, error) {
	if idx == nil {
		return nil, errors.New("building the catalog of " + c.BaseURL + ": no index")
	}
	cat, err := catalog.FromIndex(idx.Digest, idx.Packages, idx.Bundles, func(b *catalog.Bundle) ([]catalog.File, error) {
		ctx, cancel := context.WithTimeout(context.Background(), FetchTimeout)
		defer cancel()
		return c.Fetch(ctx, b.Digest)
	})
	if err != nil {
		return nil, fmt.Errorf("catalog index from %s: %w", c.BaseURL, err)
	}
	return cat, nil
}

// Load fetches the index and builds the catalog: what a person inspecting a served
// catalog needs in one call.
func (c *Client) Load(ctx context.Context) (*catalog.Catalog, error) {
	idx, err := c.Index(ctx, nil)
	if err != nil {
		return nil, err
	}
	return c.Catalog(idx)
}
