// app.js: the pages of runner view. Everything shown is read from the
// server's API, which reads the run directories; a run's page follows its
// journal as server-sent events and redraws as they come.
"use strict";
(function () {
  const C = window.Charts;
  const app = document.getElementById("app");
  const crumbs = document.getElementById("crumbs");
  const conn = document.getElementById("conn");
  // For tests and the curious: how late events were shown, in ms.
  const stats = window.__viewStats = { events: 0, live: 0, lags: [], maxLag: 0, renders: 0, caughtUp: false };
  let cleanup = () => { };

  // ---- small helpers ----
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v;
      else if (k === "html") e.innerHTML = v; // only HTML the server rendered (goldmark, raw HTML left out) or drew (SVG)
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : v);
    }
    for (const k of kids.flat()) if (k !== null && k !== undefined && k !== false) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
    return e;
  }
  async function api(path) {
    const r = await fetch(path);
    if (!r.ok) throw new Error(`${path}: ${r.status} ${(await r.text()).trim()}`);
    return r.json();
  }
  const num = n => (n || 0).toLocaleString("en-US");
  // cost shows a cost; builtin (the date of built-in list prices it is
  // at) marks it with "*", as report.md and runner runs do.
  function cost(c, priced, builtin) {
    if (!c && !priced) return "";
    const s = c < 0.01 ? c.toFixed(4) : c.toFixed(3);
    const text = (priced === false ? "≥ " : "") + "$" + s + (builtin ? "*" : "");
    return builtin ? el("span", { title: `at built-in list prices of ${builtin} (the spec gives the model no price)` }, text) : text;
  }
  function dur(ms) {
    if (ms === undefined || ms === null) return "";
    const s = ms / 1000;
    if (s < 60) return s.toFixed(1) + " s";
    const m = Math.floor(s / 60);
    if (m < 60) return `${m} min ${Math.round(s - m * 60)} s`;
    return `${Math.floor(m / 60)} h ${m % 60} min`;
  }
  function when(t) {
    if (!t) return "";
    const d = new Date(t);
    return d.toLocaleString("en-GB", { year: "numeric", month: "short", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit" });
  }
  // short is a time in a table: the day and the time.
  function short(t) {
    if (!t) return "";
    return new Date(t).toLocaleString("en-GB", { month: "short", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit" });
  }
  const badge = (text, cls) => el("span", { class: "badge " + (cls || text) }, text);
  function value(v) {
    if (typeof v === "string") return v;
    return JSON.stringify(v, null, 2);
  }
  // jsonView draws parsed JSON as tables: an object as rows of keys, a
  // list of objects as a table with a column per key, a list of plain
  // values as a list.
  function jsonView(v, depth) {
    depth = depth || 0;
    if (v === null || v === undefined) return el("span", { class: "note" }, "null");
    if (typeof v !== "object") return el("span", { class: "jv-" + typeof v }, String(v));
    if (depth > 4) return el("code", {}, JSON.stringify(v));
    if (Array.isArray(v)) {
      if (!v.length) return el("span", { class: "note" }, "(empty list)");
      const objs = v.every(x => x && typeof x === "object" && !Array.isArray(x));
      if (objs) {
        const cols = [...new Set(v.flatMap(x => Object.keys(x)))];
        return el("div", { class: "tablewrap" }, el("table", { class: "json" }, el("thead", {}, el("tr", {}, cols.map(c => el("th", {}, c)))),
          el("tbody", {}, v.map(x => el("tr", {}, cols.map(c => el("td", {}, c in x ? jsonView(x[c], depth + 1) : "")))))));
      }
      return el("ol", { class: "json" }, v.map(x => el("li", {}, jsonView(x, depth + 1))));
    }
    const keys = Object.keys(v);
    if (!keys.length) return el("span", { class: "note" }, "(empty)");
    return el("div", { class: "tablewrap" }, el("table", { class: "json kvt" }, el("tbody", {}, keys.map(k => el("tr", {}, el("th", {}, k), el("td", {}, jsonView(v[k], depth + 1)))))));
  }
  // outputView shows an output: Markdown the server rendered, JSON as
  // tables, anything else as text.
  function outputView(v, html) {
    if (typeof v === "string" && /^\s*[[{]/.test(v)) {
      try { const p = JSON.parse(v); if (p && typeof p === "object") return el("div", { class: "body" }, jsonView(p)); } catch (e) { /* not JSON: Markdown */ }
    }
    if (html) return el("div", { class: "body", html });
    if (v !== null && typeof v === "object") return el("div", { class: "body" }, jsonView(v));
    return el("pre", {}, value(v));
  }
  const callHref = (run, key) => "#/call?" + new URLSearchParams({ run, key });
  function initials(name) {
    const parts = String(name).replace(/[^\p{L}\p{N} ]/gu, " ").trim().split(/\s+/);
    return ((parts[0] || "?")[0] + (parts.length > 1 ? parts[parts.length - 1][0] : "")).toUpperCase();
  }
  function setCrumbs(...parts) {
    crumbs.replaceChildren(...parts.flatMap((p, i) => i ? [" / ", p] : [p]));
  }
  function setConn(state, text) {
    conn.className = "conn " + (state || "");
    conn.replaceChildren(...(text ? [el("span", { class: "dot" }), text] : []));
  }
  function stat(label, v) { return el("div", { class: "stat" }, el("b", {}, v === "" || v === undefined ? "–" : v), el("span", {}, label)); }
  function table(head, rows, opts) {
    opts = opts || {};
    const t = el("table", { class: opts.class },
      el("thead", {}, el("tr", {}, head.map((h, i) => el("th", { class: (opts.num || []).includes(i) ? "num" : "" }, h)))),
      el("tbody", {}, rows.map(r => el("tr", {}, r.map((c, i) => c instanceof Node && c.tagName === "TD" ? c : el("td", { class: (opts.num || []).includes(i) ? "num" : "" }, c))))));
    return el("div", { class: "tablewrap" }, t);
  }
  function parseHash() {
    const h = decodeURIComponent(location.hash.replace(/^#/, "")) || "/";
    const [path, query] = h.split("?");
    const params = new URLSearchParams(query || "");
    return { path, params };
  }
  function go(path, params) {
    const q = params && [...params].length ? "?" + params.toString() : "";
    location.hash = "#" + path + q;
  }

  // ---- routing ----
  async function route() {
    cleanup();
    cleanup = () => { };
    stats.caughtUp = false;
    document.body.removeAttribute("data-status");
    document.body.removeAttribute("data-page");
    app.classList.remove("wide");
    setConn("", "");
    const { path, params } = parseHash();
    try {
      if (path.startsWith("/run/")) await runPage(path.slice(5), params);
      else if (path.startsWith("/sweep/")) await sweepPage(path.slice(7), params);
      else if (path.startsWith("/study/")) await studyPage(path.slice(7), params);
      else if (path.startsWith("/compare")) await comparePage(params);
      else if (path.startsWith("/call")) await callPage(params);
      else if (path.startsWith("/start") && window.Act) await window.Act.startPage(kit, params);
      else await runsPage(params);
    } catch (e) {
      app.replaceChildren(el("div", { class: "error" }, String(e.message || e)));
    }
  }
  window.addEventListener("hashchange", route);
  // What act.js (starting, answering, cancelling runs) draws with.
  const kit = { el, api, go, setCrumbs, app, route };
  // Leaving the page closes its event stream (a browser allows only a few
  // connections per server, and a page kept for the back button would hold
  // one); coming back opens it again.
  window.addEventListener("pagehide", () => { cleanup(); cleanup = () => { }; });
  window.addEventListener("pageshow", e => { if (e.persisted) route(); });

  // ---- the list of runs ----
  async function runsPage(params) {
    setCrumbs(el("a", { href: "#/" }, "Runs"));
    document.title = "runs · runner view";
    const data = await api("/api/runs");
    const specs = [...new Set(data.runs.map(r => r.spec))].sort();
    const statuses = [...new Set(data.runs.map(r => r.status))].sort();
    const selected = new Set();
    const specSel = el("select", { id: "filter-spec" }, el("option", { value: "" }, "all specs"), specs.map(s => el("option", { value: s }, s)));
    const statusSel = el("select", { id: "filter-status" }, el("option", { value: "" }, "all statuses"), statuses.map(s => el("option", { value: s }, s)));
    const text = el("input", { type: "search", placeholder: "id or output contains…", id: "filter-text" });
    specSel.value = params.get("spec") || "";
    statusSel.value = params.get("status") || "";
    text.value = params.get("q") || "";
    const compareBtn = el("button", { disabled: true, onclick: () => { const [a, b] = [...selected]; go("/compare", new URLSearchParams({ a, b })); } }, "Compare the two selected");
    const body = el("div");
    const count = el("span", { class: "note" });
    function draw() {
      const spec = specSel.value, status = statusSel.value, q = text.value.toLowerCase();
      const rows = data.runs.filter(r => (!spec || r.spec === spec) && (!status || r.status === status) && (!q || r.id.toLowerCase().includes(q) || (r.first_output || "").toLowerCase().includes(q)));
      count.textContent = `${rows.length} of ${data.runs.length} runs`;
      if (!rows.length) { body.replaceChildren(el("p", { class: "empty" }, data.runs.length ? "No run matches the filters." : (data.studies || []).length ? "No runs outside the studies above: a study's runs open from its page." : `No runs in ${data.root} yet.`)); return; }
      const cols = RUN_COLUMNS.filter(c => c.always || shown.has(c.key));
      body.replaceChildren(table(["", ...cols.map(c => c.label)],
        rows.map(r => [
          el("input", { type: "checkbox", checked: selected.has(r.id), onchange: e => { e.target.checked ? selected.add(r.id) : selected.delete(r.id); compareBtn.disabled = selected.size !== 2; } }),
          ...cols.map(c => el("td", { class: [c.num ? "num" : "", c.cls || ""].join(" ").trim() || undefined, "data-col": c.key }, c.cell(r)))]),
        { class: "runs" }));
    }
    // Which columns show: all by default; the choice is kept in the browser.
    const shown = new Set(JSON.parse(localStorage.getItem("runner-view-columns") || "null") || RUN_COLUMNS.map(c => c.key));
    const chooser = el("details", { class: "columns", id: "columns" }, el("summary", {}, "Columns"),
      el("div", { class: "colpick" }, RUN_COLUMNS.filter(c => !c.always).map(c => el("label", {}, el("input", { type: "checkbox", checked: shown.has(c.key), "data-col": c.key, onchange: e => {
        e.target.checked ? shown.add(c.key) : shown.delete(c.key);
        localStorage.setItem("runner-view-columns", JSON.stringify([...shown]));
        draw();
      } }), " " + c.label))));
    const onFilter = () => {
      const p = new URLSearchParams();
      if (specSel.value) p.set("spec", specSel.value);
      if (statusSel.value) p.set("status", statusSel.value);
      if (text.value) p.set("q", text.value);
      history.replaceState(null, "", "#/" + ([...p].length ? "?" + p : ""));
      draw();
    };
    specSel.onchange = statusSel.onchange = onFilter;
    text.oninput = onFilter;
    const parts = [];
    if ((data.studies || []).length) {
      parts.push(el("div", { class: "card" }, el("h2", {}, "Studies"),
        table(["study", "name", "dataset", "baseline", "sweeps", "table"],
          data.studies.map(s => [el("a", { href: "#/study/" + s.id, class: "id" }, s.id), s.name, s.dataset, s.baseline, `${s.started} of ${s.cells}`, s.finished ? "written" : "not yet"]),
          { num: [4], class: "studies" })));
    }
    if (data.sweeps.length) {
      const pickedSweeps = new Set();
      const compareSweepsBtn = el("button", { id: "compare-sweeps", disabled: true, onclick: () => { const [a, b] = [...pickedSweeps]; go("/compare", new URLSearchParams({ a, b })); } }, "Compare the two selected sweeps");
      parts.push(el("div", { class: "card" }, el("h2", {}, "Sweeps and datasets"),
        table(["", "sweep", "spec", "runs", "completed", "inconclusive", "failed", "accuracy (95% CI)", "calls made", "without the cache"],
          data.sweeps.map(s => {
            const a = s.accuracy;
            return [el("input", { type: "checkbox", "data-sweep": s.id, onchange: e => { e.target.checked ? pickedSweeps.add(s.id) : pickedSweeps.delete(s.id); compareSweepsBtn.disabled = pickedSweeps.size !== 2; } }),
              el("a", { href: "#/sweep/" + s.id, class: "id" }, s.id), s.spec, s.runs, s.completed, s.inconclusive || 0, s.failed,
              a ? `${a.mean.toFixed(3)} (${a.low.toFixed(3)}–${a.high.toFixed(3)})` : "", num(s.calls_made), num(s.calls_without_cache)];
          }), { num: [3, 4, 5, 6, 8, 9], class: "sweeps" }),
        data.sweeps.length > 1 ? el("div", { class: "filters", style: "margin-top:10px" }, compareSweepsBtn) : null));
    }
    parts.push(el("div", { class: "card" }, el("h2", {}, "Runs"),
      el("div", { class: "filters" }, el("label", {}, "Spec", specSel), el("label", {}, "Status", statusSel), text, compareBtn, count, chooser), body));
    app.classList.add("wide");
    const startLink = data.can_start ? el("div", { class: "links" }, el("a", { href: "#/start", id: "start-link", class: "button primary" }, "Start a run")) : null;
    app.replaceChildren(el("div", { class: "pagehead" }, el("div", {}, el("h1", {}, "Runs"), el("div", { class: "sub mono" }, data.root)), startLink), ...parts);
    draw();
    // While a run is going, keep the list fresh.
    if (data.runs.some(r => r.status === "running")) {
      const t = setTimeout(route, 3000);
      cleanup = () => clearTimeout(t);
    }
  }

  // The columns of the list of runs.
  const RUN_COLUMNS = [
    { key: "run", label: "run", always: true, cell: r => el("a", { href: "#/run/" + r.id, class: "runid", title: r.id }, r.sweep ? el("small", {}, r.sweep + "/") : null, r.id.split("/").pop()) },
    // (a run id breaks after its time, "…Z-", and at its hyphens)
    { key: "spec", label: "spec", cell: r => r.spec },
    { key: "status", label: "status", cell: r => badge(r.status) },
    { key: "started", label: "started", cls: "nowrap", cell: r => el("span", { title: when(r.created) }, r.created ? new Date(r.created).toLocaleString("en-GB", { month: "short", day: "2-digit", hour: "2-digit", minute: "2-digit" }) : "") },
    { key: "duration", label: "duration", num: true, cls: "nowrap", cell: r => dur(r.duration_ms) },
    { key: "rounds", label: "rounds", num: true, cell: r => r.rounds || "" },
    { key: "goals", label: "goals", num: true, cell: r => r.goals || "" },
    { key: "calls", label: "calls", num: true, cell: r => num(r.calls) },
    { key: "tokens", label: "tokens", num: true, cell: r => num(r.tokens) },
    // A cost at built-in prices says so in its tooltip (a "*" would
    // widen the list past its card).
    { key: "cost", label: "cost", num: true, cls: "nowrap", cell: r => r.builtin_prices ? el("span", { title: `at built-in list prices of ${r.builtin_prices} (the spec gives a model no price); the run's page marks it *` }, cost(r.cost, r.priced)) : cost(r.cost, r.priced) },
    { key: "score", label: "score", num: true, cell: r => r.score === undefined || r.score === null ? "" : String(r.score) },
    // A failed run's error is its outcome: it takes the output's place.
    { key: "output", label: "first output or error", cls: "out", cell: r => r.error ? el("span", { class: "err", title: r.error }, r.error.split("\n")[0]) : el("span", { title: r.first_output || "" }, r.first_output || "") },
  ];

  // ---- a run ----
  const TABS = [["transcript", "Transcript"], ["verdicts", "Verdicts"], ["charts", "Charts"], ["usage", "Usage"], ["calls", "Calls"], ["clarify", "Questions"], ["tools", "Tool calls"], ["outputs", "Outputs"]];

  async function runPage(id, params) {
    const info = await api("/api/run?id=" + encodeURIComponent(id));
    const tab = params.get("tab") || "transcript";
    setCrumbs(el("a", { href: "#/" }, "Runs"), ...parentCrumbs(id, "run"), el("span", { class: "mono" }, id.split("/").pop()));
    document.title = `${info.manifest.spec_name} · runner view`;
    const st = newRunState(info);
    st.params = params;
    const agentsById = st.agents;

    // Page skeleton.
    const statusEl = el("span");
    const statsEl = el("div", { class: "stats" });
    const flow = el("div", { class: "flowbox", html: info.graph || "" });
    if (!info.graph) flow.append(el("p", { class: "note" }, "The flow cannot be drawn: " + (info.plan_error || "no spec")));
    // A node of the flow opens the list of its calls.
    for (const g of flow.querySelectorAll("[data-node]")) {
      g.classList.add("clickable");
      g.addEventListener("click", () => go("/run/" + id, new URLSearchParams({ tab: "calls", node: g.getAttribute("data-node") })));
    }
    const now = el("div", { class: "now" });
    const side = el("div");
    const tabs = el("div", { class: "tabs" });
    const pane = el("div", { id: "pane" });
    const actBox = el("div", { id: "actions" });
    const acts = window.Act ? window.Act.runActions(kit, actBox, id, info) : null;
    const links = el("div", { class: "links" }, (info.files || []).map(f => el("a", { href: `/api/file?id=${encodeURIComponent(id)}&name=${f}`, target: "_blank", rel: "noopener" }, f)));
    app.replaceChildren(
      el("div", { class: "pagehead" },
        el("div", {}, el("h1", {}, info.manifest.spec_name, " ", statusEl, Object.values(info.manifest.models || {}).some(mi => mi.simulated) ? [" ", el("span", { class: "badge simulated", title: "replies made by runner's offline model, not by a language model; not priced" }, "simulated")] : null), el("div", { class: "sub mono" }, id), info.description ? el("div", { class: "sub" }, info.description) : null, statsEl),
        links),
      actBox,
      el("div", { class: "grid two" },
        el("div", { class: "card" }, el("h2", {}, "Flow"), flow, now),
        el("div", { class: "card" }, side)),
      el("div", { class: "card" }, tabs, pane));

    function drawTabs() {
      tabs.replaceChildren(...TABS.map(([k, label]) => {
        const cc = st.callCounts();
        const n = { transcript: st.messages.filter(m => !m.private).length, verdicts: st.verdictGroups().length, clarify: st.questions().length, tools: st.tools.length, calls: num(cc.done) + (cc.inFlight ? ` + ${num(cc.inFlight)}` : "") }[k];
        const p = new URLSearchParams({ tab: k });
        return el("a", { href: "#/run/" + id + "?" + p, class: tab === k ? "on" : "", id: "tab-" + k }, label, n !== undefined ? el("span", { class: "n" }, n) : null);
      }));
    }

    let transcript = null;
    function render() {
      stats.renders++;
      statusEl.replaceChildren(badge(st.status));
      const u = st.usageTotal();
      const elapsed = st.status === "running" && st.started ? Date.now() - st.started : st.durationMS;
      statsEl.replaceChildren(stat("started", when(st.startedAt || info.manifest.created)), stat("duration", dur(elapsed)),
        stat("calls", num(u.calls) + (st.callCounts().inFlight ? ` + ${st.callCounts().inFlight} ${st.status === "running" ? "in flight" : "unanswered"}` : "")), stat("tokens", num(u.prompt + u.completion)), stat("cost", cost(u.cost, u.priced, u.builtin) || "–"),
        stat("messages", num(st.messages.filter(m => !m.private).length)));
      // The flow: what runs now, what is done.
      for (const g of flow.querySelectorAll("[data-node]")) {
        const n = g.getAttribute("data-node");
        g.classList.toggle("running", st.runningNodes().has(n));
        g.classList.toggle("done", st.doneNodes.has(n) && !st.runningNodes().has(n));
        g.classList.toggle("failed", st.failedNodes.has(n));
      }
      now.replaceChildren(...st.nowText());
      side.replaceChildren(...summaryPanel(st, info));
      drawTabs();
      if (tab === "transcript") {
        if (!transcript) { transcript = new Transcript(st, agentsById); pane.replaceChildren(transcript.root); }
        transcript.update();
      } else {
        pane.replaceChildren(...tabPane(tab, st, info));
      }
      // How late the events are on the page.
      const t = Date.now();
      for (const ev of st.pending) {
        const lag = t - Date.parse(ev.time);
        stats.lags.push(lag);
        stats.maxLag = Math.max(stats.maxLag, lag);
        stats.live++;
      }
      st.pending = [];
      document.body.setAttribute("data-events", String(stats.events));
      document.body.setAttribute("data-status", st.status);
      if (acts && st.caughtUp) acts.update(st.status);
    }
    let scheduled = false;
    function schedule() {
      if (scheduled) return;
      scheduled = true;
      requestAnimationFrame(() => { scheduled = false; render(); });
    }

    // Follow the journal.
    const es = new EventSource("/api/events?id=" + encodeURIComponent(id));
    let ticker = null;
    es.onmessage = m => {
      const ev = JSON.parse(m.data);
      st.apply(ev);
      stats.events++;
      if (st.caughtUp) st.pending.push(ev);
      schedule();
    };
    es.addEventListener("caught_up", () => {
      st.caughtUp = true;
      stats.caughtUp = true;
      render();
      if (st.status === "running") setConn("live", "live");
      const want = params.get("msg");
      const target = want && document.querySelector(`#transcript [data-id="${CSS.escape(want)}"]`);
      if (target) { target.classList.add("picked"); target.scrollIntoView({ block: "center" }); }
    });
    es.addEventListener("reset", () => { es.close(); route(); });
    es.addEventListener("problem", m => { pane.prepend(el("div", { class: "error" }, "The journal cannot be read: " + JSON.parse(m.data))); });
    es.onerror = () => { if (st.status === "running") setConn("", "reconnecting…"); };
    es.onopen = () => { if (st.status === "running") setConn("live", "live"); };
    ticker = setInterval(() => { if (st.status === "running") schedule(); else if (conn.classList.contains("live")) setConn("", "finished"); }, 1000);
    cleanup = () => { es.close(); clearInterval(ticker); };
    render();
  }

  // newRunState holds what the events of a run say so far.
  function newRunState(info) {
    const st = {
      info, status: info.status === "running" || info.status === "incomplete" ? info.status : info.status,
      agents: {}, messages: [], items: [], rejections: [], calls: new Map(), tools: [], warnings: [], errors: [],
      open: new Map(), doneNodes: new Set(), failedNodes: new Set(), outputs: null, outputsHtml: {}, waiting: [],
      started: 0, startedAt: null, durationMS: info.result ? info.result.duration_ms : null, caughtUp: false, pending: [],
      retries: [], lastSpeaker: null, firstTime: null,
    };
    const colors = C.palette;
    (info.agents || []).forEach((a, i) => { st.agents[a.id] = { name: a.name, role: a.role, model: a.model, color: colors[i % colors.length] }; });
    st.agent = id => st.agents[id] || (st.agents[id] = { name: id, color: id === "timekeeper" ? "#a8710d" : "#6d7a8c" });
    if (info.result) {
      st.result = info.result;
      st.outputs = info.result.outputs;
      st.order = info.result.output_order;
      st.warnings = (info.result.warnings || []).slice();
    }
    st.apply = function (ev) {
      const d = ev.data || {};
      if (!st.firstTime) st.firstTime = Date.parse(ev.time);
      switch (ev.type) {
        case "run_started":
          st.started = Date.parse(ev.time); st.startedAt = ev.time; st.warnings = []; st.errors = [];
          if (!info.result) st.status = info.status;
          break;
        case "run_resumed":
          st.items.push({ kind: "resumed", ev });
          if (st.status !== "running" && !info.result) st.status = info.status;
          break;
        case "node_started":
          st.open.set(ev.key, d.node);
          break;
        case "node_finished":
          st.open.delete(ev.key); st.doneNodes.add(d.node);
          break;
        case "node_failed":
          st.open.delete(ev.key); st.failedNodes.add(d.node); st.errors.push(`node ${d.node}: ${d.error}`);
          break;
        case "model_request":
          if (d.human) break; // a person's turn at a seat: no model call
          st.calls.set(ev.key, Object.assign({ key: ev.key, requested: Date.parse(ev.time), retries: [] }, d));
          st.lastCall = d;
          break;
        case "model_response": {
          if (d.human) break;
          const c = st.calls.get(ev.key) || { key: ev.key, retries: [] };
          Object.assign(c, d, { responded: Date.parse(ev.time), done: true });
          if (!c.requested) c.requested = c.responded - (d.latency_ms || 0);
          st.calls.set(ev.key, c);
          break;
        }
        case "retry": {
          const c = st.calls.get(ev.key);
          if (c) c.retries.push(Date.parse(ev.time));
          st.retries.push(Object.assign({ key: ev.key }, d));
          break;
        }
        case "model_error":
          st.errors.push(`call ${ev.key}: ${d.error}`);
          if (st.calls.has(ev.key)) st.calls.get(ev.key).failed = true;
          break;
        case "message":
          st.messages.push(d);
          st.items.push({ kind: "msg", m: d, ev, live: st.caughtUp });
          if (!d.private) st.lastSpeaker = d;
          break;
        case "rejected":
          st.rejections.push(Object.assign({ key: ev.key }, d));
          st.items.push({ kind: "rejected", r: d, ev, live: st.caughtUp });
          break;
        case "conversation_ended":
          st.items.push({ kind: "ended", d, ev });
          break;
        case "tool_call":
          st.tools.push(Object.assign({ key: ev.key }, d));
          break;
        case "waiting":
          st.waiting = d.questions || [];
          break;
        case "warning":
          st.warnings.push(d.message);
          break;
        case "error":
          st.errors.push(d.error);
          break;
        case "run_finished":
          st.status = d.status; st.conclusion = d.conclusion || ""; st.outputs = d.outputs || {}; st.outputsHtml = d.outputs_html || {}; st.durationMS = d.duration_ms;
          st.open.clear();
          if (info.result && info.result.output_order) st.order = info.result.output_order;
          break;
      }
    };
    st.runningNodes = () => new Set(st.status === "running" ? st.open.values() : []);
    st.nowText = function () {
      if (st.status !== "running") return [st.status === "completed" ? "Finished." : st.status === "inconclusive" ? "Finished without reaching its purpose (inconclusive): " + (st.conclusion || "") : st.status === "waiting" ? "Waiting for a person: answers to clarifying questions (see Questions), or the turn of an agent a person plays." : st.status === "failed" ? "Failed: " + (st.errors[0] || "") : "Not running (killed or stopped); runner resume continues it."];
      const nodes = [...st.runningNodes()];
      const out = [el("b", {}, "● "), nodes.length ? `running ${nodes.join(", ")}` : "starting"];
      const last = [...st.calls.values()].filter(c => !c.done);
      if (last.length) out.push(` · waiting for ${last.map(c => st.agent(c.agent).name).slice(0, 4).join(", ")}${last.length > 4 ? ` and ${last.length - 4} more` : ""}`);
      return out;
    };
    // callCounts: calls answered, and calls asked but not answered (in
    // flight while the run goes; failed or cut off after). The header and
    // the Calls tab both count with it.
    st.callCounts = function () {
      let done = 0, inFlight = 0;
      for (const c of st.calls.values()) c.done ? done++ : inFlight++;
      return { done, inFlight };
    };
    st.usageTotal = function () {
      const u = { calls: 0, prompt: 0, completion: 0, cost: 0, priced: true, latency: 0 };
      for (const c of st.calls.values()) {
        if (!c.done) continue;
        u.calls++; u.prompt += c.prompt_tokens || 0; u.completion += c.completion_tokens || 0; u.cost += c.cost || 0; u.latency += c.latency_ms || 0;
        u.priced = u.priced && c.priced; u.builtin = u.builtin || c.builtin_price;
      }
      return u;
    };
    st.usageBy = function (keyOf) {
      const m = new Map();
      for (const c of st.calls.values()) {
        if (!c.done) continue;
        const k = keyOf(c);
        const u = m.get(k) || { calls: 0, prompt: 0, completion: 0, cost: 0, priced: true, latency: 0 };
        u.calls++; u.prompt += c.prompt_tokens || 0; u.completion += c.completion_tokens || 0; u.cost += c.cost || 0; u.latency += c.latency_ms || 0;
        u.priced = u.priced && c.priced; u.builtin = u.builtin || c.builtin_price;
        m.set(k, u);
      }
      return m;
    };
    st.verdictGroups = function () {
      const groups = new Map();
      for (const m of st.messages) {
        if (m.private) continue;
        const k = (m.goal || "") + "\u0000" + m.node;
        if (!m.verdict && !(groups.has(k) && m.withdrawn)) continue;
        const g = groups.get(k) || { goal: m.goal || "", node: m.node, by: new Map() };
        const v = g.by.get(m.from) || {};
        if (m.verdict) Object.assign(v, { agent: m.from, verdict: m.verdict, reasoning: m.reasoning, turn: m.turn });
        if (m.withdrawn) v.withdrawn = true;
        if (v.agent) g.by.set(m.from, v);
        groups.set(k, g);
      }
      return [...groups.values()].filter(g => g.by.size);
    };
    st.questions = function () {
      const qs = [];
      for (const m of st.messages) {
        if (m.record !== "clarification" || !Array.isArray(m.output)) continue;
        for (const q of m.output) qs.push({ agent: m.from, id: q.id, question: q.question, answer: q.answer });
      }
      for (const q of st.waiting) if (!qs.some(x => x.id === q.id)) qs.push({ agent: q.agent, id: q.id, question: q.question, answer: "", open: true });
      return qs;
    };
    return st;
  }

  // summaryPanel: outputs, what was run with, warnings.
  function summaryPanel(st, info) {
    const out = [];
    const m = info.manifest;
    const order = st.order || Object.keys(st.outputs || {});
    if (st.outputs && order.length) {
      const first = order[0];
      const v = st.outputs[first];
      out.push(el("h2", {}, "Outputs"), el("div", { class: "outputs" }, el("div", { class: "out" }, el("h3", {}, first), outputView(v, st.outputsHtml[first])),
        order.length > 1 ? el("p", { class: "note" }, `${order.length - 1} more in the Outputs tab.`) : null));
    } else {
      out.push(el("h2", {}, "Run"));
    }
    const kv = el("dl", { class: "kv" });
    const add = (k, v) => { if (v !== undefined && v !== "" && v !== null) kv.append(el("dt", {}, k), el("dd", {}, v)); };
    add("spec", m.spec_path);
    add("seed", m.seed);
    for (const [k, v] of Object.entries(m.vars || {})) add("var " + k, value(v));
    for (const [k, v] of Object.entries(m.inputs || {})) add("input " + k, String(value(v)).slice(0, 240) + (String(value(v)).length > 240 ? "…" : ""));
    add("models", Object.entries(m.models || {}).map(([n, mi]) => `${n}: ${mi.model}` + (mi.simulated ? " (simulated)" : "") + (mi.temperature !== undefined ? ` (t=${mi.temperature})` : "")).join("; "));
    add("runner", m.runner_version);
    if (m.replayed_from) add("replayed from", m.replayed_from);
    out.push(kv);
    if (st.errors.length) out.push(el("h3", {}, "Errors"), el("ul", { class: "warnings" }, st.errors.slice(0, 8).map(e => el("li", {}, e))));
    if (st.warnings.length) out.push(el("h3", {}, "Warnings"), el("ul", { class: "warnings", id: "warnings" }, st.warnings.map(w => el("li", {}, w))));
    return out;
  }

  // Transcript draws the messages as they come, grouped by goal and round;
  // it appends rather than redraws, so reading is not disturbed.
  class Transcript {
    constructor(st, agents) {
      this.st = st;
      this.agents = agents;
      this.showPrivate = false;
      this.showKeeper = true;
      const priv = el("input", { type: "checkbox", id: "show-private", onchange: e => { this.showPrivate = e.target.checked; this.reset(); } });
      const keeper = el("input", { type: "checkbox", id: "show-keeper", checked: true, onchange: e => { this.showKeeper = e.target.checked; this.reset(); } });
      this.list = el("div", { id: "transcript" });
      this.root = el("div", {}, el("div", { class: "tools" }, el("label", {}, priv, " show private thoughts and summaries"), el("label", {}, keeper, " show the time keeper"),
        el("span", {}, badge("whisper"), " seen only by the two"), el("span", {}, badge("rejected"), " asked again")), this.list);
      this.reset();
    }
    reset() {
      this.done = 0;
      this.goal = undefined;
      this.box = null;
      this.lastHead = "";
      this.list.replaceChildren();
      this.update();
    }
    update() {
      const items = this.st.items;
      if (!items.length && !this.done) { this.list.replaceChildren(el("p", { class: "empty" }, "No messages yet.")); return; }
      if (this.done === 0 && this.list.firstChild && this.list.firstChild.classList.contains("empty")) this.list.replaceChildren();
      for (; this.done < items.length; this.done++) {
        const it = items[this.done];
        const node = this.item(it);
        if (node) {
          if (it.live) node.classList.add("fresh");
          this.container(it).append(node);
        }
      }
    }
    container(it) {
      const m = it.m || it.r || it.d || {};
      const goal = m.goal || "";
      if (goal !== this.goal || !this.box) {
        this.goal = goal;
        this.lastHead = "";
        const g = (this.st.info.goals || []).find(x => x.id === goal);
        this.box = el("section", { class: "goal", "data-goal": goal });
        if (goal) this.box.append(el("div", { class: "goalhead" }, el("b", {}, "Goal: " + goal), g && g.description ? el("span", {}, g.description) : null));
        this.list.append(this.box);
      }
      const head = [m.node, m.round ? "round " + m.round : ""].filter(Boolean).join(" · ");
      if (it.kind !== "ended" && it.kind !== "resumed" && head && head !== this.lastHead) {
        this.lastHead = head;
        this.box.append(el("div", { class: "divider" }, head));
      }
      return this.box;
    }
    item(it) {
      if (it.kind === "ended") return el("div", { class: "ended" }, `— the conversation ended after ${it.d.turns} turns: ${it.d.reason} —`);
      if (it.kind === "resumed") return el("div", { class: "divider" }, "resumed " + when(it.ev.time));
      if (it.kind === "rejected") {
        const r = it.r, a = this.st.agent(r.agent);
        return el("div", { class: "msg rejected", "data-kind": "rejected" }, el("div", { class: "avatar", style: `background:${a.color}` }, initials(a.name)),
          el("div", {}, el("div", { class: "msghead" }, el("span", { class: "who" }, a.name), badge("rejected"), el("span", { class: "meta" }, `attempt ${r.attempt}`,
            it.ev.key ? [" · ", el("a", { href: callHref(this.st.info.id, it.ev.key), class: "calllink", title: "the call " + it.ev.key }, "call")] : null)),
            el("div", { class: "reasons" }, "Rejected: " + r.reasons), el("div", { class: "body", html: r.html })));
      }
      const m = it.m;
      if (m.private && !this.showPrivate) return null;
      if (m.record === "interjection" && !this.showKeeper) return null;
      const a = this.st.agent(m.from);
      const cls = ["msg"];
      if (m.whisper) cls.push("whisper");
      if (m.private) cls.push("private");
      if (m.record === "interjection") cls.push("keeper");
      if (m.record === "watch") cls.push("watch");
      const head = el("div", { class: "msghead" }, el("span", { class: "who" }, m.record === "interjection" ? "Time keeper" : a.name));
      if (m.to) head.append(el("span", { class: "to" }, "→ " + this.st.agent(m.to).name));
      if (m.whisper) head.append(badge("whisper"));
      if (m.private) head.append(badge(m.record === "summary" ? "summary, private" : "private", "private"));
      if (m.record && !["message", "interjection", "private", "summary"].includes(m.record) && m.record !== m.node) head.append(badge(m.record, "source"));
      if (m.carried) head.append(badge("carried over", "source"));
      if (m.withdrawn) head.append(badge("withdrawn"));
      head.append(el("span", { class: "meta" }, [m.turn ? "turn " + m.turn : "", m.id].filter(Boolean).join(" · "),
        m.call ? [" · ", el("a", { href: callHref(this.st.info.id, m.call), class: "calllink", title: "the call " + m.call }, "call")] : null));
      const raw = (m.content || "").trim();
      const asJSON = m.output && typeof m.output === "object" && (raw.startsWith("{") || raw.startsWith("[") || raw.startsWith("```"));
      const box = el("div", {}, head, asJSON ? el("div", { class: "body json-out" }, jsonView(m.output)) : el("div", { class: "body", html: m.html || "" }));
      if (m.verdict) box.append(el("div", { class: "verdict" }, "Verdict", el("span", { class: "vchip", style: `background:${verdictColor(m.verdict)}` }, m.verdict), m.reasoning ? el("span", {}, m.reasoning) : null));
      return el("div", { class: cls.join(" "), "data-kind": m.private ? "private" : m.record || "message", "data-id": m.id },
        el("div", { class: "avatar", style: `background:${m.record === "interjection" ? "#a8710d" : a.color}` }, m.record === "interjection" ? "TK" : initials(a.name)), box);
    }
  }

  const verdictColors = {};
  function verdictColor(v) {
    if (!verdictColors[v]) verdictColors[v] = C.palette[Object.keys(verdictColors).length % C.palette.length];
    return verdictColors[v];
  }

  function tabPane(tab, st, info) {
    switch (tab) {
      case "verdicts": return verdictsPane(st);
      case "charts": return chartsPane(st);
      case "usage": return usagePane(st);
      case "calls": return callsPane(st, st.params);
      case "clarify": return questionsPane(st);
      case "tools": return toolsPane(st);
      case "outputs": return outputsPane(st);
    }
    return [el("p", { class: "empty" }, "Unknown tab.")];
  }

  function verdictsPane(st) {
    const groups = st.verdictGroups();
    if (!groups.length) return [el("p", { class: "empty" }, "No verdicts were given.")];
    return groups.map(g => {
      const rows = [...g.by.values()];
      const counts = {};
      for (const v of rows) counts[v.verdict] = (counts[v.verdict] || 0) + 1;
      return el("div", { class: "verdict-group" }, el("h3", {}, (g.goal ? "Goal " + g.goal + " · " : "") + "node " + g.node),
        table(["agent", "verdict", "withdrawn", "turn", "reasoning"], rows.map(v => [st.agent(v.agent).name, el("span", { class: "vchip", style: `background:${verdictColor(v.verdict)}` }, v.verdict), v.withdrawn ? "yes" : "", v.turn || "", v.reasoning || ""])),
        el("p", { class: "note" }, Object.entries(counts).map(([k, n]) => `${k}: ${n} (${(100 * n / rows.length).toFixed(0)}%)`).join(" · ")));
    });
  }

  function chartsPane(st) {
    const parts = [];
    // Verdicts per goal.
    const groups = st.verdictGroups();
    if (groups.length) {
      const options = [...new Set(groups.flatMap(g => [...g.by.values()].map(v => v.verdict)))];
      const rows = groups.map(g => {
        const counts = {};
        for (const v of g.by.values()) counts[v.verdict] = (counts[v.verdict] || 0) + 1;
        return { label: g.goal || g.node, segments: options.map(o => ({ value: counts[o] || 0, color: verdictColor(o), label: o })) };
      });
      parts.push(el("div", { class: "card", id: "chart-verdicts" }, el("h2", {}, "Verdicts per goal"), C.stacked(rows, { legend: options.map(o => ({ label: o, color: verdictColor(o) })), total: n => `${n} agent${n === 1 ? "" : "s"}`, label: "verdicts per goal" })));
    }
    // Confidence over rounds.
    const series = new Map();
    for (const m of st.messages) {
      if (m.private || !m.output || typeof m.output !== "object" || typeof m.output.confidence !== "number") continue;
      const name = `${m.node} (${st.agent(m.from).name})`;
      const sr = series.get(name) || { name, color: C.palette[series.size % C.palette.length], points: [] };
      sr.points.push({ x: m.round || sr.points.length + 1, y: m.output.confidence });
      series.set(name, sr);
    }
    parts.push(el("div", { class: "card", id: "chart-confidence" }, el("h2", {}, "Judge confidence over rounds"),
      series.size ? C.line([...series.values()], { yMax: 100, xLabel: "round", label: "confidence over rounds" }) : el("p", { class: "note" }, "No message of this run rates its confidence (an output with a confidence field).")));
    // A finished run's score by round, its judges and its dynamics
    // (result.json's rounds, judgements and dynamics).
    const res = st.result || {};
    if ((res.rounds || []).length) {
      const share = rd => { const v = Object.values(rd.agents || {}); return v.length ? v.reduce((a, b) => a + b, 0) / v.length : null; };
      const series = [{ name: "score of the outputs", color: "#3157c4", points: res.rounds.filter(rd => typeof rd.score === "number").map(rd => ({ x: rd.round, y: rd.score })) },
        { name: "share of agents right", color: "#1f9d6b", points: res.rounds.filter(rd => share(rd) !== null).map(rd => ({ x: rd.round, y: share(rd) })) }].filter(sr => sr.points.length);
      parts.push(el("div", { class: "card", id: "chart-rounds" }, el("h2", {}, "Score by round"), C.line(series, { yMax: 1, xLabel: "round", label: "score by round" }),
        table(["round", "score", "right→wrong", "wrong→right", "changed while wrong", "agreement"], res.rounds.map(rd => [String(rd.round), typeof rd.score === "number" ? String(rd.score) : "",
          (rd.right_to_wrong || []).map(a => st.agent(a).name).join(", "), (rd.wrong_to_right || []).map(a => st.agent(a).name).join(", "), (rd.changed_while_wrong || []).map(a => st.agent(a).name).join(", "), rd.agreement.toFixed(2)]))));
    }
    if ((res.judgements || []).length) {
      parts.push(el("div", { class: "card", id: "judgements" }, el("h2", {}, "Judgements"),
        table(["judge", "level", "score", "reasoning"], res.judgements.map(j => [j.judge, j.level || ("none: " + (j.error || "")), typeof j.score === "number" ? String(j.score) : "", j.reasoning || ""]))));
    }
    if ((res.dynamics || []).length) {
      parts.push(el("div", { class: "card", id: "dynamics" }, el("h2", {}, "Dynamics"),
        table(["thread", "verdicts", "changes", "consensus", "agreement first → last", "whispers (changed, adopted)"], res.dynamics.map(g => [g.goal || ("node " + g.node), String(g.verdicts), String(g.changes),
          g.consensus ? `${g.consensus} from ${g.formed_turn ? "turn " + g.formed_turn : "message " + g.formed_at}` : (g.majority ? "none; most held " + g.majority : "none"), `${g.first_agreement.toFixed(2)} → ${g.final_agreement.toFixed(2)}`,
          (g.whispers || []).map(w => `${st.agent(w.from).name}→${st.agent(w.to).name} ${w.count} (${w.changed}, ${w.adopted})`).join("; ")]))));
    }
    // Tokens and cost per agent and node.
    const byAgent = st.usageBy(c => c.agent || "(none)"), byNode = st.usageBy(c => c.node);
    const tokenRows = (m, name) => [...m.entries()].sort((a, b) => (b[1].prompt + b[1].completion) - (a[1].prompt + a[1].completion)).map(([k, u]) => ({
      label: name(k), segments: [{ value: u.prompt, color: "#3157c4", label: "prompt tokens" }, { value: u.completion, color: "#1f9d6b", label: "completion tokens" }]
    }));
    const legend = [{ label: "prompt tokens", color: "#3157c4" }, { label: "completion tokens", color: "#1f9d6b" }];
    parts.push(el("div", { class: "grid halves" },
      el("div", { class: "card", id: "chart-agents" }, el("h2", {}, "Tokens per agent"), byAgent.size ? C.stacked(tokenRows(byAgent, k => st.agent(k).name), { legend, width: 300, labelWidth: 150, inside: false, label: "tokens per agent" }) : el("p", { class: "note" }, "No calls yet.")),
      el("div", { class: "card", id: "chart-nodes" }, el("h2", {}, "Tokens per node"), byNode.size ? C.stacked(tokenRows(byNode, k => k), { legend, width: 300, labelWidth: 150, inside: false, label: "tokens per node" }) : el("p", { class: "note" }, "No calls yet."))));
    const priced = [...byAgent.values()].some(u => u.cost > 0);
    if (priced) {
      const costRows = (m, name) => [...m.entries()].map(([k, u]) => ({ label: name(k), segments: [{ value: u.cost, color: "#c24679", label: "cost" }] }));
      parts.push(el("div", { class: "grid halves" },
        el("div", { class: "card" }, el("h2", {}, "Cost per agent"), C.stacked(costRows(byAgent, k => st.agent(k).name), { width: 300, labelWidth: 150, inside: false, total: v => "$" + v.toFixed(4) })),
        el("div", { class: "card" }, el("h2", {}, "Cost per node"), C.stacked(costRows(byNode, k => k), { width: 300, labelWidth: 150, inside: false, total: v => "$" + v.toFixed(4) }))));
    } else {
      parts.push(el("p", { class: "note" }, "No model of this run has a price (models.NAME.price), so no cost is charted."));
    }
    parts.push(el("div", { class: "card", id: "chart-timeline" }, el("h2", {}, "Timeline of calls"), ...timelineOf(st)));
    return parts;
  }

  function timelineOf(st) {
    const calls = [...st.calls.values()].filter(c => c.done);
    if (!calls.length) return [el("p", { class: "note" }, "No calls yet.")];
    const t0 = Math.min(st.started || Infinity, ...calls.map(c => c.requested));
    const nodes = [...new Set(calls.map(c => c.node))];
    const colors = {};
    nodes.forEach((n, i) => colors[n] = C.palette[i % C.palette.length]);
    const items = calls.map(c => {
      const start = c.requested - t0, end = c.responded - t0;
      const wait = c.source ? 0 : Math.max(0, end - start - (c.latency_ms || 0));
      return { start, end, wait, node: c.node, label: `${c.node} · ${st.agent(c.agent).name}${c.round ? " · round " + c.round : ""}${c.goal ? " · " + c.goal : ""}`, retries: (c.retries || []).map(r => r - t0), source: c.source };
    });
    // Most calls at once.
    const edges = items.flatMap(c => [[c.start, 1], [Math.max(c.end, c.start + 1), -1]]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let cur = 0, peak = 0;
    for (const [, d] of edges) { cur += d; peak = Math.max(peak, cur); }
    const waited = items.reduce((a, c) => a + c.wait, 0);
    const retries = items.reduce((a, c) => a + c.retries.length, 0);
    return [el("p", { class: "note" }, `${items.length} calls, at most ${peak} at once; ${retries} retr${retries === 1 ? "y" : "ies"}; ${(waited / 1000).toFixed(1)} s spent waiting before answers (queues, rate limits, back-off). Hover a bar for the call.`),
      C.timeline(items, colors, { label: "timeline of calls" })];
  }

  function usageRows(m, name) {
    return [...m.entries()].map(([k, u]) => [name(k), num(u.calls), num(u.prompt), num(u.completion), num(u.prompt + u.completion), (u.latency / 1000).toFixed(1), cost(u.cost, u.priced, u.builtin)]);
  }
  function usagePane(st) {
    const head = ["", "calls", "prompt tokens", "completion tokens", "tokens", "latency (s)", "cost"];
    const n = [1, 2, 3, 4, 5, 6];
    const t = st.usageTotal();
    const sources = st.usageBy(c => c.source || "endpoint");
    return [
      el("h3", {}, "By agent"), table(head, usageRows(st.usageBy(c => c.agent || "(none)"), k => st.agent(k).name), { num: n }),
      el("h3", {}, "By node"), table(head, usageRows(st.usageBy(c => c.node), k => k), { num: n }),
      el("h3", {}, "By round"), table(head, usageRows(st.usageBy(c => c.round ? "round " + c.round : (c.goal ? "goal " + c.goal : "outside loops")), k => k), { num: n }),
      el("h3", {}, "Answered by"), table(head, usageRows(sources, k => k), { num: n }),
      el("p", { class: "note" }, `Total: ${num(t.calls)} calls, ${num(t.prompt)} prompt and ${num(t.completion)} completion tokens${t.cost ? ", " + cost(t.cost, t.priced) : ""}. Calls count repairs and tool round trips.`),
    ];
  }

  function callsPane(st, params) {
    const node = params.get("node") || "";
    const all = [...st.calls.values()];
    const calls = all.filter(c => !node || c.node === node);
    const out = [];
    if (node) out.push(el("p", { class: "note", id: "calls-filter" }, `Calls of node ${node}: ${calls.length} of ${all.length}. `, el("a", { href: "#/run/" + st.info.id + "?tab=calls" }, "All calls")));
    else out.push(el("p", { class: "note" }, "Open a call to see the messages it sent, its reply, what was parsed from it, its repairs and retries. Click a node in the flow to list its calls."));
    if (!calls.length) return [...out, el("p", { class: "empty" }, "No calls yet.")];
    return [...out, table(["call", "agent", "round", "tokens in / out", "latency (s)", "attempts", "answered by", "cost"],
      calls.map(c => [el("a", { class: "id callkey", href: callHref(st.info.id, c.key) }, c.key), st.agent(c.agent).name, c.round || "", c.done ? `${num(c.prompt_tokens)} / ${num(c.completion_tokens)}` : "…",
        c.done ? ((c.latency_ms || 0) / 1000).toFixed(2) : "", c.attempts > 1 ? badge(String(c.attempts), "rejected") : (c.attempts || ""), c.done ? (c.source || "endpoint") : c.failed ? "failed" : st.status === "running" ? "in flight" : "no reply", cost(c.cost, c.priced, c.builtin_price)]),
      { num: [2, 3, 4, 5, 7] })];
  }

  function questionsPane(st) {
    const qs = st.questions();
    if (!qs.length) return [el("p", { class: "empty" }, "No clarifying questions were asked.")];
    return [table(["agent", "question", "answer"], qs.map(q => [st.agent(q.agent).name, q.question, q.open ? badge("waiting for an answer", "waiting") : (q.answer === "NA" ? el("span", { class: "note" }, "NA (not applicable)") : q.answer)]))];
  }

  function toolsPane(st) {
    if (!st.tools.length) return [el("p", { class: "empty" }, "No tools were called.")];
    return [table(["call", "agent", "tool", "arguments", "result"], st.tools.map(t => [el("span", { class: "id" }, t.key), st.agent(t.agent).name, t.tool, el("code", {}, t.arguments), el("pre", { style: "white-space:pre-wrap;max-height:160px;overflow:auto;margin:0" }, t.result)]))];
  }

  function outputsPane(st) {
    const order = st.order || Object.keys(st.outputs || {});
    if (!st.outputs || !order.length) return [el("p", { class: "empty" }, st.status === "running" ? "The outputs come when the run finishes." : "The run has no outputs.")];
    return [el("div", { class: "outputs" }, order.map(k => el("div", { class: "out", "data-output": k }, el("h3", {}, k), outputView(st.outputs[k], st.outputsHtml[k]))))];
  }

  // ---- a sweep ----
  async function sweepPage(id) {
    let data;
    try {
      data = await api("/api/sweep?id=" + encodeURIComponent(id));
    } catch (e) {
      if (!String(e.message).includes("no summary.json")) throw e;
      setCrumbs(el("a", { href: "#/" }, "Runs"), el("span", { class: "mono" }, id));
      app.replaceChildren(el("div", { class: "card" }, el("h2", {}, "Sweep " + id),
        el("p", {}, "This sweep has no summary yet: it is written when the sweep ends. ", el("a", { href: "#/?q=" + encodeURIComponent(id) }, "Its runs so far"), ".")));
      return;
    }
    const s = data.summary;
    setCrumbs(el("a", { href: "#/" }, "Runs"), ...parentCrumbs(id, "sweep"), el("span", { class: "mono" }, id.split("/").pop()));
    document.title = `sweep ${s.spec} · runner view`;
    const saved = s.calls_without_cache ? 1 - s.calls_made / s.calls_without_cache : 0;
    const head = el("div", { class: "pagehead" }, el("div", {},
      el("h1", {}, (s.dataset ? "Dataset" : "Sweep") + " of " + s.spec),
      el("div", { class: "sub mono" }, id),
      el("div", { class: "stats" }, stat("runs", s.runs.length), stat("completed", s.completed), stat("inconclusive", s.inconclusive || 0), stat("failed", s.failed), stat("accuracy", s.accuracy ? s.accuracy.mean.toFixed(3) : ""),
        stat("accuracy, concluded runs", s.accuracy_concluded ? s.accuracy_concluded.mean.toFixed(3) : ""),
        stat("calls made", num(s.calls_made)), stat("without the cache", num(s.calls_without_cache)), stat("duration", dur(s.duration_ms)))));
    const about = el("dl", { class: "kv" });
    const add = (k, v) => { if (v) about.append(el("dt", {}, k), el("dd", {}, v)); };
    for (const a of s.matrix || []) add("matrix " + a.name, a.values.join(", "));
    add("repeat", s.repeat > 1 ? String(s.repeat) : "");
    add("dataset", s.dataset);
    add("spec", s.spec_path);
    const cards = [el("div", { class: "grid halves" },
      el("div", { class: "card", id: "chart-accuracy" }, el("h2", {}, "Accuracy"), accuracyChart(s)),
      el("div", { class: "card", id: "chart-cache" }, el("h2", {}, "Calls made and without the cache"),
        C.stacked([{ label: "made", segments: [{ value: s.calls_made, color: "#3157c4", label: "calls made" }] }, { label: "without the cache", segments: [{ value: s.calls_without_cache, color: "#8a93a3", label: "calls" }] }], { labelWidth: 130, width: 300, inside: false }),
        el("p", { class: "note" }, s.calls_without_cache ? `The cache and shared calls saved ${(100 * saved).toFixed(0)}% of the calls.` : ""), about))];
    if ((s.rounds || []).length) cards.push(roundsCard(s.rounds));
    if ((s.dynamics || []).length) cards.push(dynamicsCard(s.dynamics));
    if (s.judges) cards.push(el("div", { class: "card", id: "sweep-judges" }, el("h2", {}, "Judges"),
      table(["judge", "mean score", "runs graded"], (s.judges.judges || []).map(j => [j.judge, j.mean !== undefined ? j.mean.toFixed(3) : "", j.n !== undefined ? String(j.n) : ""])),
      el("p", { class: "note" }, s.judges.agreement ? `${s.judges.method}: ${s.judges.agreement.kappa.toFixed(3)} over ${s.judges.items} run(s)` : (s.judges.note || ""))));
    const outputs = [...new Set(s.runs.flatMap(r => r.output_order || []))];
    const axes = (s.matrix || []).map(a => a.name);
    const selected = new Set();
    const compareBtn = el("button", { disabled: true, onclick: () => { const [a, b] = [...selected]; go("/compare", new URLSearchParams({ a, b })); } }, "Compare the two selected");
    const rows = s.runs.map((r, i) => {
      const rid = data.run_ids[i];
      return [rid ? el("input", { type: "checkbox", onchange: e => { e.target.checked ? selected.add(rid) : selected.delete(rid); compareBtn.disabled = selected.size !== 2; } }) : "",
        r.index, rid ? el("a", { href: "#/run/" + rid, class: "runid" }, rid.split("/").pop()) : "(not started)", ...axes.map(a => (r.vars || {})[a] || ""),
        ...(s.dataset ? [r.line] : []), ...(s.repeat > 1 ? [r.sample] : []), badge(r.status),
        ...outputs.map(o => el("td", { class: "out", title: value((r.outputs || {})[o] ?? "") }, value((r.outputs || {})[o] ?? ""))),
        r.expected !== undefined ? value(r.expected) : "", r.score !== undefined && r.score !== null ? String(r.score) : "",
        num(r.usage.calls), num((r.calls || {}).network), num(r.usage.prompt_tokens + r.usage.completion_tokens), dur(r.duration_ms)];
    });
    const headRow = ["", "#", "run", ...axes, ...(s.dataset ? ["line"] : []), ...(s.repeat > 1 ? ["sample"] : []), "status", ...outputs, "expected", "score", "calls", "sent", "tokens", "duration"];
    cards.push(el("div", { class: "card" }, el("h2", {}, "Runs"), el("div", { class: "filters" }, compareBtn), table(headRow, rows, { class: "runs" })));
    app.replaceChildren(head, ...cards);
    app.classList.add("wide");
  }

  // A sweep's accuracy after each round (and its agents' own), with the
  // flips between rounds.
  function roundsCard(rounds) {
    const pts = f => rounds.filter(f).map(rd => ({ x: rd.round, y: f(rd).mean }));
    const series = [{ name: "accuracy", color: "#3157c4", points: pts(rd => rd.accuracy) }, { name: "agents' accuracy", color: "#1f9d6b", points: pts(rd => rd.agent_accuracy) }].filter(sr => sr.points.length);
    return el("div", { class: "card", id: "chart-rounds" }, el("h2", {}, "Accuracy by round"),
      C.line(series, { yMax: 1, xLabel: "round", label: "accuracy by round" }),
      table(["round", "accuracy", "agents' accuracy", "right→wrong", "wrong→right", "changed while wrong", "majority changed", "agreement"],
        rounds.map(rd => [String(rd.round), rd.accuracy ? rd.accuracy.mean.toFixed(3) : "", rd.agent_accuracy ? rd.agent_accuracy.mean.toFixed(3) : "",
          String(rd.right_to_wrong), String(rd.wrong_to_right), String(rd.changed_while_wrong), String(rd.majority_changes), rd.agreement.toFixed(2)]), { class: "rounds" }));
  }

  // A sweep's (or a run's) verdict dynamics, thread by thread.
  function dynamicsCard(goals) {
    const edges = g => (g.whispers || []).map(w => `${w.from}→${w.to} ${w.count} (changed ${w.changed}, adopted ${w.adopted})`).join("; ");
    return el("div", { class: "card", id: "dynamics" }, el("h2", {}, "Dynamics"),
      table(["thread", "runs", "verdicts", "changes", "plurality changes", "consensus", "agreement first → last", "whispers"],
        goals.map(g => [g.goal || ("node " + g.node), String(g.runs), String(g.verdicts), String(g.changes), String(g.majority_changes),
          g.consensus_rate ? `${g.consensus} of ${g.with_verdicts} (${(100 * g.consensus_rate.low).toFixed(0)}–${(100 * g.consensus_rate.high).toFixed(0)}%)` : "",
          `${g.mean_first_agreement.toFixed(2)} → ${g.mean_final_agreement.toFixed(2)}`, edges(g)]), { class: "dynamics" }));
  }

  function accuracyChart(s) {
    if (!s.accuracy) return el("p", { class: "note" }, "No scores: the spec has no score expression, or no run was given an expected value (--dataset).");
    const rows = [{ label: "all runs (n=" + s.accuracy.n + ")", mean: s.accuracy.mean, low: s.accuracy.low, high: s.accuracy.high }];
    for (const c of s.by_combination || []) if (c.accuracy) rows.push({ label: `${c.label} (n=${c.accuracy.n})`, mean: c.accuracy.mean, low: c.accuracy.low, high: c.accuracy.high });
    return el("div", {}, C.intervals(rows, { label: "accuracy with 95% intervals" }), el("p", { class: "note" }, `Mean score with its 95% confidence interval (${s.accuracy.method}).`));
  }

  // ---- one model call ----
  const SOURCES = {
    network: "the endpoint answered this call", cache: "an identical earlier request's reply, from the cache",
    shared: "an identical call in flight at the same time", replay: "a recorded run's reply (--replay)",
    journal: "this run's journal, recorded before a resume", placeholder: "a stand-in (dry run)",
  };
  // The links to what holds a run or sweep: its sweep, and the study that
  // holds the sweep (ids STUDY/SWEEP/RUN, SWEEP/RUN, STUDY/SWEEP).
  function parentCrumbs(id, kind) {
    const p = id.split("/");
    p.pop();
    if (kind === "sweep") return p.length ? [el("a", { href: "#/study/" + p[0] }, p[0])] : [];
    if (p.length === 2) return [el("a", { href: "#/study/" + p[0] }, p[0]), el("a", { href: "#/sweep/" + p.join("/") }, p[1])];
    return p.length ? [el("a", { href: "#/sweep/" + p[0] }, p[0])] : [];
  }

  // ---- a study ----
  // The table and the chart are the study's report (results.json) as the
  // server draws them: the same numbers as results.md and results.csv.
  async function studyPage(id) {
    const data = await api("/api/study?id=" + encodeURIComponent(id));
    const st = data.state, rep = data.report;
    setCrumbs(el("a", { href: "#/" }, "Runs"), el("span", { class: "mono" }, id));
    document.title = `study ${st.name} · runner view`;
    document.body.setAttribute("data-page", "study");
    const links = el("div", { class: "links" }, (data.files || []).map(f => el("a", { href: `/api/study/file?id=${encodeURIComponent(id)}&name=${f}`, target: "_blank", rel: "noopener" }, f)));
    const statsEl = el("div", { class: "stats" }, stat("dataset", st.dataset), stat("baseline", st.baseline), stat("sweeps", `${data.sweep_ids.filter(Boolean).length} of ${st.cells.length}`),
      ...(rep ? [stat("comparisons (Holm)", rep.comparisons), stat("calls", num(rep.calls)), stat("sent", num(rep.sent_calls)), stat("tokens", num(rep.tokens)), stat("cost", cost(rep.cost, rep.priced) || "–"), stat("seconds", rep.seconds.toFixed(1))] : []));
    const head = el("div", { class: "pagehead" }, el("div", {}, el("h1", {}, "Study " + st.name), el("div", { class: "sub mono" }, id), statsEl), links);
    const sweepLink = i => data.sweep_ids[i] ? el("a", { href: "#/sweep/" + data.sweep_ids[i], class: "id" }, data.sweep_ids[i].split("/").pop()) : "(not started)";
    const cards = [];
    if (!rep) {
      cards.push(el("div", { class: "card", id: "study-pending" }, el("h2", {}, "Not finished"),
        el("p", {}, data.report_error ? "The study's report cannot be read: " + data.report_error : "The study's table and chart are written when its last sweep ends. Continue a stopped study with: ", el("code", {}, "runner study " + id)),
        table(["protocol", "model", "sweep"], st.cells.map((c, i) => [c.label + (c.baseline ? " (baseline)" : ""), c.model || "(spec's)", sweepLink(i)]))));
    } else {
      cards.push(el("div", { class: "card", id: "study-chart" }, el("h2", {}, "Accuracy and difference from " + rep.baseline),
        el("div", { class: "chartbox", html: data.chart }),
        el("p", { class: "note" }, `Bars are 95% intervals: Wilson's for accuracy, a paired bootstrap over items for the difference (${rep.resamples} resamples, seed ${rep.seed}); p is the exact McNemar test (paired t for graded scores), Holm-adjusted across ${rep.comparisons} comparison${rep.comparisons === 1 ? "" : "s"}.`)));
      const nums = data.table.header.map((_, i) => i).filter(i => i === 2 || i >= 5);
      cards.push(el("div", { class: "card" }, el("h2", {}, "Table"),
        // A protocol's name opens its sweep.
        table(data.table.header, data.table.rows.map((r, i) => [rep.rows[i].sweep ? el("a", { href: "#/sweep/" + id + "/" + rep.rows[i].sweep, title: "sweep " + rep.rows[i].sweep }, r[0]) : r[0], ...r.slice(1)]), { num: nums, class: "study" }),
        ...(rep.notes || []).map(n => el("p", { class: "note" }, "Note: " + n))));
      // Accuracy after each round, a line per protocol and model whose spec
      // loops, with the rounds' flips in a table below.
      const looped = rep.rows.filter(r => (r.rounds || []).length);
      if (looped.length) {
        const series = looped.map((r, i) => ({ name: `${r.protocol} (${r.model})`, color: C.palette[i % C.palette.length],
          points: r.rounds.filter(rd => rd.accuracy).map(rd => ({ x: rd.round, y: rd.accuracy.mean })) }));
        cards.push(el("div", { class: "card", id: "study-rounds" }, el("h2", {}, "Accuracy by round"),
          C.line(series, { yMax: 1, xLabel: "round", label: "accuracy by round" }),
          el("p", { class: "note" }, "The accuracy each sweep would have had had its runs stopped after the round; below, the agents' flips from the round before."),
          ...(data.rounds_table ? [table(data.rounds_table.header, data.rounds_table.rows, { class: "rounds" })] : [])));
      }
      if (data.personas_table) {
        cards.push(el("div", { class: "card", id: "study-personas" }, el("h2", {}, "Personas"),
          el("p", { class: "note" }, "Each persona's effect: the panels that seat it against those that do not, paired by item (bootstrap 95% interval; paired t, Holm-adjusted)."),
          table(data.personas_table.header, data.personas_table.rows, { class: "personas" })));
      }
    }
    app.replaceChildren(head, ...cards);
    app.classList.add("wide");
  }

  async function callPage(params) {
    const run = params.get("run"), key = params.get("key");
    if (!run || !key) throw new Error("a call page needs a run and a call key: #/call?run=RUN&key=KEY");
    const data = await api("/api/call?" + new URLSearchParams({ id: run, key }));
    const c = data.call;
    document.body.setAttribute("data-page", "call");
    setCrumbs(el("a", { href: "#/" }, "Runs"), ...parentCrumbs(run, "run"),
      el("a", { href: "#/run/" + run, class: "mono" }, run.split("/").pop()), el("a", { href: "#/run/" + run + "?tab=calls" }, "calls"), el("span", { class: "mono" }, key));
    document.title = `call ${key} · runner view`;
    const source = c.done ? c.source : (c.errors && c.errors.length ? "failed" : c.stopped ? "no reply" : "in flight");
    const nav = el("div", { class: "links" },
      data.prev ? el("a", { href: callHref(run, data.prev), id: "call-prev" }, "← previous call") : null,
      el("span", { class: "note" }, `call ${c.index} of ${data.count}`),
      data.next ? el("a", { href: callHref(run, data.next), id: "call-next" }, "next call →") : null);
    const head = el("div", { class: "pagehead" }, el("div", {},
      el("h1", {}, "Call ", el("span", { class: "mono callkey" }, key)),
      el("div", { class: "sub" }, [data.agent_name || c.agent, c.node && "node " + c.node, c.target && "to " + c.target].filter(Boolean).join(" · ")),
      el("div", { class: "stats", id: "call-stats" }, stat("source", source), stat("tokens in", num(c.prompt_tokens)), stat("cached", num(c.cached_tokens)), stat("tokens out", num(c.completion_tokens)),
        stat("cost", cost(c.cost, c.priced, c.builtin_price) || "–"), stat("latency", c.done ? (c.latency_ms / 1000).toFixed(2) + " s" : ""), stat("attempts", c.attempts || ""))), nav);
    const kv = el("dl", { class: "kv" });
    const add = (k, v) => { if (v !== undefined && v !== "" && v !== null && !(Array.isArray(v) && !v.length)) kv.append(el("dt", {}, k), el("dd", {}, v)); };
    add("key", el("span", { class: "mono" }, c.key));
    add("node", c.node); add("agent", c.agent); add("to", c.target);
    add("model", [c.model, c.model_name && c.model_name !== c.model ? `(${c.model_name})` : "", c.endpoint ? "at endpoint " + c.endpoint : ""].filter(Boolean).join(" "));
    if (c.reply_model && c.reply_model !== c.model) add("model that answered", c.reply_model);
    if (c.params) add("parameters", el("code", {}, JSON.stringify(c.params)));
    add("tools offered", (c.tools || []).join(", "));
    add("answered by", c.done ? `${c.source}: ${SOURCES[c.source] || ""}` : source);
    if (c.usage_estimated) add("usage", "estimated: the endpoint sent no token usage");
    add("finish reason", c.finish_reason);
    add("requested", when(c.requested_at)); add("answered", when(c.responded_at));
    if (c.repair_of) add("repair of", el("a", { href: callHref(run, c.repair_of), class: "mono" }, c.repair_of));
    if (c.recorded && c.recorded.length) add("recorded as", el("span", {}, c.recorded.flatMap((id, i) => [i ? ", " : "", el("a", { href: "#/run/" + run + "?msg=" + encodeURIComponent(id) }, id)])));
    const cards = [el("div", { class: "card", id: "call-about" }, el("h2", {}, "The call"), kv)];
    // What it sent.
    const msgs = el("div", { id: "call-messages" });
    if (c.request_from) msgs.append(el("p", { class: "note", id: "request-from" }, `This run replayed the reply; the messages are those the recording sent (${c.request_from}).`));
    else if (!c.requested) msgs.append(el("p", { class: "note" }, `The request was not journaled: the reply came from ${c.source === "replay" ? "a recording" : "the journal"}, so this run did not ask it again.`));
    else if (!c.prompts_logged) msgs.append(el("p", { class: "note" }, "This run did not log its prompts (runner run --log-prompts keeps them): texts found elsewhere in the journal are shown, the others by size and digest."));
    (c.messages || []).forEach((m, i) => {
      const headBits = [el("span", { class: "badge role-" + m.role }, m.role)];
      if (m.name) headBits.push(el("span", { class: "who" }, m.name));
      if (m.tool_call_id) headBits.push(el("span", { class: "note" }, "answers tool call " + m.tool_call_id));
      headBits.push(el("span", { class: "meta" }, `#${i + 1} · ${num(m.chars)} chars` + (m.text_from === "digest" ? " · text found by its digest" : "")));
      msgs.append(el("div", { class: "cmsg role-" + m.role, "data-role": m.role }, el("div", { class: "msghead" }, headBits),
        (m.tool_calls || []).map(tc => el("div", { class: "toolcall" }, "calls ", el("code", {}, `${tc.name}(${tc.arguments})`), tc.id ? el("span", { class: "note" }, " " + tc.id) : null)),
        m.text ? el("pre", { class: "ctext" }, m.text) : (m.chars && !m.text_from ? el("p", { class: "note" }, `text not journaled (digest ${m.digest})`) : null)));
    });
    cards.push(el("div", { class: "card" }, el("h2", {}, `Messages sent (${(c.messages || []).length})`), msgs));
    // What came back.
    const reply = el("div", { id: "call-reply" });
    if (c.done) {
      reply.append(el("pre", { class: "ctext raw" }, c.reply || "(empty)"));
      for (const tc of c.tool_calls || []) reply.append(el("div", { class: "toolcall" }, "calls ", el("code", {}, `${tc.name}(${tc.arguments})`)));
    } else reply.append(el("p", { class: "note" }, source === "failed" ? "No reply: the call failed." : c.stopped ? "No reply: the run stopped before it came (another call failed, or the run was stopped)." : "No reply yet."));
    const replyCard = el("div", { class: "card" }, el("h2", {}, "Reply (raw)"), reply);
    const parts = [];
    if (c.output !== undefined) parts.push(el("div", { id: "call-output" }, typeof c.output === "string" ? (data.reply_html && c.output === (c.reply || "").trim() ? el("div", { class: "body", html: data.reply_html }) : el("pre", { class: "ctext" }, c.output)) : jsonView(c.output)));
    if (c.fallback !== undefined) parts.push(el("div", { class: "reasons" }, "The reply could not be parsed (" + c.fallback_reason + "); the fallback output was used:"), jsonView(c.fallback));
    if (!parts.length) parts.push(el("p", { class: "note", id: "call-output" }, c.repairs && c.repairs.length ? "Not parsed: the reply was refused (see the repairs below)." : "No parsed output was journaled for this call (its node reads the reply itself, or the call failed)."));
    const parsedCard = el("div", { class: "card" }, el("h2", {}, "Parsed output"), ...parts);
    cards.push(el("div", { class: "grid halves" }, replyCard, parsedCard));
    const list = (title, id, rows) => rows.length ? cards.push(el("div", { class: "card", id }, el("h2", {}, `${title} (${rows.length})`), el("ul", { class: "events" }, rows))) : 0;
    list("Retries", "call-retries", (c.retries || []).map(r => el("li", {}, `attempt ${r.attempt}` + (r.status ? ` (HTTP ${r.status})` : "") + `: ${r.error}` + (r.wait_ms ? `; waited ${(r.wait_ms / 1000).toFixed(1)} s` : ""))));
    list("Repairs", "call-repairs", (c.repairs || []).map(r => el("li", {}, `repair ${r.attempt}: ${r.error}; asked again` + (r.mode ? ` (${r.mode})` : "") + " as ", el("a", { href: callHref(run, r.next), class: "mono" }, r.next))));
    list("Rejections", "call-rejections", (c.rejections || []).map(r => el("li", {}, `attempt ${r.attempt}: ${r.reasons}`, r.next ? ["; asked again as ", el("a", { href: callHref(run, r.next), class: "mono" }, r.next)] : null)));
    list("Tools run", "call-tools", (c.tool_runs || []).map(t => el("li", {}, el("code", {}, `${t.tool}(${t.arguments || ""})`), el("pre", { class: "ctext small" }, t.result || ""))));
    list("Errors", "call-errors", (c.errors || []).map(e => el("li", { class: "reasons" }, e)));
    app.replaceChildren(head, ...cards);
  }

  // ---- two sweeps side by side ----
  function compareSweeps(da, db) {
    setCrumbs(el("a", { href: "#/" }, "Runs"), "compare sweeps");
    document.title = "compare sweeps · runner view";
    document.body.setAttribute("data-page", "compare-sweeps");
    const sw = [da, db];
    const S = sw.map(d => d.summary);
    const acc = s => s.accuracy ? `${s.accuracy.mean.toFixed(3)} (${s.accuracy.low.toFixed(3)}–${s.accuracy.high.toFixed(3)})` : "";
    const u = s => s.usage || {};
    const costOf = s => { const t = u(s); return t.cost || t.priced ? cost(t.cost || 0, t.priced) : ""; };
    const rows = [];
    const line = (label, f) => {
      const vals = S.map(f);
      if (vals.every(v => v === "" || v === undefined || v === null)) return;
      const differs = JSON.stringify(vals[0]) !== JSON.stringify(vals[1]);
      rows.push([label, ...vals.map(v => el("td", { class: differs ? "differs" : "" }, v instanceof Node ? v : String(v ?? "")))]);
    };
    line("sweep", s => el("a", { href: "#/sweep/" + s.id, class: "id" }, s.id));
    line("spec", s => s.spec);
    line("spec file", s => s.spec_path);
    line("dataset", s => s.dataset);
    line("matrix", s => (s.matrix || []).map(x => `${x.name}=${x.values.join(",")}`).join("; "));
    line("repeat", s => s.repeat > 1 ? s.repeat : "");
    line("runs (n)", s => s.runs.length);
    line("completed", s => s.completed);
    line("failed", s => s.failed);
    line("accuracy (95% CI)", acc);
    line("scored (n)", s => s.accuracy ? s.accuracy.n : "");
    line("calls", s => num(u(s).calls));
    line("calls sent", s => num(s.calls_made));
    line("calls without the cache", s => num(s.calls_without_cache));
    line("tokens", s => num((u(s).prompt_tokens || 0) + (u(s).completion_tokens || 0)));
    line("cost", costOf);
    line("duration", s => dur(s.duration_ms));
    const cards = [el("div", { class: "card" }, table(["", "A", "B"], rows, { class: "diff", num: [] }))];
    // Items: runs paired by dataset line, sample and matrix values.
    const axesA = (S[0].matrix || []).map(x => x.name).join(","), axesB = (S[1].matrix || []).map(x => x.name).join(",");
    const withVars = axesA === axesB;
    // Runs pair on what both sweeps vary: the dataset line and sample, and
    // the matrix values when both have the same axes. A sweep with a
    // matrix the other lacks pairs each of its runs with the other's run
    // of the same line.
    const common = r => [S[0].dataset || S[1].dataset ? "line " + r.line : "#" + r.index, r.sample > 1 ? "sample " + r.sample : "",
      withVars ? Object.entries(r.vars || {}).sort().map(([k, v]) => `${k}=${v}`).join(" ") : ""].filter(Boolean).join(" · ");
    const bySide = sw.map(d => {
      const m = new Map();
      d.summary.runs.forEach((r, i) => { const k = common(r); if (!m.has(k)) m.set(k, []); m.get(k).push({ r, id: d.run_ids[i] }); });
      return m;
    });
    const items = [];
    const keys = [...new Set([...bySide[0].keys(), ...bySide[1].keys()])];
    for (const k of keys) {
      const xs = bySide[0].get(k) || [], ys = bySide[1].get(k) || [];
      const n = Math.max(xs.length, ys.length);
      for (let i = 0; i < n; i++) {
        const x = xs.length === 1 ? xs[0] : xs[i], y = ys.length === 1 ? ys[0] : ys[i];
        const cellOf = p => p && !withVars ? Object.entries(p.r.vars || {}).sort().map(([a, v]) => `${a}=${v}`).join(" ") : "";
        items.push({ key: [k, ...[x, y].filter(Boolean).map(cellOf).filter(Boolean)].join(" · "),
          // The matrix cell of each side, when the sweeps' matrices differ:
          // pairs of different cells are tallied apart, never mixed.
          cell: [cellOf(x), cellOf(y)].map((c, i) => c ? (i ? "B " : "A ") + c : "").filter(Boolean).join(", "),
          runs: [x ? x.r : null, y ? y.r : null], ids: [x ? x.id : null, y ? y.id : null] });
      }
    }
    const scoreOf = r => r && r.score !== undefined && r.score !== null ? r.score : null;
    const outcome = (r, id) => {
      if (!r) return el("span", { class: "note" }, "—");
      const sc = scoreOf(r);
      const label = sc === null ? r.status : (sc >= 1 ? "right" : sc <= 0 ? "wrong" : "score " + sc);
      const first = (r.output_order || [])[0];
      const out = first !== undefined ? value((r.outputs || {})[first] ?? "") : "";
      return el("span", {}, id ? el("a", { href: "#/run/" + id }, badge(label, sc === null ? r.status : sc >= 1 ? "completed" : "failed")) : badge(label),
        out ? el("span", { class: "note" }, " " + (out.length > 80 ? out.slice(0, 80) + "…" : out)) : null);
    };
    const tallies = new Map();
    const itemRows = items.map(it => {
      const [x, y] = it.runs.map(scoreOf);
      let cls = "";
      if (!tallies.has(it.cell)) tallies.set(it.cell, { both: 0, onlyA: 0, onlyB: 0, neither: 0, unpaired: 0 });
      const tally = tallies.get(it.cell);
      if (!it.runs[0] || !it.runs[1]) tally.unpaired++;
      else if (x !== null && y !== null) {
        const ra = x >= 1, rb = y >= 1;
        if (ra && rb) tally.both++; else if (ra) { tally.onlyA++; cls = "differs"; } else if (rb) { tally.onlyB++; cls = "differs"; } else tally.neither++;
      }
      const expected = (it.runs[0] || it.runs[1]).expected;
      return [it.key, expected !== undefined ? value(expected) : "", el("td", { class: cls }, outcome(it.runs[0], it.ids[0])), el("td", { class: cls }, outcome(it.runs[1], it.ids[1]))];
    });
    const tallyText = tally => {
      const scored = tally.both + tally.onlyA + tally.onlyB + tally.neither;
      return scored ? `Of ${scored} pairs scored in both: ${tally.both} right in both, ${tally.onlyA} right only in A, ${tally.onlyB} right only in B, ${tally.neither} right in neither.` + (tally.unpaired ? ` ${tally.unpaired} runs have no counterpart.` : "") : "No item is scored in both sweeps (no score expression, or no expected values).";
    };
    const cellTallies = [...tallies].filter(([c]) => c);
    const tallyEl = cellTallies.length
      ? el("div", { id: "sweep-tally" }, el("p", { class: "note" }, "The sweeps' matrices differ, so each matrix cell is paired and tallied apart (runner compare A B --cell NAME=VALUE gives a cell's paired statistics):"),
        el("ul", { class: "note" }, cellTallies.map(([c, t]) => el("li", { "data-cell": c }, el("b", {}, c), ": " + tallyText(t)))))
      : el("p", { class: "note", id: "sweep-tally" }, tallyText(tallies.get("") || { both: 0, onlyA: 0, onlyB: 0, neither: 0, unpaired: 0 }) + " `runner compare A B` gives the paired statistics.");
    cards.push(el("div", { class: "card", id: "sweep-items" }, el("h2", {}, `Items (${items.length})`),
      tallyEl,
      table(["item", "expected", "A", "B"], itemRows, { class: "diff items" })));
    app.replaceChildren(el("div", { class: "pagehead" }, el("div", {}, el("h1", {}, "Compare two sweeps"), el("div", { class: "sub" }, "Highlighted rows differ; items are paired by dataset line, sample and matrix values."))), ...cards);
  }

  // ---- two runs side by side ----
  async function comparePage(params) {
    const a = params.get("a"), b = params.get("b");
    if (!a || !b) throw new Error("compare needs two runs or two sweeps: #/compare?a=RUN&b=RUN or #/compare?a=SWEEP&b=SWEEP");
    // A sweep is a folder of runs with a summary.json; an id with a / is a
    // run of a sweep.
    // A sweep of a study is STUDY/sweep-…; SWEEP/RUN is a run.
    const sweepOf = async id => (await api("/api/kind?id=" + encodeURIComponent(id))).kind === "sweep" ? api("/api/sweep?id=" + encodeURIComponent(id)) : null;
    const [sa, sb] = await Promise.all([sweepOf(a), sweepOf(b)]);
    if (sa && sb) return compareSweeps(sa, sb);
    if (sa || sb) throw new Error(`${sa ? a : b} is a sweep and ${sa ? b : a} is not: compare two runs, or two sweeps.`);
    const [ra, rb] = await Promise.all([api("/api/run?id=" + encodeURIComponent(a)), api("/api/run?id=" + encodeURIComponent(b))]);
    setCrumbs(el("a", { href: "#/" }, "Runs"), "compare");
    document.title = "compare · runner view";
    const runs = [ra, rb];
    const rowsOf = [];
    // raw, when given, is what is compared (f may draw it as an element).
    const line = (label, f, raw) => {
      const vals = runs.map(f);
      if (vals.every(v => v === "" || v === undefined || v === null)) return;
      const cmp = raw ? runs.map(raw) : vals.map(v => v instanceof Node ? v.textContent : v);
      const differs = JSON.stringify(cmp[0]) !== JSON.stringify(cmp[1]);
      rowsOf.push([label, ...vals.map(v => el("td", { class: differs ? "differs" : "" }, v instanceof Node ? v : value(v ?? "")))]);
    };
    line("run", r => el("a", { href: "#/run/" + r.id, class: "id" }, r.id), () => "");
    line("spec", r => r.manifest.spec_name);
    line("status", r => r.status);
    line("seed", r => r.manifest.seed);
    const keys = (f) => [...new Set(runs.flatMap(r => Object.keys(f(r) || {})))].sort();
    for (const k of keys(r => r.manifest.vars)) line("var " + k, r => (r.manifest.vars || {})[k]);
    for (const k of keys(r => r.manifest.inputs)) line("input " + k, r => { const v = value((r.manifest.inputs || {})[k] ?? ""); return v.length > 200 ? v.slice(0, 200) + "…" : v; });
    line("models", r => Object.entries(r.manifest.models || {}).map(([n, m]) => `${n}: ${m.model}`).join("; "));
    const res = r => r.result || {};
    line("duration", r => dur(res(r).duration_ms));
    line("calls", r => ((res(r).usage || {}).total || {}).calls);
    line("tokens", r => { const t = (res(r).usage || {}).total || {}; return (t.prompt_tokens || 0) + (t.completion_tokens || 0); });
    line("cost", r => { const t = (res(r).usage || {}).total || {}; return cost(t.cost || 0, t.priced); });
    line("score", r => res(r).score ?? "");
    for (const k of keys(r => res(r).outputs)) line("output " + k, r => { const v = (res(r).outputs || {})[k]; return v !== null && typeof v === "object" ? el("div", { class: "cmpout" }, jsonView(v)) : el("pre", { style: "white-space:pre-wrap;margin:0;max-height:200px;overflow:auto" }, value(v ?? "")); }, r => (res(r).outputs || {})[k] ?? null);
    const verdicts = r => (res(r).goal_verdicts || []).map(g => `${g.goal || g.node}: ` + Object.entries(g.counts).map(([k, n]) => `${k} ${n}`).join(", ")).join("\n");
    line("verdicts", verdicts);
    const cols = runs.map(r => {
      const msgs = (res(r).messages || []).filter(m => !m.private);
      const agents = {};
      (r.agents || []).forEach((a, i) => agents[a.id] = { name: a.name, color: C.palette[i % C.palette.length] });
      return el("div", { class: "compact" }, el("h3", {}, el("span", { class: "mono" }, r.id)), msgs.length ? msgs.map(m => {
        const ag = agents[m.from] || { name: m.from, color: "#6d7a8c" };
        return el("div", { class: "msg" + (m.whisper ? " whisper" : "") + (m.record === "interjection" ? " keeper" : "") },
          el("div", { class: "avatar", style: `background:${ag.color}` }, initials(ag.name)),
          el("div", {}, el("div", { class: "msghead" }, el("span", { class: "who" }, ag.name), m.to ? el("span", { class: "to" }, "→ " + ((agents[m.to] || {}).name || m.to)) : null, m.whisper ? badge("whisper") : null, el("span", { class: "meta" }, [m.goal, m.round ? "round " + m.round : "", m.turn ? "turn " + m.turn : ""].filter(Boolean).join(" · "))),
            el("div", { class: "body" }, m.content.length > 1200 ? m.content.slice(0, 1200) + "…" : m.content),
            m.verdict ? el("div", { class: "verdict" }, "Verdict", el("span", { class: "vchip", style: `background:${verdictColor(m.verdict)}` }, m.verdict)) : null));
      }) : el("p", { class: "empty" }, "No result yet."));
    });
    app.replaceChildren(el("div", { class: "pagehead" }, el("div", {}, el("h1", {}, "Compare two runs"), el("div", { class: "sub" }, "Highlighted rows differ."))),
      el("div", { class: "card" }, table(["", "A", "B"], rowsOf, { class: "diff" })),
      el("div", { class: "card" }, el("h2", {}, "Transcripts"), el("div", { class: "cols" }, cols)));
  }

  route();
})();
