package csv

import (
	"reflect"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

func TestWaves(t *testing.T) {
	other := func(kind string) client.Object {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind(kind)
		return u
	}
	typed := func(o client.Object, kind string) client.Object {
		o.GetObjectKind().SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind(kind))
		return o
	}
	tests := []struct {
		name string
		objs []client.Object
		want [][]int
	}{
		{name: "nothing", objs: nil, want: nil},
		{
			name: "the sample: identities and roles, then bindings and the OperatorCondition, then the Deployment",
			objs: []client.Object{
				typed(&corev1.ServiceAccount{}, "ServiceAccount"), // 0
				typed(&rbacv1.Role{}, "Role"),                     // 1
				typed(&rbacv1.RoleBinding{}, "RoleBinding"),       // 2
				typed(&rbacv1.ClusterRole{}, "ClusterRole"),       // 3
				typed(&rbacv1.ClusterRole{}, "ClusterRole"),       // 4
				typed(&rbacv1.ClusterRoleBinding{}, "ClusterRoleBinding"),
				typed(&rbacv1.ClusterRoleBinding{}, "ClusterRoleBinding"),
				typed(&omv1.OperatorCondition{}, "OperatorCondition"),
				typed(&appsv1.Deployment{}, "Deployment"), // 8
			},
			want: [][]int{{0, 1, 3, 4}, {2, 5, 6, 7}, {8}},
		},
		{
			name: "webhooks: certificates and Services before the Deployments, configurations after",
			objs: []client.Object{
				typed(&corev1.ServiceAccount{}, "ServiceAccount"),
				other("ConfigMap"),
				typed(&corev1.Secret{}, "Secret"),
				typed(&corev1.Service{}, "Service"),
				typed(&appsv1.Deployment{}, "Deployment"),
				typed(&appsv1.Deployment{}, "Deployment"),
				typed(&admissionregistrationv1.ValidatingWebhookConfiguration{}, "ValidatingWebhookConfiguration"),
				typed(&admissionregistrationv1.MutatingWebhookConfiguration{}, "MutatingWebhookConfiguration"),
				other("APIService"),
			},
			want: [][]int{{0}, {1, 2, 3}, {4, 5}, {6, 7, 8}},
		},
		{
			name: "a bundle's own RBAC among its other manifests goes by its kind",
			objs: []client.Object{other("RoleBinding"), other("Role"), other("ServiceAccount")},
			want: [][]int{{1, 2}, {0}},
		},
		{
			name: "a typed object without its kind set goes by its Go type",
			objs: []client.Object{&appsv1.Deployment{}, &rbacv1.ClusterRole{}, &rbacv1.RoleBinding{}},
			want: [][]int{{1}, {2}, {0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := waves(tt.objs); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("waves = %v, want %v", got, tt.want)
			}
		})
	}
}
