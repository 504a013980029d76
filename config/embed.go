// Package config carries the generated CRDs, the manager's RBAC and its admission policies
// inside the binary, so `operator-manager dev up`, `operator-manager crds install` and the
// tests install exactly what controller-gen wrote and what config/rbac and config/admission ship.
package config

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

//go:embed crd/bases/*.yaml
var crdFiles embed.FS

//go:embed rbac/*.yaml
var rbacFiles embed.FS

//go:embed admission/*.yaml
var admissionFiles embed.FS

// The manager's own identity: the ServiceAccount of config/rbac/service_account.yaml, which
// the bindings of config/rbac name. Tests and `dev up` run the manager with a token of it.
const (
	ManagerNamespace      = "operator-manager-system"
	ManagerServiceAccount = "operator-manager"
)

// FieldOwner is the server-side apply field manager of everything operator-manager applies.
const FieldOwner = "operator-manager"

// CRDs returns the operator-manager CRDs, sorted by name.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	paths, err := fs.Glob(crdFiles, "crd/bases/*.yaml")
	if err != nil {
		return nil, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, p := range paths {
		data, err := crdFiles.ReadFile(p)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", p, err)
		}
		crd.APIVersion, crd.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
		out = append(out, crd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// InstallCRDs applies the CRDs server-side and waits until each is Established.
func InstallCRDs(ctx context.Context, c client.Client) error {
	crds, err := CRDs()
	if err != nil {
		return err
	}
	for _, crd := range crds {
		crd.ManagedFields = nil
		if err := c.Patch(ctx, crd, client.Apply, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, got); err != nil {
				return false, nil
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for CRD %s to be Established: %w", crd.Name, err)
		}
	}
	// Established is not yet served: the API server's discovery can lag it by a moment
	// (more under load), and a client that starts in that moment (a manager registering
	// its indexes) finds "no matches for kind". Each served version's kind is waited for
	// in discovery too; the client's REST mapper asks discovery again on a miss.
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			gk := schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
			err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
				_, err := c.RESTMapper().RESTMapping(gk, v.Name)
				return err == nil, nil
			})
			if err != nil {
				return fmt.Errorf("waiting for %s %s to be served: %w", gk, v.Name, err)
			}
		}
	}
	return nil
}

// kustomization is the part of a kustomization.yaml that RBAC and Admission understand. Decoding is
// strict: a transformer (namespace, patches, labels) would make `kubectl apply -k` apply
// something other than the files, so they refuse it instead of ignoring it.
type kustomization struct {
	APIVersion string   `json:"apiVersion,omitempty"`
	Kind       string   `json:"kind,omitempty"`
	Resources  []string `json:"resources"`
}

// RBAC returns every object of every file that config/rbac/kustomization.yaml lists under
// resources, in the order of the list and of the documents within each file: the
// manager's ServiceAccount, its roles and their bindings, exactly as shipped.
func RBAC() ([]*unstructured.Unstructured, error) { return listed(rbacFiles, "rbac") }

// Admission returns the admission policies of config/admission, as RBAC does for
// config/rbac: the policy that adds the Subscription finalizer, and its binding.
func Admission() ([]*unstructured.Unstructured, error) { return listed(admissionFiles, "admission") }

// InstallAdmission applies the admission policies server-side, waits until the API server
// applies them, and returns their kinds and names. An API server that does not serve
// admission policies (before Kubernetes 1.36) gets none, and it returns no names and no
// error: the manager then adds the Subscription finalizer itself, with one write more per
// installation.
func InstallAdmission(ctx context.Context, c client.Client) ([]string, error) {
	objs, err := Admission()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, o := range objs {
		err := c.Patch(ctx, o, client.Apply, client.FieldOwner(FieldOwner), client.ForceOwnership)
		if meta.IsNoMatchError(err) {
			return nil, nil
		} else if err != nil {
			return nil, fmt.Errorf("applying %s %s of config/admission: %w", o.GetKind(), o.GetName(), err)
		}
		names = append(names, strings.ToLower(o.GetKind())+"/"+o.GetName())
	}
	return names, waitAdmission(ctx, c)
}

// admissionWait bounds waitAdmission.
const admissionWait = time.Minute

// waitAdmission waits until a Subscription created now gets the finalizer from the API
// server: a server-side dry run in namespace default, which runs admission and stores
// nothing. A new policy takes effect once the API server's informer has it, and for a kind
// a CRD has just added, once the API server has that kind's schema, seconds after the CRD
// is Established: until then it refuses the kind's creates with "Resource kind ... not
// found" (503, whatever the failurePolicy). Waiting here keeps that window out of `crds
// install`, `dev up` and the tests.
func waitAdmission(ctx context.Context, c client.Client) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, admissionWait, true, func(ctx context.Context) (bool, error) {
		applies, err := AdmissionAddsFinalizer(ctx, c)
		switch {
		case err != nil:
			last = err.Error()
		case !applies:
			last = "a dry-run Subscription was created without the finalizer"
		}
		return applies, nil
	})
	if err != nil {
		return fmt.Errorf("config/admission applied, but the API server did not apply it to Subscriptions within %s (is its MutatingAdmissionPolicy admission plugin disabled?): %s", admissionWait, last)
	}
	return nil
}

// AdmissionAddsFinalizer reports whether the API server adds the manager's finalizer to a
// Subscription created now: a server-side dry run in namespace default, which runs
// admission and stores nothing. The error is the API server's refusal of the dry run.
func AdmissionAddsFinalizer(ctx context.Context, c client.Client) (bool, error) {
	sub := &unstructured.Unstructured{}
	sub.SetGroupVersionKind(omv1.GroupVersion.WithKind("Subscription"))
	sub.SetNamespace("default")
	sub.SetGenerateName("admission-check-")
	_ = unstructured.SetNestedField(sub.Object, "admission-check", "spec", "package")
	if err := c.Create(ctx, sub, client.DryRunAll); err != nil {
		return false, err
	}
	return slices.Contains(sub.GetFinalizers(), omv1.Finalizer), nil
}

// listed returns every object of every file that dir/kustomization.yaml lists under
// resources, in the order of the list and of the documents within each file.
func listed(files embed.FS, dir string) ([]*unstructured.Unstructured, error) {
	data, err := files.ReadFile(path.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		return nil, fmt.Errorf("config/%s/kustomization.yaml: only resources are supported: %w", dir, err)
	}
	if len(k.Resources) == 0 {
		return nil, fmt.Errorf("config/%s/kustomization.yaml lists no resources", dir)
	}
	var out []*unstructured.Unstructured
	for _, r := range k.Resources {
		name := path.Clean(r)
		if path.Dir(name) != "." || path.Ext(name) != ".yaml" {
			return nil, fmt.Errorf("config/%s/kustomization.yaml: resource %q is not a .yaml file of config/%s", dir, r, dir)
		}
		file, err := files.ReadFile(path.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("config/%s/kustomization.yaml lists %s: %w", dir, r, err)
		}
		objs, err := decodeObjects(file)
		if err != nil {
			return nil, fmt.Errorf("config/%s/%s: %w", dir, name, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

// decodeObjects decodes a multi-document YAML stream (documents separated by `---` lines)
// into objects, skipping empty documents. Every object must have apiVersion and kind.
func decodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if t := bytes.TrimSpace(j); len(t) == 0 || string(t) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		out = append(out, u)
	}
}
