// Package catalogsource reconciles CatalogSources: it loads each catalog, keeps it in a
// Store for the other controllers, polls it by digest, and reports what it holds.
package catalogsource

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/backoff"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/metrics"
)

// DefaultPollInterval applies when a CatalogSource does not set spec.pollInterval.
const DefaultPollInterval = 10 * time.Minute

// maxRejectedInStatus bounds status.rejected; status.rejectedCount has the full count.
const maxRejectedInStatus = 50

// Reconciler loads CatalogSources.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	Store    *Store
	Clock    clock.PassiveClock
	// AllowedDirs are the directories Directory sources may read (themselves and below),
	// so that whoever may create a CatalogSource cannot make the manager read the rest
	// of its filesystem.
	AllowedDirs []string
	// Load reads a directory catalog; catalog.LoadIfChanged by default.
	Load func(dir string, previous *catalog.Catalog) (*catalog.Catalog, bool, error)
	// DefaultNamespace and DefaultDir are where the default CatalogSource lives and the
	// directory it reads (--catalog): deleted, it is created again (EnsureDefault), as it
	// is at start. Empty DefaultDir: no default catalog is kept.
	DefaultNamespace, DefaultDir string
	// CacheDir is the manager's bundle cache directory (--cache-dir); the bundles of
	// HTTP sources are kept in its RemoteCacheSubdir. Empty means a directory under
	// os.TempDir().
	CacheDir string
	// HTTPClient reaches HTTP sources; nil means a client with a one-minute timeout.
	HTTPClient *http.Client
	// APIReader reads pull secrets from the API server; nil means Client. The manager
	// caches no Secrets.
	APIReader client.Reader
	// Workers is how many CatalogSources load at once (at least one). A load holds its
	// worker until it ends (an HTTP source or a registry may take up to a minute to
	// answer), so a single worker let one slow source hold back every other.
	Workers int
	// MaxRetryDelay caps the backoff of a failed reconcile (zero: backoff.DefaultMaxDelay).
	MaxRetryDelay time.Duration

	remotes httpSources
	images  imageSources
	grpc    grpcPullers
	disk    diskStates
}

func (r *Reconciler) reader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

// +kubebuilder:rbac:groups=operators.coreos.com.operator-manager.domain,resources=catalogsources,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=operators.coreos.com.operator-manager.domain,resources=catalogsources/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Load == nil {
		r.Load = func(dir string, prev *catalog.Catalog) (*catalog.Catalog, bool, error) {
			return catalog.LoadIfChanged(dir, prev, catalog.Options{})
		}
	}
	return ctrl.NewControllerManagedBy(mgr).For(&omv1.CatalogSource{}).Named("catalogsource").
		WithOptions(backoff.Options(r.Workers, r.MaxRetryDelay)).Complete(r)
}

