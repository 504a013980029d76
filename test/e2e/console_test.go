package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/testenv"
)

// TestConsole drives the web console in a real (headless) Chromium, as a person would:
// browse the catalog, install cache-operator 1.2.0 after reading the RBAC it gets and the
// dry-run Subscription, watch it succeed, upgrade to the broken 1.3.0 and see the
// automatic rollback in the timeline, roll back by hand to revision 1, uninstall; then,
// as a user who may only read, see a change refused with the API server's message. It
// writes a screenshot of each page (OPM_CONSOLE_SCREENSHOTS, else work/console-screenshots).
//
// The page's ids and data-testid attributes are listed at the top of
// internal/console/web/app.js.
func TestConsole(t *testing.T) {
	chrome := findChromium(t)
	shots := screenshotDir(t)

	ns := "console"
	newNamespace(t, ns) // with the CatalogSource "samples" for the sample catalog
	uninstallAtEnd(t, ns, "cache")
	base := startConsole(t, "admin", env.Kubeconfig)
	b := newBrowser(t, chrome, shots)

	// The catalog: the CatalogSources, then the packages of the namespace's own one.
	b.do("open the catalog", 30*time.Second,
		chromedp.Navigate(base+"/#/catalog"),
		chromedp.WaitVisible(chromedp.CSS(`a[data-testid="catalog-console-samples"]`)),
		b.until(`document.querySelector('#whoami').textContent.trim().length > 1 && document.querySelector('#whoami').textContent !== '…'`),
		chromedp.Click(chromedp.CSS(`a[data-testid="catalog-console-samples"]`)),
		b.until(`location.hash === '#/catalog/console/samples' && !!document.querySelector('[data-testid="package-guard-operator"]')`),
	)
	b.shot("1-catalog")
	b.do("search the catalog for cache", 30*time.Second,
		chromedp.SendKeys(chromedp.ID("package-search"), "cache-op"),
		b.until(`!!document.querySelector('[data-testid="package-cache-operator"]') && !document.querySelector('[data-testid="package-guard-operator"]')`),
		chromedp.Click(chromedp.CSS(`a[data-testid="package-link-cache-operator"]`)),
		chromedp.WaitVisible(chromedp.ID("install-form")),
		b.until(`!!document.querySelector('#package-versions tr[data-version="1.3.0"]') && !!document.querySelector('#package-versions tr[data-version="1.2.0"]')`),
	)

	// The install form, its preview (RBAC and the dry-run Subscription), then the real thing.
	b.do("fill the install form and review it", 60*time.Second,
		chromedp.SetValue(chromedp.ID("install-namespace"), ns),
		chromedp.SetValue(chromedp.ID("install-name"), "cache"),
		chromedp.SetValue(chromedp.ID("install-channel"), "stable"),
		chromedp.SetValue(chromedp.ID("install-version"), "1.2.0"),
		chromedp.SetValue(chromedp.ID("install-target-namespaces"), ns),
		chromedp.Click(chromedp.ID("install-review")),
		chromedp.WaitVisible(chromedp.ID("install-confirm")),
		b.until(`(() => {
			const rbac = document.querySelector('#install-rbac');
			const sub = document.querySelector('#install-subscription');
			return !!rbac && rbac.querySelectorAll('tbody tr').length > 0 &&
				!!sub && sub.textContent.includes('"kind": "Subscription"') && sub.textContent.includes('1.2.0') && sub.textContent.includes('cache-operator');
		})()`),
	)
	b.shot("2-package-install")
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache"}, &omv1.Subscription{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the review created the Subscription (or failed to read it): %v", err)
	}
	b.do("create the Subscription", 30*time.Second,
		chromedp.Click(chromedp.ID("install-confirm")),
		b.until(`location.hash === '#/installations/console/cache'`),
	)
	sub := getSub(t, ns, "cache")
	if sub.Spec.Package != "cache-operator" || sub.Spec.Channel != "stable" || sub.Spec.Version != "1.2.0" || sub.Spec.Catalog != "samples" {
		t.Errorf("the form created %+v", sub.Spec)
	}

	// The installation page: Succeeded, revision 1 in the timeline.
	b.do("wait for the install to succeed", 3*time.Minute, b.untilFor(3*time.Minute,
		`document.querySelector('#inst-phase').textContent.trim() === 'Succeeded' &&
		 !!document.querySelector('#timeline-rows tr[data-revision="1"][data-outcome="Succeeded"]')`))
	// When it may upgrade (no windows: any time) and what the operator was rendered to watch.
	b.do("its upgrade windows and what it watches", 30*time.Second, b.until(
		`document.querySelector('#inst-windows').textContent === 'any time' &&
		 !!document.querySelector('#health-deployments td.c-watches') &&
		 !['', '–'].includes(document.querySelector('#health-deployments td.c-watches').textContent)`))

	// The installed list, updated live: pause and resume from outside the browser and see
	// the row change in place, with no reload.
	b.do("the installed list", 30*time.Second,
		chromedp.Click(chromedp.ID("nav-installed")),
		chromedp.WaitVisible(chromedp.CSS(`#installed-rows tr[data-key="console/cache"]`)),
		b.until(`document.querySelector('#installed-rows tr[data-key="console/cache"] .c-phase').textContent === 'Succeeded'`),
		b.until(`(window.__noReload = true)`),
	)
	b.shot("3-installed")
	setPaused(t, ns, "cache", true)
	b.do("the row shows the pause live", 30*time.Second,
		b.until(`window.__noReload === true && document.querySelector('#installed-rows tr[data-key="console/cache"] .c-pending').textContent === 'paused'`))
	setPaused(t, ns, "cache", false)
	b.do("the row shows the resume live", 30*time.Second,
		b.until(`window.__noReload === true && document.querySelector('#installed-rows tr[data-key="console/cache"] .c-pending').textContent === ''`),
		chromedp.SendKeys(chromedp.ID("installed-filter"), "no-such-thing"),
		b.until(`document.querySelector('#installed-rows tr[data-key="console/cache"]').hidden`),
		b.until(`(() => { const f = document.querySelector('#installed-filter'); f.value = ''; return true; })()`),
		chromedp.SendKeys(chromedp.ID("installed-filter"), "cache"),
		b.until(`!document.querySelector('#installed-rows tr[data-key="console/cache"]').hidden`),
		chromedp.Click(chromedp.CSS(`#installed-rows tr[data-key="console/cache"] .c-name a`)),
		b.until(`location.hash === '#/installations/console/cache' && document.querySelector('#inst-phase').textContent.trim() === 'Succeeded'`),
	)

	// The form has no health timeout, and the default (5m) is too long for a test: the
	// broken version should fail within seconds.
	setHealthTimeout(t, ns, "cache", 20*time.Second)

	// Upgrade to the broken 1.3.0 with the button: it fails and is rolled back by itself.
	b.do("upgrade to 1.3.0", time.Minute,
		b.until(`(() => {
			const s = document.querySelector('#upgrade-version');
			const o = Array.from(s.options).find((o) => o.textContent.startsWith('1.3.0'));
			if (!o) return false;
			s.value = o.value;
			return true;
		})()`),
		chromedp.Click(chromedp.ID("action-upgrade")),
		chromedp.WaitVisible(chromedp.ID("confirm-dialog")),
		b.until(`document.querySelector('#confirm-body').textContent.includes('1.3.0')`),
	)
	b.shot("4a-confirm-upgrade")
	b.do("confirm the upgrade", 30*time.Second,
		chromedp.Click(chromedp.ID("confirm-ok")),
		chromedp.WaitNotVisible(chromedp.ID("confirm-dialog")),
	)
	b.do("wait for the failed revision and the automatic rollback", 3*time.Minute, b.untilFor(3*time.Minute, `(() => {
		const rows = Array.from(document.querySelectorAll('#timeline-rows tr[data-revision]'));
		const failed = rows.find((r) => r.querySelector('.c-csv').textContent.includes('1.3.0') &&
			['Failed', 'RolledBack'].includes(r.dataset.outcome) && r.querySelector('.c-reason').textContent.trim() !== '');
		const back = rows.find((r) => Number(r.dataset.revision) > 2 && r.querySelector('.c-trigger').textContent === 'Rollback' &&
			r.dataset.outcome === 'Succeeded' && r.querySelector('.c-csv').textContent.includes('1.2.0'));
		return !!failed && !!back && failed.classList.contains('bad');
	})()`))
	b.shot("4b-installation-rolled-back")

	// The change ended RolledBack: Retry tries 1.3.0 again (it fails again and is rolled
	// back again: its fault is in the version, but the button does what it says).
	b.do("retry the upgrade to 1.3.0", time.Minute,
		b.until(`!document.querySelector('#action-retry').hidden && document.querySelector('#action-retry').title.includes('1.3.0')`),
		chromedp.Click(chromedp.ID("action-retry")),
		chromedp.WaitVisible(chromedp.ID("confirm-dialog")),
		b.until(`document.querySelector('#confirm-title').textContent.includes('cache-operator.v1.3.0')`),
		chromedp.Click(chromedp.ID("confirm-ok")),
		chromedp.WaitNotVisible(chromedp.ID("confirm-dialog")),
	)
	b.do("wait for the second attempt and its rollback", 3*time.Minute, b.untilFor(3*time.Minute, `(() => {
		const rows = Array.from(document.querySelectorAll('#timeline-rows tr[data-revision]'));
		const tries = rows.filter((r) => r.querySelector('.c-csv').textContent.includes('1.3.0') && r.querySelector('.c-trigger').textContent !== 'Rollback');
		const backs = rows.filter((r) => r.querySelector('.c-trigger').textContent === 'Rollback' && r.dataset.outcome === 'Succeeded');
		return tries.length === 2 && backs.length === 2 && document.querySelector('#inst-phase').textContent.trim() === 'RolledBack' &&
			document.querySelector('#inst-ready').dataset.tone === 'bad';
	})()`))

	// Roll back by hand to revision 1.
	b.do("roll back to revision 1", time.Minute,
		b.until(`(() => {
			const s = document.querySelector('#rollback-revision');
			if (!Array.from(s.options).some((o) => o.value === '1')) return false;
			s.value = '1';
			return true;
		})()`),
		chromedp.Click(chromedp.ID("action-rollback")),
		chromedp.WaitVisible(chromedp.ID("confirm-dialog")),
		b.until(`document.querySelector('#confirm-title').textContent.includes('revision 1')`),
		chromedp.Click(chromedp.ID("confirm-ok")),
		chromedp.WaitNotVisible(chromedp.ID("confirm-dialog")),
	)
	b.do("wait for the manual rollback to succeed", 3*time.Minute, b.untilFor(3*time.Minute, `(() => {
		const top = document.querySelector('#timeline-rows tr[data-revision]');
		return !!top && Number(top.dataset.revision) >= 4 && top.dataset.outcome === 'Succeeded' &&
			top.querySelector('.c-csv').textContent.includes('1.2.0') &&
			document.querySelector('#inst-phase').textContent.trim() === 'Succeeded' &&
			document.querySelector('#inst-ready').dataset.tone !== 'bad'; // held by a person's rollback: no fault
	})()`))
	b.shot("5-installation")
	if bp := getBlueprint(t, ns, "cache"); bp.Status.CurrentCSV != "cache-operator.v1.2.0" {
		t.Errorf("after the rollback the Blueprint runs %s: %s", bp.Status.CurrentCSV, historyOf(bp))
	}

	// Uninstall with the button: the Subscription goes.
	b.do("uninstall", time.Minute,
		chromedp.Click(chromedp.ID("action-uninstall")),
		chromedp.WaitVisible(chromedp.ID("confirm-dialog")),
		b.until(`document.querySelector('#confirm-body').textContent.includes('delete')`),
		chromedp.Click(chromedp.ID("confirm-ok")),
		chromedp.WaitNotVisible(chromedp.ID("confirm-dialog")),
	)
	eventually(t, 2*time.Minute, "the Subscription console/cache deleted", func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache"}, &omv1.Subscription{}))
	}, describeSub(t, ns, "cache"))
	b.do("the page says the installation is gone", 30*time.Second, chromedp.WaitVisible(chromedp.ID("inst-gone")))

	// A user who may only read: the change is refused by the API server, and the page says so.
	ro := "console-ro"
	newNamespace(t, ro)
	applyYAML(t, ro, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.2.0, catalog: samples, targetNamespaces: [console-ro]}
