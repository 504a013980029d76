// operator-manager console: the single page, plain JavaScript, no framework, nothing loaded
// from anywhere but the console itself. It uses only the HTTP API of docs/console-api.md.
// Every element is built with the DOM API and text set through textContent: nothing read
// from the cluster is ever parsed as HTML.
//
// Stable hooks for tests (ids are unique on the page; data-testid repeats per item):
//
//   header       #nav-catalog, #nav-installed, #whoami (user @ context),
//                #stream-status (data-state="live"|"reconnecting")
//   errors       #error-box [role=alert] (data-testid="error"), #error-text, #error-dismiss
//   confirmation #confirm-dialog (<dialog>, open while asking), #confirm-title, #confirm-body,
//                #confirm-patch, #confirm-before, #confirm-after, #confirm-ok, #confirm-cancel
//   #/catalog[/NS/NAME]
//                #catalog-list; a[data-testid="catalog-NS-NAME"] per CatalogSource;
//                #package-search (input, debounced); #package-list;
//                [data-testid="package-PKG"] per package card, its link
//                a[data-testid="package-link-PKG"]
//   #/catalog/NS/NAME/PKG
//                #package-title, #package-channels, #package-versions (tr[data-version]),
//                #recommend-namespace, #recommend-button, #recommend-result;
//                #install-form with #install-namespace, #install-name, #install-channel,
//                #install-version (value: a version, "" follows the channel),
//                #install-approval, #install-target-namespaces (comma separated),
//                #install-service-account, #install-review (submit);
//                #install-preview (shown after review), #install-rbac (table of rules),
//                #install-subscription (the dry-run Subscription, JSON), #install-confirm,
//                #install-cancel
//   #/installed  #installed-filter, #installed-table, #installed-rows,
//                tr[data-key="NS/NAME"] (data-testid="row-NS-NAME") with cells
//                td.c-namespace, .c-name, .c-package, .c-version, .c-phase, .c-ready,
//                .c-pending (.c-version.warn with the message as its title when deprecated);
//                #installed-count
//   #/installations/NS/NAME
//                #inst-title, #inst-phase, #inst-ready, #inst-version, #inst-pending,
//                #inst-paused, #inst-windows, #inst-gone (shown once the Subscription is deleted);
//                #inst-deprecation (shown when the catalog deprecates the package, channel
//                or version; li[data-type=PackageDeprecated|ChannelDeprecated|BundleDeprecated]);
//                #conditions-table with tr[data-type=T][data-status=S], the Subscription's conditions;
//                actions #action-approve, #upgrade-version (select of CSVs),
//                #action-upgrade, #upgrade-hint (why no versions), #rollback-revision (select of succeeded revisions),
//                #action-rollback, #action-retry (a change that ended badly), #action-pause, #action-resume, #action-uninstall;
//                #health (#health-phase, #health-waiting, #health-timeleft,
//                #health-deployments with td.c-watches, #health-pods), #preflight, #dependencies,
//                #dependents, #events; #preflight > p[data-status="passed"|"blocked"];
//                #timeline, #timeline-rows with tr[data-revision=N][data-outcome=O]
//                (data-testid="revision-N"), cells td.c-revision, .c-trigger, .c-csv,
//                .c-outcome, .c-reason, .c-message, .c-start, .c-duration
'use strict';

