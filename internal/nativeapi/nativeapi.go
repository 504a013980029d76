// Package nativeapi checks a CSV's spec.nativeAPIs, the built-in or aggregated kinds an
// operator needs the cluster to serve (OLM's native API requirements), against the live
// API server's discovery, so an operator that cannot work here waits with the kind named
// instead of installing half.
package nativeapi

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Missing returns, a line each, the native APIs of a CSV the cluster does not serve:
// `spec.nativeAPIs[1]: apps.example.com/v1 Widget is not served by this cluster`. An
// entry without a kind or version is reported as such. Errors other than "no match"
// (discovery unreachable) are returned, so the caller retries instead of judging.
func Missing(mapper meta.RESTMapper, apis []metav1.GroupVersionKind) ([]string, error) {
	var missing []string
	for i, api := range apis {
		where := fmt.Sprintf("spec.nativeAPIs[%d]", i)
		if api.Kind == "" || api.Version == "" {
			missing = append(missing, fmt.Sprintf("%s: names no kind or version (%s)", where, describe(api)))
			continue
		}
		_, err := mapper.RESTMapping(schema.GroupKind{Group: api.Group, Kind: api.Kind}, api.Version)
		switch {
		case meta.IsNoMatchError(err):
			missing = append(missing, fmt.Sprintf("%s: %s is not served by this cluster", where, describe(api)))
		case err != nil:
			return nil, fmt.Errorf("looking up %s (%s): %w", describe(api), where, err)
		}
	}
	return missing, nil
}

func describe(api metav1.GroupVersionKind) string {
	gv := schema.GroupVersion{Group: api.Group, Version: api.Version}.String()
	return gv + " " + api.Kind
}
