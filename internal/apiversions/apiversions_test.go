package apiversions

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func object(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestUpgrade(t *testing.T) {
	for _, tc := range []struct {
		name, in    string
		wantVersion string // apiVersion after; empty when refused
		wantChange  string // part of the change line; empty for none
		wantErr     []string
	}{{
		// integrity-shield-operator's head in the community catalog ships this.
		name:        "v1beta1 ClusterRole",
		in:          "{apiVersion: rbac.authorization.k8s.io/v1beta1, kind: ClusterRole, metadata: {name: reader}, rules: [{apiGroups: [''], resources: [pods], verbs: [get]}]}",
		wantVersion: "rbac.authorization.k8s.io/v1",
		wantChange:  `ClusterRole "reader": moved from rbac.authorization.k8s.io/v1beta1, which Kubernetes no longer serves, to rbac.authorization.k8s.io/v1`,
	}, {
		name:        "v1beta1 RoleBinding",
		in:          "{apiVersion: rbac.authorization.k8s.io/v1beta1, kind: RoleBinding, metadata: {name: b}, roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}}",
		wantVersion: "rbac.authorization.k8s.io/v1",
		wantChange:  "RoleBinding",
	}, {
		name:        "v1beta1 PDB with a selector",
		in:          "{apiVersion: policy/v1beta1, kind: PodDisruptionBudget, metadata: {name: p}, spec: {minAvailable: 1, selector: {matchLabels: {app: x}}}}",
		wantVersion: "policy/v1",
		wantChange:  "to policy/v1",
	}, {
		name:    "v1beta1 PDB with an empty selector",
		in:      "{apiVersion: policy/v1beta1, kind: PodDisruptionBudget, metadata: {name: p}, spec: {minAvailable: 1, selector: {}}}",
		wantErr: []string{`PodDisruptionBudget "p" is written for policy/v1beta1`, "cannot be moved to policy/v1", "empty spec.selector"},
	}, {
		name:        "v1beta1 PriorityClass",
		in:          "{apiVersion: scheduling.k8s.io/v1beta1, kind: PriorityClass, metadata: {name: high}, value: 1000}",
		wantVersion: "scheduling.k8s.io/v1",
		wantChange:  "PriorityClass",
	}, {
		name:    "extensions Ingress",
		in:      "{apiVersion: extensions/v1beta1, kind: Ingress, metadata: {name: web}, spec: {backend: {serviceName: web, servicePort: 80}}}",
		wantErr: []string{`Ingress "web" is written for extensions/v1beta1`, "cannot be moved to networking.k8s.io/v1", "serviceName"},
	}, {
		name:    "v1beta1 webhook configuration",
		in:      "{apiVersion: admissionregistration.k8s.io/v1beta1, kind: ValidatingWebhookConfiguration, metadata: {name: v}}",
		wantErr: []string{"ValidatingWebhookConfiguration", "spec.webhookdefinitions"},
	}, {
		name:        "served version untouched",
		in:          "{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {a: b}}",
		wantVersion: "v1",
	}, {
		name:        "custom kind untouched",
		in:          "{apiVersion: monitoring.coreos.com/v1, kind: ServiceMonitor, metadata: {name: m}}",
		wantVersion: "monitoring.coreos.com/v1",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			in := object(t, tc.in)
			before := in.DeepCopy()
			out, change, err := Upgrade(in)
			if !reflect.DeepEqual(in, before) {
				t.Error("the input was modified")
			}
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error; got %s %q", out.GetAPIVersion(), change)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out.GetAPIVersion() != tc.wantVersion {
				t.Errorf("apiVersion %s, want %s", out.GetAPIVersion(), tc.wantVersion)
			}
			if (tc.wantChange == "") != (change == "") || !strings.Contains(change, tc.wantChange) {
				t.Errorf("change %q, want one containing %q", change, tc.wantChange)
			}
			// Everything but the apiVersion is kept.
			out.SetAPIVersion(before.GetAPIVersion())
			if !reflect.DeepEqual(out, before) {
				t.Errorf("more than the apiVersion changed:\n%v\n%v", out, before)
			}
		})
	}
}