`)
	roBase := startConsole(t, "reader", readerKubeconfig(t, ro))
	b.do("open the installation as the reader", time.Minute,
		chromedp.Navigate(roBase+"/#/installations/console-ro/cache"),
		b.until(`document.querySelector('#whoami').textContent.includes('reader')`),
		b.until(`document.querySelector('#inst-version').textContent !== '…' && document.querySelector('#error-box').hidden`),
		// The page is filled in: the click lands on Pause, not on what was there a moment ago.
		b.until(`!document.querySelector('#upgrade-version').textContent.includes('loading') && !document.querySelector('#action-pause').disabled`),
		chromedp.Click(chromedp.ID("action-pause")),
		// The API server's dry run already checks RBAC, so the refusal may come before the
		// dialog; if the dialog opens, confirm it.
		b.until(`document.querySelector('#confirm-dialog').open || !document.querySelector('#error-box').hidden`),
	)
	if open, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`document.querySelector('#confirm-dialog').open`)); err == nil && open {
		b.do("confirm the pause", 30*time.Second, chromedp.Click(chromedp.ID("confirm-ok")))
	}
	b.do("see the refusal", 30*time.Second,
		b.until(`!document.querySelector('#error-box').hidden && /forbidden/i.test(document.querySelector('#error-text').textContent)`))
	msg, _ := chromedp.Run(b.ctx, chromedp.TextContent(chromedp.ID("error-text")))
	t.Logf("the refusal the page shows: %s", msg)
	if !strings.Contains(msg, "cannot patch") && !strings.Contains(msg, "cannot update") {
		t.Errorf("the error box does not carry the API server's message: %q", msg)
	}
	if role, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector('#error-box').getAttribute('role')`)); role != "alert" {
		t.Errorf("the error box has role %q, want alert", role)
	}
	b.shot("6-forbidden")
	if getSub(t, ro, "cache").Spec.Paused {
		t.Error("the reader paused the Subscription")
	}
	b.checkConsole()
}

