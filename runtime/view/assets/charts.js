// charts.js: the few SVG charts the view draws, written for it (no
// library): stacked horizontal bars, lines over rounds, intervals, and a
// timeline of calls. Each function returns an element to insert.
"use strict";
(function () {
  const NS = "http://www.w3.org/2000/svg";
  const palette = ["#3157c4", "#1f9d6b", "#e0a526", "#d4572a", "#8a4fc9", "#1f9bb8", "#c24679", "#6d7a8c", "#5aa02c", "#b5651d"];

  function s(tag, attrs, ...kids) {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) e.setAttribute(k, v);
    for (const k of kids) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
    return e;
  }
  function svg(w, h, label) {
    return s("svg", { width: w, height: h, viewBox: `0 0 ${w} ${h}`, role: "img", "aria-label": label || "" });
  }
  function title(text) { return s("title", {}, text); }
  function fmt(v) {
    if (v >= 1e6) return (v / 1e6).toFixed(1) + "M";
    if (v >= 1e4) return (v / 1e3).toFixed(0) + "k";
    if (Math.abs(v - Math.round(v)) < 1e-9) return String(Math.round(v));
    return v < 0.01 ? v.toPrecision(2) : v.toFixed(2);
  }
  function wrap(node, legend) {
    const d = document.createElement("div");
    d.className = "chart";
    d.append(node);
    if (legend && legend.length) {
      const l = document.createElement("div");
      l.className = "legend";
      for (const it of legend) {
        const span = document.createElement("span");
        const i = document.createElement("i");
        i.style.background = it.color;
        span.append(i, it.label);
        l.append(span);
      }
      d.append(l);
    }
    return d;
  }

  // stacked: rows of labelled bars made of segments {value, color, label}.
  function stacked(rows, opts) {
    opts = opts || {};
    const labelW = opts.labelWidth || 170, barW = opts.width || 520, rowH = 28, top = 6;
    // The longest bar fills the width, whatever its scale (a cost of
    // $0.02 as much as 20,000 tokens); only bars of nothing fall back to 1.
    const max = opts.max || Math.max(0, ...rows.map(r => r.segments.reduce((a, x) => a + x.value, 0))) || 1;
    const g = svg(labelW + barW + 70, top + rowH * rows.length + 4, opts.label);
    rows.forEach((r, i) => {
      const y = top + i * rowH;
      g.append(s("text", { x: labelW - 8, y: y + 17, "text-anchor": "end" }, r.label));
      let x = labelW, total = 0;
      for (const seg of r.segments) {
        if (!seg.value) continue;
        const w = barW * seg.value / max;
        g.append(s("rect", { x: x, y: y + 4, width: Math.max(w, 1.5), height: rowH - 10, rx: 2, fill: seg.color }, title(`${r.label}: ${seg.label} ${fmt(seg.value)}${opts.unit || ""}`)));
        if (w > 26 && opts.inside !== false) g.append(s("text", { x: x + w / 2, y: y + 17, "text-anchor": "middle", fill: "#fff", style: "fill:#fff" }, fmt(seg.value)));
        x += w;
        total += seg.value;
      }
      g.append(s("text", { x: x + 6, y: y + 17, class: "muted" }, (opts.total ? opts.total(total, r) : fmt(total) + (opts.unit || ""))));
    });
    return wrap(g, opts.legend);
  }

  // line: series {name, color, points: [{x, y, label}]} over numbered x.
  function line(series, opts) {
    opts = opts || {};
    const W = opts.width || 560, H = opts.height || 220, L = 40, R = 16, T = 12, B = 34;
    const xs = [...new Set(series.flatMap(sr => sr.points.map(p => p.x)))].sort((a, b) => a - b);
    const yMax = opts.yMax || Math.max(0, ...series.flatMap(sr => sr.points.map(p => p.y))) || 1;
    const g = svg(W, H, opts.label);
    const inset = 18; // keeps the first and last points off the edges
    const px = x => xs.length < 2 ? L + (W - L - R) / 2 : L + inset + (W - L - R - 2 * inset) * (xs.indexOf(x)) / (xs.length - 1);
    const py = y => T + (H - T - B) * (1 - y / yMax);
    for (let i = 0; i <= 4; i++) {
      const v = yMax * i / 4, y = py(v);
      g.append(s("line", { x1: L, x2: W - R, y1: y, y2: y, class: "grid" }), s("text", { x: L - 6, y: y + 4, "text-anchor": "end", class: "muted" }, fmt(v)));
    }
    for (const x of xs) g.append(s("text", { x: px(x), y: H - B + 16, "text-anchor": "middle", class: "muted" }, x));
    g.append(s("text", { x: L + (W - L - R) / 2, y: H - 4, "text-anchor": "middle", class: "muted" }, opts.xLabel || ""));
    for (const sr of series) {
      const pts = sr.points.map(p => `${px(p.x).toFixed(1)},${py(p.y).toFixed(1)}`).join(" ");
      g.append(s("polyline", { points: pts, fill: "none", stroke: sr.color, "stroke-width": 2.2 }));
      for (const p of sr.points) g.append(s("circle", { cx: px(p.x), cy: py(p.y), r: 4, fill: sr.color }, title(`${sr.name}, ${opts.xLabel || "x"} ${p.x}: ${fmt(p.y)}`)));
    }
    return wrap(g, series.map(sr => ({ label: sr.name, color: sr.color })));
  }

  // intervals: rows {label, mean, low, high} on 0..1, a dot with its interval.
  function intervals(rows, opts) {
    opts = opts || {};
    const labelW = 130, W = 260, rowH = 30, T = 22;
    const g = svg(labelW + W + 170, T + rowH * rows.length + 6, opts.label);
    for (let i = 0; i <= 4; i++) {
      const x = labelW + W * i / 4;
      g.append(s("line", { x1: x, x2: x, y1: T - 6, y2: T + rowH * rows.length, class: "grid" }), s("text", { x: x, y: T - 10, "text-anchor": "middle", class: "muted" }, (i / 4).toFixed(2)));
    }
    rows.forEach((r, i) => {
      const y = T + i * rowH + rowH / 2;
      const X = v => labelW + W * Math.min(Math.max(v, 0), 1);
      g.append(s("text", { x: labelW - 10, y: y + 4, "text-anchor": "end" }, r.label));
      g.append(s("line", { x1: X(r.low), x2: X(r.high), y1: y, y2: y, stroke: "#3157c4", "stroke-width": 3, "stroke-linecap": "round" }));
      g.append(s("circle", { cx: X(r.mean), cy: y, r: 6, fill: "#fff", stroke: "#3157c4", "stroke-width": 2.5 }, title(`${r.label}: ${fmt(r.mean)} (95% CI ${fmt(r.low)}–${fmt(r.high)})`)));
      g.append(s("text", { x: labelW + W + 10, y: y + 4, class: "muted" }, `${r.mean.toFixed(3)} [${r.low.toFixed(3)}, ${r.high.toFixed(3)}]`));
    });
    return wrap(g);
  }

  // timeline: calls {start, end, wait, node, agent, label, retries: [t], source}
  // in ms from the run's start, in lanes so that overlapping calls show
  // side by side.
  function timeline(calls, colors, opts) {
    opts = opts || {};
    const W = opts.width || 1100, L = 8, R = 12, T = 24, laneH = 16;
    const sorted = calls.slice().sort((a, b) => a.start - b.start);
    const lanes = [];
    for (const c of sorted) {
      let i = lanes.findIndex(end => end <= c.start);
      if (i < 0) { i = lanes.length; lanes.push(0); }
      lanes[i] = Math.max(c.end, c.start + 1);
      c.lane = i;
    }
    const end = Math.max(1, ...sorted.map(c => c.end));
    const H = T + lanes.length * laneH + 8;
    const g = svg(W, H, opts.label);
    const X = t => L + (W - L - R) * t / end;
    const step = niceStep(end / 8);
    const tick = t => end < 2000 ? Math.round(t) + " ms" : (t / 1000).toFixed(step < 1000 ? 1 : 0) + " s";
    for (let t = 0; t <= end; t += step) {
      g.append(s("line", { x1: X(t), x2: X(t), y1: T - 4, y2: H - 4, class: "grid" }), s("text", { x: X(t), y: T - 8, "text-anchor": t === 0 ? "start" : "middle", class: "muted" }, tick(t)));
    }
    for (const c of sorted) {
      const y = T + c.lane * laneH;
      const color = colors[c.node] || "#6d7a8c";
      const tip = `${c.label}\n${((c.end - c.start) / 1000).toFixed(2)} s` + (c.wait > 5 ? `, waited ${(c.wait / 1000).toFixed(2)} s` : "") + (c.retries.length ? `, ${c.retries.length} retr${c.retries.length > 1 ? "ies" : "y"}` : "") + (c.source ? `, from the ${c.source}` : "");
      const grp = s("g", { class: "call" }, title(tip));
      if (c.wait > 0) grp.append(s("rect", { x: X(c.start), y: y + 2, width: Math.max(X(c.start + c.wait) - X(c.start), 0), height: laneH - 5, fill: color, opacity: 0.25 }));
      grp.append(s("rect", { x: X(c.start + c.wait), y: y + 2, width: Math.max(X(c.end) - X(c.start + c.wait), 1.5), height: laneH - 5, rx: 2, fill: color, opacity: c.source ? 0.45 : 0.95 }));
      for (const r of c.retries) grp.append(s("rect", { x: X(r) - 1, y: y, width: 2.5, height: laneH - 1, fill: "#c23b3b" }));
      g.append(grp);
    }
    const legend = Object.entries(colors).map(([k, v]) => ({ label: k, color: v }));
    legend.push({ label: "waiting (queue, rate limit, retry back-off)", color: "rgba(49,87,196,.25)" }, { label: "retry", color: "#c23b3b" });
    return wrap(g, legend);
  }
  function niceStep(x) {
    const p = Math.pow(10, Math.floor(Math.log10(Math.max(x, 1))));
    for (const m of [1, 2, 5, 10]) if (m * p >= x) return m * p;
    return 10 * p;
  }

  window.Charts = { stacked, line, intervals, timeline, palette, fmt };
})();