// Reconcile loads one CatalogSource and writes its status once, only when it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	cs := &omv1.CatalogSource{}
	if err := r.Client.Get(ctx, req.NamespacedName, cs); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return ctrl.Result{}, r.keepDefault(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, err
	}
	if !cs.DeletionTimestamp.IsZero() {
		r.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	orig := cs.DeepCopy()
	defer func() {
		setConnectionState(cs, metav1.NewTime(r.Clock.Now()))
		if equality.Semantic.DeepEqual(orig.Status, cs.Status) {
			return
		}
		if err := r.Client.Status().Patch(ctx, cs, client.MergeFrom(orig)); err != nil && retErr == nil {
			retErr = fmt.Errorf("patching status of CatalogSource %s: %w", req, err)
		}
	}()

	poll := pollInterval(&cs.Spec)
	prev := r.Store.Get(req.NamespacedName)
	cat, changed, err := r.load(ctx, req.NamespacedName, cs, prev)
	if err != nil && prev == nil && r.disk.get(req.NamespacedName) == notLooked {
		r.disk.set(req.NamespacedName, lookedAt)
		if kept := r.onDisk(ctx, req.NamespacedName, cs); kept != nil {
			err = &keptOnDisk{cat: kept, err: err}
		}
	}
	if err != nil {
		msg := err.Error()
		var kept *keptOnDisk
		switch {
		case errors.As(err, &kept):
			r.Store.set(req.NamespacedName, kept.cat)
			r.disk.set(req.NamespacedName, keptFromDisk)
			metrics.CatalogBundles.WithLabelValues(req.Namespace, req.Name).Set(float64(len(kept.cat.Bundles())))
			msg += keptMessage(kept.cat)
		case prev != nil && r.disk.get(req.NamespacedName) == keptFromDisk:
			msg += keptMessage(prev) // until a load succeeds, say where the catalog in use came from
		case prev != nil:
			// Keep serving the last good catalog: installs and rollbacks go on.
			msg += "; the previously loaded catalog (digest " + prev.Digest + ") is still used"
		}
		meta.SetStatusCondition(&cs.Status.Conditions, metav1.Condition{
			Type: omv1.ConditionReady, Status: metav1.ConditionFalse, Reason: omv1.ReasonLoadFailed,
			Message: msg, ObservedGeneration: cs.Generation,
		})
		r.Recorder.Eventf(cs, nil, corev1.EventTypeWarning, omv1.ReasonLoadFailed, "Load", "%v", err)
		metrics.CatalogReady.WithLabelValues(req.Namespace, req.Name).Set(0)
		cs.Status.ObservedGeneration = cs.Generation
		// Retry with backoff, but at least by the next poll.
		return ctrl.Result{RequeueAfter: min(poll, time.Minute)}, nil
	}
	r.Store.set(req.NamespacedName, cat)
	r.disk.set(req.NamespacedName, notLooked)
	metrics.CatalogBundles.WithLabelValues(req.Namespace, req.Name).Set(float64(len(cat.Bundles())))
	metrics.CatalogReady.WithLabelValues(req.Namespace, req.Name).Set(1)
	if changed || cs.Status.Digest != cat.Digest {
		log.FromContext(ctx).Info("Loaded catalog", "source", source(cs), "digest", cat.Digest, "packages", len(cat.Packages()),
			"bundles", len(cat.Bundles()), "rejected", len(cat.Rejections))
		if cs.Status.Digest != cat.Digest {
			now := metav1.NewTime(r.Clock.Now())
			cs.Status.LastSync = &now
			r.Recorder.Eventf(cs, nil, corev1.EventTypeNormal, omv1.ReasonLoaded, "Load",
				"Loaded %d packages and %d bundles (%d rejected), digest %s", len(cat.Packages()), len(cat.Bundles()), len(cat.Rejections), cat.Digest)
		}
	}
	setLoadedStatus(&cs.Status, cat)
	meta.SetStatusCondition(&cs.Status.Conditions, metav1.Condition{
		Type: omv1.ConditionReady, Status: metav1.ConditionTrue, Reason: omv1.ReasonLoaded,
		Message:            fmt.Sprintf("%d packages, %d bundles, %d rejected", len(cat.Packages()), len(cat.Bundles()), len(cat.Rejections)),
		ObservedGeneration: cs.Generation,
	})
	cs.Status.ObservedGeneration = cs.Generation
	return ctrl.Result{RequeueAfter: poll}, nil
}

// pollInterval is how often a source is checked: its own interval (DefaultPollInterval
// when it has none), and at least every configMapPollInterval for a ConfigMap, which
// the manager does not watch.
func pollInterval(spec *omv1.CatalogSourceSpec) time.Duration {
	poll := DefaultPollInterval
	if p := spec.Poll(); p != nil && p.Duration > 0 {
		poll = p.Duration
	}
	if spec.Type() == omv1.SourceConfigMap {
		poll = min(poll, configMapPollInterval)
	}
	return poll
}

