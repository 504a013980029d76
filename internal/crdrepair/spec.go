package crdrepair

import (
	"encoding/base64"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	certutil "k8s.io/client-go/util/cert"
)

// APIApprovalValue is set as the api-approved.kubernetes.io annotation on CRDs of groups
// Kubernetes protects (*.k8s.io, *.kubernetes.io). The API server accepts values that
// start with "unapproved" and so lets the CRD in while saying it is not a reviewed API.
const APIApprovalValue = "unapproved, imported from an operator bundle by operator-manager"

// serverSetMetadata are fields the API server sets; a bundle exported from a cluster may
// carry them, and a create with resourceVersion set is refused.
var serverSetMetadata = []string{"resourceVersion", "uid", "selfLink", "generation", "managedFields", "deletionTimestamp", "deletionGracePeriodSeconds"}

// prepare makes the repairs that are not driven by a validation error.
func (r *repairer) prepare() {
	spec, _ := r.obj["spec"].(map[string]any)
	if spec["preserveUnknownFields"] == true {
		delete(spec, "preserveUnknownFields")
		r.noPruning = true
		origin := "set in the bundle"
		if r.fromV1beta1 && !r.explicitPreserve {
			origin = "the v1beta1 default"
		}
		r.record(KindPruning, "spec.preserveUnknownFields", "removed \"true\" (%s), which v1 does not allow; unknown fields are kept instead "+
			"by x-kubernetes-preserve-unknown-fields: true on the object schemas", origin)
	}
	if md, ok := r.obj["metadata"].(map[string]any); ok {
		for _, f := range serverSetMetadata {
			if _, ok := md[f]; ok {
				delete(md, f)
				why := "the API server sets it"
				if f == "resourceVersion" {
					why = "the API server refuses a create that carries it"
				}
				r.record(KindServerFields, "metadata."+f, "removed: %s", why)
			}
		}
		if ns, ok := md["namespace"]; ok {
			delete(md, "namespace")
			if ns != "" {
				r.record(KindServerFields, "metadata.namespace", "removed %s: a CRD is cluster-scoped (the API server would drop it too)", compactJSON(ns))
			}
		}
		if ts, ok := md["creationTimestamp"]; ok && ts != nil {
			delete(md, "creationTimestamp")
			r.record(KindServerFields, "metadata.creationTimestamp", "removed: the API server sets it")
		}
	}
	if r.noPruning {
		r.markObjects()
	}
	r.dropIdleConversionWebhook(spec)
}

// dropIdleConversionWebhook sets the conversion strategy of a CRD with a single version to
// None when its webhook's caBundle is not a PEM certificate (kubebuilder scaffolds ship
// `caBundle: Cg==`, a newline, for cert-manager to fill in). The API server keeps such a
// CRD from being Established ("The conversion webhook CABundle is invalid"), so its
// operator could never install; with one version there is nothing to convert, so the
// webhook would never be called and None changes nothing a client can see.
func (r *repairer) dropIdleConversionWebhook(spec map[string]any) {
	conv, _ := spec["conversion"].(map[string]any)
	if strategy, _ := conv["strategy"].(string); strategy != "Webhook" {
		return
	}
	if versions := r.versions(); len(versions) != 1 {
		return
	}
	wh, _ := conv["webhook"].(map[string]any)
	cc, _ := wh["clientConfig"].(map[string]any)
	encoded, _ := cc["caBundle"].(string)
	if encoded == "" {
		return // the API server's own trust roots apply: it establishes the CRD
	}
	if raw, err := base64.StdEncoding.DecodeString(encoded); err == nil {
		if _, err := certutil.ParseCertsPEM(raw); err == nil {
			return
		}
	}
	spec["conversion"] = map[string]any{"strategy": "None"}
	r.record(KindConversion, "spec.conversion", "set the strategy to None: the CRD has a single version, so its conversion webhook "+
		"would never be called, and its caBundle is not a PEM certificate, which keeps the API server from establishing the CRD")
}

// keepNoPruning marks, after the repairs, object schemas the repairs typed; it says
// whether it marked any, so the caller validates again.
func (r *repairer) keepNoPruning() bool {
	if !r.noPruning {
		return false
	}
	added := r.markObjects()
	for _, v := range r.versions() {
		name, _ := v["name"].(string)
		if c := r.marked[name]; c > 0 {
			r.record(KindPruning, "spec.versions["+name+"].schema", "added x-kubernetes-preserve-unknown-fields: true to %d object schemas, "+
				"so unknown fields are kept as with v1beta1's preserveUnknownFields: true (v1 would prune them)", c)
		}
	}
	return added
}

