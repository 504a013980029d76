// Package registry pulls catalogs and bundles from OCI registries, and pushes images to
// them, for catalogs and bundles published as OCI images.
//
// Everything pulled is pinned by digest and checked before use: a tag is resolved to the
// digest it points at now (Resolve), the image is then pulled by that digest, and its
// parts are checked with ociparts.Parts.Verify, from the manifest's sha256 down to every
// layer's diff_id. Content that does not match its digest is an error wrapping
// ociparts.ErrDigestMismatch, whatever part of the chain it was found in.
//
// A catalog image's File-Based Catalog files are unpacked into a directory named by the
// image digest (PullCatalog), which is reused without a pull; bundle images are kept in an
// OCI image layout (Bundles), read back and checked again on each use.
//
// The package is a library: it logs nothing, and every error names the reference it is
// about and says why in words a person can act on (refused credentials, not found, a
// timeout, an untrusted certificate).
package registry

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Options say how to reach registries. The zero value pulls anonymously over HTTPS,
// trusting the system's certificate authorities.
type Options struct {
	// Insecure allows plain HTTP and does not verify TLS certificates. Registries on a
	// loopback address (localhost, 127.0.0.1, ::1) are reached over plain HTTP without
	// it, as go-containerregistry does for every client.
	Insecure bool
	// CABundle is PEM: certificate authorities trusted in addition to the system's.
	CABundle []byte
	// DockerConfig is the content of a kubernetes.io/dockerconfigjson Secret's
	// .dockerconfigjson ({"auths": {"registry": {"auth": base64("user:pass")}}}), or of a
	// legacy kubernetes.io/dockercfg Secret's .dockercfg (the same map without "auths").
	// Nil means anonymous.
	DockerConfig []byte
	// DefaultKeychain also uses the credentials of the person running the CLI:
	// ~/.docker/config.json and its credential helpers (authn.DefaultKeychain), after
	// DockerConfig. The manager leaves it off: it uses only the Secrets it is given.
	DefaultKeychain bool
	// Timeout bounds each operation: a resolve, one image pulled or pushed. Zero means
	// DefaultTimeout, or DefaultImageTimeout for catalog images and pushes.
	Timeout time.Duration
	// UserAgent is sent with every request; empty means go-containerregistry's.
	UserAgent string
}

const (
	// DefaultTimeout bounds a resolve and a bundle pull when Options.Timeout is zero.
	DefaultTimeout = time.Minute
	// DefaultImageTimeout bounds a catalog image pull and a push when Options.Timeout is
	// zero: catalog images are tens of megabytes.
	DefaultImageTimeout = 10 * time.Minute
)

func (o Options) timeout(def time.Duration) time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return def
}

// NameOptions are the options to parse references with: name.Insecure when Insecure, so
// that a registry reached by plain HTTP is allowed for any host.
func (o Options) NameOptions() []name.Option {
	if o.Insecure {
		return []name.Option{name.Insecure}
	}
	return nil
}

// RemoteOptions builds the go-containerregistry options for one operation bounded by ctx:
// a transport trusting CABundle (or verifying nothing when Insecure), the credentials of
// DockerConfig (and of the default keychain when DefaultKeychain), and UserAgent. It fails
// when CABundle holds no certificate or DockerConfig cannot be read.
func (o Options) RemoteOptions(ctx context.Context) ([]remote.Option, error) {
	tr, err := o.transport()
	if err != nil {
		return nil, err
	}
	kc, err := o.keychain()
	if err != nil {
		return nil, err
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithTransport(tr), remote.WithAuthFromKeychain(kc)}
	if o.UserAgent != "" {
		opts = append(opts, remote.WithUserAgent(o.UserAgent))
	}
	return opts, nil
}

// transports holds the transports made for each TLS setting (insecure, CA bundle), so
// that operations with the same settings share connections.
var transports sync.Map

// transport returns go-containerregistry's default transport with the TLS settings of o.
func (o Options) transport() (http.RoundTripper, error) {
	if !o.Insecure && len(o.CABundle) == 0 {
		return remote.DefaultTransport, nil
	}
	key := fmt.Sprintf("%t/%x", o.Insecure, sha256.Sum256(o.CABundle))
	if tr, ok := transports.Load(key); ok {
		return tr.(http.RoundTripper), nil
	}
	tr := remote.DefaultTransport.(*http.Transport).Clone()
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(o.CABundle) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(o.CABundle) {
			return nil, errors.New("the CA bundle holds no PEM certificate")
		}
		cfg.RootCAs = pool
	}
	if o.Insecure {
		cfg.InsecureSkipVerify = true // the person asked for it: --insecure, spec.insecure
	}
	tr.TLSClientConfig = cfg
	actual, _ := transports.LoadOrStore(key, tr)
	return actual.(http.RoundTripper), nil
}

// keychain returns the credentials of DockerConfig, then the default keychain when asked,
// else anonymous access.
func (o Options) keychain() (authn.Keychain, error) {
	var chains []authn.Keychain
	if len(o.DockerConfig) > 0 {
		kc, err := ParseDockerConfig(o.DockerConfig)
		if err != nil {
			return nil, err
		}
		chains = append(chains, kc)
	}
	if o.DefaultKeychain {
		chains = append(chains, authn.DefaultKeychain)
	}
	if len(chains) == 0 {
		return anonymous{}, nil
	}
	return authn.NewMultiKeychain(chains...), nil
}

type anonymous struct{}

func (anonymous) Resolve(authn.Resource) (authn.Authenticator, error) { return authn.Anonymous, nil }

// DockerConfigKeychain holds the credentials of a docker config, by registry.
type DockerConfigKeychain struct{ entries []credential }

