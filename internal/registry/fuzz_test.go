package registry

import (
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
)

// FuzzParseDockerConfig: a pull secret's .dockerconfigjson is whatever its author wrote;
// parsing and matching it against a registry gives credentials or an error, never a panic.
func FuzzParseDockerConfig(f *testing.F) {
	f.Add([]byte(`{"auths":{"registry.example:5000":{"auth":"dXNlcjpwYXNz"}}}`), "registry.example:5000/ns/catalog")
	f.Add([]byte(`{"auths":{"https://*.example.com/v1/":{"username":"u","password":"p"}}}`), "quay.example.com/a/b")
	f.Add([]byte(`{"registry.example":{"auth":"!!"}}`), "registry.example/x")
	f.Add([]byte(`{"auths":{"":{}}}`), "docker.io/library/x")
	f.Fuzz(func(t *testing.T, config []byte, ref string) {
		kc, err := ParseDockerConfig(config)
		if err != nil {
			return
		}
		r, err := name.ParseReference(ref)
		if err != nil {
			return
		}
		_, _ = kc.Resolve(r.Context())
	})
}
