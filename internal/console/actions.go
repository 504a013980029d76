package console

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/blang/semver/v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/controller/blueprint"
	"github.com/operator-manager/operator-manager/internal/controller/catalogsource"
	"github.com/operator-manager/operator-manager/internal/controller/subscription"
)

// change is what a request changes (or, dry run, would change).
type change struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Verb      string `json:"verb"`
	// Object is the created object (create).
	Object any `json:"object,omitempty"`
	// Patch is the merge patch; Before and After the fields it touches, as they are and
	// as they would be (patch, delete).
	Patch  json.RawMessage `json:"patch,omitempty"`
	Before any             `json:"before,omitempty"`
	After  any             `json:"after,omitempty"`
}

type changeBody struct {
	Change  change `json:"change"`
	Applied bool   `json:"applied"`
}

// installRequest is POST /api/subscriptions.
type installRequest struct {
	Namespace          string   `json:"namespace"`
	Name               string   `json:"name"`
	Catalog            string   `json:"catalog"`
	Package            string   `json:"package"`
	Channel            string   `json:"channel"`
	Version            string   `json:"version"`
	Approval           string   `json:"approval"`
	TargetNamespaces   []string `json:"targetNamespaces"`
	ServiceAccountName string   `json:"serviceAccountName"`
	DryRun             bool     `json:"dryRun"`
}

func (s *Server) install(w http.ResponseWriter, r *http.Request, id *identity) {
	var req installRequest
	if err := readJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Namespace == "" || req.Name == "" || req.Package == "" {
		writeError(w, invalid("namespace, name and package are required"))
		return
	}
	switch omv1.Approval(req.Approval) {
	case "", omv1.ApprovalAutomatic, omv1.ApprovalManual:
	default:
		writeError(w, invalid("approval: %q is neither Automatic nor Manual", req.Approval))
		return
	}
	catName := req.Catalog
	if ns, name, ok := strings.Cut(req.Catalog, "/"); ok {
		catName = name
		if ns != req.Namespace {
			// A Subscription reads CatalogSources of its own namespace, or the manager's
			// default catalog when it names none.
			cs := &omv1.CatalogSource{}
			if err := id.c.Get(r.Context(), client.ObjectKey{Namespace: ns, Name: name}, cs); err != nil {
				writeError(w, err)
				return
			}
			if name != catalogsource.DefaultName || cs.Labels[catalogsource.ManagedByLabel] != "operator-manager" {
				writeError(w, invalid("catalog %s: a Subscription in namespace %s can use only a CatalogSource of that namespace, or the manager's default catalog", req.Catalog, req.Namespace))
				return
			}
			catName = ""
		}
	}
	sub := &omv1.Subscription{
		TypeMeta:   metav1.TypeMeta{APIVersion: omv1.GroupVersion.String(), Kind: "Subscription"},
		ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name},
		Spec: omv1.SubscriptionSpec{Option: omv1.OptionCreate, Package: req.Package, Channel: req.Channel, Version: req.Version,
			Catalog: catName, Approval: omv1.Approval(req.Approval), TargetNamespaces: req.TargetNamespaces, ServiceAccountName: req.ServiceAccountName},
	}
	// The manager refuses a second Subscription of a package in a namespace; it is not
	// made only to be left behind, failed.
	others := &omv1.SubscriptionList{}
	if err := id.c.List(r.Context(), others, client.InNamespace(req.Namespace)); err != nil {
		writeError(w, err)
		return
	}
	if other := subscription.SubscribedAlready(others.Items, req.Name, sub.Spec); other != nil {
		writeError(w, conflict("Subscription %s/%s already installs package %q, and a namespace runs one version of a package: change that one, or install this one in another namespace",
			req.Namespace, other.Name, subscription.PackageOf(other)))
		return
	}
	var opts []client.CreateOption
	if req.DryRun {
		opts = append(opts, client.DryRunAll)
	}
	if err := id.c.Create(r.Context(), sub, opts...); err != nil {
		writeError(w, err)
		return
	}
	sub.APIVersion, sub.Kind = omv1.GroupVersion.String(), "Subscription"
	writeJSON(w, http.StatusOK, changeBody{Change: change{Kind: "Subscription", Namespace: sub.Namespace, Name: sub.Name, Verb: "create", Object: sub},
		Applied: !req.DryRun})
}