// setLoadedStatus writes what a loaded catalog holds. It depends only on the catalog, so
// an unchanged catalog writes nothing.
func setLoadedStatus(st *omv1.CatalogSourceStatus, cat *catalog.Catalog) {
	st.Packages = int32(len(cat.Packages()))
	st.Bundles = int32(len(cat.Bundles()))
	st.Digest = cat.Digest
	st.RejectedCount = int32(len(cat.Rejections))
	st.Rejected = nil
	for i, rej := range cat.Rejections {
		if i == maxRejectedInStatus {
			break
		}
		st.Rejected = append(st.Rejected, omv1.RejectedBundle{Path: rej.Path, Reason: rej.Reason})
	}
}

// forget drops what the controller keeps of a CatalogSource that is gone: its catalog,
// its poll state and its metric series.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.Store.delete(key)
	r.forgetHTTP(key)
	r.images.forget(key)
	r.forgetGRPC(key)
	r.forgetConfigMap(key)
	r.disk.set(key, notLooked)
	metrics.CatalogBundles.DeleteLabelValues(key.Namespace, key.Name)
	metrics.CatalogReady.DeleteLabelValues(key.Namespace, key.Name)
}

// source names where a CatalogSource reads from, for logs.
func source(cs *omv1.CatalogSource) string {
	switch cs.Spec.Type() {
	case omv1.SourceHTTP:
		return cs.Spec.URL
	case omv1.SourceImage:
		return cs.Spec.Image
	case omv1.SourceGRPC:
		return cs.Spec.Address
	case omv1.SourceConfigMap:
		return "ConfigMap " + cs.Namespace + "/" + cs.Spec.ConfigMap
	}
	return cs.Spec.Directory
}

func (r *Reconciler) load(ctx context.Context, key types.NamespacedName, cs *omv1.CatalogSource, prev *catalog.Catalog) (*catalog.Catalog, bool, error) {
	if cs.Spec.Type() != omv1.SourceImage {
		r.images.forget(key)
		cs.Status.ResolvedImage = ""
	}
	if cs.Spec.Type() != omv1.SourceGRPC {
		r.forgetGRPC(key)
	}
	if cs.Spec.Type() != omv1.SourceConfigMap {
		r.forgetConfigMap(key)
		cs.Status.ConfigMapReference = nil
	}
	switch cs.Spec.Type() {
	case omv1.SourceConfigMap:
		r.forgetHTTP(key)
		return r.loadConfigMap(ctx, key, cs, prev)
	case omv1.SourceGRPC:
		r.forgetHTTP(key)
		return r.loadGRPC(ctx, key, cs, prev)
	case omv1.SourceImage:
		r.forgetHTTP(key)
		cat, resolved, changed, err := r.loadImage(ctx, key, cs, prev)
		if err == nil {
			cs.Status.ResolvedImage = resolved
		}
		return cat, changed, err
	case omv1.SourceHTTP:
		if cs.Spec.URL == "" {
			return nil, false, errors.New("spec.url is required when spec.sourceType is HTTP")
		}
		return r.loadHTTP(ctx, key, cs.Spec.URL, prev)
	case omv1.SourceDirectory:
		r.forgetHTTP(key)
		dir, err := r.allowedDir(cs.Spec.Directory)
		if err != nil {
			return nil, false, err
		}
		if prev != nil && prev.Root != dir {
			prev = nil
		}
		return r.Load(dir, prev)
	default:
		return nil, false, fmt.Errorf("spec.sourceType %q is not supported by this manager", cs.Spec.SourceType)
	}
}

// allowedDir resolves a Directory source and checks it lies within an allowed directory.
func (r *Reconciler) allowedDir(dir string) (string, error) {
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("spec.directory %q must be an absolute path on the manager's filesystem", dir)
	}
	clean := filepath.Clean(dir)
	for _, allowed := range r.AllowedDirs {
		a := filepath.Clean(allowed)
		if clean == a || strings.HasPrefix(clean, a+string(filepath.Separator)) {
			return clean, nil
		}
	}
	return "", fmt.Errorf("spec.directory %q is outside the directories this manager may read (%s); start the manager with --catalog-dirs to allow it",
		dir, strings.Join(r.AllowedDirs, ", "))
}
