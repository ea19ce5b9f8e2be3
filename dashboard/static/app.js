// exitgate dashboard: loads /api/state (with history), then follows
// /api/events (server-sent events, one Status a second) and appends a
// point per host to the charts. No external resources: it works offline.
"use strict";

window.dashboardErrors = [];
window.addEventListener("error", (e) => window.dashboardErrors.push(String(e.message)));

const MAX_SERIES = 8;      // hosts drawn in the charts: the busiest
const MAX_POINTS = 900;    // points kept per chart
const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
const DASHES = [[], [6, 3], [2, 3], [8, 3, 2, 3], [], [6, 3], [2, 3], [8, 3, 2, 3]];

const $ = (id) => document.getElementById(id);
let ticks = 0;
const hist = new Map(); // host -> Map(t seconds -> {rate, capacity, ratio})
let hostOrder = [];     // hosts drawn, in order
const charts = {};

function pct(x) { return (100 * (x || 0)).toFixed(x && x < 0.001 ? 3 : 2) + "%"; }
function num(x, d = 2) { return x == null ? "" : (+x).toFixed(d); }
function time(t) { return t ? new Date(t).toLocaleTimeString() : ""; }
function dur(s) {
  if (!s) return "";
  s = Math.round(s);
  return s >= 60 ? Math.floor(s / 60) + "m" + String(s % 60).padStart(2, "0") + "s" : s + "s";
}
function esc(s) {
  return String(s == null ? "" : s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
}
function rows(id, list, cells, cls) {
  const tb = $(id).tBodies[0];
  tb.innerHTML = list.map((x) => `<tr class="${cls ? cls(x) : ""}">` + cells(x).map((c) => {
    const numeric = typeof c === "object" && c && c.n;
    const v = numeric ? c.v : c;
    return `<td${numeric ? ' class="n"' : ""}>${v}</td>`;
  }).join("") + "</tr>").join("");
}
const N = (v) => ({ n: true, v });

function addPoint(host, t, rate, capacity, ratio) {
  let m = hist.get(host);
  if (!m) { m = new Map(); hist.set(host, m); }
  m.set(t, { rate, capacity, ratio });
  if (m.size > MAX_POINTS) m.delete(m.keys().next().value);
}

function makeChart(id, label, scale) {
  const el = $(id);
  const opts = {
    width: Math.max(el.clientWidth, 380), height: 220,
    scales: { x: { time: true }, y: { auto: true, range: (u, lo, hi) => [0, Math.max(hi * 1.1, scale)] } },
    axes: [{}, { label, size: 60 }],
    series: [{}],
    legend: { live: false },
  };
  charts[id] = new uPlot(opts, [[]], el);
}

function drawCharts(budget) {
  const ts = new Set();
  for (const h of hostOrder) for (const t of (hist.get(h) || new Map()).keys()) ts.add(t);
  const xs = [...ts].sort((a, b) => a - b).slice(-MAX_POINTS);
  const col = (key, f) => hostOrder.map((h) => { const m = hist.get(h) || new Map(); return xs.map((t) => { const p = m.get(t); return p ? f(p[key]) : null; }); });
  const sets = {
    "chart-rate": col("rate", (v) => v),
    "chart-capacity": col("capacity", (v) => v),
    "chart-ratio": col("ratio", (v) => 100 * v),
  };
  for (const [id, ys] of Object.entries(sets)) {
    const u = charts[id];
    const want = hostOrder.length + (id === "chart-ratio" ? 1 : 0);
    if (u.series.length - 1 !== want || u._hosts !== hostOrder.join(",")) {
      while (u.series.length > 1) u.delSeries(1);
      hostOrder.forEach((h, i) => u.addSeries({ label: h, stroke: COLORS[i % COLORS.length], dash: DASHES[i % DASHES.length], width: 1.5 + (i % 3) * 0.5, spanGaps: true }));
      if (id === "chart-ratio") u.addSeries({ label: "budget", stroke: "#999", dash: [4, 4], width: 1 });
      u._hosts = hostOrder.join(",");
    }
    const data = [xs, ...ys];
    if (id === "chart-ratio") data.push(xs.map(() => 100 * budget));
    u.setData(data);
  }
}

function render(s) {
  $("updated").textContent = time(s.at);
  $("started").textContent = time(s.started);
  $("ticks").textContent = String(ticks);
  const t = s.totals || {};
  const box = (k, v) => `<div>${k}<b>${v}</b></div>`;
  $("totals").innerHTML = [
    box("requests", t.requests || 0), box("ok", t.ok || 0), box("429s", t.throttled || 0),
    box("429 ratio", pct(t.ratio_429)), box("429 last window", pct(t.window_429)), box("responses/s", num(t.rate, 1)),
    box("in flight", t.in_flight || 0), box("done", (t.done || 0) + " / " + (t.urls || 0)),
    box("not found", t.not_found || 0), box("queued", t.queued || 0), box("parked", t.parked || 0),
    box("abandoned", t.abandoned || 0),
  ].join("");
  const sp = $("spike");
  const spikeEv = (s.events || []).find((e) => e.kind === "spike");
  sp.hidden = !s.spike;
  sp.textContent = s.spike && spikeEv ? spikeEv.message : "";

  const hosts = s.hosts || [];
  rows("hosts", hosts, (h) => [
    esc(h.host), esc(h.phase), esc(h.scope), N(num(h.rate)), N(num(h.capacity)), N(h.lanes || 0),
    N(`<span class="${h.ratio_429 > h.budget ? "bad" : ""}">${pct(h.ratio_429)}</span>`), N(pct(h.budget)), N(dur(h.over_budget_seconds)),
    h.alert ? '<span class="bad">ALERT</span>' : "",
    h.breaker === "closed" ? '<span class="good">closed</span>' : `<span class="bad">${esc(h.breaker)}</span>` + (h.breaker_until ? " until " + time(h.breaker_until) : ""),
    esc((h.warnings || []).join("; ")),
  ], (h) => (h.alert || h.breaker !== "closed" ? "warnrow" : ""));
  rows("exits", s.exits || [], (x) => [
    esc(x.id), N(x.requests || 0), N(x.ok || 0), N(x.throttled || 0), N(pct(x.ratio_429)),
    `<span class="${x.reputation === "good" ? "good" : "bad"}">${esc(x.reputation)}</span>`,
    esc((x.hosts || []).map((h) => `${h.host}: ${h.reputation}${h.until ? " until " + time(h.until) : ""} (${h.why || ""})`).join("; ")),
  ], (x) => (x.reputation !== "good" ? "warnrow" : ""));
  rows("parked", s.parked || [], (p) => [esc(p.host), time(p.until), esc(p.why)]);
  const kv = (o) => Object.entries(o || {}).sort((a, b) => b[1] - a[1]);
  rows("parked-by", kv(s.parked_by_reason), ([k, v]) => [esc(k), N(v)]);
  rows("abandoned", kv(s.abandoned_by_reason), ([k, v]) => [esc(k), N(v)]);
  rows("events", s.events || [], (e) => [time(e.at), e.level === "warn" ? '<span class="warn">warn</span>' : "info", esc(e.kind), esc(e.host), esc(e.exit), esc(e.message)],
    (e) => (e.level === "warn" ? "warnrow" : ""));
  rows("changes", s.changes || [], (c) => [time(c.at), esc(c.host), esc(c.lane), esc(c.rule), esc(c.what), N(num(c.from, 3)), N(num(c.to, 3)), esc(c.why)]);

  const t0 = Math.round(new Date(s.at).getTime() / 1000);
  for (const h of hosts) addPoint(h.host, t0, h.rate, h.capacity, h.ratio_429);
  hostOrder = hosts.slice(0, MAX_SERIES).map((h) => h.host);
  drawCharts(s.budget || 0.01);
}

async function start() {
  makeChart("chart-rate", "responses/s", 1);
  makeChart("chart-capacity", "requests/s", 1);
  makeChart("chart-ratio", "429 %", 2);
  try {
    const r = await fetch("/api/state");
    const s = await r.json();
    for (const h of s.history || []) {
      h.t.forEach((ms, i) => addPoint(h.host, Math.round(ms / 1000), h.rate[i], h.capacity[i], h.ratio_429[i]));
    }
    render(s);
  } catch (e) {
    console.error("state:", e);
  }
  const es = new EventSource("/api/events");
  es.addEventListener("status", (ev) => {
    ticks++;
    try {
      const s = JSON.parse(ev.data);
      // The crawl's final counts, kept up by --linger: not live.
      $("live").className = s.ended ? "live off" : "live on";
      $("live").textContent = s.ended ? "ended " + new Date(s.ended).toLocaleTimeString() : "live";
      render(s);
    } catch (e) {
      window.dashboardErrors.push(String(e && e.stack || e));
      throw e;
    }
  });
  es.onerror = () => { $("live").className = "live off"; $("live").textContent = "reconnecting…"; };
}

window.addEventListener("resize", () => {
  for (const [id, u] of Object.entries(charts)) u.setSize({ width: Math.max($(id).clientWidth, 380), height: 220 });
});
start();