// credential is one entry of a docker config's auths map. Its key is a registry host
// (with port), optionally a repository path prefix ("quay.io/org"), optionally with a
// scheme ("https://index.docker.io/v1/"), and its host may hold "*" wildcards in whole
// labels ("*.example.com"), as the kubelet reads image pull secrets.
type credential struct {
	key  string
	host string
	path string
	glob bool
	auth authn.AuthConfig
}

// dockerAuth is one value of the auths map.
type dockerAuth struct {
	Auth          string `json:"auth"`
	Username      string `json:"username"`
	Password      string `json:"password"`
	IdentityToken string `json:"identitytoken"`
	RegistryToken string `json:"registrytoken"`
}

// ParseDockerConfig reads a docker config's auths map. An entry's auth field is
// base64("user:password") and wins over its username and password fields. An error names
// the entry that cannot be read, never a secret.
func ParseDockerConfig(data []byte) (*DockerConfigKeychain, error) {
	var doc struct {
		Auths map[string]dockerAuth `json:"auths"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("the docker config is not JSON: %w", err)
	}
	if doc.Auths == nil {
		// The legacy .dockercfg: the auths map itself.
		if err := json.Unmarshal(data, &doc.Auths); err != nil {
			return nil, errors.New(`the docker config has no "auths" map`)
		}
	}
	kc := &DockerConfigKeychain{}
	for key, a := range doc.Auths {
		host, p, glob, err := parseAuthKey(key)
		if err != nil {
			return nil, fmt.Errorf("the docker config's entry %q: %w", key, err)
		}
		cfg := authn.AuthConfig{Username: a.Username, Password: a.Password, IdentityToken: a.IdentityToken, RegistryToken: a.RegistryToken}
		if a.Auth != "" {
			if cfg.Username, cfg.Password, err = decodeAuth(a.Auth); err != nil {
				return nil, fmt.Errorf("the docker config's entry %q: auth %w", key, err)
			}
		}
		kc.entries = append(kc.entries, credential{key: key, host: host, path: p, glob: glob, auth: cfg})
	}
	// Most specific first: an exact host before a wildcard, a longer path before a shorter
	// one; the key breaks ties so that the choice never depends on map order.
	slices.SortFunc(kc.entries, func(a, b credential) int {
		switch {
		case a.glob != b.glob:
			if a.glob {
				return 1
			}
			return -1
		case len(a.path) != len(b.path):
			return len(b.path) - len(a.path)
		}
		return strings.Compare(a.key, b.key)
	})
	return kc, nil
}

// decodeAuth decodes an auth field: base64 of "user:password", padded or not.
func decodeAuth(s string) (user, password string, err error) {
	s = strings.TrimSpace(s)
	data, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		if data, err = base64.RawStdEncoding.DecodeString(s); err != nil {
			return "", "", errors.New("is not base64")
		}
	}
	user, password, ok := strings.Cut(string(data), ":")
	if !ok {
		return "", "", errors.New(`is not base64 of "user:password"`)
	}
	return user, password, nil
}

// Docker Hub's names: the docker config keys it under its legacy index URL, references
// name it docker.io (go-containerregistry: index.docker.io).
var dockerHub = []string{"index.docker.io", "docker.io", "registry-1.docker.io"}

// parseAuthKey splits a docker config key into host and repository path prefix.
func parseAuthKey(key string) (host, p string, glob bool, err error) {
	k := strings.TrimSpace(key)
	hadScheme := false
	for _, scheme := range []string{"https://", "http://"} {
		if strings.HasPrefix(k, scheme) {
			k, hadScheme = strings.TrimPrefix(k, scheme), true
		}
	}
	host, p, _ = strings.Cut(k, "/")
	p = strings.Trim(path.Clean("/"+p), "/")
	host = strings.ToLower(host)
	if host == "" {
		return "", "", false, errors.New("names no registry")
	}
	// "https://index.docker.io/v1/" names the registry, not a repository "v1".
	if hadScheme && (p == "v1" || p == "v2") || slices.Contains(dockerHub, host) && p == "v1" {
		p = ""
	}
	if slices.Contains(dockerHub, host) {
		host = dockerHub[0]
	}
	return host, p, strings.Contains(host, "*"), nil
}

// Resolve returns the credentials of the most specific entry matching the registry and
// repository of r, or anonymous access.
func (kc *DockerConfigKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	if c := kc.match(r); c != nil {
		return authn.FromConfig(c.auth), nil
	}
	return authn.Anonymous, nil
}

func (kc *DockerConfigKeychain) match(r authn.Resource) *credential {
	host := strings.ToLower(r.RegistryStr())
	if slices.Contains(dockerHub, host) {
		host = dockerHub[0]
	}
	repo := ""
	if rp, ok := r.(name.Repository); ok {
		repo = rp.RepositoryStr()
	}
	for i, c := range kc.entries {
		if !hostMatches(c.host, host) {
			continue
		}
		if c.path == "" || repo == c.path || strings.HasPrefix(repo, c.path+"/") {
			return &kc.entries[i]
		}
	}
	return nil
}

// hostMatches matches a host against an entry's host, where "*" in a label of the entry
// matches any one label ("*.example.com" matches "a.example.com", not "a.b.example.com"
// nor "example.com"); the ports must be equal.
func hostMatches(pattern, host string) bool {
	if !strings.Contains(pattern, "*") {
		return pattern == host
	}
	pHost, pPort, _ := strings.Cut(pattern, ":")
	hHost, hPort, _ := strings.Cut(host, ":")
	if pPort != hPort {
		return false
	}
	pl, hl := strings.Split(pHost, "."), strings.Split(hHost, ".")
	if len(pl) != len(hl) {
		return false
	}
	for i := range pl {
		if ok, _ := path.Match(pl[i], hl[i]); !ok {
			return false
		}
	}
	return true
}
