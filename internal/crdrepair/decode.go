package crdrepair

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "sigs.k8s.io/json"
)

// scheme holds the API server's own conversions and defaulting for apiextensions
// (internal, v1beta1, v1), so the version swap is exactly the API server's.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

const (
	groupVersionV1      = "apiextensions.k8s.io/v1"
	groupVersionV1beta1 = "apiextensions.k8s.io/v1beta1"
	kindCRD             = "CustomResourceDefinition"
)

// toV1 returns the CRD in its v1 form as unstructured JSON: a deep copy of the input,
// with JSON values that cannot even be decoded fixed, and v1beta1 converted by the API
// server's conversion functions. Conversion side effects that change meaning are recorded.
func (r *repairer) toV1(in map[string]any) (map[string]any, error) {
	obj, err := normalize(in)
	if err != nil {
		return nil, err
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if kind != kindCRD {
		return nil, fmt.Errorf("kind is %q, not %s", kind, kindCRD)
	}
	if apiVersion != groupVersionV1 && apiVersion != groupVersionV1beta1 {
		return nil, fmt.Errorf("apiVersion %q is neither %s nor %s", apiVersion, groupVersionV1, groupVersionV1beta1)
	}
	spec, ok := obj["spec"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("spec is missing or not an object")
	}
	r.fixShapes(spec, apiVersion == groupVersionV1beta1)

	if apiVersion == groupVersionV1 {
		// A round trip through the typed v1 object drops what the API server would ignore,
		// so the result compares equal to the bundle's own CRD when nothing is repaired.
		crd, err := decodeV1(obj)
		if err != nil {
			return nil, err
		}
		return encode(crd)
	}
	r.fromV1beta1 = true
	_, r.explicitPreserve = spec["preserveUnknownFields"]
	return r.convertV1beta1(obj, spec)
}

// convertV1beta1 converts with the API server's defaulting and conversion
// (v1beta1 -> internal -> v1) and records what moved or was defaulted.
func (r *repairer) convertV1beta1(obj, spec map[string]any) (map[string]any, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var beta apiextensionsv1beta1.CustomResourceDefinition
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &beta); err != nil {
		return nil, fmt.Errorf("decoding as %s: %w", groupVersionV1beta1, err)
	}
	_, hadStatus := obj["status"]
	var internal apiextensions.CustomResourceDefinition
	var v1 apiextensionsv1.CustomResourceDefinition
	if err := safely(func() error {
		scheme.Default(&beta)
		if err := scheme.Convert(&beta, &internal, nil); err != nil {
			return err
		}
		return scheme.Convert(&internal, &v1, nil)
	}); err != nil {
		return nil, fmt.Errorf("converting from %s: %w", groupVersionV1beta1, err)
	}
	v1.APIVersion, v1.Kind = groupVersionV1, kindCRD
	if !hadStatus {
		// Defaulting filled status.storedVersions; the bundle had no status.
		v1.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	}

	var names []string
	for _, v := range v1.Spec.Versions {
		names = append(names, v.Name)
	}
	all := "spec.versions[" + strings.Join(names, ",") + "]"
	r.record(KindConverted, "apiVersion", "converted from %s to %s", groupVersionV1beta1, groupVersionV1)
	if _, ok := spec["versions"]; !ok && beta.Spec.Version != "" {
		r.record(KindConverted, "spec.version", "became spec.versions[%s] (served, storage): v1 has only the list", beta.Spec.Version)
	}
	for _, f := range []struct{ key, dest string }{
		{"validation", "schema"}, {"subresources", "subresources"},
		{"additionalPrinterColumns", "additionalPrinterColumns"}, {"selectableFields", "selectableFields"},
	} {
		if _, ok := spec[f.key]; ok && len(names) > 0 {
			r.record(KindMovedToVersions, "spec."+f.key, "moved to %s.%s: v1 has it only per version", all, f.dest)
		}
	}
	if s, _ := spec["scope"].(string); s == "" {
		r.record(KindScope, "spec.scope", "set to %q, the v1beta1 default (v1 requires it)", v1.Spec.Scope)
	}
	if c, ok := spec["conversion"].(map[string]any); ok && v1.Spec.Conversion != nil && v1.Spec.Conversion.Webhook != nil {
		if _, ok := c["webhookClientConfig"]; ok {
			r.record(KindConverted, "spec.conversion.webhookClientConfig", "moved to spec.conversion.webhook.clientConfig")
		}
		if _, ok := c["conversionReviewVersions"]; !ok {
			r.record(KindConversion, "spec.conversion.webhook.conversionReviewVersions",
				"set to %v, the v1beta1 default (v1 requires it)", v1.Spec.Conversion.Webhook.ConversionReviewVersions)
		}
	}
	return encode(&v1)
}

// decodeV1 decodes unstructured JSON as the API server does: case-sensitive, integers kept.
func decodeV1(obj map[string]any) (*apiextensionsv1.CustomResourceDefinition, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &crd); err != nil {
		return nil, fmt.Errorf("decoding as %s: %w", groupVersionV1, err)
	}
	return &crd, nil
}

// encode turns a typed CRD into unstructured JSON.
func encode(crd *apiextensionsv1.CustomResourceDefinition) (map[string]any, error) {
	raw, err := json.Marshal(crd)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// normalize deep-copies the input through JSON, which also rejects values JSON cannot hold
// instead of panicking on them later.
func normalize(in map[string]any) (map[string]any, error) {
	if out, ok := copyDecoded(in); ok {
		if out == nil {
			return nil, fmt.Errorf("empty object")
		}
		return out.(map[string]any), nil
	}
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	var obj map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &obj); err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, fmt.Errorf("empty object")
	}
	return obj, nil
}

// safely runs upstream code (conversion, validation) that was written for objects the API
// server has already decoded and might panic on stranger input; a panic becomes an error.
func safely(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error in API server code: %v", p)
		}
	}()
	return f()
}

// copyDecoded deep-copies v when it holds only what JSON decoders make (maps, lists,
// strings, bools, int64, float64, nil), which is what manifests decoded from YAML or JSON
// hold, into what a round trip through JSON that keeps integers would give, without
// encoding and parsing the whole CRD. Anything else (other number types, text that is not
// UTF-8, infinities) reports false, and normalize takes the round trip.
func copyDecoded(v any) (any, bool) {
	switch t := v.(type) {
	case nil, bool, int64:
		return t, true
	case string:
		return t, utf8.ValidString(t)
	case float64:
		if math.IsInf(t, 0) || math.IsNaN(t) {
			return nil, false // not JSON: the round trip reports it
		}
		if t != math.Trunc(t) {
			return t, true
		}
		if math.Abs(t) <= 1<<53 {
			// JSON writes an integral float64 without a fraction, and reading it back
			// keeps an int64 (decoders that read YAML give every number as a float64).
			return int64(t), true
		}
		// Beyond 2^53 JSON writes the shortest digits that read back as the same float,
		// padded with zeros, not the integer itself: leave that to the round trip.
		return nil, false
	case map[string]any:
		if t == nil {
			return nil, true
		}
		out := make(map[string]any, len(t))
		for k, e := range t {
			c, ok := copyDecoded(e)
			if !ok || !utf8.ValidString(k) {
				return nil, false
			}
			out[k] = c
		}
		return out, true
	case []any:
		if t == nil {
			return nil, true
		}
		out := make([]any, len(t))
		for i, e := range t {
			c, ok := copyDecoded(e)
			if !ok {
				return nil, false
			}
			out[i] = c
		}
		return out, true
	}
	return nil, false
}
