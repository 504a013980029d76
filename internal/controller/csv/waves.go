package csv

import (
	"context"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-manager/operator-manager/internal/kubeapply"
)

// An installation's objects are applied in waves: one wave after another, the objects of
// a wave at once. In one sequence, a rollback by hand of the sample operator waited 35 to
// 70 ms for its eight objects before the Deployment, a round trip each; in waves it waits
// for two round trips.
//
// The waves keep what the order was for:
//   - identities and the roles first: the API server refuses a binding to a role that
//     does not exist yet unless the binder may bind any role, which an installation's
//     own identity need not;
//   - the bindings and everything else the pods use (OperatorCondition, Secrets,
//     Services, the bundle's other manifests) next: a token Secret finds its
//     ServiceAccount there;
//   - the Deployments once their identities, rights and mounts exist;
//   - the webhook configurations and APIServices last, registered once their server is
//     being rolled out (before, the API server would call a server that is not there).
const (
	waveIdentities = iota
	waveBeforeDeployments
	waveDeployments
	waveRegistrations
)

// applyParallelism bounds the writes of one CSV in flight at once (a wave's applies, an
// uninstall's deletes): an
// installation with many target namespaces renders a Role and RoleBinding in each, and
// the workers of the controller share the client's rate limit.
const applyParallelism = 8

// waveOf says in which wave an object of kind is applied.
func waveOf(kind string) int {
	switch kind {
	case "ServiceAccount", "Role", "ClusterRole":
		return waveIdentities
	case "Deployment":
		return waveDeployments
	case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "APIService":
		return waveRegistrations
	}
	return waveBeforeDeployments
}

// kindOf is an object's kind: its TypeMeta's (render sets it on every object), or its
// Go type's for a typed object without one.
func kindOf(obj client.Object) string {
	if kind := obj.GetObjectKind().GroupVersionKind().Kind; kind != "" {
		return kind
	}
	switch obj.(type) {
	case *corev1.ServiceAccount:
		return "ServiceAccount"
	case *rbacv1.Role:
		return "Role"
	case *rbacv1.ClusterRole:
		return "ClusterRole"
	case *appsv1.Deployment:
		return "Deployment"
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		return "ValidatingWebhookConfiguration"
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		return "MutatingWebhookConfiguration"
	case *apiregistrationv1.APIService:
		return "APIService"
	}
	return ""
}

// waves groups the indexes of objs (in apply order) by wave, each wave in apply order;
// empty waves are left out.
func waves(objs []client.Object) [][]int {
	var byWave [waveRegistrations + 1][]int
	for i, obj := range objs {
		w := waveOf(kindOf(obj))
		byWave[w] = append(byWave[w], i)
	}
	var out [][]int
	for _, w := range byWave {
		if len(w) > 0 {
			out = append(out, w)
		}
	}
	return out
}

// appliedObject is the outcome of one object's apply.
type appliedObject struct {
	obj *unstructured.Unstructured
	err error
}

// applyWave applies the objects of one wave at once (at most applyParallelism in flight)
// and returns each one's outcome, by the wave's order.
func applyWave(ctx context.Context, cl client.Client, objs []client.Object, wave []int) []appliedObject {
	out := make([]appliedObject, len(wave))
	inParallel(len(wave), func(i int) {
		out[i].obj, out[i].err = kubeapply.ApplyAndGet(ctx, cl, objs[wave[i]])
	})
	return out
}

// inParallel runs f(0) to f(n-1), at most applyParallelism at once, and returns when all
// have; one alone runs on the caller's goroutine.
func inParallel(n int, f func(i int)) {
	if n == 1 {
		f(0)
		return
	}
	slots := make(chan struct{}, applyParallelism)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			f(i)
		}()
	}
	wg.Wait()
}
