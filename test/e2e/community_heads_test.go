package e2e

import (
	"fmt"
	"testing"
	"time"
)

// TestCommunityHeadsInstall installs the default-channel heads of community packages that
// used to loop: elastic-phenix-operator's and opentelemetry-operator's CRD preflight listed
// custom resources through a REST mapping that did not know a CRD the same revision had
// just applied. They install, each in its own namespace.
func TestCommunityHeadsInstall(t *testing.T) {
	if communityDir() == "" {
		t.Skip("the shared community catalog is absent (../shared/catalogs/community-operators or $OPM_COMMUNITY_CATALOG)")
	}
	for _, pkg := range []string{"elastic-phenix-operator", "opentelemetry-operator"} {
		ns := "head-" + pkg
		newNamespace(t, ns)
		applyYAML(t, ns, fmt.Sprintf(`
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: %s}
spec: {package: %s}
`, pkg, pkg))
	}
	for _, pkg := range []string{"elastic-phenix-operator", "opentelemetry-operator"} {
		sub := waitReady(t, "head-"+pkg, pkg, 3*time.Minute)
		t.Logf("%s: %s installed", pkg, sub.Status.InstalledCSV)
	}
}