// actionRequest is the body of POST /api/installations/{ns}/{name}/{action}.
type actionRequest struct {
	DryRun   bool   `json:"dryRun"`
	CSV      string `json:"csv"`
	Version  string `json:"version"`
	Revision int64  `json:"revision"`
}

func (s *Server) act(w http.ResponseWriter, r *http.Request, id *identity) {
	var req actionRequest
	if err := readJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	ctx, key := r.Context(), client.ObjectKey{Namespace: r.PathValue("ns"), Name: r.PathValue("name")}
	var ch *change
	var err error
	switch action := r.PathValue("action"); action {
	case "approve":
		ch, err = s.approve(ctx, id, key, req.DryRun)
	case "upgrade":
		ch, err = s.upgrade(ctx, id, key, req)
	case "rollback":
		ch, err = s.rollback(ctx, id, key, req)
	case "retry":
		ch, err = s.retry(ctx, id, key, req.DryRun)
	case "pause", "resume":
		ch, err = s.pause(ctx, id, key, action == "pause", req.DryRun)
	case "uninstall":
		ch, err = s.uninstall(ctx, id, key, req.DryRun)
	default:
		err = notFound("no action %q: approve, upgrade, rollback, retry, pause, resume or uninstall", action)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, changeBody{Change: *ch, Applied: !req.DryRun})
}

// patch applies (or dry-runs) the merge patch mutate makes to obj, and says what it
// changes.
func patch(ctx context.Context, id *identity, kind string, obj client.Object, dry bool, mutate func()) (*change, error) {
	orig := obj.DeepCopyObject().(client.Object)
	mutate()
	p := client.MergeFrom(orig)
	data, err := p.Data(obj)
	if err != nil {
		return nil, err
	}
	ch := &change{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Verb: "patch", Patch: data}
	var shape map[string]any
	if err := json.Unmarshal(data, &shape); err != nil {
		return nil, err
	}
	ch.Before, ch.After = project(orig, shape), project(obj, shape)
	var opts []client.PatchOption
	if dry {
		opts = append(opts, client.DryRunAll)
	}
	if err := id.c.Patch(ctx, obj, p, opts...); err != nil {
		return nil, err
	}
	return ch, nil
}

// project returns the fields of obj that shape (a merge patch) names, as they are in obj.
func project(obj any, shape map[string]any) map[string]any {
	data, _ := json.Marshal(obj)
	var src map[string]any
	_ = json.Unmarshal(data, &src)
	return projectMap(src, shape)
}

func projectMap(src, shape map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range shape {
		sv := src[k]
		if sub, ok := v.(map[string]any); ok {
			if sm, ok := sv.(map[string]any); ok {
				out[k] = projectMap(sm, sub)
				continue
			}
		}
		out[k] = sv
	}
	return out
}

func (s *Server) approve(ctx context.Context, id *identity, key client.ObjectKey, dry bool) (*change, error) {
	bp := &omv1.Blueprint{}
	if err := id.c.Get(ctx, key, bp); err != nil {
		return nil, err
	}
	if bp.Status.Phase != omv1.BlueprintWaitingForApproval {
		return nil, conflict("%s/%s waits for no approval (phase %s, running %s)", key.Namespace, key.Name, bp.Status.Phase, bp.Status.CurrentCSV)
	}
	return patch(ctx, id, "Blueprint", bp, dry, func() { bp.Spec.Approved = true })
}

// upgrade pins the Subscription to a version: spec.startingCSV when it names its version
// that way, else spec.version, the exact version of that CSV.
func (s *Server) upgrade(ctx context.Context, id *identity, key client.ObjectKey, req actionRequest) (*change, error) {
	if req.CSV == "" {
		return nil, invalid("csv: name the version to upgrade to")
	}
	sub := &omv1.Subscription{}
	if err := id.c.Get(ctx, key, sub); err != nil {
		return nil, err
	}
	if sub.Spec.StartingCSV != "" {
		return patch(ctx, id, "Subscription", sub, req.DryRun, func() { sub.Spec.StartingCSV = req.CSV })
	}
	version := req.Version
	if version == "" {
		v, err := s.versionOf(ctx, id, sub, req.CSV)
		if err != nil {
			return nil, err
		}
		version = v
	}
	return patch(ctx, id, "Subscription", sub, req.DryRun, func() { sub.Spec.Version = version })
}