// markObjects sets x-kubernetes-preserve-unknown-fields on every object schema of the
// structural part (not the root's metadata, which the API server owns, nor maps, whose
// keys are kept anyway). It returns whether it marked any.
func (r *repairer) markObjects() bool {
	if r.marked == nil {
		r.marked = map[string]int{}
	}
	markedAny := false
	for _, v := range r.versions() {
		name, _ := v["name"].(string)
		sc, _ := v["schema"].(map[string]any)
		root, _ := sc["openAPIV3Schema"].(map[string]any)
		if root == nil {
			continue
		}
		var walk func(n map[string]any, isRoot bool)
		walk = func(n map[string]any, isRoot bool) {
			_, maps := n["additionalProperties"]
			if n["type"] == "object" && !maps && n["x-kubernetes-int-or-string"] != true && n["x-kubernetes-preserve-unknown-fields"] != true {
				n["x-kubernetes-preserve-unknown-fields"] = true
				r.marked[name]++
				markedAny = true
			}
			props, _ := n["properties"].(map[string]any)
			for _, k := range sortedKeys(props) {
				if c, ok := props[k].(map[string]any); ok && !(isRoot && k == "metadata") {
					walk(c, false)
				}
			}
			for _, k := range []string{"items", "additionalProperties"} {
				if c, ok := n[k].(map[string]any); ok {
					walk(c, false)
				}
			}
		}
		walk(root, true)
	}
	return markedAny
}

// fixSpec repairs errors outside the schemas.
func (r *repairer) fixSpec(e *field.Error, segs []seg) bool {
	spec, _ := r.obj["spec"].(map[string]any)
	if spec == nil {
		return false
	}
	p := e.Field
	switch {
	case p == "spec.scope":
		return r.fixScope(spec)
	case p == "spec.conversion.conversionReviewVersions" || p == "spec.conversion.webhookClientConfig":
		return r.fixConversion(spec, e)
	case strings.HasPrefix(p, "metadata.annotations") && strings.Contains(p, apiextensionsv1.KubeAPIApprovedAnnotation):
		md, _ := r.obj["metadata"].(map[string]any)
		if md == nil {
			md = map[string]any{}
			r.obj["metadata"] = md
		}
		ann, _ := md["annotations"].(map[string]any)
		if ann == nil {
			ann = map[string]any{}
			md["annotations"] = ann
		}
		old, had := ann[apiextensionsv1.KubeAPIApprovedAnnotation]
		ann[apiextensionsv1.KubeAPIApprovedAnnotation] = APIApprovalValue
		what := "added"
		if had {
			what = fmt.Sprintf("replaced %s by", compactJSON(old))
		}
		group, _ := spec["group"].(string)
		r.record(KindAPIApproval, "metadata.annotations["+apiextensionsv1.KubeAPIApprovedAnnotation+"]",
			"%s %q: group %s is protected by Kubernetes and needs the annotation; a value starting with \"unapproved\" is accepted", what, APIApprovalValue, group)
		return true
	case len(segs) >= 2 && segs[0].name == "spec" && (segs[1].name == "names"):
		return r.fixNames(spec, segs[2:], e)
	}
	if cols, ok := columnsOf(segs); ok {
		return r.fixColumns(spec, segs, cols, e)
	}
	return false
}

func (r *repairer) fixScope(spec map[string]any) bool {
	cur, _ := spec["scope"].(string)
	var to string
	switch {
	case cur == "":
		to = "Namespaced"
	case strings.EqualFold(cur, "Namespaced"):
		to = "Namespaced"
	case strings.EqualFold(cur, "Cluster"):
		to = "Cluster"
	default:
		return false
	}
	spec["scope"] = to
	if cur == "" {
		r.record(KindScope, "spec.scope", "set to %q, the v1beta1 default (v1 requires it)", to)
	} else {
		r.record(KindScope, "spec.scope", "changed %q to %q", cur, to)
	}
	return true
}

// fixConversion completes webhook conversion settings. The API server speaks
// ConversionReview v1 and v1beta1 and sends the first of the list it supports; [v1,
// v1beta1] is what kubebuilder scaffolds generate. A Webhook strategy without any client
// config is left for the caller to refuse: only the bundle's CSV knows the webhook.
func (r *repairer) fixConversion(spec map[string]any, e *field.Error) bool {
	conv, _ := spec["conversion"].(map[string]any)
	if conv == nil {
		return false
	}
	wh, _ := conv["webhook"].(map[string]any)
	strategy, _ := conv["strategy"].(string)
	if strategy != "Webhook" {
		// Webhook settings without the Webhook strategy are refused; they did nothing.
		if wh == nil {
			return false
		}
		delete(conv, "webhook")
		r.record(KindConversion, "spec.conversion.webhook", "removed: the conversion strategy is %q, so the webhook settings were unused and are refused", strategy)
		return true
	}
	if e.Field == "spec.conversion.webhookClientConfig" {
		return false
	}
	if wh == nil {
		wh = map[string]any{}
		conv["webhook"] = wh
	}
	old := wh["conversionReviewVersions"]
	wh["conversionReviewVersions"] = []any{"v1", "v1beta1"}
	if old != nil {
		r.record(KindConversion, "spec.conversion.webhook.conversionReviewVersions", "replaced %s by [v1 v1beta1]: the API server speaks only those", compactJSON(old))
	} else {
		r.record(KindConversion, "spec.conversion.webhook.conversionReviewVersions", "set to [v1 v1beta1]: v1 requires it for webhook conversion")
	}
	return true
}

