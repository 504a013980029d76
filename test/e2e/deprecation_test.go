package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/chromedp/chromedp"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/imagecatalog"
)

// deprecatedCatalog writes cache-operator 1.1.0 and 1.2.0 as a File-Based Catalog under
// <work>/catalogs/name, with an olm.deprecations blob of entries (none: no blob).
func deprecatedCatalog(t *testing.T, name string, entries ...string) string {
	t.Helper()
	src, err := catalog.Load(catalogTree(t, name+"-src", "cache-operator/1.1.0", "cache-operator/1.2.0"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fbc, err := imagecatalog.RenderFBCWithObjects(src, func(b *catalog.Bundle) string {
		return "example.com/cache-operator-bundle:" + b.Version.String() // not pulled: the objects are inline
	})
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for k, v := range fbc {
		files[k] = string(v)
	}
	file := imagecatalog.CatalogFile("cache-operator")
	if len(entries) > 0 {
		files[file] += `{"schema":"olm.deprecations","package":"cache-operator","entries":[` + strings.Join(entries, ",") + "]}\n"
	}
	return writeCatalog(t, name, files)
}

// installDeprecated installs cache-operator 1.1.0 as Subscription "cache" in ns from a
// catalog "test" (directory <work>/catalogs/ns, polled every second) that deprecates that
// version and the stable channel.
func installDeprecated(t *testing.T, ns string) {
	t.Helper()
	bundle := `{"reference":{"schema":"olm.bundle","name":"cache-operator.v1.1.0"},"message":"1.1.0 has CVE-2026-0001; upgrade to 1.2.0"}`
	channel := `{"reference":{"schema":"olm.channel","name":"stable"},"message":"stable closes in 2027; follow fast"}`
	dir := deprecatedCatalog(t, ns, bundle, channel)
	if err := k8s.Create(ctx(), &omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Name: "test", Namespace: ns},
		Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceDirectory, Directory: dir, PollInterval: &metav1.Duration{Duration: time.Second}}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the catalog loaded", catalogLoaded(t, ns, "test", 1, 2), catalogStatus(t, ns, "test"))
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {package: cache-operator, channel: stable, version: 1.1.0, catalog: test}
`)
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")
}

// TestOLMDeprecations: a catalog's olm.deprecations reach the Subscription as OLM's
// conditions (BundleDeprecated for the version it runs, ChannelDeprecated for the channel
// it follows, Deprecated summing up, each with the catalog's words) and `status`; they
// follow the catalog as it changes and the version as it moves, and leave when nothing
// is deprecated any more. Ready is not touched: a deprecated operator still runs.
func TestOLMDeprecations(t *testing.T) {
	ns := "deprecations"
	newNamespace(t, ns)
	installDeprecated(t, ns)
	says := func(want map[string]string) func() bool {
		return func() bool {
			conds := getSub(t, ns, "cache").Status.Conditions
			for _, typ := range []string{omv1.ConditionDeprecated, omv1.ConditionPackageDeprecated, omv1.ConditionChannelDeprecated, omv1.ConditionBundleDeprecated} {
				c := meta.FindStatusCondition(conds, typ)
				msg, wanted := want[typ]
				if wanted != (c != nil) || (c != nil && (c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, msg))) {
					return false
				}
			}
			return meta.IsStatusConditionTrue(conds, omv1.ConditionReady)
		}
	}
	conditions := func() string { return fmt.Sprint(getSub(t, ns, "cache").Status.Conditions) }
	eventually(t, time.Minute, "the version and the channel said deprecated", says(map[string]string{
		omv1.ConditionBundleDeprecated: "CVE-2026-0001", omv1.ConditionChannelDeprecated: "stable closes",
		omv1.ConditionDeprecated: "stable closes in 2027; follow fast; 1.1.0 has CVE-2026-0001"}), conditions)
	// Said once: a Subscription whose version is deprecated is not written again and again.
	settled := getSub(t, ns, "cache").ResourceVersion
	time.Sleep(5 * time.Second)
	if now := getSub(t, ns, "cache").ResourceVersion; now != settled {
		t.Errorf("the deprecated Subscription keeps being written: resourceVersion %s -> %s: %v", settled, now, conditions())
	}
	if out, err := cli("status", "cache", "-n", ns); err != nil || !strings.Contains(out, "Deprecated:") || !strings.Contains(out, "upgrade to 1.2.0") {
		t.Errorf("status does not say what is deprecated (%v):\n%s", err, out)
	}

	// Upgraded: the version is no longer deprecated, the channel still is.
	patchSub(t, ns, "cache", func(s *omv1.Subscription) { s.Spec.Version = "1.2.0" })
	waitRunning(t, ns, "cache", "cache-operator.v1.2.0")
	eventually(t, time.Minute, "only the channel said deprecated after the upgrade", says(map[string]string{
		omv1.ConditionChannelDeprecated: "stable closes", omv1.ConditionDeprecated: "stable closes"}), conditions)

	// The catalog drops its deprecations: the conditions go.
	deprecatedCatalog(t, ns)
	eventually(t, time.Minute, "no deprecation said once the catalog has none", says(nil), conditions)
}

// TestConsoleShowsDeprecations: what a catalog deprecates reaches the console as a person
// reads it: the installed list marks the installation, its page says what is deprecated
// in the catalog's words and lists the Subscription's conditions (a pause shown as a
// choice, not a fault), and both follow the catalog when it drops the deprecations.
func TestConsoleShowsDeprecations(t *testing.T) {
	chrome := findChromium(t)
	ns := "console-deprecations"
	newNamespace(t, ns)
	uninstallAtEnd(t, ns, "cache")
	installDeprecated(t, ns)
	eventually(t, time.Minute, "the Subscription says it is deprecated", func() bool {
		return meta.IsStatusConditionTrue(getSub(t, ns, "cache").Status.Conditions, omv1.ConditionBundleDeprecated)
	}, func() string { return fmt.Sprint(getSub(t, ns, "cache").Status.Conditions) })

	base := startConsole(t, "admin", env.Kubeconfig)
	b := newBrowser(t, chrome, screenshotDir(t))
	row := `document.querySelector('tr[data-key="` + ns + `/cache"] td.c-version')`
	b.do("the installed list marks the installation deprecated", 30*time.Second,
		chromedp.Navigate(base+"/#/installed"),
		b.until(row+`.classList.contains('warn') && `+row+`.textContent.includes('deprecated') && `+row+`.title.includes('CVE-2026-0001')`),
	)
	b.do("the installation page says what is deprecated and lists the conditions", 30*time.Second,
		chromedp.Navigate(base+"/#/installations/"+ns+"/cache"),
		b.until(`!document.querySelector('#inst-deprecation').hidden &&
			document.querySelector('#inst-deprecation li[data-type="BundleDeprecated"]').textContent.includes('1.1.0 has CVE-2026-0001') &&
			document.querySelector('#inst-deprecation li[data-type="ChannelDeprecated"]').textContent.includes('stable closes in 2027') &&
			!document.querySelector('#inst-deprecation li[data-type="PackageDeprecated"]')`),
		b.until(`!!document.querySelector('#conditions-table tr[data-type="Ready"][data-status="True"]:not(.bad)') &&
			!!document.querySelector('#conditions-table tr[data-type="BundleDeprecated"][data-status="True"].bad') &&
			!!document.querySelector('#conditions-table tr[data-type="Deprecated"][data-status="True"].bad')`),
	)
	b.shot("deprecated-installation")

	// Paused: Resolved is False with reason Paused, which the page shows as a person's
	// choice, not as a fault.
	if out, err := cli("pause", "cache", "-n", ns); err != nil {
		t.Fatalf("pause: %v\n%s", err, out)
	}
	b.do("the paused installation's Resolved=False reads as a choice", 30*time.Second,
		b.until(`!!document.querySelector('#conditions-table tr[data-type="Resolved"][data-status="False"]:not(.bad) .badge.wait')`))
	if out, err := cli("resume", "cache", "-n", ns); err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}

	// The catalog drops its deprecations: the page, left open, follows.
	deprecatedCatalog(t, ns)
	b.do("the open page drops the deprecation with the catalog", time.Minute,
		b.untilFor(time.Minute, `document.querySelector('#inst-deprecation').hidden &&
			!document.querySelector('#conditions-table tr[data-type="BundleDeprecated"]') &&
			!!document.querySelector('#conditions-table tr[data-type="Ready"][data-status="True"]')`),
	)
	b.do("the installed list no longer marks it", 30*time.Second,
		chromedp.Navigate(base+"/#/installed"),
		b.until(`!!`+row+` && !`+row+`.classList.contains('warn') && !`+row+`.textContent.includes('deprecated')`),
	)
	b.checkConsole()
}