// versionOf finds the version of csv: in the catalog the installation resolved from (its
// Blueprint's), or the Subscription's, else from the CSV's name (<package>.v<version>).
func (s *Server) versionOf(ctx context.Context, id *identity, sub *omv1.Subscription, csv string) (string, error) {
	pkg := first(sub.Spec.PackageName(), sub.Status.Package)
	var refs []client.ObjectKey
	bp := &omv1.Blueprint{}
	if err := id.c.Get(ctx, client.ObjectKeyFromObject(sub), bp); err == nil && bp.Spec.Catalog != "" {
		if ns, name, ok := strings.Cut(bp.Spec.Catalog, "/"); ok {
			refs = append(refs, client.ObjectKey{Namespace: ns, Name: name})
		}
		pkg = first(pkg, bp.Spec.Package)
	}
	if name := sub.Spec.CatalogName(); name != "" {
		refs = append(refs, client.ObjectKey{Namespace: sub.Spec.CatalogNamespace(sub.Namespace), Name: name})
	}
	for _, ref := range refs {
		cs := &omv1.CatalogSource{}
		if err := id.c.Get(ctx, ref, cs); err != nil {
			continue
		}
		cat, err := s.catalogs.load(ctx, id, cs)
		if err != nil {
			continue
		}
		if b := cat.BundleByCSV(csv); b != nil {
			if pkg != "" && b.Package != pkg {
				return "", invalid("%s is a version of package %s, not of %s", csv, b.Package, pkg)
			}
			return b.Version.String(), nil
		}
	}
	rest := csv
	if pkg != "" {
		rest = strings.TrimPrefix(csv, pkg+".")
	} else if i := strings.Index(csv, "."); i >= 0 {
		rest = csv[i+1:]
	}
	v, err := semver.ParseTolerant(strings.TrimPrefix(rest, "v"))
	if err != nil || rest == csv {
		return "", invalid("cannot tell the version of %s: not found in the installation's catalog, and its name is not %s.v<version>; give \"version\" too", csv, first(pkg, "<package>"))
	}
	return v.String(), nil
}

func (s *Server) rollback(ctx context.Context, id *identity, key client.ObjectKey, req actionRequest) (*change, error) {
	bp := &omv1.Blueprint{}
	if err := id.c.Get(ctx, key, bp); err != nil {
		return nil, err
	}
	target, err := blueprint.RollbackTarget(bp, req.Revision)
	if err != nil {
		return nil, conflict("%v", err)
	}
	return patch(ctx, id, "Blueprint", bp, req.DryRun, func() { blueprint.SetRollback(bp, target) })
}

// retry tries a change that ended badly again, as `operator-manager retry` does.
func (s *Server) retry(ctx context.Context, id *identity, key client.ObjectKey, dry bool) (*change, error) {
	bp := &omv1.Blueprint{}
	if err := id.c.Get(ctx, key, bp); err != nil {
		return nil, err
	}
	if err := blueprint.Retryable(bp); err != nil {
		return nil, conflict("%v", err)
	}
	return patch(ctx, id, "Blueprint", bp, dry, func() { blueprint.SetRetry(bp) })
}

func (s *Server) pause(ctx context.Context, id *identity, key client.ObjectKey, paused, dry bool) (*change, error) {
	sub := &omv1.Subscription{}
	if err := id.c.Get(ctx, key, sub); err != nil {
		return nil, err
	}
	return patch(ctx, id, "Subscription", sub, dry, func() { sub.Spec.Paused = paused })
}

func (s *Server) uninstall(ctx context.Context, id *identity, key client.ObjectKey, dry bool) (*change, error) {
	sub := &omv1.Subscription{}
	if err := id.c.Get(ctx, key, sub); err != nil {
		return nil, err
	}
	var opts []client.DeleteOption
	if dry {
		opts = append(opts, client.DryRunAll)
	}
	// Preconditioned on what was read: a Subscription replaced meanwhile is not deleted.
	opts = append(opts, client.Preconditions{UID: &sub.UID})
	before := project(sub, map[string]any{"spec": map[string]any{}})
	before["spec"] = sub.Spec
	if err := id.c.Delete(ctx, sub, opts...); err != nil {
		return nil, err
	}
	return &change{Kind: "Subscription", Namespace: sub.Namespace, Name: sub.Name, Verb: "delete", Before: before, After: nil}, nil
}
