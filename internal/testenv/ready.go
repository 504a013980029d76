package testenv

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func (e *Env) waitServing(ctx context.Context, timeout time.Duration) error {
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return err
	}
	return poll(ctx, timeout, "kube-apiserver /readyz", e, func(ctx context.Context) (bool, error) {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", err
	})
}

// waitFull creates the fake nodes kwok manages and waits until they are Ready and the
// controller manager works (it creates the default service account pods need).
func (e *Env) waitFull(ctx context.Context, nodes int, timeout time.Duration) error {
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return err
	}
	for i := 0; i < nodes; i++ {
		name := fmt.Sprintf("kwok-node-%d", i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
				// Control-plane roles too, as on a one-node kind cluster: real bundles pin their
				// operators to masters (node-healthcheck-operator does).
				Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
					"kubernetes.io/arch": "amd64", "type": "kwok",
					"node-role.kubernetes.io/master": "", "node-role.kubernetes.io/control-plane": ""},
			},
			Status: corev1.NodeStatus{
				Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"),
					corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("500")},
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"),
					corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("500")},
			},
		}
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating fake node %s: %w", name, err)
		}
	}
	if err := poll(ctx, timeout, "fake nodes to be Ready", e, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		ready := 0
		for _, n := range list.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready >= nodes, nil
	}); err != nil {
		return err
	}
	return poll(ctx, timeout, "the default service account (kube-controller-manager)", e, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
}

// servedResources is every group/version/resource the API server's discovery lists now
// (what it could list, when a group fails to answer).
func (e *Env) servedResources() (map[string]bool, error) {
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return nil, err
	}
	_, lists, err := cs.Discovery().ServerGroupsAndResources()
	if len(lists) == 0 && err != nil {
		return nil, err
	}
	served := map[string]bool{}
	for _, l := range lists {
		for _, r := range l.APIResources {
			served[l.GroupVersion+"/"+r.Name] = true
		}
	}
	return served, nil
}

// waitServingAgain waits until discovery lists again every resource in before. A restarted
// API server answers /readyz before it lists every CRD's kinds again; a client whose REST
// mapper asked in that moment, or asks on a miss before the kind is back, found "no
// matches for kind Subscription" in the test after the restart.
func (e *Env) waitServingAgain(ctx context.Context, before map[string]bool, timeout time.Duration) error {
	return poll(ctx, timeout, "kube-apiserver to list every resource it listed before its restart", e, func(ctx context.Context) (bool, error) {
		now, err := e.servedResources()
		if err != nil {
			return false, nil
		}
		for r := range before {
			if !now[r] {
				return false, nil
			}
		}
		return true, nil
	})
}
