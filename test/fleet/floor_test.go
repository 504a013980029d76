package fleet

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-manager/operator-manager/internal/health"
	"github.com/operator-manager/operator-manager/internal/kubeapply"
	"github.com/operator-manager/operator-manager/internal/scheme"
)

// floor is the unavoidable work of an installation: server-side apply the objects the
// manager would make (CRDs first), with no client-side rate limit, and wait for the
// Deployments to be available, watching them through one informer. It decides nothing,
// records nothing, checks nothing: what is left of the manager's time beyond this is its
// own cost.
type floor struct {
	c      client.Client
	deploy appslisters.DeploymentLister
	stop   chan struct{}
}

func newFloor(cfg *rest.Config) (*floor, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = -1, 0 // no client-side limit: the floor is what the server allows
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	f := &floor{c: c, stop: make(chan struct{})}
	factory := informers.NewSharedInformerFactory(cs, 0)
	f.deploy = factory.Apps().V1().Deployments().Lister()
	factory.Start(f.stop)
	factory.WaitForCacheSync(f.stop)
	return f, nil
}

func (f *floor) close() { close(f.stop) }

// install creates the namespace, applies the item's CRDs and objects and waits for its
// Deployments.
func (f *floor) install(ctx context.Context, it *item) error {
	if err := f.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: it.Namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return f.apply(ctx, it)
}

// apply applies the item's CRDs and objects and waits for its Deployments: an install, or
// an upgrade or rollback when another version of it runs.
func (f *floor) apply(ctx context.Context, it *item) error {
	applied := map[string]int64{}
	for _, objs := range [][]*unstructured.Unstructured{it.CRDs, it.Objects} {
		for _, o := range objs {
			got, err := applyRetrying(ctx, f.c, o.DeepCopy())
			if err != nil {
				return fmt.Errorf("%s: %w", it.Package, err)
			}
			if got.GetKind() == "Deployment" {
				applied[got.GetName()] = got.GetGeneration()
			}
		}
	}
	return f.waitApplied(ctx, it.Namespace, it.Deployments, applied)
}

// applyRetrying applies o, retrying while its kind is not served yet (a custom resource
// of a CRD applied a moment before); it returns o as the API server stored it.
func applyRetrying(ctx context.Context, c client.Client, o *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		got, err := kubeapply.ApplyAndGet(ctx, c, o)
		if err == nil || time.Now().After(deadline) || !(meta.IsNoMatchError(err) || apierrors.IsNotFound(err)) {
			return got, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// wait waits until every named Deployment of ns has rolled out: all replicas updated and
// available, Available true, as the manager's health gate requires.
func (f *floor) wait(ctx context.Context, ns string, names []string) error {
	return f.waitApplied(ctx, ns, names, nil)
}

// waitApplied is wait for Deployments just applied, at the generations the apply
// returned: until the informer has them, its copy is the version before, rolled out
// already (an upgrade or rollback would then be timed at the apply alone).
func (f *floor) waitApplied(ctx context.Context, ns string, names []string, generations map[string]int64) error {
	deadline := time.Now().Add(10 * time.Minute)
	for {
		done := true
		for _, n := range names {
			d, err := f.deploy.Deployments(ns).Get(n)
			if err != nil || d.Generation < generations[n] || !rolledOut(d) {
				done = false
				break
			}
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("deployments %v of %s not available within 10m", names, ns)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// rolledOut is the manager's own health verdict on a Deployment: the same bar.
func rolledOut(d *appsv1.Deployment) bool {
	return health.Deployment(health.Input{Deployment: d}).State == health.Healthy
}

// inParallel runs fn over items with at most limit at once and returns each one's error
// and finishing time.
func inParallel(items []item, limit int, fn func(*item) error) ([]error, []time.Time) {
	errs := make([]error, len(items))
	ends := make([]time.Time, len(items))
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := range items {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = fn(&items[i])
			ends[i] = time.Now()
		}()
	}
	wg.Wait()
	return errs, ends
}