// findChromium finds the distribution's Chromium; the test fails, not skips, without it.
// screenshotDir is where the browser tests write their screenshots:
// OPM_CONSOLE_SCREENSHOTS, else work/console-screenshots.
func screenshotDir(t *testing.T) string {
	t.Helper()
	shots := os.Getenv("OPM_CONSOLE_SCREENSHOTS")
	if shots == "" {
		shots = filepath.Join(work, "console-screenshots")
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("console screenshots go to %s", shots)
	return shots
}

func findChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("OPM_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("the console test needs Chromium on the PATH: apt-get install chromium (or set OPM_CHROMIUM to a Chrome binary)")
	return ""
}

func setPaused(t *testing.T, ns, name string, paused bool) {
	t.Helper()
	patchSub(t, ns, name, func(s *omv1.Subscription) { s.Spec.Paused = paused })
}

func setHealthTimeout(t *testing.T, ns, name string, d time.Duration) {
	t.Helper()
	patchSub(t, ns, name, func(s *omv1.Subscription) { s.Spec.Health = &omv1.HealthPolicy{Timeout: &metav1.Duration{Duration: d}} })
}

// syncBuffer collects a subprocess's output.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startConsole runs `operator-manager console` with a kubeconfig and returns its URL once
// it answers.
func startConsole(t *testing.T, who, kubeconfig string) string {
	t.Helper()
	ports, err := testenv.FreePorts(1) // below the ephemeral range: no client connection takes it meanwhile
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	out := &syncBuffer{}
	cmd := exec.Command(managerBin, "--kubeconfig", kubeconfig, "console", "--addr", addr)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("console (%s) output:\n%s", who, tail(out.String(), 6000))
		}
	})
	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("operator-manager console (%s) ended: %v\n%s", who, err, out.String())
		default:
		}
		resp, err := http.Get(base + "/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("operator-manager console (%s) does not answer on %s: %v\n%s", who, addr, err, out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// readerKubeconfig makes a ServiceAccount of ns that may only read Subscriptions and
// Blueprints there, and writes a kubeconfig with a token for it.
func readerKubeconfig(t *testing.T, ns string) string {
	t.Helper()
	token := readerToken(t, ns)
	admin, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kctx := admin.Contexts[admin.CurrentContext]
	if kctx == nil {
		t.Fatalf("kubeconfig %s has no current context", env.Kubeconfig)
	}
	cluster := admin.Clusters[kctx.Cluster]
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = cluster
	cfg.AuthInfos["reader"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["reader@local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "reader", Namespace: ns}
	cfg.CurrentContext = "reader@local"
	path := filepath.Join(work, "console-reader.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// readerToken makes a ServiceAccount "reader" of ns that may only read Subscriptions and
// Blueprints there, and returns a token for it (an hour).
func readerToken(t *testing.T, ns string) string {
	t.Helper()
	group := omv1.GroupVersion.Group
	for _, o := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{group}, Resources: []string{"subscriptions", "blueprints"}, Verbs: []string{"get", "list", "watch"},
		}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "reader", Namespace: ns}}},
	} {
		if err := k8s.Create(ctx(), o); err != nil {
			t.Fatal(err)
		}
	}
	return strings.TrimSpace(kubectl(t, "-n", ns, "create", "token", "reader", "--duration", "1h"))
}

