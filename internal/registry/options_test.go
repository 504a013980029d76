package registry

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/operator-manager/operator-manager/internal/ociparts"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestDockerConfigMatch: which entry of a docker config answers for which repository.
func TestDockerConfigMatch(t *testing.T) {
	config := `{"auths":{
		"quay.io": {"auth": "` + b64("quay-user:quay-pass") + `"},
		"quay.io/team": {"username": "team-user", "password": "team-pass"},
		"https://index.docker.io/v1/": {"auth": "` + base64.RawStdEncoding.EncodeToString([]byte("hub-user:hub-pass")) + `"},
		"*.example.com": {"auth": "` + b64("glob-user:glob:pass") + `"},
		"registry.example.com:5000": {"auth": "` + b64("exact-user:exact-pass") + `"},
		"http://localhost:5000/": {"identitytoken": "tok"}
	}}`
	kc, err := ParseDockerConfig([]byte(config))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ repo, user, password, token string }{
		{"quay.io/org/bundle", "quay-user", "quay-pass", ""},
		{"quay.io/team/bundle", "team-user", "team-pass", ""},
		{"quay.io/team", "team-user", "team-pass", ""},
		{"quay.io/teammate/bundle", "quay-user", "quay-pass", ""},
		{"docker.io/library/busybox", "hub-user", "hub-pass", ""},
		{"busybox", "hub-user", "hub-pass", ""},
		{"a.example.com/x", "glob-user", "glob:pass", ""},
		{"a.b.example.com/x", "", "", ""},
		{"example.com/x", "", "", ""},
		{"registry.example.com:5000/x", "exact-user", "exact-pass", ""},
		{"registry.example.com/x", "glob-user", "glob:pass", ""},
		{"localhost:5000/x", "", "", "tok"},
		{"ghcr.io/org/x", "", "", ""},
	}
	for _, tc := range cases {
		repo, err := name.NewRepository(tc.repo)
		if err != nil {
			t.Fatal(err)
		}
		a, err := kc.Resolve(repo)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := a.Authorization()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Username != tc.user || cfg.Password != tc.password || cfg.IdentityToken != tc.token {
			t.Errorf("%s: credentials %q/%q/%q; want %q/%q/%q", tc.repo, cfg.Username, cfg.Password, cfg.IdentityToken, tc.user, tc.password, tc.token)
		}
		if tc.user == "" && tc.token == "" && a != authn.Anonymous {
			t.Errorf("%s: want anonymous access", tc.repo)
		}
	}
}

// TestParseDockerConfig: what is read, what is refused, and that an error shows no secret.
func TestParseDockerConfig(t *testing.T) {
	cases := []struct {
		name, config, wantErr string
		entries               int
	}{
		{"dockerconfigjson", `{"auths":{"quay.io":{"auth":"` + b64("u:p") + `"}}}`, "", 1},
		{"legacy dockercfg", `{"quay.io":{"auth":"` + b64("u:p") + `"}}`, "", 1},
		{"empty auths", `{"auths":{}}`, "", 0},
		{"not JSON", `auths: {}`, "not JSON", 0},
		{"auth not base64", `{"auths":{"quay.io":{"auth":"%%%s3cret"}}}`, `entry "quay.io": auth is not base64`, 0},
		{"auth without colon", `{"auths":{"quay.io":{"auth":"` + b64("s3cret") + `"}}}`, `is not base64 of "user:password"`, 0},
		{"no registry", `{"auths":{"https://":{"auth":"` + b64("u:p") + `"}}}`, "names no registry", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kc, err := ParseDockerConfig([]byte(tc.config))
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error = %v; want %q", err, tc.wantErr)
				}
				if err != nil && strings.Contains(err.Error(), "s3cret") {
					t.Errorf("the error shows the secret: %v", err)
				}
			case err != nil:
				t.Errorf("error = %v", err)
			case len(kc.entries) != tc.entries:
				t.Errorf("%d entries; want %d", len(kc.entries), tc.entries)
			}
		})
	}
	if _, err := (Options{DockerConfig: []byte("{")}).RemoteOptions(context.Background()); err == nil {
		t.Error("RemoteOptions accepted a broken docker config")
	}
}

