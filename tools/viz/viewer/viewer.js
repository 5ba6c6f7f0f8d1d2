// pass-viz interactive viewer. index_html.cc inlines this file (and viewer.css) at the end of the
// body of index.html; the page carries its data in <script id="hp-data"> and one <template> per
// picture. See README.md next to this file for the contract. No libraries, no network: the page
// must work when opened from disk.
(function () {
  'use strict';

  const XLINK_NS = 'http://www.w3.org/1999/xlink';
  const MAX_RESULTS = 50;      // search results listed (the count shows how many matched)
  const MAX_DIFF_LIST = 50;    // names listed per diff category
  const READABLE_SCALE = 1;    // centring a node zooms in at least this far, so labels can be read
  const MAX_SCALE = 16;
  const MARK_CLASSES = ['hp-hl', 'hp-sel', 'hp-copy-sel', 'hp-diff-chg', 'hp-diff-only'];

  const body = document.body;
  const originalTitle = document.title;
  let firstError = '';

  // ---------------------------------------------------------------------------------------------
  // Error reporting. The headless check reads <body data-viewer-status>, so every handler runs
  // through guard(): an exception is recorded (the first one stays; later ones are usually
  // consequences) and shown in the title, instead of only reaching a console nobody reads.

  function fail(e) {
    const msg = e && e.message ? e.message : String(e);
    if (!firstError) firstError = msg || 'unknown error';
    document.title = 'pass-viz viewer ERROR: ' + firstError;
    publish();
  }

  function guard(fn, quiet) {
    return function guarded() {
      try {
        return fn.apply(this, arguments);
      } catch (e) {
        fail(e);
      } finally {
        // Pointer moves and wheel ticks change nothing the tests read; skip the dataset writes.
        if (!quiet) publish();
      }
      return undefined;
    };
  }

  window.addEventListener('error', (e) => {
    // Resource load failures (capture phase, target an element) are not script errors.
    if (e instanceof ErrorEvent) fail(e.error || e.message);
  });
  window.addEventListener('unhandledrejection', (e) => fail(e.reason));

  // ---------------------------------------------------------------------------------------------
  // Small DOM helpers.

  function h(tag, attrs) {
    const el = document.createElement(tag);
    if (attrs) {
      for (const k of Object.keys(attrs)) {
        const v = attrs[k];
        if (v === null || v === undefined || v === false) continue;
        if (k.slice(0, 2) === 'on') el.addEventListener(k.slice(2), guard(v));
        else if (k === 'class') el.className = v;
        else if (k === 'text') el.textContent = v;
        else el.setAttribute(k, v === true ? '' : String(v));
      }
    }
    for (let i = 2; i < arguments.length; i++) append(el, arguments[i]);
    return el;
  }

  function append(el, kid) {
    if (kid === null || kid === undefined || kid === false) return;
    if (Array.isArray(kid)) kid.forEach((k) => append(el, k));
    else el.append(kid instanceof Node ? kid : String(kid));
  }

  function clear(el) {
    while (el.firstChild) el.removeChild(el.firstChild);
  }

  function str(v) {
    return v === null || v === undefined ? '' : String(v);
  }

  // The <title> child of a Graphviz node or edge group holds the graph name ("TAIL->HEAD" for
  // edges). It is the first child in practice; scan the direct children to be safe.
  function titleOf(g) {
    for (let c = g.firstElementChild; c; c = c.nextElementSibling) {
      if (c.localName === 'title') return c.textContent.trim();
    }
    return '';
  }

  function tooltipOf(g) {
    const a = g.querySelector('a');
    if (!a) return '';
    return a.getAttributeNS(XLINK_NS, 'title') || a.getAttribute('xlink:title') ||
        a.getAttribute('title') || '';
  }

  function labelOf(g) {
    const parts = [];
    for (const t of g.querySelectorAll('text')) parts.push(t.textContent);
    return parts.join(' ').trim();
  }

  function lengthPx(s) {
    const m = /^\s*([0-9.]+)\s*(pt|px|in|cm|mm)?\s*$/.exec(s || '');
    if (!m) return 0;
    const unit = {pt: 4 / 3, px: 1, in: 96, cm: 96 / 2.54, mm: 96 / 25.4}[m[2] || 'px'];
    return parseFloat(m[1]) * unit;
  }

  // ---------------------------------------------------------------------------------------------
  // Data: the JSON island and the picture templates.

  let stages = [];
  let source = '';
  let picturesPresent = 0;
  let picturesExpected = 0;
  const templateInfoCache = new Map();

  // Template id -> its SVG once a view has taken it out of the template (see instantiate).
  const adopted = new Map();

  function templateSvg(id) {
    if (!id) return null;
    if (adopted.has(id)) return adopted.get(id);
    const t = document.getElementById(id);
    if (!t) return null;
    return (t.content || t).querySelector('svg');
  }

  // Names, labels and tooltips of the nodes of one picture, read from the inert template content
  // without cloning it: search has to know which view draws a node before that view is shown.
  function templateInfo(id) {
    if (templateInfoCache.has(id)) return templateInfoCache.get(id);
    let info = null;
    const svg = templateSvg(id);
    if (svg) {
      info = new Map();
      for (const g of svg.querySelectorAll('g.node')) {
        const name = titleOf(g);
        if (name && !info.has(name)) info.set(name, {label: labelOf(g), tooltip: tooltipOf(g)});
      }
    }
    templateInfoCache.set(id, info);
    return info;
  }

  function loadData() {
    const island = document.getElementById('hp-data');
    if (!island) throw new Error('no <script id="hp-data"> in the page');
    let data;
    try {
      data = JSON.parse(island.textContent);
    } catch (e) {
      throw new Error('hp-data is not valid JSON: ' + e.message);
    }
    source = str(data.source);
    stages = (Array.isArray(data.stages) ? data.stages : []).map((raw, pos) => {
      raw = raw || {};
      const st = {
        pos: pos,
        index: raw.index === undefined || raw.index === null ? pos : raw.index,
        title: str(raw.title) || 'stage ' + pos,
        views: (Array.isArray(raw.views) ? raw.views : []).map((v, i) => ({
          pos: i,
          name: str(v && v.name) || 'view' + i,
          label: str(v && (v.label || v.name)) || 'view ' + i,
          template: (v && v.template) || null,
          note: str(v && v.note),
        })),
        copies: Array.isArray(raw.copies) ? raw.copies : [],
        nodes: raw.nodes && typeof raw.nodes === 'object' ? raw.nodes : {},
        copyByNode: new Map(),
        search: null,
      };
      st.copies.forEach((c, k) => {
        if (c && c.node && !st.copyByNode.has(c.node)) st.copyByNode.set(c.node, k);
      });
      for (const v of st.views) {
        if (!v.template) continue;
        picturesExpected++;
        if (templateSvg(v.template)) picturesPresent++;
      }
      return st;
    });
  }

  // Per-stage search index: every node of `nodes` plus every node drawn in any view of the stage
  // (legend, collapsed groups and the like have no `nodes` entry; their SVG text stands in).
  function stageIndex(st) {
    if (st.search) return st.search;
    const byName = new Map();
    const entry = (name) => {
      let e = byName.get(name);
      if (!e) {
        e = {name: name, label: '', op: '', location: '', tooltip: '', views: [], order: byName.size};
        byName.set(name, e);
      }
      return e;
    };
    for (const name of Object.keys(st.nodes)) {
      const n = st.nodes[name] || {};
      const e = entry(name);
      e.label = str(n.label);
      e.op = str(n.op);
      e.location = str(n.location);
      e.allocation = n.allocation === true;
    }
    for (const v of st.views) {
      const info = v.template ? templateInfo(v.template) : null;
      if (!info) continue;
      info.forEach((ni, name) => {
        const e = entry(name);
        e.views.push(v.pos);
        if (!e.label) e.label = ni.label;
        if (!e.tooltip) e.tooltip = ni.tooltip;
      });
    }
    const entries = Array.from(byName.values());
    for (const e of entries) {
      e.fields = [e.name, e.label, e.op, e.location].map((f) => f.toLowerCase());
      e.tip = e.tooltip.toLowerCase();
    }
    st.search = {entries: entries, byName: byName};
    return st.search;
  }

  // Rank: 0 a field equals the query (an imported op's location "node 'Q'" counts as equal: Q is
  // its ONNX node name), 1 a field starts with it (or the name ends with ".query" / "/query",
  // i.e. the query is the value's own name), 2 substring, 3 only the tooltip matches. Within a
  // rank the ops come before the allocations made for them (after manifest-alloc an ONNX node
  // name also locates its storage), then program order.
  function search(st, query) {
    const q = query.trim().toLowerCase();
    if (!q) return [];
    const hits = [];
    for (const e of stageIndex(st).entries) {
      let score = 9;
      for (const f of e.fields) {
        if (!f) continue;
        if (f === q || f === "node '" + q + "'") { score = 0; break; }
        const at = f.indexOf(q);
        if (at === 0) score = Math.min(score, 1);
        else if (at > 0) score = Math.min(score, 2);
      }
      const n = e.fields[0];
      if (score > 1 && (n.endsWith('.' + q) || n.endsWith('/' + q))) score = 1;
      if (score === 9 && e.tip.indexOf(q) >= 0) score = 3;
      if (score < 9) hits.push({e: e, score: score});
    }
    hits.sort((a, b) => a.score - b.score || (a.e.allocation ? 1 : 0) - (b.e.allocation ? 1 : 0) ||
              a.e.order - b.e.order);
    return hits;
  }

  // ---------------------------------------------------------------------------------------------
  // A pane shows one picture with its own pan and zoom. The SVG sits in a wrapper div moved with a
  // CSS transform, so panning and zooming never re-lay out the drawing. Each view's SVG is taken
  // from its template the first time a pane shows it and kept (with its own pan/zoom, shared by
  // the panes) for later; a hidden view's SVG is detached from the document so that a page with
  // many large pictures stays light.

  class Pane {
    constructor(side) {
      this.side = side;
      this.stage = null;
      this.view = null;
      this.inst = null;
      this.drag = null;
      this.frame = 0;
      this.frameTimer = 0;
      this.idleTimer = 0;
      this.diff = null;  // {changed: Set, only: Set} in compare mode
      this.caption = h('div', {class: 'hp-caption'});
      this.canvas = h('div', {class: 'hp-canvas'});
      this.msg = h('div', {class: 'hp-pane-msg'});
      this.zoomLabel = h('div', {class: 'hp-zoom-label'});
      this.el = h('div', {class: 'hp-pane hp-pane-' + side}, this.canvas, this.msg, this.zoomLabel);
      this.box = h('div', {class: 'hp-pane-box'}, this.caption, this.el);
      this.attachEvents();
    }

    instantiate(st, view) {
      const t0 = performance.now();
      const src = templateSvg(view.template);
      if (!src) return null;
      // The first instance moves the SVG out of its template instead of cloning it: adopting a
      // 2,000-node drawing takes ~10 ms where importNode takes ~300 ms, and the page holds one
      // copy instead of two. A second instance (a stage compared with itself) clones the first
      // and drops its marks.
      let svg;
      if (!adopted.has(view.template)) {
        svg = document.adoptNode(src);
        adopted.set(view.template, svg);
      } else {
        svg = src.cloneNode(true);
        svg.classList.remove('hp-dimmed');
        for (const el of svg.querySelectorAll('.' + MARK_CLASSES.join(',.'))) {
          el.classList.remove.apply(el.classList, MARK_CLASSES);
        }
      }
      // Natural size in CSS px from the pt width/height Graphviz writes (viewBox as a fallback).
      let w = lengthPx(svg.getAttribute('width'));
      let ht = lengthPx(svg.getAttribute('height'));
      const vb = (svg.getAttribute('viewBox') || '').trim().split(/[\s,]+/).map(Number);
      if (!(w > 0 && ht > 0) && vb.length === 4 && vb[2] > 0 && vb[3] > 0) {
        w = vb[2];
        ht = vb[3];
      }
      if (!(w > 0 && ht > 0)) { w = 800; ht = 600; }
      svg.setAttribute('width', String(w));
      svg.setAttribute('height', String(ht));
      svg.classList.add('hp-svg');
      const nodes = new Map();
      const names = new Map();
      for (const g of svg.querySelectorAll('g.node')) {
        const name = titleOf(g);
        if (!name) continue;
        names.set(g, name);
        if (!nodes.has(name)) nodes.set(name, g);
      }
      // Copy view: each binding's hops from the nearest copy (class hop<d>), for the hops filter.
      const hop = new Map();
      let maxHop = -1;
      for (const [g] of names) {
        const m = /(?:^|\s)hop(\d+)(?:\s|$)/.exec(g.getAttribute('class') || '');
        if (!m) continue;
        const d = Number(m[1]);
        hop.set(g, d);
        if (d > maxHop) maxHop = d;
      }
      const edges = [];
      for (const g of svg.querySelectorAll('g.edge')) {
        const t = titleOf(g);
        const at = t.indexOf('->');
        if (at < 0) continue;
        edges.push({g: g, tail: endName(t.slice(0, at), nodes), head: endName(t.slice(at + 2), nodes)});
      }
      const inst = {
        key: st.pos + ':' + view.pos, svg: svg, nodes: nodes, names: names, edges: edges,
        hop: hop, maxHop: maxHop, hopsApplied: null, visible: names.size,
        w: w, h: ht, s: 1, tx: 0, ty: 0, placed: false, userMoved: false, pendingCentre: '',
        marked: [], highlighted: 0, buildMs: 0, pane: null,
      };
      inst.buildMs = performance.now() - t0;
      lastBuild = {ms: inst.buildMs, nodes: nodes.size, edges: edges.length};
      return inst;
    }

    // Shows view `view` of stage `st` (either may be null: an empty pane with a message).
    show(st, view) {
      this.stage = st;
      this.view = view;
      let inst = null;
      let message = '';
      if (!st) {
        message = 'no stages in this page';
      } else if (!view) {
        message = 'no pictures for this stage';
      } else if (!view.template) {
        message = 'picture not rendered' + (view.note ? ': ' + view.note : '');
      } else {
        // One SVG per view for all panes: the compare panes take over what the single pane
        // showed (a 2,000-node clone costs ~250 ms). Only a view shown in another visible pane
        // at the same time (comparing a stage with itself) gets a second clone.
        const key = st.pos + ':' + view.pos;
        inst = instances.get(key);
        if (inst && inst.pane !== this && inst.pane && inst.pane.inst === inst && !inst.pane.box.hidden) {
          inst = instances.get(key + ':' + this.side);
          if (!inst) {
            inst = this.instantiate(st, view);
            if (inst) instances.set(key + ':' + this.side, inst);
          }
        } else if (!inst) {
          inst = this.instantiate(st, view);
          if (inst) instances.set(key, inst);
        }
        if (!inst) message = 'picture missing: no <template id="' + view.template + '"> with an <svg>';
      }
      if (this.inst && this.inst !== inst && this.inst.svg.parentNode === this.canvas) this.inst.svg.remove();
      this.inst = inst;
      if (inst) {
        if (inst.pane && inst.pane !== this && inst.pane.inst === inst) inst.pane.inst = null;
        inst.pane = this;
        this.canvas.style.width = inst.w + 'px';
        this.canvas.style.height = inst.h + 'px';
        if (inst.svg.parentNode !== this.canvas) this.canvas.append(inst.svg);
      }
      if (inst) applyHops(inst);
      this.msg.textContent = message;
      this.msg.hidden = !message;
      this.canvas.hidden = !inst;
      this.caption.textContent = st ? st.title + (view ? ' \u2014 ' + view.label : '') : '';
      if (inst && !inst.placed) this.fit();
      else this.apply(false);
    }

    size() {
      return {w: this.el.clientWidth, h: this.el.clientHeight};
    }

    fitScale() {
      const inst = this.inst;
      const sz = this.size();
      if (!inst || !sz.w || !sz.h) return 1;
      return Math.min((sz.w - 24) / inst.w, (sz.h - 24) / inst.h);
    }

    fit(animate) {
      const inst = this.inst;
      if (!inst) return;
      const sz = this.size();
      if (!sz.w || !sz.h) return;  // not laid out yet; the resize observer fits it later
      // A small drawing is not blown up beyond 1.5x: it would look like a different tool.
      inst.s = Math.max(Math.min(this.fitScale(), 1.5), 1e-3);
      inst.tx = (sz.w - inst.w * inst.s) / 2;
      inst.ty = (sz.h - inst.h * inst.s) / 2;
      inst.placed = true;
      inst.userMoved = false;
      this.apply(animate);
    }

    // A deep network drawn top to bottom can be a hundred times taller than wide: fitting all of
    // it shows a hairline, so "width" fits the width (at most 100%) and shows the top.
    fitWidth() {
      const inst = this.inst;
      const sz = this.size();
      if (!inst || !sz.w || !sz.h) return;
      inst.s = Math.max(Math.min((sz.w - 24) / inst.w, 1), 1e-3);
      inst.tx = (sz.w - inst.w * inst.s) / 2;
      inst.ty = 12;
      inst.placed = true;
      inst.userMoved = true;
      this.apply(true);
    }

    zoomAt(factor, cx, cy, animate) {
      const inst = this.inst;
      if (!inst) return;
      const min = Math.min(0.5, this.fitScale() * 0.5);
      const s = Math.min(Math.max(inst.s * factor, min), MAX_SCALE);
      inst.tx = cx - (cx - inst.tx) * (s / inst.s);
      inst.ty = cy - (cy - inst.ty) * (s / inst.s);
      inst.s = s;
      inst.userMoved = true;
      inst.placed = true;
      if (animate) this.apply(true);
      else this.schedule();
    }

    zoomCentre(factor) {
      const sz = this.size();
      this.zoomAt(factor, sz.w / 2, sz.h / 2, true);
    }

    has(name) {
      return !!(this.inst && name && this.inst.nodes.has(name));
    }

    // Moves the view so that node `name` is in the middle, zooming in to a readable scale.
    centreOn(name) {
      const inst = this.inst;
      if (!this.has(name)) return false;
      const sz = this.size();
      if (!sz.w || !sz.h) {
        inst.pendingCentre = name;
        return true;
      }
      if (!inst.placed) this.fit(false);
      // Measured against the SVG's own box, not inst.tx/ty/s: during a glide the rendered
      // transform is somewhere between the old and the new one.
      const r = inst.nodes.get(name).getBoundingClientRect();
      const sr = inst.svg.getBoundingClientRect();
      if (!sr.width || !sr.height) return false;
      const x = (r.left + r.width / 2 - sr.left) * (inst.w / sr.width);
      const y = (r.top + r.height / 2 - sr.top) * (inst.h / sr.height);
      const s = Math.min(Math.max(inst.s, READABLE_SCALE), MAX_SCALE);
      inst.s = s;
      inst.tx = sz.w / 2 - x * s;
      inst.ty = sz.h / 2 - y * s;
      inst.userMoved = true;
      inst.pendingCentre = '';
      this.apply(true);
      return true;
    }

    onResize() {
      const inst = this.inst;
      if (!inst) return;
      const sz = this.size();
      if (!sz.w || !sz.h) return;
      if (!inst.placed || !inst.userMoved) this.fit(false);
      if (inst.pendingCentre) this.centreOn(inst.pendingCentre);
    }

    // Pointer and wheel moves are coalesced to one transform write per frame. No will-change:
    // measured in Chromium on the 2,000-node fixture, a promoted layer as big as the whole
    // drawing made each pan frame cost 200-400 ms, a plain transform (repainting what is in
    // view) 17-33 ms; the picture also stays sharp at every scale.
    schedule() {
      if (this.frame) return;
      // A timer backs up the frame callback: some embedders (headless runs with virtual time)
      // deliver no animation frames, and a move must not get lost there.
      const run = guard(() => {
        if (!this.frame) return;
        cancelAnimationFrame(this.frame);
        clearTimeout(this.frameTimer);
        this.frame = 0;
        this.apply(false);
      }, true);
      this.frame = requestAnimationFrame(run);
      this.frameTimer = setTimeout(run, 50);
    }

    apply(animate) {
      const inst = this.inst;
      if (!inst) {
        this.zoomLabel.textContent = '';
        return;
      }
      const c = this.canvas;
      // Programmatic moves (centring, fit, buttons) glide; direct manipulation follows the pointer.
      // Big pictures do not glide: an animated transform gets its own compositor layer, the slow
      // path described above.
      animate = !!animate && inst.nodes.size <= 400;
      c.classList.toggle('hp-animate', animate);
      c.style.transform = 'translate(' + inst.tx + 'px,' + inst.ty + 'px) scale(' + inst.s + ')';
      const pct = inst.s * 100;
      this.zoomLabel.textContent = (pct < 10 ? pct.toFixed(1) : Math.round(pct)) + '%';
      if (animate) {
        clearTimeout(this.idleTimer);
        this.idleTimer = setTimeout(() => c.classList.remove('hp-animate'), 400);
      }
    }

    attachEvents() {
      const el = this.el;
      el.addEventListener('wheel', guard((e) => {
        if (!this.inst) return;
        e.preventDefault();
        const r = el.getBoundingClientRect();
        let dy = e.deltaY;
        if (e.deltaMode === 1) dy *= 16;
        else if (e.deltaMode === 2) dy *= r.height;
        // Pinch gestures arrive as ctrl+wheel with small deltas: zoom faster for them.
        const f = Math.exp(-dy * (e.ctrlKey ? 0.01 : 0.0015));
        this.zoomAt(f, e.clientX - r.left, e.clientY - r.top, false);
      }, true), {passive: false});

      el.addEventListener('pointerdown', guard((e) => {
        if (e.button !== 0 || !this.inst) return;
        this.drag = {id: e.pointerId, x: e.clientX, y: e.clientY, tx: this.inst.tx,
                     ty: this.inst.ty, moved: false, target: e.target};
      }, true));

      el.addEventListener('pointermove', guard((e) => {
        const d = this.drag;
        if (!d || d.id !== e.pointerId || !this.inst) return;
        const dx = e.clientX - d.x;
        const dy = e.clientY - d.y;
        // A few pixels of jitter still count as a click on a node.
        if (!d.moved && Math.abs(dx) + Math.abs(dy) < 4) return;
        if (!d.moved) {
          d.moved = true;
          // Capture keeps the drag alive when the pointer leaves the pane. It throws for a pointer
          // the browser no longer tracks; panning works without it.
          try {
            el.setPointerCapture(e.pointerId);
          } catch (err) {
            // ignored on purpose
          }
          el.classList.add('hp-dragging');
        }
        this.inst.tx = d.tx + dx;
        this.inst.ty = d.ty + dy;
        this.inst.userMoved = true;
        this.schedule();
      }, true));

      const end = guard((e) => {
        const d = this.drag;
        if (!d || d.id !== e.pointerId) return;
        this.drag = null;
        el.classList.remove('hp-dragging');
        if (!d.moved && e.type === 'pointerup') this.clicked(d.target);
      });
      el.addEventListener('pointerup', end);
      el.addEventListener('pointercancel', end);

      el.addEventListener('dblclick', guard((e) => {
        if (!this.inst || (e.target.closest && e.target.closest('g.node'))) return;
        const r = el.getBoundingClientRect();
        this.zoomAt(e.shiftKey ? 0.5 : 2, e.clientX - r.left, e.clientY - r.top, true);
      }, true));

      // Graphviz wraps tooltips in <a>; should one carry an href, a click must not navigate away.
      el.addEventListener('click', (e) => {
        if (e.target.closest && e.target.closest('a')) e.preventDefault();
      });

      if (typeof ResizeObserver === 'function') {
        new ResizeObserver(guard(() => this.onResize(), true)).observe(el);
      } else {
        window.addEventListener('resize', guard(() => this.onResize(), true));
      }
    }

    clicked(target) {
      const inst = this.inst;
      if (!inst || !target || !target.closest) return;
      const g = target.closest('g.node');
      if (g && inst.names.has(g)) {
        nodeClicked(this, inst.names.get(g));
        return;
      }
      const eg = target.closest('g.edge');
      if (eg) {
        edgeClicked(this, eg);
        return;
      }
      clearSelection();
    }
  }

  // Edge titles are "TAIL->HEAD", where either end may carry ":port" (or ":port:compass").
  function endName(s, nodes) {
    let n = s.trim();
    while (!nodes.has(n)) {
      const at = n.lastIndexOf(':');
      if (at <= 0) return s.trim();
      n = n.slice(0, at);
    }
    return n;
  }

  // ---------------------------------------------------------------------------------------------
  // Application state.

  const state = {
    mode: 'single',  // or 'compare'
    stage: 0,        // stage position (single mode)
    left: 0,         // stage positions (compare mode)
    right: 0,
    viewName: '',    // views are chosen by name so the choice survives a stage change
    viewChosen: false,  // until the user (or the URL) picks a view, each stage opens its first
    copy: null,      // selected copy index in the copies stage
    node: '',        // selected graph node name
    edge: null,      // {title, tooltip} of a clicked edge
    query: '',
    results: [],
    active: 0,       // highlighted result (Enter chooses it)
    found: '',       // node centred by the last search choice
    foundLocation: '',
    hops: null,      // copy view: hops shown around each copy (null: all)
    diff: null,      // {changed: [...], onlyLeft: [...], onlyRight: [...]}
  };
  let lastBuild = {ms: 0, nodes: 0, edges: 0};
  // View instances by "stagePos:viewPos" (plus ":side" for a second clone), see Pane.show.
  const instances = new Map();
  const ui = {};
  let panes = null;

  function primaryStage() {
    return stages[state.mode === 'compare' ? state.left : state.stage] || null;
  }

  function primaryPane() {
    return state.mode === 'compare' ? panes.left : panes.main;
  }

  function visiblePanes() {
    return state.mode === 'compare' ? [panes.left, panes.right] : [panes.main];
  }

  function viewFor(st) {
    if (!st || !st.views.length) return null;
    if (!state.viewChosen) return st.views[0];
    return st.views.find((v) => v.name === state.viewName) || st.views[0];
  }

  // ---------------------------------------------------------------------------------------------
  // UI construction.

  function buildUi(root) {
    root.classList.add('hp-viewer');
    clear(root);
    const stageOptions = () => stages.map((st) => h('option', {value: st.pos}, st.title));
    ui.stageSel = h('select', {class: 'hp-stage', title: 'stage', onchange: () => setStage(+ui.stageSel.value)},
                    stageOptions());
    ui.prev = h('button', {type: 'button', title: 'previous stage', onclick: () => stepStage(-1)}, '\u25c0');
    ui.next = h('button', {type: 'button', title: 'next stage', onclick: () => stepStage(1)}, '\u25b6');
    ui.single = h('span', {class: 'hp-group'}, ui.prev, ui.stageSel, ui.next);
    ui.leftSel = h('select', {class: 'hp-stage', title: 'left stage',
                              onchange: () => setCompare(+ui.leftSel.value, state.right)}, stageOptions());
    ui.rightSel = h('select', {class: 'hp-stage', title: 'right stage',
                               onchange: () => setCompare(state.left, +ui.rightSel.value)}, stageOptions());
    ui.diffSummary = h('span', {class: 'hp-diff-brief'});
    ui.double = h('span', {class: 'hp-group'}, 'left ', ui.leftSel, ' right ', ui.rightSel, ui.diffSummary);
    ui.tabs = h('span', {class: 'hp-tabs', role: 'tablist'});
    ui.compare = h('button', {type: 'button', class: 'hp-toggle', title: 'compare two stages side by side',
                              onclick: toggleCompare}, 'compare');
    const zoomButtons = h('span', {class: 'hp-group'},
        h('button', {type: 'button', title: 'zoom out (-)', onclick: () => zoomButton(1 / 1.5)}, '\u2212'),
        h('button', {type: 'button', title: 'zoom in (+)', onclick: () => zoomButton(1.5)}, '+'),
        h('button', {type: 'button', title: 'fit the picture (0)', onclick: fitButton}, 'fit'),
        h('button', {type: 'button', title: 'fit the width, show the top (w)',
                     onclick: () => visiblePanes().forEach((p) => p.fitWidth())}, 'width'));
    ui.search = h('input', {type: 'search', class: 'hp-search', placeholder: 'search node, op, ONNX name  ( / )',
                            spellcheck: 'false', autocomplete: 'off', 'aria-label': 'search nodes'});
    let debounce = 0;
    ui.search.addEventListener('input', guard(() => {
      clearTimeout(debounce);
      debounce = setTimeout(guard(() => setQuery(ui.search.value)), 80);
    }, true));
    ui.search.addEventListener('keydown', guard((e) => {
      if (e.key === 'Enter') {
        clearTimeout(debounce);
        if (ui.search.value !== state.query) setQuery(ui.search.value);
        chooseResult(state.active);
        e.preventDefault();
      } else if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        const n = Math.min(state.results.length, MAX_RESULTS);
        if (n) state.active = (state.active + (e.key === 'ArrowDown' ? 1 : n - 1)) % n;
        renderResults();
        e.preventDefault();
      }
    }));
    ui.hops = h('select', {class: 'hp-hops', title: 'copy view: how many hops of producers and ' +
                               'consumers to show around each copy (collapses the chains)',
                           onchange: () => setHops(ui.hops.value === 'all' ? null : Number(ui.hops.value))});
    ui.link = h('a', {class: 'hp-link', title: 'link to this state (stage, view, search, copy, compare)'}, 'link');
    ui.bar = h('div', {class: 'hp-bar'}, ui.single, ui.double, ui.tabs, ui.hops, ui.compare,
               zoomButtons, ui.search, ui.link);
    ui.note = h('div', {class: 'hp-note'});
    panes = {main: new Pane('main'), left: new Pane('left'), right: new Pane('right')};
    ui.panes = h('div', {class: 'hp-panes'}, panes.main.box, panes.left.box, panes.right.box);
    ui.results = h('section', {class: 'hp-results'});
    ui.info = h('section', {class: 'hp-info'});
    ui.diff = h('section', {class: 'hp-diff'});
    ui.copies = h('section', {class: 'hp-copies'});
    ui.side = h('div', {class: 'hp-side'}, ui.results, ui.info, ui.diff, ui.copies);
    ui.help = h('div', {class: 'hp-help'},
                'drag: pan \u00b7 wheel: zoom \u00b7 double-click: zoom in \u00b7 click a node: details, ' +
                'a copy: its path \u00b7 click empty space or Esc: clear \u00b7 /: search \u00b7 + \u2212 0 w: zoom');
    root.append(ui.bar, ui.note, h('div', {class: 'hp-main'}, ui.panes, ui.side), ui.help);

    document.addEventListener('keydown', guard((e) => {
      const t = e.target;
      const typing = t && (t.localName === 'input' || t.localName === 'textarea' ||
                           t.localName === 'select' || t.isContentEditable);
      if (e.key === 'Escape') {
        clearAll();
        if (t === ui.search) ui.search.blur();
        return;
      }
      if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
      if (e.key === '/') {
        e.preventDefault();
        ui.search.focus();
        ui.search.select();
      } else if (e.key === '+' || e.key === '=') {
        zoomButton(1.5);
      } else if (e.key === '-') {
        zoomButton(1 / 1.5);
      } else if (e.key === '0') {
        fitButton();
      } else if (e.key === 'w') {
        visiblePanes().forEach((p) => p.fitWidth());
      }
    }));
  }

  // In compare mode the buttons act on both panes: they show the same view kind side by side.
  function zoomButton(f) {
    visiblePanes().forEach((p) => p.zoomCentre(f));
  }

  function fitButton() {
    visiblePanes().forEach((p) => p.fit(true));
  }

  // ---------------------------------------------------------------------------------------------
  // Rendering of the chrome around the panes.

  // The copy view's chains collapse to `state.hops` hops around each copy (null: all drawn).
  // Hidden nodes and every edge touching one get display:none; the layout stays as drawn.
  function applyHops(inst) {
    const k = inst.maxHop < 0 ? null : state.hops;
    if (inst.hopsApplied === k) return;
    const hidden = new Set();
    for (const [g, name] of inst.names) {
      const d = inst.hop.get(g);
      const hide = k !== null && d !== undefined && d > k;
      g.style.display = hide ? 'none' : '';
      if (hide) hidden.add(name);
    }
    for (const e of inst.edges) {
      e.g.style.display = hidden.has(e.tail) || hidden.has(e.head) ? 'none' : '';
    }
    inst.visible = inst.names.size - hidden.size;
    inst.hopsApplied = k;
  }

  function renderHops() {
    const inst = primaryPane().inst;
    const max = inst ? inst.maxHop : -1;
    ui.hops.hidden = max < 0;
    if (max < 0) return;
    clear(ui.hops);
    ui.hops.append(h('option', {value: 'all'}, 'all hops'));
    for (let k = 0; k < max; ++k) {
      ui.hops.append(h('option', {value: String(k)}, k === 0 ? 'copies only' : k + (k === 1 ? ' hop' : ' hops')));
    }
    ui.hops.value = state.hops === null || state.hops >= max ? 'all' : String(state.hops);
  }

  function setHops(k) {
    state.hops = k;
    visiblePanes().forEach((p) => { if (p.inst) applyHops(p.inst); });
    renderHops();
    publish();
  }

  function renderAll() {
    const compare = state.mode === 'compare';
    ui.single.hidden = compare;
    ui.double.hidden = !compare;
    ui.compare.classList.toggle('hp-on', compare);
    ui.compare.setAttribute('aria-pressed', String(compare));
    ui.panes.classList.toggle('hp-compare', compare);
    panes.main.box.hidden = compare;
    panes.left.box.hidden = !compare;
    panes.right.box.hidden = !compare;
    ui.stageSel.value = String(state.stage);
    ui.leftSel.value = String(state.left);
    ui.rightSel.value = String(state.right);
    ui.prev.disabled = state.stage <= 0;
    ui.next.disabled = state.stage >= stages.length - 1;

    // The panes first: showing a view may instantiate it, and the tabs show what is shown.
    if (compare) {
      panes.left.show(stages[state.left], viewFor(stages[state.left]));
      panes.right.show(stages[state.right], viewFor(stages[state.right]));
    } else {
      panes.main.show(stages[state.stage], viewFor(stages[state.stage]));
    }
    renderTabs();
    renderHops();
    renderNote();
    refreshMarks();
    renderResults();
    renderInfo();
    renderDiff();
    renderCopies();
  }

  function renderTabs() {
    clear(ui.tabs);
    const names = [];
    const labels = new Map();
    const add = (st) => {
      if (!st) return;
      for (const v of st.views) {
        if (!labels.has(v.name)) { names.push(v.name); labels.set(v.name, v.label); }
      }
    };
    if (state.mode === 'compare') { add(stages[state.left]); add(stages[state.right]); }
    else add(stages[state.stage]);
    const current = primaryPane().view;
    for (const name of names) {
      const on = !!current && current.name === name;
      ui.tabs.append(h('button', {type: 'button', role: 'tab', class: on ? 'hp-tab hp-on' : 'hp-tab',
                                  'aria-selected': String(on), onclick: () => setView(name)},
                       labels.get(name)));
    }
  }

  function renderNote() {
    clear(ui.note);
    for (const p of visiblePanes()) {
      // A missing picture's note is already the pane's message.
      if (p.view && p.view.note && p.view.template) {
        ui.note.append(h('div', null, state.mode === 'compare' ? p.side + ': ' : '', p.view.note));
      }
    }
    ui.note.hidden = !ui.note.firstChild;
  }

  function renderResults() {
    clear(ui.results);
    if (!state.query.trim()) {
      ui.results.hidden = true;
      return;
    }
    ui.results.hidden = false;
    const st = primaryStage();
    const cur = primaryPane().view;
    const n = state.results.length;
    ui.results.append(h('h3', null, n === 0 ? 'no match' : n + (n === 1 ? ' match' : ' matches') +
                        (n > MAX_RESULTS ? ' (first ' + MAX_RESULTS + ' shown)' : ''),
                        h('span', {class: 'hp-dim-text'}, ' in ' + (st ? st.title : ''))));
    const list = h('ol', {class: 'hp-result-list'});
    state.results.slice(0, MAX_RESULTS).forEach((r, i) => {
      const e = r.e;
      let where = '';
      if (!e.views.length) where = 'not drawn';
      else if (!cur || e.views.indexOf(cur.pos) < 0) where = 'in ' + st.views[e.views[0]].label;
      list.append(h('li', {class: i === state.active ? 'hp-active' : null, title: e.name,
                           onclick: () => { state.active = i; chooseResult(i); }},
                    h('b', null, e.label || e.name), ' ', e.op ? h('span', {class: 'hp-op'}, e.op) : null,
                    where ? h('span', {class: 'hp-tag'}, where) : null,
                    h('div', {class: 'hp-dim-text'}, e.name, e.location ? ' \u00b7 ' + e.location : '')));
    });
    ui.results.append(list);
  }

  function infoRows(n) {
    const rows = [];
    for (const k of ['label', 'op', 'type', 'device', 'masks', 'location']) {
      if (n[k] !== undefined && n[k] !== null && n[k] !== '') {
        rows.push(h('tr', null, h('th', null, k === 'masks' ? 'mask' : k), h('td', null, str(n[k]))));
      }
    }
    return rows;
  }

  function renderInfo() {
    clear(ui.info);
    if (state.edge) {
      ui.info.append(h('h3', null, 'edge'), h('div', {class: 'hp-name'}, state.edge.title));
      if (state.edge.tooltip) ui.info.append(h('pre', {class: 'hp-tip'}, state.edge.tooltip));
      return;
    }
    const name = state.node;
    if (!name) {
      ui.info.append(h('p', {class: 'hp-dim-text'}, 'click a node for its details'));
      return;
    }
    ui.info.append(h('h3', null, 'node'), h('div', {class: 'hp-name'}, name));
    const sides = state.mode === 'compare' ?
        [['left', stages[state.left], panes.left], ['right', stages[state.right], panes.right]] :
        [['', stages[state.stage], panes.main]];
    for (const side of sides) {
      const st = side[1];
      const pane = side[2];
      if (!st) continue;
      const n = st.nodes[name];
      if (side[0]) ui.info.append(h('h4', null, side[0] + ': ' + st.title));
      const g = pane.inst && pane.inst.nodes.get(name);
      let tip = g ? tooltipOf(g) : '';
      if (!tip) {
        const e = stageIndex(st).byName.get(name);
        tip = e ? e.tooltip : '';
      }
      if (n) {
        ui.info.append(h('table', {class: 'hp-kv'}, infoRows(n)));
        if (tip) ui.info.append(h('details', null, h('summary', null, 'tooltip'), h('pre', {class: 'hp-tip'}, tip)));
      } else if (tip) {
        ui.info.append(h('pre', {class: 'hp-tip'}, tip));
      } else {
        ui.info.append(h('p', {class: 'hp-dim-text'}, stageIndex(st).byName.has(name) ?
                         'no details recorded for this node' : 'not in this stage'));
      }
      const k = st.copyByNode.get(name);
      if (k !== undefined) {
        const c = st.copies[k];
        ui.info.append(h('p', {class: 'hp-copy-line'}, 'copy #' + k + ': ' + str(c.direction) + ' ' +
                         str(c.value) + ' (' + str(c.src) + ' \u2192 ' + str(c.dst) + ', ' +
                         str(c.bytes) + ' B): ' + str(c.reason)));
      }
      if (!g && stageIndex(st).byName.has(name)) {
        const e = stageIndex(st).byName.get(name);
        ui.info.append(h('p', {class: 'hp-dim-text'}, e.views.length ?
                         'drawn in: ' + e.views.map((p) => st.views[p].label).join(', ') :
                         'not drawn in any view'));
      }
    }
  }

  function copiesStage() {
    return primaryStage();
  }

  function renderCopies() {
    clear(ui.copies);
    const st = copiesStage();
    if (!st) return;
    ui.copies.append(h('h3', null, 'copies', h('span', {class: 'hp-dim-text'},
                                                ' in ' + st.title + ' (' + st.copies.length + ')')));
    if (!st.copies.length) {
      ui.copies.append(h('p', {class: 'hp-dim-text'}, 'no copies'));
      return;
    }
    const tbody = h('tbody');
    st.copies.forEach((c, k) => {
      c = c || {};
      const dir = str(c.direction);
      const row = h('tr', {class: 'hp-copy-row hp-dir-' + dir.replace(/[^a-z0-9]/gi, '') +
                                  (state.copy === k ? ' hp-row-sel' : ''),
                           'data-copy': k,
                           title: (c.node ? 'node ' + c.node : 'implied copy (no node of its own)') +
                                  (c.path && c.path.length ? '\npath: ' + c.path.join(' \u2192 ') : ''),
                           onclick: () => selectCopy(state.copy === k ? null : k, {centre: true})},
                    h('td', null, String(k)),
                    h('td', {title: str(c.src) + ' \u2192 ' + str(c.dst)}, dir),
                    h('td', null, h('code', null, str(c.value)),
                      c.copy ? h('span', {class: 'hp-dim-text'}, ' \u2192 ' + str(c.copy)) : null),
                    h('td', {class: 'hp-num'}, str(c.bytes)),
                    h('td', {class: 'hp-reason'}, str(c.reason)));
      tbody.append(row);
    });
    ui.copies.append(h('table', {class: 'hp-copy-table'},
                       h('thead', null, h('tr', null, h('th', null, '#'), h('th', null, 'dir'),
                                         h('th', null, 'value'), h('th', null, 'bytes'),
                                         h('th', null, 'reason'))),
                       tbody));
  }

  function renderDiff() {
    clear(ui.diff);
    if (state.mode !== 'compare' || !state.diff) {
      ui.diff.hidden = true;
      return;
    }
    ui.diff.hidden = false;
    const d = state.diff;
    ui.diffSummary.textContent = diffSummary();
    ui.diff.append(h('h3', null, 'compare'),
                   h('p', {class: 'hp-diff-summary'}, diffSummary()));
    const section = (title, cls, names, detail) => {
      if (!names.length) return;
      const list = h('ul', {class: 'hp-diff-list'});
      names.slice(0, MAX_DIFF_LIST).forEach((name) => {
        list.append(h('li', {class: cls, title: name, onclick: () => focusNode(name, false)},
                      name, detail ? h('span', {class: 'hp-dim-text'}, ' ' + detail(name)) : null));
      });
      if (names.length > MAX_DIFF_LIST) list.append(h('li', {class: 'hp-dim-text'}, '\u2026 and ' +
                                                     (names.length - MAX_DIFF_LIST) + ' more'));
      ui.diff.append(h('details', {open: names.length <= 12}, h('summary', null, title + ' (' + names.length + ')'), list));
    };
    const L = stages[state.left];
    const R = stages[state.right];
    section('changed device', 'hp-chg', d.changed,
            (n) => (str(L.nodes[n].device) || 'none') + ' \u2192 ' + (str(R.nodes[n].device) || 'none'));
    section('only left', 'hp-only', d.onlyLeft, null);
    section('only right', 'hp-only', d.onlyRight, null);
  }

  function diffSummary() {
    const d = state.diff;
    return d.changed.length + ' changed device, ' + d.onlyLeft.length + ' only left, ' +
        d.onlyRight.length + ' only right';
  }

  // Marks (highlight, selection, diff outlines) are classes on the SVG elements. Each instance
  // remembers what it marked so clearing costs as much as the marks, not the whole picture.
  function markPane(pane) {
    const inst = pane.inst;
    if (!inst) return;
    for (const el of inst.marked) el.classList.remove.apply(el.classList, MARK_CLASSES);
    inst.marked = [];
    inst.svg.classList.remove('hp-dimmed');
    const mark = (el, cls) => {
      el.classList.add(cls);
      inst.marked.push(el);
    };
    const lit = new Set();
    const st = pane.stage;
    if (state.copy !== null && st === copiesStage() && st.copies[state.copy]) {
      const c = st.copies[state.copy];
      const names = new Set(Array.isArray(c.path) ? c.path : []);
      if (c.node) names.add(c.node);
      names.forEach((n) => {
        const g = inst.nodes.get(n);
        if (g) { mark(g, 'hp-hl'); lit.add(n); }
      });
      if (c.node && inst.nodes.has(c.node)) mark(inst.nodes.get(c.node), 'hp-copy-sel');
      for (const e of inst.edges) {
        if (names.has(e.tail) && names.has(e.head)) mark(e.g, 'hp-hl');
      }
      if (lit.size) inst.svg.classList.add('hp-dimmed');
    }
    if (state.node && inst.nodes.has(state.node)) {
      mark(inst.nodes.get(state.node), 'hp-sel');
      lit.add(state.node);
    }
    if (pane.diff) {
      pane.diff.changed.forEach((n) => { const g = inst.nodes.get(n); if (g) mark(g, 'hp-diff-chg'); });
      pane.diff.only.forEach((n) => { const g = inst.nodes.get(n); if (g) mark(g, 'hp-diff-only'); });
    }
    inst.highlighted = lit.size;
  }

  function refreshMarks() {
    visiblePanes().forEach(markPane);
  }

  // ---------------------------------------------------------------------------------------------
  // Actions.

  function resetSelection() {
    state.copy = null;
    state.node = '';
    state.edge = null;
    state.found = '';
    state.foundLocation = '';
  }

  function setStage(pos) {
    if (!stages[pos]) return;
    const keep = state.node;
    state.stage = pos;
    resetSelection();
    // A selected value stays selected across stages, so one can follow it through the passes.
    if (keep && stageIndex(stages[pos]).byName.has(keep)) state.node = keep;
    rerunSearch();
    renderAll();
    if (state.node) panes.main.centreOn(state.node);
  }

  function stepStage(d) {
    setStage(Math.min(Math.max(state.stage + d, 0), stages.length - 1));
  }

  function setView(name) {
    state.viewName = name;
    state.viewChosen = true;
    state.edge = null;
    renderAll();
    if (state.node) visiblePanes().forEach((p) => p.centreOn(state.node));
  }

  function toggleCompare() {
    if (state.mode === 'compare') {
      setSingle(state.left);
    } else {
      const a = state.stage;
      const b = a + 1 < stages.length ? a + 1 : Math.max(a - 1, 0);
      setCompare(Math.min(a, b), Math.max(a, b));
    }
  }

  function setSingle(pos) {
    state.mode = 'single';
    state.diff = null;
    panes.left.diff = panes.right.diff = null;
    state.stage = stages[pos] ? pos : 0;
    resetSelection();
    rerunSearch();
    renderAll();
  }

  function setCompare(a, b) {
    if (!stages[a] || !stages[b]) throw new Error('compare: no stage ' + (stages[a] ? b : a));
    state.mode = 'compare';
    state.left = a;
    state.right = b;
    state.stage = a;
    resetSelection();
    computeDiff();
    rerunSearch();
    renderAll();
  }

  // Values whose device differs between the two stages (same graph node name), and values only
  // one of them has. Both come from `nodes`: SVG-only nodes (legend, ...) are not values.
  function computeDiff() {
    const L = stages[state.left].nodes;
    const R = stages[state.right].nodes;
    const changed = [];
    const onlyLeft = [];
    const onlyRight = [];
    for (const n of Object.keys(L)) {
      if (!Object.prototype.hasOwnProperty.call(R, n)) onlyLeft.push(n);
      else if (str(L[n] && L[n].device) !== str(R[n] && R[n].device)) changed.push(n);
    }
    for (const n of Object.keys(R)) {
      if (!Object.prototype.hasOwnProperty.call(L, n)) onlyRight.push(n);
    }
    state.diff = {changed: changed, onlyLeft: onlyLeft, onlyRight: onlyRight};
    const ch = new Set(changed);
    panes.left.diff = {changed: ch, only: new Set(onlyLeft)};
    panes.right.diff = {changed: ch, only: new Set(onlyRight)};
  }

  // opts.centre: bring the copy into view (a table click); opts.scrollRow: bring its table row
  // into view (a click on the copy node in the picture, which is in view already).
  function selectCopy(k, opts) {
    opts = opts || {};
    const st = copiesStage();
    if (k !== null && (!st || !st.copies[k])) throw new Error('no copy #' + k + ' in this stage');
    state.copy = k;
    state.edge = null;
    if (k === null) {
      refreshMarks();
      renderCopies();
      return;
    }
    const c = st.copies[k];
    const names = (Array.isArray(c.path) ? c.path : []).slice();
    if (c.node) names.unshift(c.node);
    state.node = str(c.node);
    // Prefer a view that draws the copy; the copy view normally does.
    const pane = primaryPane();
    const drawn = (p) => names.some((n) => p.has(n));
    if (names.length && !drawn(pane)) {
      const idx = stageIndex(st);
      const v = st.views.find((view) => names.some((n) => {
        const e = idx.byName.get(n);
        return e && e.views.indexOf(view.pos) >= 0;
      }));
      if (v) {
        state.viewName = v.name;
        state.viewChosen = true;
      }
    }
    renderAll();
    if (opts.centre) {
      const target = names.find((n) => pane.has(n));
      if (target) pane.centreOn(target);
    }
    const row = ui.copies.querySelector('tr[data-copy="' + k + '"]');
    if (row && opts.scrollRow) {
      row.scrollIntoView({block: 'nearest'});
      // The table is wider than the side panel: scrolling it into view must not shift the
      // panel sideways (the node facts above would lose their left edge).
      for (let el = row.parentElement; el; el = el.parentElement) {
        if (el.scrollLeft) el.scrollLeft = 0;
      }
    }
  }

  function nodeClicked(pane, name) {
    state.node = name;
    state.edge = null;
    const st = pane.stage;
    const k = st ? st.copyByNode.get(name) : undefined;
    if (k !== undefined && st === copiesStage()) {
      selectCopy(k, {scrollRow: true});
      return;
    }
    if (state.mode === 'compare') {
      const other = pane === panes.left ? panes.right : panes.left;
      other.centreOn(name);
    }
    refreshMarks();
    renderInfo();
  }

  function edgeClicked(pane, g) {
    state.edge = {title: titleOf(g), tooltip: tooltipOf(g)};
    renderInfo();
  }

  function clearSelection() {
    resetSelection();
    refreshMarks();
    renderInfo();
    renderCopies();
  }

  function clearAll() {
    ui.search.value = '';
    state.query = '';
    state.results = [];
    state.active = 0;
    clearSelection();
    renderResults();
  }

  function setQuery(q) {
    state.query = q;
    state.found = '';
    state.foundLocation = '';
    rerunSearch();
    renderResults();
  }

  function rerunSearch() {
    const st = primaryStage();
    state.results = st ? search(st, state.query) : [];
    state.active = 0;
  }

  function chooseResult(i) {
    const r = state.results[i];
    if (!r) return;
    state.active = i;
    focusNode(r.e.name, true);
  }

  // Selects node `name` of the shown stage(s) and centres it, switching to a view that draws it
  // (the full graph first) when the current one does not.
  function focusNode(name, fromSearch) {
    const pane = primaryPane();
    const st = pane.stage;
    if (!st) return;
    const e = stageIndex(st).byName.get(name);
    state.node = name;
    state.edge = null;
    if (!pane.has(name) && e && e.views.length) {
      const full = e.views.find((p) => st.views[p].name === 'full');
      state.viewName = st.views[full !== undefined ? full : e.views[0]].name;
      state.viewChosen = true;
      renderAll();
    } else {
      refreshMarks();
      renderInfo();
      renderResults();
    }
    let centred = false;
    for (const p of visiblePanes()) centred = p.centreOn(name) || centred;
    if (fromSearch) {
      state.found = centred ? name : '';
      state.foundLocation = e ? e.location : '';
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Test state and deep links.

  function publish() {
    try {
      const d = body.dataset;
      d.viewerStatus = firstError ? 'error: ' + firstError : 'ok';
      d.stages = String(stages.length);
      d.picturesPresent = String(picturesPresent);
      d.picturesExpected = String(picturesExpected);
      if (!panes) return;
      const st = primaryStage();
      const pv = primaryPane().view;
      d.mode = state.mode;
      d.currentStage = st ? String(st.index) : '';
      d.currentView = pv ? pv.name : '';
      d.copyRows = String(ui.copies.querySelectorAll('tr.hp-copy-row').length);
      d.selectedCopy = state.copy === null ? '' : String(state.copy);
      d.selectedNode = state.node;
      d.searchQuery = state.query;
      d.searchMatches = String(state.results.length);
      d.searchFound = state.found;
      d.searchLocation = state.foundLocation;
      d.highlighted = String(visiblePanes().reduce((n, p) => n + (p.inst ? p.inst.highlighted : 0), 0));
      const compare = state.mode === 'compare' && state.diff;
      d.diff = compare ? stages[state.left].index + ',' + stages[state.right].index : '';
      d.diffChanged = compare ? String(state.diff.changed.length) : '';
      d.diffOnlyLeft = compare ? String(state.diff.onlyLeft.length) : '';
      d.diffOnlyRight = compare ? String(state.diff.onlyRight.length) : '';
      d.viewNodes = String(primaryPane().inst ? primaryPane().inst.nodes.size : 0);
      d.hops = state.hops === null ? 'all' : String(state.hops);
      d.visibleNodes = String(primaryPane().inst ? primaryPane().inst.visible : 0);
      d.viewBuildMs = lastBuild.ms.toFixed(1);
      ui.link.href = deepLink();
      if (!firstError && document.title !== originalTitle) document.title = originalTitle;
    } catch (e) {
      // Never throw from here: fail() calls publish().
      if (!firstError) {
        firstError = 'publish: ' + (e && e.message ? e.message : String(e));
        body.dataset.viewerStatus = 'error: ' + firstError;
        document.title = 'pass-viz viewer ERROR: ' + firstError;
      }
    }
  }

  function deepLink() {
    const p = [];
    const add = (k, v) => p.push(k + '=' + encodeURIComponent(v));
    if (state.mode === 'compare') add('diff', stages[state.left].index + ',' + stages[state.right].index);
    else if (stages[state.stage]) add('stage', stages[state.stage].index);
    const v = primaryPane().view;
    if (v) add('view', v.name);
    if (state.copy !== null) add('copy', state.copy);
    if (state.hops !== null) add('hops', state.hops);
    if (state.query) add('search', state.query);
    return location.href.split(/[?#]/)[0] + '?' + p.join('&');
  }

  // `stage` and `diff` name stages by their `index` field (the position when no stage has it).
  function stagePos(v) {
    const s = String(v).trim();
    const byIndex = stages.find((st) => String(st.index) === s);
    if (byIndex) return byIndex.pos;
    const n = Number(s);
    if (s !== '' && Number.isInteger(n) && stages[n]) return n;
    throw new Error('URL names no stage ' + JSON.stringify(s));
  }

  // Each parameter is applied on its own: a bad one is reported (status "error: ...") but does
  // not keep the others, or the default picture, from showing.
  function applyUrl() {
    const q = new URLSearchParams(location.search);
    const step = (fn) => {
      try {
        fn();
      } catch (e) {
        fail(e);
      }
    };
    if (q.has('view')) {
      state.viewName = q.get('view');
      state.viewChosen = true;
    }
    renderAll();
    if (q.has('diff')) {
      step(() => {
        const ab = q.get('diff').split(',');
        if (ab.length !== 2) throw new Error('diff= wants two stages, A,B');
        setCompare(stagePos(ab[0]), stagePos(ab[1]));
      });
    } else if (q.has('stage')) {
      step(() => setStage(stagePos(q.get('stage'))));
    }
    if (q.has('hops')) {
      step(() => {
        const k = Number(q.get('hops'));
        if (!Number.isInteger(k) || k < 0) throw new Error('hops= wants a number of hops, 0 or more');
        setHops(k);
      });
    }
    if (q.has('copy')) {
      step(() => {
        const k = Number(q.get('copy'));
        if (!Number.isInteger(k)) throw new Error('copy= wants a row number');
        selectCopy(k, {centre: true, scrollRow: true});
      });
    }
    if (q.has('search')) {
      step(() => {
        ui.search.value = q.get('search');
        setQuery(ui.search.value);
        chooseResult(0);
      });
    }
  }

  // ---------------------------------------------------------------------------------------------

  function start() {
    const root = document.getElementById('hp-viewer');
    try {
      if (!root) throw new Error('no <div id="hp-viewer"> in the page');
      loadData();
      // The page opens on the last stage that has a copy view (the copies are what a user came
      // to see), else on the input.
      for (let i = stages.length - 1; i >= 0; --i) {
        if (stages[i].views.some((v) => v.name === 'copies')) {
          state.stage = i;
          break;
        }
      }
      const first = stages[state.stage];
      state.viewName = first && first.views.length ? first.views[0].name : '';
      buildUi(root);
      applyUrl();
    } catch (e) {
      if (root) {
        root.classList.add('hp-viewer');
        root.prepend(h('div', {class: 'hp-error'}, 'viewer error: ' + (e && e.message ? e.message : e)));
      }
      fail(e);
    }
    publish();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