// browser is one headless Chromium tab and what its pages wrote to the console.
type browser struct {
	t     *testing.T
	ctx   context.Context
	shots string
	mu    sync.Mutex
	logs  []string
}

func newBrowser(t *testing.T, chrome, shots string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome),
		chromedp.WindowSize(1366, 768),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to sandbox as root
	}
	// The whole browser part is bounded; each step has its own, shorter bound.
	bounded, cancelBound := context.WithTimeout(context.Background(), 12*time.Minute)
	actx, cancelAlloc := chromedp.NewExecAllocator(bounded, opts...)
	tctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		cancelBound()
	})
	b := &browser{t: t, ctx: tctx, shots: shots}
	// Start the browser now, so that a missing or broken Chromium fails here, clearly.
	if err := chromedp.Do(tctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting Chromium %s: %v (apt-get install chromium)", chrome, err)
	}
	messages := chromedp.Console(tctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			line := m.String()
			if m.URL != "" {
				line += fmt.Sprintf(" (%s:%d)", m.URL, m.Line+1)
			}
			b.mu.Lock()
			b.logs = append(b.logs, line)
			b.mu.Unlock()
		}
	}()
	return b
}

// until waits, in the page, for a JavaScript expression to be truthy (30 s at most).
func (b *browser) until(expr string) chromedp.Action[chromedp.Void] {
	return b.untilFor(30*time.Second, expr)
}

