package config_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-manager/operator-manager/internal/testenv"
)

// TestDeployManifestsApply applies config/default as the README says an administrator
// would (kubectl, server-side, kustomize built in), so the in-cluster manifests stay valid.
func TestDeployManifestsApply(t *testing.T) {
	bins, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(bins, testenv.BinKubectl), "--kubeconfig", env.Kubeconfig,
		"apply", "--server-side", "--force-conflicts", "-k", "default").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply -k config/default: %v\n%s", err, out)
	}
	for _, want := range []string{"deployment.apps/operator-manager", "clusterrole.rbac.authorization.k8s.io/operator-manager",
		"customresourcedefinition.apiextensions.k8s.io/subscriptions.operators.coreos.com.operator-manager.domain"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("kubectl apply output lacks %s:\n%s", want, out)
		}
	}
}