// fixNames repairs short names and categories (lists for kubectl) by lower-casing or
// dropping entries; names that identify the API are never changed.
func (r *repairer) fixNames(spec map[string]any, rest []seg, e *field.Error) bool {
	names, _ := spec["names"].(map[string]any)
	if len(rest) != 1 || names == nil {
		return false
	}
	s := rest[0]
	switch s.name {
	case "shortNames", "categories":
		l, _ := names[s.name].([]any)
		i := atoi(s.key)
		if i < 0 || i >= len(l) {
			return false
		}
		v, _ := l[i].(string)
		if lower := strings.ToLower(v); lower != v && len(validation.IsDNS1035Label(lower)) == 0 {
			l[i] = lower
			r.record(KindNames, "spec.names."+s.name, "changed %q to %q: it must be a lower-case DNS label", v, lower)
		} else {
			if rest := append(l[:i:i], l[i+1:]...); len(rest) > 0 {
				names[s.name] = rest
			} else {
				delete(names, s.name)
			}
			r.touch("spec.names." + s.name)
			r.record(KindNames, "spec.names."+s.name, "removed %q: not a lower-case DNS label (kubectl only uses it as an alias)", v)
		}
		return true
	case "singular":
		v, _ := names["singular"].(string)
		if lower := strings.ToLower(v); lower != v && len(validation.IsDNS1035Label(lower)) == 0 {
			names["singular"] = lower
			r.record(KindNames, "spec.names.singular", "changed %q to %q: it must be a lower-case DNS label", v, lower)
			return true
		}
	}
	return false
}

type columnLoc struct {
	all     bool // spec.additionalPrinterColumns: identical in every version
	version int
	index   int
	field   string
}

func columnsOf(segs []seg) (columnLoc, bool) {
	if len(segs) < 2 || segs[0].name != "spec" {
		return columnLoc{}, false
	}
	loc := columnLoc{all: true}
	rest := segs[1:]
	if rest[0].name == "versions" && rest[0].hasKey {
		loc.all, loc.version = false, atoi(rest[0].key)
		rest = rest[1:]
	}
	if len(rest) != 2 || rest[0].name != "additionalPrinterColumns" || !rest[0].hasKey {
		return columnLoc{}, false
	}
	loc.index, loc.field = atoi(rest[0].key), rest[1].name
	return loc, loc.index >= 0
}

var columnTypeAliases = map[string]string{
	"int": "integer", "int32": "integer", "int64": "integer", "long": "integer", "float": "number", "double": "number",
	"bool": "boolean", "date-time": "date", "datetime": "date", "time": "date", "timestamp": "date",
	"str": "string", "text": "string",
}

// fixColumns repairs a printer column, which only shapes kubectl's table output: a type or
// path that can be read is corrected, and a column that cannot be is dropped.
func (r *repairer) fixColumns(spec map[string]any, segs []seg, loc columnLoc, e *field.Error) bool {
	changed := false
	for i, v := range r.versions() {
		if !loc.all && i != loc.version {
			continue
		}
		vname, _ := v["name"].(string)
		cols, _ := v["additionalPrinterColumns"].([]any)
		if loc.index >= len(cols) {
			continue
		}
		col, _ := cols[loc.index].(map[string]any)
		if col == nil {
			continue
		}
		cname, _ := col["name"].(string)
		where := fmt.Sprintf("spec.versions[%s].additionalPrinterColumns[%s]", vname, cname)
		switch loc.field {
		case "type":
			cur, _ := col["type"].(string)
			to := columnTypeAliases[strings.ToLower(cur)]
			if to == "" {
				to = "string"
			}
			col["type"] = to
			r.record(KindPrinterColumn, where, "changed type %q to %q (%s)", cur, to, errText(e))
			changed = true
			continue
		case "format":
			cur := col["format"]
			delete(col, "format")
			r.record(KindPrinterColumn, where, "removed format %s (%s)", compactJSON(cur), errText(e))
			changed = true
			continue
		case "JSONPath":
			cur, _ := col["jsonPath"].(string)
			to := strings.TrimSpace(cur)
			if strings.HasPrefix(to, "{") && strings.HasSuffix(to, "}") {
				to = strings.TrimSpace(to[1 : len(to)-1])
			}
			if to != "" && !strings.HasPrefix(to, ".") {
				to = "." + to
			}
			if to != "." && to != "" && to != cur {
				col["jsonPath"] = to
				r.record(KindPrinterColumn, where, "changed jsonPath %q to %q: it must be a simple path starting with a dot", cur, to)
				changed = true
				continue
			}
		}
		v["additionalPrinterColumns"] = append(cols[:loc.index:loc.index], cols[loc.index+1:]...)
		if len(cols) == 1 {
			delete(v, "additionalPrinterColumns")
		}
		r.touch(renderPath(segs[:len(segs)-2]) + "." + "additionalPrinterColumns")
		r.record(KindPrinterColumn, where, "removed the column (%s: %s): it only affects kubectl's table output", loc.field, errText(e))
		changed = true
	}
	return changed
}