func TestHostMatches(t *testing.T) {
	cases := []struct {
		pattern, host string
		want          bool
	}{
		{"quay.io", "quay.io", true},
		{"quay.io", "quay.io:443", false},
		{"*.example.com", "a.example.com", true},
		{"*.example.com", "example.com", false},
		{"*.example.com", "a.b.example.com", false},
		{"*.*.example.com", "a.b.example.com", true},
		{"*.example.com:5000", "a.example.com:5000", true},
		{"*.example.com:5000", "a.example.com", false},
		{"reg-*.example.com", "reg-eu.example.com", true},
	}
	for _, tc := range cases {
		if got := hostMatches(tc.pattern, tc.host); got != tc.want {
			t.Errorf("hostMatches(%q, %q) = %t; want %t", tc.pattern, tc.host, got, tc.want)
		}
	}
}

func TestPickImage(t *testing.T) {
	h := func(c string) v1.Hash { return v1.Hash{Algorithm: "sha256", Hex: strings.Repeat(c, 64)} }
	img := func(c, platform string) v1.Descriptor {
		d := v1.Descriptor{MediaType: types.OCIManifestSchema1, Digest: h(c)}
		if platform != "" {
			d.Platform, _ = v1.ParsePlatform(platform)
		}
		return d
	}
	cases := []struct {
		name    string
		list    []v1.Descriptor
		want    string
		wantErr string
	}{
		{"amd64 among others", []v1.Descriptor{img("a", "linux/arm64"), img("b", "linux/amd64"), img("c", "linux/s390x")}, "b", ""},
		{"amd64 variant", []v1.Descriptor{img("a", "linux/arm/v7"), img("b", "linux/amd64/v2")}, "b", ""},
		{"the only image", []v1.Descriptor{img("a", "linux/arm64")}, "a", ""},
		{"the only image without platform", []v1.Descriptor{img("a", "")}, "a", ""},
		{"attestations are not images to choose", []v1.Descriptor{img("a", "linux/arm64"), img("b", "unknown/unknown")}, "a", ""},
		{"nested index", []v1.Descriptor{{MediaType: types.OCIImageIndex, Digest: h("a")}}, "", "lists no image"},
		{"ambiguous", []v1.Descriptor{img("a", "linux/arm64"), img("b", "linux/ppc64le")}, "", "no linux/amd64 image and 2 others (linux/arm64, linux/ppc64le)"},
		{"empty", nil, "", "lists no image"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pickImage(&v1.IndexManifest{Manifests: tc.list})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error = %v; want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != h(tc.want) {
				t.Errorf("pickImage = %s, %v; want %s", got, err, h(tc.want))
			}
		})
	}
}

// TestExplain: errors name the reference and say why in words.
func TestExplain(t *testing.T) {
	ref := "quay.io/org/bundle@sha256:" + strings.Repeat("a", 64)
	cases := []struct {
		name     string
		err      error
		want     string
		mismatch bool
	}{
		{"unauthorized", &transport.Error{StatusCode: 401}, "unauthorized: the registry quay.io", false},
		{"denied code", &transport.Error{StatusCode: 400, Errors: []transport.Diagnostic{{Code: transport.DeniedErrorCode}}}, "forbidden", false},
		{"not found", &transport.Error{StatusCode: 404}, "not found", false},
		{"other status", &transport.Error{StatusCode: 502}, "answered 502 Bad Gateway", false},
		{"timeout", fmt.Errorf("get: %w", context.DeadlineExceeded), "timed out", false},
		{"manifest digest", errors.New(`manifest digest: "sha256:b" does not match requested digest: "sha256:a" for "x"`), "registry served other content", true},
		{"blob checksum", errors.New(`error verifying sha256 checksum after reading 12 bytes; got "sha256:b", want "sha256:a"`), "registry served other content", true},
		{"verified by ociparts", fmt.Errorf("%w: layer 0", ociparts.ErrDigestMismatch), "content does not match its digest", true},
		{"plain http", errors.New("http: server gave HTTP response to HTTPS client"), "speaks plain HTTP", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := explain("pulling", ref, tc.err)
			if !strings.Contains(err.Error(), "pulling "+ref) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("explain = %v; want the reference and %q", err, tc.want)
			}
			if errors.Is(err, ociparts.ErrDigestMismatch) != tc.mismatch {
				t.Errorf("explain = %v; wraps ErrDigestMismatch: %t, want %t", err, !tc.mismatch, tc.mismatch)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("explain = %v does not wrap the cause", err)
			}
		})
	}
}
