package catalogsource

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPullSecretConfig: both Secret types the kubelet pulls with are read, the current
// key first; a Secret with neither is refused naming it and the keys it lacks.
func TestPullSecretConfig(t *testing.T) {
	meta := metav1.ObjectMeta{Namespace: "ops", Name: "creds"}
	for _, tc := range []struct {
		name    string
		data    map[string][]byte
		want    string
		wantErr string
	}{
		{"dockerconfigjson", map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)}, `{"auths":{}}`, ""},
		{"legacy dockercfg", map[string][]byte{corev1.DockerConfigKey: []byte(`{}`)}, `{}`, ""},
		{"both: the current key wins", map[string][]byte{corev1.DockerConfigKey: []byte(`{}`), corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)}, `{"auths":{}}`, ""},
		{"neither", map[string][]byte{"token": []byte("x")}, "", "Secret ops/creds has neither a .dockerconfigjson key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PullSecretConfig(&corev1.Secret{ObjectMeta: meta, Data: tc.data})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("= %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestMergeDockerConfigs: OLM's spec.secrets join spec.pullSecret; each Secret may be either
// format, and for a registry named twice the first Secret's credentials count.
func TestMergeDockerConfigs(t *testing.T) {
	jsonCfg := []byte(`{"auths":{"quay.io":{"auth":"Zmlyc3Q="},"ghcr.io":{"auth":"Z2g="}}}`)
	legacy := []byte(`{"quay.io":{"auth":"c2Vjb25k"},"registry.local:5000":{"auth":"bG9jYWw="}}`)
	got, err := MergeDockerConfigs([][]byte{jsonCfg, legacy})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"auths":{"ghcr.io":{"auth":"Z2g="},"quay.io":{"auth":"Zmlyc3Q="},"registry.local:5000":{"auth":"bG9jYWw="}}}`
	if string(got) != want {
		t.Errorf("merged = %s\nwant     %s", got, want)
	}
	if one, _ := MergeDockerConfigs([][]byte{legacy}); string(one) != string(legacy) {
		t.Errorf("one Secret's config is passed on as it is, got %s", one)
	}
	if _, err := MergeDockerConfigs([][]byte{jsonCfg, []byte("not json")}); err == nil || !strings.Contains(err.Error(), "pull Secret 2 of 2") {
		t.Errorf("a bad config is named by its place: %v", err)
	}
}
