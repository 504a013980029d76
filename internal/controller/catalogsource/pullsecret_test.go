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
