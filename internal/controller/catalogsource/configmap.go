package catalogsource

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/catalog/configmapcatalog"
)

// ConfigMapCatalogsSubdir is where the catalogs of ConfigMap sources (OLM's sourceType
// configmap) are written under the cache directory: one directory per CatalogSource,
// holding its current catalog and the one before.
const ConfigMapCatalogsSubdir = "configmap-catalogs"

// configMapPollInterval bounds how long a ConfigMap edit waits to be read. The manager
// caches no ConfigMaps (a cluster-wide cache of them would cost far more than it
// saves), so it asks for the ConfigMap's metadata at this interval instead of watching;
// the ConfigMap itself is read only when its resourceVersion changed.
const configMapPollInterval = time.Minute

func (r *Reconciler) configMapRoot(key types.NamespacedName) string {
	return r.sourceRoot(ConfigMapCatalogsSubdir, key)
}

// loadConfigMap reads the ConfigMap spec.configMap names, in the CatalogSource's
// namespace, written on the manager's disk as a package-manifest catalog and loaded like
// a directory. While its UID and resourceVersion are those the catalog in use was read
// from (status.configMapReference), only its metadata is read.
func (r *Reconciler) loadConfigMap(ctx context.Context, key types.NamespacedName, cs *omv1.CatalogSource, prev *catalog.Catalog) (*catalog.Catalog, bool, error) {
	name := strings.TrimSpace(cs.Spec.ConfigMap)
	if name == "" {
		return nil, false, fmt.Errorf("spec.configMap is required when spec.sourceType is %s", cs.Spec.SourceType)
	}
	cmKey := types.NamespacedName{Namespace: key.Namespace, Name: name}
	if ref := cs.Status.ConfigMapReference; prev != nil && ref != nil && ref.Name == name && ref.Namespace == key.Namespace {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
		if err := r.reader().Get(ctx, cmKey, m); err != nil {
			return nil, false, configMapError(cmKey, err)
		}
		if m.UID == ref.UID && m.ResourceVersion == ref.ResourceVersion {
			return prev, false, nil
		}
	}
	cm := &corev1.ConfigMap{}
	if err := r.reader().Get(ctx, cmKey, cm); err != nil {
		return nil, false, configMapError(cmKey, err)
	}
	keep := ""
	if prev != nil {
		keep = prev.Root
	}
	cat, changed, err := configmapcatalog.Load(cm.Data, r.configMapRoot(key), keep, prev)
	if err != nil {
		return nil, false, fmt.Errorf("ConfigMap %s: %w", cmKey, err)
	}
	if ref := cs.Status.ConfigMapReference; ref == nil || ref.UID != cm.UID || ref.ResourceVersion != cm.ResourceVersion || ref.Name != name {
		cs.Status.ConfigMapReference = &omv1.ConfigMapReference{Name: name, Namespace: key.Namespace, UID: cm.UID,
			ResourceVersion: cm.ResourceVersion, LastUpdateTime: metav1.NewTime(r.Clock.Now())}
	}
	return cat, changed, nil
}

func configMapError(key types.NamespacedName, err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("ConfigMap %s, named by spec.configMap, does not exist", key)
	}
	return fmt.Errorf("reading ConfigMap %s, named by spec.configMap: %w", key, err)
}

// forgetConfigMap removes what a CatalogSource that no longer reads a ConfigMap wrote.
func (r *Reconciler) forgetConfigMap(key types.NamespacedName) {
	_ = os.RemoveAll(r.configMapRoot(key))
}
