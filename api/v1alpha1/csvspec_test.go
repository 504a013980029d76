package v1alpha1

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

func TestCSVSpecDecodesLeniently(t *testing.T) {
	cases := []struct {
		name, spec, wantErr string
	}{
		{"valid", `{"version":"1.2.3","displayName":"X","install":{"strategy":"deployment","spec":{"deployments":[]}}}`, ""},
		{"version not semver", `{"displayName":"X","version":"banana"}`, "spec.version: "},
		{"deployments not a list", `{"install":{"strategy":"deployment","spec":{"deployments":"garbage"}}}`, "spec.install.spec.deployments: cannot decode a JSON string"},
		{"keywords not a list", `{"keywords":{"a":1},"version":"1.0.0"}`, "spec.keywords: cannot decode a JSON object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := `{"apiVersion":"operators.coreos.com.operator-manager.domain/v1alpha1","kind":"ClusterServiceVersion","metadata":{"name":"x"},"spec":` + tc.spec + `}`
			csv := &ClusterServiceVersion{}
			if err := json.Unmarshal([]byte(doc), csv); err != nil {
				t.Fatalf("decoding failed for every CSV, not just this one: %v", err)
			}
			if tc.wantErr == "" {
				if csv.Spec.DecodeError != "" || csv.Spec.Version.String() != "1.2.3" {
					t.Fatalf("valid spec: error %q, version %s", csv.Spec.DecodeError, csv.Spec.Version.String())
				}
			} else if !strings.Contains(csv.Spec.DecodeError, tc.wantErr) {
				t.Fatalf("DecodeError = %q, want it to name %q", csv.Spec.DecodeError, tc.wantErr)
			}
			// Written back as it was read, also through the unstructured converter the
			// controllers' clients use, and through a deep copy.
			out, err := json.Marshal(csv.DeepCopy().Spec)
			if err != nil {
				t.Fatal(err)
			}
			var got, want any
			_ = json.Unmarshal(out, &got)
			_ = json.Unmarshal([]byte(tc.spec), &want)
			if tc.wantErr != "" && !jsonEqual(got, want) {
				t.Fatalf("spec written back as %s, want %s", out, tc.spec)
			}
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(csv)
			if err != nil {
				t.Fatal(err)
			}
			back := &ClusterServiceVersion{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, back); err != nil {
				t.Fatalf("from unstructured: %v", err)
			}
			if (back.Spec.DecodeError == "") != (tc.wantErr == "") {
				t.Fatalf("through unstructured: DecodeError %q", back.Spec.DecodeError)
			}
		})
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
