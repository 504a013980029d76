package fleet

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// helm runs the Helm CLI, built from the Go module proxy (tools/helm), against one
// cluster, with its own configuration and cache directories.
type helm struct {
	bin, kubeconfig, home string
}

// buildHelm builds Helm at the version tools/helm/go.mod pins into dir.
func buildHelm(root, dir string) (string, error) {
	bin := filepath.Join(dir, "helm")
	cmd := exec.Command("go", "build", "-C", filepath.Join(root, "tools", "helm"), "-o", bin, "helm.sh/helm/v4/cmd/helm")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building helm (tools/helm): %v\n%s", err, out)
	}
	return bin, nil
}

func (h *helm) run(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, h.bin, append(args, "--kubeconfig", h.kubeconfig)...)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+filepath.Join(h.home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(h.home, "cache"), "HELM_DATA_HOME="+filepath.Join(h.home, "data"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return nil
}

// install is `helm install --wait`, as a person would run it for one operator.
func (h *helm) install(ctx context.Context, it *item, chart string) error {
	return h.run(ctx, "install", "fleet", chart, "-n", it.Namespace, "--create-namespace", "--wait=watcher", "--timeout", "10m")
}

var chartName = regexp.MustCompile(`[^a-z0-9-]+`)

// writeChart packages the item's objects as a chart in dir: the CRDs in crds/ (which Helm
// creates before anything else and never changes afterwards), everything else in one
// file that the only template includes verbatim, so no text of a bundle is read as a
// template.
func writeChart(dir string, it *item) (string, error) {
	chart := filepath.Join(dir, it.Namespace+"-"+it.Version)
	for _, sub := range []string{"crds", "templates"} {
		if err := os.MkdirAll(filepath.Join(chart, sub), 0o755); err != nil {
			return "", err
		}
	}
	meta := fmt.Sprintf("apiVersion: v2\nname: %s\nversion: %s\nappVersion: %q\n", chartName.ReplaceAllString(strings.ToLower(it.Package), "-"), it.Version, it.Version)
	files := map[string][]byte{
		"Chart.yaml":             []byte(meta),
		"templates/objects.yaml": []byte(`{{ .Files.Get "objects.yaml" }}` + "\n"),
	}
	var err error
	if files["objects.yaml"], err = yamlStream(it.Objects); err != nil {
		return "", err
	}
	if len(it.CRDs) > 0 {
		if files["crds/crds.yaml"], err = yamlStream(it.CRDs); err != nil {
			return "", err
		}
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(chart, name), data, 0o644); err != nil {
			return "", err
		}
	}
	return chart, nil
}

func yamlStream(objs []*unstructured.Unstructured) ([]byte, error) {
	var b bytes.Buffer
	for _, o := range objs {
		o = o.DeepCopy()
		unstructured.RemoveNestedField(o.Object, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(o.Object, "status")
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	return b.Bytes(), nil
}