func (b *browser) untilFor(d time.Duration, expr string) chromedp.Action[chromedp.Void] {
	// The page is rebuilt after a navigation (a hash change renders asynchronously), so an
	// element the expression reads may not exist yet: that is "not yet", not a failure.
	// Chromedp's Poll ends at the first exception, so it is caught here and polling goes on.
	guarded := "(() => { try { return !!(" + expr + "); } catch (e) { return false; } })()"
	p := chromedp.Poll[bool](guarded, chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(d))
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := p(ctx, t)
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", strings.Join(strings.Fields(expr), " "), err)
		}
		return nil
	})
}

// do runs the steps within d, and on failure fails the test with what the page shows.
func (b *browser) do(what string, d time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, d)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.shot("failed-" + regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(what), "-"))
		b.t.Fatalf("%s: %v\n%s", what, err, b.state())
	}
}

// state describes the page for a failure message.
func (b *browser) state() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	page, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + '\n' +
		'error box: ' + (document.querySelector('#error-box') && !document.querySelector('#error-box').hidden ? document.querySelector('#error-text').textContent : '(none)') + '\n' +
		(document.querySelector('#view') ? document.querySelector('#view').innerText.slice(0, 4000) : '')`))
	if err != nil {
		page = "(page unreadable: " + err.Error() + ")"
	}
	b.mu.Lock()
	logs := strings.Join(b.logs, "\n")
	b.mu.Unlock()
	return "page: " + page + "\nbrowser console:\n" + tail(logs, 4000)
}

// shot writes a full-page PNG of the page as it is.
func (b *browser) shot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	path := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Error(err)
		return
	}
	b.t.Logf("screenshot %s", path)
}

// checkConsole fails the test on an uncaught exception or a Content Security Policy
// violation in any page.
func (b *browser) checkConsole() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var bad []string
	for _, l := range b.logs {
		if strings.HasPrefix(l, string(chromedp.ConsoleException)) || strings.Contains(l, "Content Security Policy") {
			bad = append(bad, l)
		}
	}
	if len(bad) > 0 {
		b.t.Errorf("the pages wrote errors to the browser console:\n%s", strings.Join(bad, "\n"))
	}
}
