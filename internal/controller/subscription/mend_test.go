package subscription

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/resolve"
)

// TestMendsFailure: a change of how the operator is installed, made after the change
// failed, tries it again; not after a rollback, not without a change of shape, not for a
// change the manager has not settled, and not when the earlier shape is unknown.
func TestMendsFailure(t *testing.T) {
	sub := &omv1.Subscription{Spec: omv1.SubscriptionSpec{StartingCSV: "x.v1", Config: &omv1.SubscriptionConfig{NodeSelector: map[string]string{"disk": "ssd"}}}}
	before := installShape(sub)
	mended := sub.DeepCopy()
	mended.Spec.Config = nil
	longer := sub.DeepCopy()
	longer.Spec.Health = &omv1.HealthPolicy{Timeout: &metav1.Duration{Duration: 10 * time.Minute}}
	paused := sub.DeepCopy()
	paused.Spec.Paused, paused.Spec.Approval = true, omv1.ApprovalManual
	if installShape(mended) == before || installShape(longer) == before {
		t.Fatal("a change of config or health does not change the install shape")
	}
	if installShape(paused) != before {
		t.Error("pausing or the approval changes the install shape: they do not change how the operator is installed")
	}
	bp := func(phase omv1.BlueprintPhase) *omv1.Blueprint {
		b := &omv1.Blueprint{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
		b.Spec.ClusterServiceVersionName, b.Spec.Generation = "x.v1", 1
		b.Status.Phase, b.Status.ObservedGeneration = phase, 1
		b.Status.History = []omv1.Revision{{Revision: 1, CSVName: "x.v1", Generation: 1, Trigger: omv1.TriggerInstall, Outcome: omv1.OutcomeFailed}}
		return b
	}
	unseen := bp(omv1.BlueprintFailed)
	unseen.Generation = 2
	for _, tc := range []struct {
		name      string
		bp        *omv1.Blueprint
		was, then string
		want      bool
	}{
		{"failed, config mended", bp(omv1.BlueprintFailed), before, installShape(mended), true},
		{"failed, a longer health timeout", bp(omv1.BlueprintFailed), before, installShape(longer), true},
		{"failed, paused: no change of shape", bp(omv1.BlueprintFailed), before, installShape(paused), false},
		{"rolled back: the older version runs", bp(omv1.BlueprintRolledBack), before, installShape(mended), false},
		{"succeeded", bp(omv1.BlueprintSucceeded), before, installShape(mended), false},
		{"failed, a change not yet taken up", unseen, before, installShape(mended), false},
		{"failed, the earlier shape unknown", bp(omv1.BlueprintFailed), "", installShape(mended), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mendsFailure(tc.bp, tc.was, tc.then); got != tc.want {
				t.Errorf("mendsFailure = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRunsAsInstalled: the catalog's other content of a version is kept out only while
// that version runs and is the target; a version that does not run yet takes it.
func TestRunsAsInstalled(t *testing.T) {
	b := &catalog.Bundle{CSVName: "x.v2", Digest: "sha256:new"}
	bp := func(target, current string) *omv1.Blueprint {
		out := &omv1.Blueprint{}
		out.Spec.ClusterServiceVersionName, out.Spec.BundleDigest, out.Status.CurrentCSV = target, "sha256:old", current
		return out
	}
	for _, tc := range []struct {
		name string
		bp   *omv1.Blueprint
		want bool
	}{
		{"runs and is the target", bp("x.v2", "x.v2"), true},
		{"the target, which failed: x.v1 runs", bp("x.v2", "x.v1"), false},
		{"the target of a first install, not running yet", bp("x.v2", ""), false},
		{"runs, but pointed elsewhere (a rollback by hand)", bp("x.v1", "x.v2"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := runsAsInstalled(tc.bp, b); got != tc.want {
				t.Errorf("runsAsInstalled = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPackageChanged: a spec that now resolves to another package than the installation's
// is refused, saying what runs; the same package (any version) and a Blueprint that has
// not recorded its package yet are not.
func TestPackageChanged(t *testing.T) {
	bp := func(pkg, current string) *omv1.Blueprint {
		out := &omv1.Blueprint{}
		out.Spec.Package, out.Status.CurrentCSV = pkg, current
		return out
	}
	backup := &catalog.Bundle{Package: "backup-operator", CSVName: "backup-operator.v0.2.0"}
	for _, tc := range []struct {
		name string
		bp   *omv1.Blueprint
		want string // "" for no refusal
	}{
		{"same package", bp("backup-operator", "backup-operator.v0.1.0"), ""},
		{"package not recorded", bp("", ""), ""},
		{"another package, running", bp("cache-operator", "cache-operator.v1.1.0"), "this Subscription installed package cache-operator (cache-operator.v1.1.0 runs and stays)"},
		{"another package, nothing runs", bp("cache-operator", ""), "(nothing of it runs)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := packageChanged(tc.bp, backup)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want a refusal saying %q", err, tc.want)
			}
			var re *resolve.Error
			if err != nil && (!errors.As(err, &re) || re.Reason != omv1.ReasonPackageChanged) {
				t.Errorf("refusal %#v, want reason %s", err, omv1.ReasonPackageChanged)
			}
		})
	}
}

// TestNotInCatalog: a pulled version, or a catalog that cannot be read, while the version
// asked for runs is said to stay (NotInCatalog, CatalogUnavailable); one that does not run,
// runs while another is the target, or is not what is asked, a catalog still loading, and
// other failures, are not.
func TestNotInCatalog(t *testing.T) {
	pinned := &omv1.Subscription{Spec: omv1.SubscriptionSpec{Package: "cache-operator", Version: "1.1.0"}}
	bp := func(target, current, version string) *omv1.Blueprint {
		out := &omv1.Blueprint{}
		out.Spec.Package, out.Spec.ClusterServiceVersionName = "cache-operator", target
		out.Status.CurrentCSV, out.Status.CurrentVersion = current, version
		return out
	}
	runs := bp("cache-operator.v1.1.0", "cache-operator.v1.1.0", "1.1.0")
	pulled := &resolve.Error{Reason: omv1.ReasonVersionNotFound, Message: `package "cache-operator" in catalog x has no version "1.1.0"; it has 1.2.0`}
	notLoaded := &resolve.Error{Reason: omv1.ReasonCatalogNotReady, Message: "CatalogSource ns/x does not exist"}
	gone := &catalogWait{message: "CatalogSource ns/x does not exist"}
	// pointed is a Blueprint a person pointed at 1.0.0 (a rollback by hand) after the
	// Subscription last wrote it (its generation annotation, 0 as pinned's).
	pointed := bp("cache-operator.v1.0.0", "cache-operator.v1.0.0", "1.0.0")
	pointed.Annotations = map[string]string{omv1.AnnotationSubscriptionGeneration: "0"}
	specChanged := pointed.DeepCopy()
	specChanged.Annotations[omv1.AnnotationSubscriptionGeneration] = "7"
	// imported is a Blueprint `import` made, pinned to the archive's version with its
	// bundle stored, that does not run yet (installing, or blocked).
	imported := bp("cache-operator.v1.2.0", "", "")
	imported.Spec.BundleDigest = "sha256:12"
	imported.Annotations = map[string]string{omv1.AnnotationSubscriptionGeneration: "0"}
	importedOther := imported.DeepCopy()
	importedOther.Annotations[omv1.AnnotationSubscriptionGeneration] = "7"
	for _, tc := range []struct {
		name   string
		bp     *omv1.Blueprint
		err    error
		wait   *catalogWait
		reason string
		says   string
	}{
		{"runs as asked", runs, pulled, nil, omv1.ReasonNotInCatalog, "cache-operator.v1.1.0 runs, as asked, and stays"},
		{"catalog deleted, runs as pointed by hand: that stands", pointed, notLoaded, gone, omv1.ReasonCatalogUnavailable, "cache-operator.v1.0.0 runs, as the Blueprint was pointed by hand, and stays"},
		{"catalog deleted, pointed by hand, then the spec changed: not as asked", specChanged, notLoaded, gone, "", ""},
		{"not installed yet", bp("cache-operator.v1.1.0", "", ""), pulled, nil, "", ""},
		{"imported, not running yet: its stored bundle, not a catalog", imported, pulled, nil, omv1.ReasonNotInCatalog,
			"cache-operator.v1.2.0 is the Blueprint's target (written by `import` or by this Subscription, or pointed there by hand), and its bundle is stored with the installation, so no catalog is needed for it: its catalog does not offer it"},
		{"imported, no catalog at all", imported, notLoaded, gone, omv1.ReasonCatalogUnavailable, "cache-operator.v1.2.0 is the Blueprint's target"},
		{"imported, then the spec changed: the spec's to resolve", importedOther, pulled, nil, "", ""},
		{"another version runs (a change under way)", bp("cache-operator.v1.1.0", "cache-operator.v1.0.0", "1.0.0"), pulled, nil, "", ""},
		{"runs, but not what is asked", bp("cache-operator.v1.2.0", "cache-operator.v1.2.0", "1.2.0"), pulled, nil, "", ""},
		{"catalog deleted or failing, runs as asked", runs, notLoaded, gone, omv1.ReasonCatalogUnavailable, "cache-operator.v1.1.0 runs, as asked, and stays"},
		{"catalog deleted, not installed yet", bp("cache-operator.v1.1.0", "", ""), notLoaded, gone, "", ""},
		{"catalog loading: a wait, not this", runs, notLoaded, &catalogWait{loading: true, message: "loading"}, "", ""},
		{"another failure", runs, &resolve.Error{Reason: omv1.ReasonPackageChanged, Message: "x"}, nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, got := notInCatalog(pinned, tc.bp, tc.err, tc.wait)
			if reason != tc.reason || (got != "") != (tc.reason != "") {
				t.Errorf("notInCatalog = %q %q, want reason %q", reason, got, tc.reason)
			}
			if !strings.Contains(got, tc.says) {
				t.Errorf("notInCatalog = %q", got)
			}
		})
	}
}