(function () {
  // ---- small helpers -------------------------------------------------------------------

  const $ = (sel, root) => (root || document).querySelector(sel);

  // h builds an element: h('a', {href: '#', class: 'x', dataset: {k: 'v'}}, 'text', child).
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    if (attrs) {
      for (const [k, v] of Object.entries(attrs)) {
        if (v === undefined || v === null || v === false) continue;
        if (k === 'class') el.className = v;
        else if (k === 'dataset') Object.assign(el.dataset, v);
        else if (k === 'on') for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
        else if (k === 'text') el.textContent = v;
        else if (k in el && typeof v !== 'string') el[k] = v;
        else el.setAttribute(k, v === true ? '' : String(v));
      }
    }
    append(el, children);
    return el;
  }

  function append(el, children) {
    for (const c of children.flat(Infinity)) {
      if (c === undefined || c === null || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
  }

  function replace(el, ...children) {
    el.replaceChildren();
    append(el, children);
  }

  function setText(el, text) {
    const t = text === undefined || text === null ? '' : String(text);
    if (el.textContent !== t) el.textContent = t;
  }

  function debounce(fn, ms) {
    let timer = null;
    return (...args) => {
      clearTimeout(timer);
      timer = setTimeout(() => fn(...args), ms);
    };
  }

  const enc = encodeURIComponent;
  const keyOf = (o) => o.namespace + '/' + o.name;
  const testid = (s) => String(s).replace(/[^A-Za-z0-9_.-]/g, '-');

  function fmtTime(s) {
    if (!s) return '';
    const d = new Date(s);
    if (isNaN(d)) return String(s);
    const p = (n) => String(n).padStart(2, '0');
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
  }

  // fmtShort is the time of day for today, else the date and time.
  function fmtShort(s) {
    const full = fmtTime(s);
    const d = new Date(s);
    if (!s || isNaN(d)) return full;
    return d.toDateString() === new Date().toDateString() ? full.slice(11) : full;
  }

  function fmtLeft(ms) {
    if (ms <= 0) return 'deadline passed';
    const s = Math.ceil(ms / 1000);
    const hr = Math.floor(s / 3600);
    const m = Math.floor((s % 3600) / 60);
    const sec = s % 60;
    if (hr > 0) return `${hr}h${String(m).padStart(2, '0')}m`;
    return m > 0 ? `${m}m${String(sec).padStart(2, '0')}s` : `${sec}s`;
  }

  const json = (v) => JSON.stringify(v === undefined ? null : v, null, 2);

  // ---- the API -------------------------------------------------------------------------

  class APIError extends Error {
    constructor(message, status, reason) {
      super(message);
      this.status = status;
      this.reason = reason;
    }
  }

  async function api(path, opts) {
    opts = opts || {};
    const init = { headers: { Accept: 'application/json' }, signal: opts.signal, credentials: 'same-origin' };
    if (opts.body !== undefined) {
      init.method = 'POST';
      init.headers['Content-Type'] = 'application/json';
      init.headers['X-Requested-By'] = 'operator-manager-console';
      init.body = JSON.stringify(opts.body);
    }
    const res = await fetch(path, init);
    const text = await res.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch (e) {
      data = null;
    }
    if (!res.ok) {
      const msg = (data && data.error) || text.trim() || res.statusText;
      throw new APIError(msg, res.status, data && data.reason);
    }
    return data;
  }

  // ---- errors and confirmation -----------------------------------------------------------

  function showError(what, err) {
    if (err && err.name === 'AbortError') return;
    const box = $('#error-box');
    let msg = err && err.message ? err.message : String(err);
    if (err && err.status) msg += ` (HTTP ${err.status}${err.reason ? ', ' + err.reason : ''})`;
    setText($('#error-text'), what ? `${what}: ${msg}` : msg);
    box.hidden = false;
  }

  function clearError() {
    $('#error-box').hidden = true;
    setText($('#error-text'), '');
  }

  let confirmResolve = null;

  // confirmChange shows a change returned by a dry run and resolves true when confirmed.
  function confirmChange(title, change, okLabel) {
    const dlg = $('#confirm-dialog');
    setText($('#confirm-title'), title);
    const body = $('#confirm-body');
    const c = change || {};
    const parts = [h('p', { class: 'change-what' },
      h('strong', null, (c.verb || 'change') + ' '), `${c.kind || ''} ${c.namespace ? c.namespace + '/' : ''}${c.name || ''}`)];
    if (c.verb === 'delete') parts.push(h('p', { class: 'warn' }, 'This deletes the object. The manager then uninstalls the operator.'));
    if (c.patch !== undefined) parts.push(h('h3', null, 'Patch'), h('pre', { id: 'confirm-patch', class: 'code' }, json(c.patch)));
    if (c.before !== undefined || c.after !== undefined) {
      parts.push(h('div', { class: 'diff' },
        h('div', null, h('h3', null, 'Before'), h('pre', { id: 'confirm-before', class: 'code before' }, json(c.before))),
        h('div', { class: 'arrow', 'aria-hidden': 'true' }, '→'),
        h('div', null, h('h3', null, 'After'), h('pre', { id: 'confirm-after', class: 'code after' }, json(c.after)))));
    }
    if (c.object !== undefined) parts.push(h('pre', { class: 'code' }, json(c.object)));
    parts.push(h('p', { class: 'muted' }, 'The API server accepted this as a dry run; nothing has changed yet.'));
    replace(body, parts);
    setText($('#confirm-ok'), okLabel || 'Apply');
    if (confirmResolve) confirmResolve(false);
    return new Promise((resolve) => {
      confirmResolve = resolve;
      if (!dlg.open) dlg.showModal();
      $('#confirm-ok').focus();
    });
  }

  function closeConfirm(ok) {
    const dlg = $('#confirm-dialog');
    if (dlg.open) dlg.close();
    if (confirmResolve) {
      const r = confirmResolve;
      confirmResolve = null;
      r(ok);
    }
  }

  // ---- the live stream of installations ------------------------------------------------------

  const rows = new Map(); // "ns/name" -> row
  const streamListeners = new Set();
  let listLoaded = null; // a promise of the first full list

  function loadRows() {
    const fresh = new Set();
    return api('/api/installations').then((list) => {
      for (const r of list || []) {
        fresh.add(keyOf(r));
        rows.set(keyOf(r), r);
        emit('installation', r);
      }
      for (const k of Array.from(rows.keys())) {
        if (!fresh.has(k)) {
          const [namespace, name] = k.split('/');
          rows.delete(k);
          emit('deleted', { namespace, name });
        }
      }
    });
  }

  function emit(type, data) {
    for (const fn of streamListeners) {
      try {
        fn(type, data);
      } catch (e) {
        console.error(e);
      }
    }
  }

  function startStream() {
    const status = $('#stream-status');
    const es = new EventSource('/api/installations/stream');
    let broken = false;
    es.addEventListener('open', () => {
      status.dataset.state = 'live';
      setText(status, '● live');
      // After a break events were missed: read the whole list once more.
      if (broken) loadRows().catch((e) => showError('Reading the installations', e));
      broken = false;
    });
    es.addEventListener('error', () => {
      broken = true;
      status.dataset.state = 'reconnecting';
      setText(status, '○ reconnecting…');
    });
    es.addEventListener('installation', (e) => {
      let r;
      try {
        r = JSON.parse(e.data);
      } catch (err) {
        return;
      }
      rows.set(keyOf(r), r);
      emit('installation', r);
    });
    es.addEventListener('deleted', (e) => {
      let r;
      try {
        r = JSON.parse(e.data);
      } catch (err) {
        return;
      }
      rows.delete(keyOf(r));
      emit('deleted', r);
    });
  }

  // ---- routing -------------------------------------------------------------------------------

  // Each page gets a fresh Page; its cleanups run when the next page starts.
  class Page {
    constructor() {
      this.cleanups = [];
      this.alive = true;
      this.abort = new AbortController();
    }
    onStream(fn) {
      streamListeners.add(fn);
      this.cleanups.push(() => streamListeners.delete(fn));
    }
    every(ms, fn) {
      const id = setInterval(fn, ms);
      this.cleanups.push(() => clearInterval(id));
    }
    close() {
      this.alive = false;
      this.abort.abort();
      for (const c of this.cleanups) c();
    }
  }

  let page = null;

  function route() {
    if (page) page.close();
    page = new Page();
    clearError();
    closeConfirm(false);
    const hash = location.hash.replace(/^#\/?/, '');
    const parts = hash.split('/').filter(Boolean).map(decodeURIComponent);
    const view = $('#view');
    view.replaceChildren();
    for (const a of document.querySelectorAll('header nav a')) a.removeAttribute('aria-current');
    let nav = null;
    try {
      if (parts[0] === 'installed') {
        nav = 'installed';
        installedPage(page, view);
      } else if (parts[0] === 'installations' && parts.length >= 3) {
        nav = 'installed';
        installationPage(page, view, parts[1], parts[2]);
      } else if (parts[0] === 'catalog' && parts.length >= 4) {
        nav = 'catalog';
        packagePage(page, view, parts[1], parts[2], parts[3]);
      } else if (parts[0] === 'catalog' && parts.length >= 3) {
        nav = 'catalog';
        catalogPage(page, view, parts[1] + '/' + parts[2]);
      } else {
        nav = 'catalog';
        catalogPage(page, view, '');
      }
    } catch (e) {
      showError('Showing the page', e);
    }
    if (nav) $('#nav-' + nav).setAttribute('aria-current', 'page');
  }

  // ---- #/catalog -----------------------------------------------------------------------------

  function catalogPage(pg, view, selected) {
    document.title = 'Catalog · operator-manager';
    const list = h('ul', { id: 'catalog-list', class: 'catalogs', 'aria-label': 'Catalog sources' }, h('li', { class: 'muted' }, 'Loading catalogs…'));
    const search = h('input', { id: 'package-search', type: 'search', placeholder: 'name, description, keyword', autocomplete: 'off' });
    const packages = h('div', { id: 'package-list', class: 'packages', 'aria-live': 'polite' });
    const heading = h('h2', { id: 'packages-title' }, 'Packages');
    view.append(
      h('h1', null, 'Catalog'),
      h('div', { class: 'catalog-layout' },
        h('section', { 'aria-labelledby': 'catalogs-title' }, h('h2', { id: 'catalogs-title' }, 'Catalog sources'), list),
        h('section', { 'aria-labelledby': 'packages-title' }, heading,
          h('div', { class: 'field inline' }, h('label', { for: 'package-search' }, 'Search packages'), search),
          packages)));

    let current = null;
    let inflight = null;
    const load = () => {
      if (!current) return;
      if (inflight) inflight.abort();
      inflight = new AbortController();
      const q = search.value.trim();
      const [ns, name] = current.split('/');
      packages.setAttribute('aria-busy', 'true');
      api(`/api/catalogs/${enc(ns)}/${enc(name)}/packages` + (q ? '?q=' + enc(q) : ''), { signal: inflight.signal })
        .then((pkgs) => {
          if (!pg.alive) return;
          packages.removeAttribute('aria-busy');
          renderPackages(packages, ns, name, pkgs || [], q);
        })
        .catch((e) => {
          packages.removeAttribute('aria-busy');
          showError('Reading the packages of ' + current, e);
        });
    };
    search.addEventListener('input', debounce(load, 250));

    api('/api/catalogs', { signal: pg.abort.signal }).then((cats) => {
      if (!pg.alive) return;
      cats = cats || [];
      if (!cats.length) {
        replace(list, h('li', { class: 'muted' }, 'No CatalogSource you may list.'));
        return;
      }
      if (!selected || !cats.some((c) => keyOf(c) === selected)) {
        const first = cats.find((c) => c.ready) || cats[0];
        selected = keyOf(first);
      }
      current = selected;
      setText(heading, 'Packages of ' + current);
      replace(list, cats.map((c) => h('li', { class: keyOf(c) === current ? 'selected' : '' },
        h('a', {
          href: `#/catalog/${enc(c.namespace)}/${enc(c.name)}`,
          'data-testid': 'catalog-' + testid(c.namespace) + '-' + testid(c.name),
          'aria-current': keyOf(c) === current ? 'true' : null,
        }, h('strong', null, c.name), h('span', { class: 'muted' }, ' in ' + c.namespace)),
        h('div', { class: 'small' },
          h('span', { class: 'badge ' + (c.ready ? 'ok' : 'bad') }, c.ready ? 'ready' : 'not ready'), ' ',
          c.type || '', c.source ? ' · ' + c.source : ''),
        h('div', { class: 'small muted' }, `${c.packages || 0} packages, ${c.bundles || 0} bundles`),
        c.message ? h('div', { class: 'small' }, c.message) : null)));
      load();
    }).catch((e) => showError('Reading the catalogs', e));
  }

  function icon(ic, cls) {
    if (ic && ic.base64data && /^image\/[a-z0-9.+-]+$/i.test(ic.mediatype || '')) {
      return h('img', { class: cls || 'icon', alt: '', src: `data:${ic.mediatype};base64,${ic.base64data}` });
    }
    return h('span', { class: (cls || 'icon') + ' noicon', 'aria-hidden': 'true' });
  }

  function renderPackages(el, ns, cat, pkgs, q) {
    if (!pkgs.length) {
      replace(el, h('p', { class: 'muted' }, q ? `No package matches “${q}”.` : 'This catalog has no packages.'));
      return;
    }
    replace(el, pkgs.map((p) => h('article', { class: 'card', 'data-testid': 'package-' + testid(p.name) },
      icon(p.icon),
      h('div', { class: 'card-body' },
        h('h3', null, h('a', { href: `#/catalog/${enc(ns)}/${enc(cat)}/${enc(p.name)}`, 'data-testid': 'package-link-' + testid(p.name) }, p.displayName || p.name),
          p.displayName && p.displayName !== p.name ? h('span', { class: 'muted small' }, ' ' + p.name) : null),
        h('p', { class: 'desc' }, p.description || ''),
        h('dl', { class: 'facts' },
          h('dt', null, 'Latest'), h('dd', null, p.latest || '–'),
          h('dt', null, 'Channels'), h('dd', null, (p.channels || []).map((c) => c === p.defaultChannel ? c + ' (default)' : c).join(', ')),
          h('dt', null, 'Install modes'), h('dd', null, (p.installModes || []).join(', ')),
          p.provider ? [h('dt', null, 'Provider'), h('dd', null, p.provider)] : null)))));
  }

  // ---- #/catalog/NS/NAME/PKG -------------------------------------------------------------------

  function packagePage(pg, view, catNs, catName, pkgName) {
    document.title = pkgName + ' · operator-manager';
    const base = `/api/catalogs/${enc(catNs)}/${enc(catName)}/packages/${enc(pkgName)}`;
    view.append(h('p', { class: 'crumbs' }, h('a', { href: `#/catalog/${enc(catNs)}/${enc(catName)}` }, '← ' + catNs + '/' + catName)),
      h('p', { class: 'muted', id: 'package-loading' }, 'Loading ' + pkgName + '…'));
    api(base, { signal: pg.abort.signal }).then((p) => {
      if (!pg.alive) return;
      $('#package-loading').remove();
      renderPackage(pg, view, base, catNs, catName, p);
    }).catch((e) => showError('Reading package ' + pkgName, e));
  }

  function renderPackage(pg, view, base, catNs, catName, p) {
    const versions = p.versions || [];
    const channels = p.channels || [];
    view.append(
      h('div', { class: 'package-head' }, icon(p.icon, 'icon big'),
        h('div', null,
          h('h1', { id: 'package-title' }, p.displayName || p.name),
          h('p', { class: 'muted' }, p.name, p.provider ? ' · ' + p.provider : '', p.defaultChannel ? ' · default channel ' + p.defaultChannel : ''),
          p.deprecation ? h('p', { id: 'package-deprecation', class: 'warn' }, 'Deprecated: ' + p.deprecation) : null)),
      h('div', { class: 'package-layout' },
        h('div', null,
          h('section', null, h('h2', null, 'Description'), h('div', { class: 'longtext' }, p.description || '')),
          h('section', null, h('h2', null, 'Channels'),
            h('table', { id: 'package-channels' },
              h('thead', null, h('tr', null, h('th', null, 'Channel'), h('th', null, 'Head'), h('th', null, 'Upgrade edges'))),
              h('tbody', null, channels.map((c) => h('tr', { 'data-channel': c.name },
                h('td', null, c.name, c.deprecation ? h('div', { class: 'small warn' }, 'deprecated: ' + c.deprecation) : null), h('td', null, c.head || ''),
                h('td', { class: 'small' }, (c.entries || []).map((e) => h('div', null,
                  e.version || e.csv,
                  e.replaces ? ' replaces ' + e.replaces : '',
                  e.skips && e.skips.length ? ' skips ' + e.skips.join(', ') : '',
                  e.skipRange ? ' skipRange ' + e.skipRange : '')))))))),
          h('section', null, h('h2', null, 'Versions'),
            h('div', { class: 'scroll' }, h('table', { id: 'package-versions' },
              h('thead', null, h('tr', null, ['Version', 'Channels', 'Min Kubernetes', 'Install modes', 'Dependencies', 'Owned CRDs', 'Related images'].map((t) => h('th', null, t)))),
              h('tbody', null, versions.map((v) => h('tr', { 'data-version': v.version },
                h('td', null, h('strong', null, v.version), h('div', { class: 'small muted' }, v.csv),
                  v.deprecation ? h('div', { class: 'small warn' }, 'deprecated: ' + v.deprecation) : null),
                h('td', null, (v.channels || []).join(', ')),
                h('td', null, v.minKubeVersion || '–'),
                h('td', { class: 'small' }, (v.installModes || []).join(', ')),
                h('td', { class: 'small' }, list(v.dependencies), v.requiredCRDs && v.requiredCRDs.length ? h('div', null, 'requires ', v.requiredCRDs.join(', ')) : null),
                h('td', { class: 'small' }, list(v.ownedCRDs)),
                h('td', { class: 'small' }, list((v.relatedImages || []).map((i) => (i.name ? i.name + ': ' : '') + i.image)))))))))),
        h('div', null, recommendSection(pg, base, catNs), installSection(pg, base, catNs, catName, p))));
  }

  function list(items) {
    if (!items || !items.length) return h('span', { class: 'muted' }, '–');
    return h('ul', { class: 'plain' }, items.map((i) => h('li', null, i)));
  }

  function recommendSection(pg, base, catNs) {
    const ns = h('input', { id: 'recommend-namespace', type: 'text', value: catNs, autocomplete: 'off', required: true });
    const out = h('div', { id: 'recommend-result', 'aria-live': 'polite' });
    const form = h('form', { id: 'recommend-form', class: 'row' },
      h('div', { class: 'field' }, h('label', { for: 'recommend-namespace' }, 'Namespace'), ns),
      h('button', { type: 'submit', id: 'recommend-button' }, 'Recommend'));
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      replace(out, h('p', { class: 'muted' }, 'Asking…'));
      const chan = $('#install-channel');
      api(`${base}/recommend?namespace=${enc(ns.value.trim())}` + (chan && chan.value ? '&channel=' + enc(chan.value) : ''), { signal: pg.abort.signal }).then((r) => {
        r = r || {};
        replace(out,
          h('p', null, 'Recommended: ', r.recommended ? h('strong', null, r.recommended.version + ' (' + r.recommended.csv + ')') : h('strong', null, 'nothing installable')),
          r.passedOver && r.passedOver.length ? [h('h3', null, 'Passed over'),
            h('ul', { class: 'plain', id: 'recommend-passed-over' }, r.passedOver.map((x) => h('li', null, h('strong', null, x.version || x.csv), ': ', x.reason)))] : null,
          r.notes && r.notes.length ? h('ul', { class: 'plain small' }, r.notes.map((n) => h('li', null, n))) : null);
      }).catch((e) => {
        replace(out);
        showError('Asking recommend', e);
      });
    });
    return h('section', { 'aria-labelledby': 'recommend-title' }, h('h2', { id: 'recommend-title' }, 'What recommend says'), form, out);
  }

  function installSection(pg, base, catNs, catName, p) {
    const versions = p.versions || [];
    const channels = p.channels || [];
    const field = (id, label, input, hint) => h('div', { class: 'field' }, h('label', { for: id }, label), input, hint ? h('div', { class: 'hint', id: id + '-hint' }, hint) : null);
    const nsIn = h('input', { id: 'install-namespace', type: 'text', value: catNs, required: true, autocomplete: 'off' });
    const nameIn = h('input', { id: 'install-name', type: 'text', value: p.name, required: true, autocomplete: 'off' });
    const chanIn = h('select', { id: 'install-channel' }, channels.map((c) => h('option', { value: c.name, selected: c.name === p.defaultChannel }, c.name)));
    const verIn = h('select', { id: 'install-version' },
      h('option', { value: '' }, 'follow the channel (newest)'),
      versions.map((v) => h('option', { value: v.version }, v.version + ((v.channels || []).length ? ' (' + v.channels.join(', ') + ')' : ''))));
    const apprIn = h('select', { id: 'install-approval' }, h('option', { value: 'Automatic' }, 'Automatic'), h('option', { value: 'Manual' }, 'Manual'));
    const tnsIn = h('input', { id: 'install-target-namespaces', type: 'text', autocomplete: 'off', placeholder: 'empty: as the install modes allow' });
    const saIn = h('input', { id: 'install-service-account', type: 'text', autocomplete: 'off', placeholder: 'empty: the manager’s default' });
    const preview = h('div', { id: 'install-preview', hidden: true });
    const form = h('form', { id: 'install-form', 'aria-labelledby': 'install-title' },
      field('install-namespace', 'Namespace', nsIn),
      field('install-name', 'Subscription name', nameIn),
      field('install-channel', 'Channel', chanIn),
      field('install-version', 'Version', verIn, 'A pinned version stays until you change it.'),
      field('install-approval', 'Approval of version changes', apprIn),
      field('install-target-namespaces', 'Target namespaces (comma separated)', tnsIn),
      field('install-service-account', 'Install as ServiceAccount', saIn),
      h('button', { type: 'submit', id: 'install-review', class: 'primary' }, 'Review install'));

    let request = null;
    const readForm = () => {
      const ns = nsIn.value.trim();
      return {
        namespace: ns,
        name: nameIn.value.trim(),
        catalog: ns === catNs ? catName : catNs + '/' + catName,
        package: p.name,
        channel: chanIn.value,
        version: verIn.value,
        approval: apprIn.value,
        targetNamespaces: tnsIn.value.split(',').map((s) => s.trim()).filter(Boolean),
        serviceAccountName: saIn.value.trim(),
      };
    };
    // The CSV the preview is for: the pinned version, else the chosen channel's head.
    const csvFor = (req) => {
      if (req.version) {
        const v = versions.find((x) => x.version === req.version);
        if (v) return v.csv;
      }
      const c = channels.find((x) => x.name === req.channel);
      if (c && c.head) return c.head;
      const v = versions.find((x) => !req.channel || (x.channels || []).includes(req.channel));
      return v ? v.csv : '';
    };

    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      clearError();
      const req = readForm();
      if (!req.namespace || !req.name) {
        showError('Install', new Error('namespace and name are required'));
        return;
      }
      const btn = $('#install-review');
      btn.disabled = true;
      preview.hidden = true;
      request = null;
      try {
        const csv = csvFor(req);
        const perms = await api(`${base}/permissions?csv=${enc(csv)}&namespace=${enc(req.namespace)}&targetNamespaces=${enc(req.targetNamespaces.join(','))}`, { signal: pg.abort.signal });
        const dry = await api('/api/subscriptions', { body: Object.assign({}, req, { dryRun: true }), signal: pg.abort.signal });
        if (!pg.alive) return;
        request = req;
        renderInstallPreview(preview, csv, perms || [], dry);
        preview.hidden = false;
        $('#install-confirm').focus();
      } catch (e) {
        showError('Checking the install', e);
      } finally {
        btn.disabled = false;
      }
    });

    preview.addEventListener('click', async (ev) => {
      const t = ev.target;
      if (!(t instanceof HTMLButtonElement)) return;
      if (t.id === 'install-cancel') {
        preview.hidden = true;
        request = null;
        $('#install-review').focus();
      } else if (t.id === 'install-confirm' && request) {
        t.disabled = true;
        clearError();
        try {
          await api('/api/subscriptions', { body: Object.assign({}, request, { dryRun: false }) });
          location.hash = `#/installations/${enc(request.namespace)}/${enc(request.name)}`;
        } catch (e) {
          showError('Creating the Subscription', e);
          t.disabled = false;
        }
      }
    });

    return h('section', { 'aria-labelledby': 'install-title', class: 'install' }, h('h2', { id: 'install-title' }, 'Install'), form, preview);
  }

  function renderInstallPreview(el, csv, perms, dry) {
    const obj = dry && dry.change ? dry.change.object : dry;
    // What a person reads: the object as written, without the server's bookkeeping.
    const shown = obj && obj.metadata ? {
      apiVersion: obj.apiVersion, kind: obj.kind,
      metadata: { name: obj.metadata.name, namespace: obj.metadata.namespace },
      spec: obj.spec,
    } : obj;
    const where = (r) => [r.subject, r.scope, r.role].filter(Boolean).join(' · ');
    const groups = (r) => (r.apiGroups || []).map((g) => (g === '' ? 'core' : g)).join(', ');
    const what = (r) => [(r.resources || []).concat(r.nonResourceURLs || []).join(', '),
      r.resourceNames && r.resourceNames.length ? ' named ' + r.resourceNames.join(', ') : '',
      (r.apiGroups || []).length ? ' (' + groups(r) + ')' : ''].join('');
    let last = null;
    const body = [];
    for (const r of perms) {
      if (where(r) !== last) {
        last = where(r);
        body.push(h('tr', { class: 'group' }, h('th', { colspan: 2, scope: 'rowgroup' }, last)));
      }
      body.push(h('tr', null, h('td', { class: 'verbs' }, (r.verbs || []).join(', ')), h('td', null, what(r))));
    }
    replace(el,
      h('h3', null, 'What ', csv || 'this version', ' will be granted'),
      perms.length ? h('div', { class: 'scroll rbac' }, h('table', { id: 'install-rbac', 'data-testid': 'install-rbac', class: 'compact' },
        h('thead', null, h('tr', null, h('th', null, 'Verbs'), h('th', null, 'On'))),
        h('tbody', null, body))) : h('p', { id: 'install-rbac', 'data-testid': 'install-rbac', class: 'muted' }, 'No RBAC is granted.'),
      h('h3', null, 'The Subscription (accepted by the API server’s dry run)'),
      h('pre', { id: 'install-subscription', class: 'code', 'data-testid': 'install-subscription' }, json(shown)),
      h('div', { class: 'buttons' },
        h('button', { type: 'button', id: 'install-cancel' }, 'Change'),
        h('button', { type: 'button', id: 'install-confirm', class: 'primary' }, 'Create Subscription')));
  }

  // ---- #/installed ---------------------------------------------------------------------------

  const COLS = ['namespace', 'name', 'package', 'version', 'phase', 'ready', 'pending'];

  function installedPage(pg, view) {
    document.title = 'Installed · operator-manager';
    const filter = h('input', { id: 'installed-filter', type: 'search', autocomplete: 'off', placeholder: 'namespace, name, package, version, phase' });
    const tbody = h('tbody', { id: 'installed-rows' });
    const count = h('span', { id: 'installed-count', class: 'muted' });
    view.append(h('h1', null, 'Installed operators'),
      h('div', { class: 'row' }, h('div', { class: 'field inline' }, h('label', { for: 'installed-filter' }, 'Filter'), filter), count),
      h('div', { class: 'scroll' }, h('table', { id: 'installed-table', class: 'installed' },
        h('thead', null, h('tr', null, ['Namespace', 'Name', 'Package', 'Version', 'Phase', 'Ready', 'Pending approval'].map((t) => h('th', { scope: 'col' }, t)))),
        tbody)));

    const els = new Map(); // key -> tr
    let term = '';
    const matches = (r) => !term || [r.namespace, r.name, r.package, r.version, r.csv, r.phase, r.reason].some((v) => v && String(v).toLowerCase().includes(term));
    const updateCount = () => {
      let shown = 0;
      for (const tr of els.values()) if (!tr.hidden) shown++;
      setText(count, els.size === shown ? `${els.size} installations` : `${shown} of ${els.size} installations`);
    };

    const fill = (tr, r) => {
      const c = tr._cells;
      setText(c.namespace, r.namespace);
      setText(c.nameLink, r.name);
      setText(c.package, r.package);
      setText(c.version, (r.version || r.csv || '') + (r.deprecation ? ' · deprecated' : ''));
      c.version.classList.toggle('warn', !!r.deprecation);
      c.version.title = r.deprecation || '';
      setText(c.phase, r.phase || '');
      c.phase.dataset.phase = r.phase || '';
      setText(c.ready, (r.ready || 'Unknown') + (r.reason ? ' · ' + r.reason : ''));
      c.ready.dataset.ready = r.ready || 'Unknown';
      c.ready.dataset.tone = stateTone(r.state);
      c.ready.title = r.message || '';
      setText(c.pending, r.pendingApproval || (r.paused ? 'paused' : ''));
      tr.hidden = !matches(r);
    };

    const make = (r) => {
      const k = keyOf(r);
      const tr = h('tr', { 'data-key': k, 'data-testid': 'row-' + testid(r.namespace) + '-' + testid(r.name) });
      const cells = {};
      for (const col of COLS) {
        cells[col] = h('td', { class: 'c-' + col });
        tr.append(cells[col]);
      }
      cells.nameLink = h('a', { href: `#/installations/${enc(r.namespace)}/${enc(r.name)}` });
      cells.name.append(cells.nameLink);
      tr._cells = cells;
      fill(tr, r);
      return tr;
    };

    const upsert = (r) => {
      const k = keyOf(r);
      let tr = els.get(k);
      if (tr) {
        fill(tr, r);
        return;
      }
      tr = make(r);
      els.set(k, tr);
      // keep the order by namespace/name: find the first row after it
      let next = null;
      for (const [ok, ot] of els) {
        if (ok > k && (!next || ok < next.dataset.key)) next = ot;
      }
      tbody.insertBefore(tr, next);
    };

    const render = () => {
      const sorted = Array.from(rows.values()).sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : 1));
      const frag = document.createDocumentFragment();
      for (const r of sorted) {
        const tr = make(r);
        els.set(keyOf(r), tr);
        frag.append(tr);
      }
      tbody.replaceChildren(frag);
      updateCount();
    };

    pg.onStream((type, r) => {
      if (type === 'installation') upsert(r);
      else {
        const tr = els.get(keyOf(r));
        if (tr) {
          tr.remove();
          els.delete(keyOf(r));
        }
      }
      updateCount();
    });

    filter.addEventListener('input', debounce(() => {
      term = filter.value.trim().toLowerCase();
      for (const [k, tr] of els) {
        const r = rows.get(k);
        tr.hidden = r ? !matches(r) : true;
      }
      updateCount();
    }, 120));

    render();
    if (listLoaded) listLoaded.catch((e) => showError('Reading the installations', e));
  }

  // ---- #/installations/NS/NAME -------------------------------------------------------------------

  function installationPage(pg, view, ns, name) {
    document.title = `${ns}/${name} · operator-manager`;
    const key = ns + '/' + name;
    const base = `/api/installations/${enc(ns)}/${enc(name)}`;
    const sec = (id, title, ...body) => h('section', { id: id + '-section', 'aria-labelledby': id + '-title' }, h('h2', { id: id + '-title' }, title), ...body);

    const upgradeSel = h('select', { id: 'upgrade-version' }, h('option', { value: '' }, 'loading versions…'));
    const rollbackSel = h('select', { id: 'rollback-revision' }, h('option', { value: '' }, 'no succeeded revision'));
    const btn = (id, label, cls) => h('button', { type: 'button', id, 'data-testid': id, class: cls || '' }, label);
    const actions = h('div', { id: 'actions', class: 'actions' },
      btn('action-approve', 'Approve'),
      h('div', { class: 'field inline' }, h('label', { for: 'upgrade-version' }, 'Version'), upgradeSel, btn('action-upgrade', 'Upgrade')),
      h('div', { class: 'field inline' }, h('label', { for: 'rollback-revision' }, 'Revision'), rollbackSel, btn('action-rollback', 'Roll back')),
      btn('action-retry', 'Retry'),
      btn('action-pause', 'Pause'),
      btn('action-resume', 'Resume'),
      btn('action-uninstall', 'Uninstall', 'danger'),
      h('p', { id: 'upgrade-hint', class: 'hint', hidden: true }));
    $('#action-approve', actions).hidden = true;
    $('#action-resume', actions).hidden = true;
    $('#action-retry', actions).hidden = true;

    const timelineRows = h('tbody', { id: 'timeline-rows' });
    view.append(
      h('p', { class: 'crumbs' }, h('a', { href: '#/installed' }, '← Installed')),
      h('div', { class: 'inst-head' },
        h('h1', { id: 'inst-title' }, name, h('span', { class: 'muted' }, ' in ' + ns)),
        h('dl', { class: 'summary' },
          h('dt', null, 'Version'), h('dd', { id: 'inst-version' }, '…'),
          h('dt', null, 'Phase'), h('dd', { id: 'inst-phase', 'data-testid': 'inst-phase' }, '…'),
          h('dt', null, 'Ready'), h('dd', { id: 'inst-ready' }, '…'),
          h('dt', null, 'Pending approval'), h('dd', { id: 'inst-pending' }, '–'),
          h('dt', null, 'Paused'), h('dd', { id: 'inst-paused' }, '–'),
          h('dt', null, 'Upgrade windows'), h('dd', { id: 'inst-windows' }, '–'))),
      h('p', { id: 'inst-gone', class: 'gone', hidden: true, 'data-testid': 'inst-gone' }, 'This installation is gone: its Subscription was deleted.'),
      h('div', { id: 'inst-deprecation', class: 'deprecation', role: 'status', hidden: true }),
      actions,
      h('div', { class: 'inst-layout' },
        h('div', null,
          sec('timeline', 'Revisions', h('div', { class: 'wide' }, h('table', { id: 'timeline' },
            h('thead', null, h('tr', null, ['Rev', 'Trigger', 'Version', 'Outcome', 'Reason', 'Message', 'Started', 'Took'].map((t) => h('th', { scope: 'col' }, t)))),
            timelineRows))),
          sec('conditions', 'Conditions', h('div', { id: 'conditions' })),
          sec('events', 'Recent events', h('div', { id: 'events' }))),
        h('div', null,
          sec('health', 'Health gate', h('div', { id: 'health' })),
          sec('preflight', 'CRD preflight', h('div', { id: 'preflight' })),
          sec('deps', 'Dependencies', h('div', { id: 'dependencies' }), h('h3', null, 'Dependents'), h('div', { id: 'dependents' })))));

    let detail = null;
    let deadline = null;
    let gone = false;
    let inflight = null;
    let versionsFor = null;

    const refresh = () => {
      if (inflight) inflight.abort();
      inflight = new AbortController();
      return api(base, { signal: inflight.signal }).then((d) => {
        if (!pg.alive) return;
        detail = d;
        gone = false;
        fillDetail(d);
      }).catch((e) => {
        if (e.name === 'AbortError') return;
        if (e.status === 404) {
          markGone();
          return;
        }
        showError('Reading ' + key, e);
      });
    };
    const refreshSoon = debounce(refresh, 300);

    const markGone = () => {
      gone = true;
      $('#inst-gone').hidden = false;
      setText($('#inst-phase'), 'Deleted');
      $('#inst-phase').dataset.phase = 'Deleted';
      for (const b of actions.querySelectorAll('button,select')) b.disabled = true;
    };

    const fillRow = (r) => {
      if (!r) return;
      setText($('#inst-version'), (r.version || '–') + (r.csv ? ' (' + r.csv + ')' : ''));
      setText($('#inst-phase'), r.phase || '–');
      $('#inst-phase').dataset.phase = r.phase || '';
      setText($('#inst-ready'), (r.ready || 'Unknown') + (r.reason ? ' · ' + r.reason : '') + (r.message ? ': ' + r.message : ''));
      $('#inst-ready').dataset.ready = r.ready || 'Unknown';
      $('#inst-ready').dataset.tone = stateTone(r.state);
      setText($('#inst-pending'), r.pendingApproval || '–');
      setText($('#inst-paused'), r.paused ? 'yes: no version changes' : 'no');
      $('#action-approve').hidden = !r.pendingApproval;
      // a change that ended Failed, RolledBack or Blocked is tried again only when asked
      $('#action-retry').hidden = !r.retry;
      $('#action-retry').title = r.retry ? `Try ${r.retry} again, once what made it fail is mended` : '';
      $('#action-pause').hidden = !!r.paused;
      $('#action-resume').hidden = !r.paused;
    };

    const fillDetail = (d) => {
      fillRow(d.row);
      // When upgrades may start: the Subscription's windows, as written (the Ready
      // message says when a held upgrade's next window opens).
      const windows = (d.subscription && d.subscription.spec && d.subscription.spec.upgradeWindows) || [];
      setText($('#inst-windows'), windows.length
        ? windows.map((w) => `"${w.schedule}" for ${w.duration} (${w.timeZone || 'UTC'})`).join(', ')
        : 'any time');
      for (const b of actions.querySelectorAll('button,select')) b.disabled = false;
      $('#inst-gone').hidden = true;
      // what the catalog deprecates, in its words: package, channel, version
      const subConds = (d.subscription && d.subscription.status && d.subscription.status.conditions) || [];
      const deps = DEPRECATIONS.map(([type, what]) => [what, subConds.find((c) => c.type === type && c.status === 'True')]).filter(([, c]) => c);
      const depEl = $('#inst-deprecation');
      depEl.hidden = !deps.length;
      replace(depEl, ...(deps.length ? [h('strong', null, 'Deprecated by its catalog'),
        h('ul', { class: 'plain' }, deps.map(([what, c]) => h('li', { 'data-type': c.type }, h('span', { class: 'muted' }, what + ': '), c.message || '')))] : []));

      // every condition of the Subscription (the Blueprint's until it has its own), OLM's too
      const conds = subConds.length ? subConds : ((d.blueprint && d.blueprint.status && d.blueprint.status.conditions) || []);
      replace($('#conditions'), conds.length ? h('table', { id: 'conditions-table', class: 'compact' },
        h('thead', null, h('tr', null, ['Type', 'Status', 'Reason', 'Message', 'Since'].map((t) => h('th', { scope: 'col' }, t)))),
        h('tbody', null, conds.map((c) => {
          const tone = conditionTone(c);
          return h('tr', { 'data-type': c.type, 'data-status': c.status, class: tone === 'bad' ? 'bad' : '' },
            h('td', null, c.type), h('td', null, h('span', { class: 'badge ' + tone }, c.status)), h('td', null, c.reason || ''),
            h('td', { class: 'small' }, c.message || ''), h('td', { class: 'small', title: c.lastTransitionTime || '' }, fmtShort(c.lastTransitionTime)));
        })))
        : h('p', { class: 'muted' }, 'None yet.'));

      // the timeline
      const hist = (d.history || []).slice().sort((a, b) => b.revision - a.revision);
      timelineRows.replaceChildren(...hist.map((rv) => {
        const outcome = rv.outcome || 'Pending';
        const bad = outcome === 'Failed' || outcome === 'RolledBack' || outcome === 'Blocked';
        return h('tr', {
          'data-revision': rv.revision, 'data-outcome': outcome, 'data-testid': 'revision-' + rv.revision,
          class: 'outcome-' + outcome.toLowerCase() + (bad ? ' bad' : '') + (rv.trigger === 'Rollback' ? ' rollback' : ''),
        },
        h('td', { class: 'c-revision' }, rv.revision),
        h('td', { class: 'c-trigger' }, rv.trigger || '', rv.imported ? h('div', { class: 'muted small', title: 'ran on the cluster this installation was exported from' }, 'imported') : null),
        h('td', { class: 'c-csv', title: rv.csv || '' }, h('strong', null, rv.version || rv.csv || ''), rv.fromVersion ? h('div', { class: 'muted small' }, 'from ' + rv.fromVersion) : null),
        h('td', { class: 'c-outcome' }, h('span', { class: 'badge ' + (bad ? 'bad' : outcome === 'Succeeded' ? 'ok' : 'wait') }, bad ? '✗ ' + outcome : outcome === 'Succeeded' ? '✓ ' + outcome : outcome)),
        h('td', { class: 'c-reason' }, rv.reason || ''),
        h('td', { class: 'c-message small' }, rv.message || ''),
        h('td', { class: 'c-start small', title: rv.start || '' }, fmtShort(rv.start)),
        h('td', { class: 'c-duration small' }, rv.duration || (rv.end ? '' : 'running')));
      }));
      if (!hist.length) timelineRows.append(h('tr', null, h('td', { colspan: 8, class: 'muted' }, 'No revision yet.')));

      // the rollback select: succeeded revisions, keeping the choice
      const good = hist.filter((rv) => rv.outcome === 'Succeeded');
      const keep = rollbackSel.value;
      const sig = good.map((rv) => rv.revision).join(',');
      if (rollbackSel.dataset.sig !== sig) {
        rollbackSel.dataset.sig = sig;
        rollbackSel.replaceChildren(...(good.length ? good.map((rv) => h('option', { value: String(rv.revision) }, `${rv.revision}: ${rv.version || rv.csv}${rv.kept === false ? ' (bundle pruned)' : ''}`))
          : [h('option', { value: '' }, 'no succeeded revision')]));
        if (good.some((rv) => String(rv.revision) === keep)) rollbackSel.value = keep;
      }

      // the upgrade select, from the catalog, once
      const row = d.row || {};
      const catKey = catalogOf(row, d);
      if (row.package && versionsFor !== catKey + '|' + row.package) {
        versionsFor = catKey + '|' + row.package;
        loadVersions(catKey, row.package, row.csv);
      }

      // the health gate
      const hl = d.health;
      const health = $('#health');
      if (!hl) {
        deadline = null;
        replace(health, h('p', { class: 'muted' }, 'No health gate in progress.'));
      } else {
        // Count down only while the gate waits; a passed gate has nothing left to wait for.
        const waiting = !!hl.deadline || (hl.phase !== 'Succeeded' && !!hl.timeLeft);
        deadline = waiting && hl.deadline ? Date.parse(hl.deadline) : null;
        replace(health,
          h('dl', { class: 'facts' },
            h('dt', null, 'CSV'), h('dd', null, hl.csv || '–'),
            h('dt', null, 'Phase'), h('dd', { id: 'health-phase' }, hl.phase || '–'),
            h('dt', null, 'Waiting for'), h('dd', { id: 'health-waiting' }, hl.waitingFor || '–'),
            h('dt', null, 'Time left'), h('dd', { id: 'health-timeleft' }, deadline ? fmtLeft(deadline - Date.now()) : (waiting && hl.timeLeft) || '–'),
            hl.message ? [h('dt', null, 'Message'), h('dd', null, hl.message)] : null),
          h('table', { id: 'health-deployments', class: 'compact' },
            h('thead', null, h('tr', null, ['Deployment', 'Ready / desired', 'Updated', 'Available', 'Watches'].map((t) => h('th', null, t)))),
            h('tbody', null, (hl.deployments || []).map((dp) => h('tr', { class: dp.ready >= dp.desired ? '' : 'bad' },
              h('td', null, dp.name), h('td', null, `${dp.ready} / ${dp.desired}`), h('td', null, dp.updated), h('td', null, dp.available),
              h('td', { class: 'c-watches small' }, dp.watches === undefined ? '–' : (dp.watches ? dp.watches.split(',').join(', ') : 'all namespaces')))))),
          (hl.pods || []).length ? h('table', { id: 'health-pods', class: 'compact' },
            h('thead', null, h('tr', null, ['Pod', 'Ready', 'Phase', 'Reason'].map((t) => h('th', null, t)))),
            h('tbody', null, hl.pods.map((po) => h('tr', { class: po.ready ? '' : 'bad' },
              h('td', { class: 'small' }, po.name), h('td', null, po.ready ? 'yes' : 'no'), h('td', null, po.phase || ''), h('td', null, po.reason || '')))))
            : h('p', { id: 'health-pods', class: 'muted small' }, 'No pods.'));
      }

      // preflight: the API reports the Blueprint's Blocked condition when the CRD preflight
      // refused the change; none means nothing was blocked.
      const pf = d.preflight;
      const blocked = pf && pf.status === 'True';
      replace($('#preflight'), pf ? h('p', { 'data-status': blocked ? 'blocked' : 'passed' },
        h('span', { class: 'badge ' + (blocked ? 'bad' : 'ok') }, blocked ? '✗ Blocked' : '✓ Passed'), ' ',
        pf.reason ? h('strong', null, pf.reason) : null, pf.message ? ': ' + pf.message : '')
        : h('p', { 'data-status': 'passed', class: 'muted' }, 'Nothing blocked: the CRDs of the target version passed (or none changed).'));

      // dependencies and dependents
      replace($('#dependencies'), (d.dependencies || []).length ? h('ul', { class: 'plain' }, d.dependencies.map((dep) => h('li', null,
        dep.subscription ? h('a', { href: `#/installations/${enc(dep.namespace || ns)}/${enc(dep.subscription)}` }, dep.package) : dep.package, ' ',
        h('span', { class: 'muted' }, (dep.csv || '') + (dep.namespace && dep.namespace !== ns ? ` (run by ${dep.namespace}/${dep.subscription})` : '')))))
        : h('p', { class: 'muted' }, 'None.'));
      replace($('#dependents'), (d.dependents || []).length ? h('ul', { class: 'plain' }, d.dependents.map((dep) => h('li', null,
        h('a', { href: `#/installations/${enc(dep.namespace)}/${enc(dep.name)}` }, dep.namespace + '/' + dep.name), ' ', h('span', { class: 'muted' }, dep.package || ''))))
        : h('p', { class: 'muted' }, 'None.'));

      // events, newest first
      const evs = (d.events || []).slice().sort((a, b) => (a.time < b.time ? 1 : -1));
      replace($('#events'), evs.length ? h('ul', { class: 'events' }, evs.map((e) => h('li', { class: e.type === 'Warning' ? 'warning' : '' },
        h('span', { class: 'small muted' }, fmtTime(e.time)), ' ', h('strong', null, e.reason || ''), ' ', e.object ? h('span', { class: 'muted small' }, e.object + ' ') : null, e.message || '')))
        : h('p', { class: 'muted' }, 'No recent events.'));
    };

    const loadVersions = (catKey, pkg, currentCSV) => {
      const [cns, cname] = catKey.split('/');
      api(`/api/catalogs/${enc(cns)}/${enc(cname)}/packages/${enc(pkg)}`, { signal: pg.abort.signal }).then((p) => {
        const keep = upgradeSel.value;
        const vs = (p && p.versions) || [];
        upgradeSel.replaceChildren(...(vs.length ? vs.map((v) => h('option', { value: v.csv }, v.version + (v.csv === currentCSV ? ' (running)' : '')))
          : [h('option', { value: '' }, 'no version in the catalog')]));
        if (vs.some((v) => v.csv === keep)) upgradeSel.value = keep;
      }).catch((e) => {
        if (e.name === 'AbortError') return;
        // Not worth the error box: the page works without the catalog, only Upgrade needs it.
        upgradeSel.replaceChildren(h('option', { value: '' }, 'catalog unavailable'));
        setText($('#upgrade-hint'), `Versions of ${pkg} from ${catKey} unavailable: ${e.message}`);
        $('#upgrade-hint').hidden = false;
      });
    };

    // act runs an action: a dry run first, the change shown, then for real once confirmed.
    const act = async (action, extra, title, okLabel) => {
      clearError();
      let dry;
      try {
        dry = await api(`${base}/${action}`, { body: Object.assign({ dryRun: true }, extra) });
      } catch (e) {
        showError(title, e);
        return;
      }
      if (!pg.alive) return;
      const ok = await confirmChange(title, dry && dry.change, okLabel);
      if (!ok || !pg.alive) return;
      try {
        await api(`${base}/${action}`, { body: Object.assign({ dryRun: false }, extra) });
      } catch (e) {
        showError(title, e);
        return;
      }
      refresh();
    };

    actions.addEventListener('click', (ev) => {
      const t = ev.target;
      if (!(t instanceof HTMLButtonElement) || t.disabled) return;
      switch (t.id) {
        case 'action-approve':
          act('approve', {}, `Approve ${(detail && detail.row && detail.row.pendingApproval) || 'the pending version'}`, 'Approve');
          break;
        case 'action-upgrade':
          if (!upgradeSel.value) {
            showError('Upgrade', new Error('choose a version'));
            return;
          }
          act('upgrade', { csv: upgradeSel.value }, `Change ${key} to ${upgradeSel.value}`, 'Upgrade');
          break;
        case 'action-rollback':
          if (!rollbackSel.value) {
            showError('Roll back', new Error('choose a succeeded revision'));
            return;
          }
          act('rollback', { revision: Number(rollbackSel.value) }, `Roll ${key} back to revision ${rollbackSel.value}`, 'Roll back');
          break;
        case 'action-retry':
          act('retry', {}, `Try ${(detail && detail.row && detail.row.retry) || 'the failed change'} again in ${key}`, 'Retry');
          break;
        case 'action-pause':
          act('pause', {}, `Pause ${key}`, 'Pause');
          break;
        case 'action-resume':
          act('resume', {}, `Resume ${key}`, 'Resume');
          break;
        case 'action-uninstall':
          act('uninstall', {}, `Uninstall ${key}`, 'Uninstall');
          break;
      }
    });

    pg.onStream((type, r) => {
      if (keyOf(r) !== key) return;
      if (type === 'deleted') {
        markGone();
        return;
      }
      fillRow(r);
      refreshSoon();
    });

    pg.every(1000, () => {
      const el = $('#health-timeleft');
      if (el && deadline) setText(el, fmtLeft(deadline - Date.now()));
    });

    if (rows.has(key)) fillRow(rows.get(key));
    refresh();
  }

  // The deprecation conditions of a Subscription (OLM's types) and what each speaks of.
  const DEPRECATIONS = [['PackageDeprecated', 'Package'], ['ChannelDeprecated', 'Channel'], ['BundleDeprecated', 'Version']];
  // Conditions that report a problem when True; the others report one when False, except
  // those that only say what is under way.
  const BAD_WHEN_TRUE = new Set(['RolledBack', 'Blocked', 'Deprecated', 'PackageDeprecated', 'ChannelDeprecated', 'BundleDeprecated',
    'ResolutionFailed', 'InstallPlanFailed', 'CatalogSourcesUnhealthy']);
  const UNDER_WAY = new Set(['Progressing', 'UpgradePending', 'InstallPlanPending']);
  // Reasons for which a condition holds on a choice (a person's pause, approval, window or
  // rollback, the operator's consent to upgrade, its dependents' needs), not on a fault.
  const CHOSEN = new Set(['Paused', 'WaitingForApproval', 'RequiresApproval', 'OutsideUpgradeWindow', 'OperatorNotUpgradeable', 'HeldAfterManualRollback',
    'HeldForDependents']);

  // stateTone is how an installation's Ready reads by its state (the row's, as the
  // metrics and alerts sort it): a fault is bad, a change under way or waiting for a
  // person or a window is wait, an uninstall done as asked is quiet.
  function stateTone(state) {
    switch (state) {
      case 'ready': return 'ok';
      case 'failed': case 'unhealthy': case 'unresolved': return 'bad';
      case 'uninstalled': return 'quiet';
      default: return 'wait';
    }
  }

  // conditionTone is the badge a condition gets: ok, bad or wait.
  function conditionTone(c) {
    if (c.status === 'Unknown' || UNDER_WAY.has(c.type)) return c.status === 'True' || c.status === 'Unknown' ? 'wait' : 'ok';
    if (CHOSEN.has(c.reason)) return 'wait';
    const problem = BAD_WHEN_TRUE.has(c.type) ? c.status === 'True' : c.status === 'False';
    return problem ? 'bad' : 'ok';
  }

  // catalogOf names the CatalogSource an installation comes from, as "ns/name".
  function catalogOf(row, d) {
    let c = row.catalog || '';
    if (!c && d && d.blueprint && d.blueprint.spec && d.blueprint.spec.catalog) c = d.blueprint.spec.catalog;
    if (!c) return 'operator-manager-system/default';
    return c.includes('/') ? c : row.namespace + '/' + c;
  }

  // ---- start ---------------------------------------------------------------------------------

  function start() {
    $('#error-dismiss').addEventListener('click', clearError);
    $('#confirm-ok').addEventListener('click', () => closeConfirm(true));
    $('#confirm-cancel').addEventListener('click', () => closeConfirm(false));
    const dlg = $('#confirm-dialog');
    dlg.addEventListener('close', () => closeConfirm(false)); // Esc, or closed any other way
    window.addEventListener('hashchange', route);

    api('/api/whoami').then((w) => {
      w = w || {};
      const el = $('#whoami');
      replace(el, h('span', { class: 'user' }, w.user || '?'), w.context ? h('span', { class: 'muted' }, ' @ ' + w.context) : null);
      el.title = [(w.groups || []).join(', '), w.server].filter(Boolean).join(' · ');
    }).catch((e) => {
      setText($('#whoami'), 'unknown user');
      showError('Who am I', e);
    });

    startStream();
    listLoaded = loadRows();
    listLoaded.catch(() => {}); // the installed page shows the error; here it is handled
    if (!location.hash || location.hash === '#' || location.hash === '#/') history.replaceState(null, '', '#/catalog');
    route();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
