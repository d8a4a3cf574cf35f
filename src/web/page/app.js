// src/web/page/app.js — the page of `meshplan web`: fills the form from /api/catalog, posts the
// job to /api/predict (and /api/trace, for the simulated step) or /api/search, and shows the answer as a table and Chart.js charts.
// A URL hash submits on load: #predict?model=llama3-8b&gpu=h100-sxm5-80gb&gpus=8&plan=zero%3D1,gb%3D64
// or #search?model=...&gpu=...&gpus=...&gb=64&fix=tp%3D1 (tests/web_e2e.py reads the DOM after it).
"use strict";

const $ = (id) => document.getElementById(id);
const charts = {};
// Okabe & Ito's colours, as the figures of `meshplan plot` (src/plot/chart.c).
const PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442",
                 "#999999", "#000000", "#8C564B", "#17BECF", "#5E3C99"];

// Readable numbers with the rule of meshplan/format.h: an SI prefix joins a unit symbol
// ("512 GB/s") and stands apart before a word ("1.2 k tok/s"); 3 significant digits.
const SYMBOLS = new Set(["B", "b", "W", "Wh", "J", "s", "$", "Hz", "g", "FLOP", "FLOP/s", "B/s"]);
function fmtSI(v, unit, sig = 3) {
  if (!isFinite(v)) return String(v);
  const up = ["", "k", "M", "G", "T", "P", "E"], down = ["", "m", "u", "n"];
  let a = Math.abs(v), i = 0, prefix = "";
  if (a >= 1) {
    while (a >= 999.5 && i < 6) { a /= 1000; v /= 1000; i++; }
    prefix = up[i];
  } else if (a > 0 && unit) {
    while (a < 1 && i < 3) { a *= 1000; v *= 1000; i++; }
    prefix = down[i];
  }
  const num = String(Number(v.toPrecision(sig)));
  if (!prefix && !unit) return num;
  return num + " " + prefix + (prefix && !SYMBOLS.has(unit) ? " " : "") + (unit || "");
}
function fmtBytes(v) {
  const up = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let i = 0;
  while (Math.abs(v) >= 1024 && i < up.length - 1) { v /= 1024; i++; }
  return String(Number(v.toPrecision(3))) + " " + up[i];
}
const GiB = 1024 ** 3;

function setStatus(text, error) {
  $("status").textContent = text;
  $("status").className = error ? "error" : "";
}

// One cell of the summary: readable text, the exact value kept in data-value.
function cell(id, text, exact) {
  $(id).textContent = text;
  $(id).dataset.value = exact === undefined ? text : String(exact);
}

function option(select, value, text) {
  const o = document.createElement("option");
  o.value = value;
  o.textContent = text || value;
  select.appendChild(o);
}

async function loadCatalog() {
  const r = await fetch("/api/catalog");
  const cat = await r.json();
  cat.models.forEach((m) => option($("model"), m));
  cat.gpus.forEach((g) => option($("gpu"), g.key, g.key + " (" + fmtBytes(g.memory_bytes) + ")"));
  cat.nodes.forEach((n) => option($("cluster"), n, "node " + n));
  cat.clusters.forEach((c) => option($("cluster"), c));
  $("model").value = "llama3-70b";
  $("gpu").value = "h100-sxm5-80gb";
}

function job() {
  const j = { model: $("model").value, gpus: Number($("gpus").value) };
  if ($("cluster").value) j.cluster = $("cluster").value; else j.gpu = $("gpu").value;
  return j;
}

async function post(path, body) {
  const r = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" },
                                body: JSON.stringify(body) });
  const answer = await r.json();
  if (!r.ok) {
    const where = answer.field ? " [field: " + answer.field + "]" : "";
    throw new Error("HTTP " + r.status + ": " + answer.error + where);
  }
  return answer;
}

function chart(id, config) {
  if (charts[id]) charts[id].destroy();
  config.options = Object.assign({ animation: false, responsive: true, maintainAspectRatio: false },
                                 config.options || {});
  charts[id] = new Chart($(id), config);
}

const MEMORY_PARTS = [["weights", "weights"], ["gradients", "gradients"], ["optimizer", "optimizer states"],
                      ["activations", "activations"], ["logits", "logits"], ["buffers", "buffers"]];
const TIME_PARTS = [["compute", "compute"], ["recompute", "recompute"], ["tp_comm", "TP comm."],
                    ["cp_comm", "CP comm."], ["ep_comm", "EP all-to-all"], ["pp_comm", "PP send/recv"],
                    ["pp_bubble", "pipeline bubble"], ["dp_comm_exposed", "exposed DP/ZeRO comm."],
                    ["optimizer", "optimizer step"]];
const TIME_COLORS = [0, 5, 1, 9, 10, 4, 7, 3, 2];

function showPrediction(p, sim) {
  cell("feasible", p.feasible ? "yes, fits in memory" : "no", p.feasible);
  cell("tokens_per_s", fmtSI(p.tokens_per_s, "tok/s"), p.tokens_per_s);
  cell("tokens_per_s_per_gpu", fmtSI(p.tokens_per_s_per_gpu, "tok/s"), p.tokens_per_s_per_gpu);
  cell("step_s", fmtSI(p.step_s, "s"), p.step_s);
  if (sim)
    cell("sim_step_s", fmtSI(sim.simulated.step_s, "s") + " (" + (sim.difference_pct >= 0 ? "+" : "") +
         sim.difference_pct.toFixed(1) + " %; bubble " + (100 * sim.simulated.bubble_frac).toFixed(1) +
         " %, one rank per stage event by event)", sim.simulated.step_s);
  else
    cell("sim_step_s", "not simulated", "");
  // MFU: model FLOPs (6N per token plus causal attention) over the dense peak at the plan's
  // precision, the convention of predict's text output.
  cell("mfu", (100 * p.mfu).toFixed(1) + " % (Megatron model FLOPs / " + fmtSI(p.peak_flops_per_s, "FLOP/s") +
       " dense peak)", p.mfu);
  cell("memory_total", fmtBytes(p.memory_bytes.total) + " of " + fmtBytes(p.memory_bytes.capacity),
       p.memory_bytes.total);
  cell("bottleneck", p.bottleneck);
  cell("plan_out", p.plan);
  const ul = $("reasons");
  ul.textContent = "";
  (p.reasons || []).forEach((r) => { const li = document.createElement("li"); li.textContent = r; ul.appendChild(li); });

  const stages = p.memory_bytes.per_stage && p.memory_bytes.per_stage.length ? p.memory_bytes.per_stage
                                                                              : [p.memory_bytes];
  chart("memory-chart", {
    type: "bar",
    data: {
      labels: stages.map((_, i) => "stage " + i),
      datasets: MEMORY_PARTS.map(([k, name], i) => ({
        label: name, data: stages.map((s) => s[k] / GiB), backgroundColor: PALETTE[i === 5 ? 7 : i], stack: "m",
      })).concat([{ type: "line", label: "capacity", data: stages.map(() => p.memory_bytes.capacity / GiB),
                    borderColor: "#b00020", borderDash: [6, 4], pointRadius: 0, borderWidth: 2 }]),
    },
    options: { scales: { x: { stacked: true, title: { display: true, text: "pipeline stage" } },
                         y: { stacked: true, beginAtZero: true, title: { display: true, text: "memory per GPU (GiB)" } } } },
  });
  const rows = sim ? [p.time_s, sim.simulated.time_s] : [p.time_s];
  chart("parts-chart", {
    type: "bar",
    data: {
      labels: sim ? ["analytical", "simulated"] : ["analytical"],
      datasets: TIME_PARTS.filter(([k]) => rows.some((t) => t[k] > 0)).map(([k, name]) => ({
        label: name, data: rows.map((t) => t[k]),
        backgroundColor: PALETTE[TIME_COLORS[TIME_PARTS.findIndex((t) => t[0] === k)]], stack: "t",
      })),
    },
    options: { indexAxis: "y",
               scales: { x: { stacked: true, beginAtZero: true, title: { display: true, text: "time in one step (s)" } },
                         y: { stacked: true } } },
  });
  $("prediction").hidden = false;
}

function showSearch(s) {
  const top = s.top || [], front = s.pareto_memory || [];
  $("search_summary").textContent = s.counts.feasible + " feasible plans of " + s.counts.plans +
    " (" + s.counts.shapes_rejected + " degree shapes rejected); best " +
    (top.length ? fmtSI(top[0].tokens_per_s, "tok/s") + " with " + top[0].plan : "none fits");
  $("search_summary").dataset.best = top.length ? top[0].plan : "";
  const pt = (e) => ({ x: e.memory_bytes / GiB, y: e.tokens_per_s });
  chart("pareto-chart", {
    type: "scatter",
    data: { datasets: [
      { label: "frontier: throughput vs memory", data: front.map(pt), showLine: true, borderColor: PALETTE[0],
        backgroundColor: PALETTE[0] },
      { label: "top plans", data: top.map(pt), borderColor: PALETTE[1], backgroundColor: PALETTE[1] },
      { label: "#1", data: top.slice(0, 1).map(pt), backgroundColor: PALETTE[3], pointRadius: 7 },
    ] },
    options: { scales: { x: { beginAtZero: true, title: { display: true, text: "memory per GPU, most loaded (GiB)" } },
                         y: { beginAtZero: true, title: { display: true, text: "throughput (tokens/s)" },
                              ticks: { callback: (v) => fmtSI(v, "tok/s") } } } },
  });
  const tbody = $("top-table").querySelector("tbody");
  tbody.textContent = "";
  top.forEach((e) => {
    const tr = document.createElement("tr");
    [e.rank, e.plan, fmtSI(e.tokens_per_s, "tok/s"), (100 * e.mfu).toFixed(1) + " %", fmtBytes(e.memory_bytes),
     e.bottleneck].forEach((v) => { const td = document.createElement("td"); td.textContent = v; tr.appendChild(td); });
    tbody.appendChild(tr);
  });
  $("search").hidden = false;
}

async function predict() {
  setStatus("predicting ...");
  try {
    const body = Object.assign(job(), { plan: $("plan").value });
    const p = await post("/api/predict", body);
    let sim = null;
    try {
      sim = await post("/api/trace", body); // the same job, simulated event by event
    } catch (e) {
      sim = null; // a step too long to simulate here: the prediction stands alone
    }
    showPrediction(p, sim);
    setStatus("");
    document.body.dataset.state = "predicted";
  } catch (e) {
    setStatus(e.message, true);
    document.body.dataset.state = "error";
  }
}

async function search() {
  setStatus("searching every plan ...");
  try {
    const body = Object.assign(job(), { gb: Number($("gb").value), top: Number($("top").value) });
    if ($("fix").value) body.fix = $("fix").value;
    showSearch(await post("/api/search", body));
    setStatus("");
    document.body.dataset.state = "searched";
  } catch (e) {
    setStatus(e.message, true);
    document.body.dataset.state = "error";
  }
}

// #predict?k=v&... or #search?k=v&...: fill the form, then run.
function fromHash() {
  const h = location.hash.slice(1);
  if (!h) return;
  const [what, query] = h.split("?");
  const q = new URLSearchParams(query || "");
  for (const [k, v] of q) if ($(k)) $(k).value = v;
  if (what === "predict") predict();
  else if (what === "search") search();
}

document.addEventListener("DOMContentLoaded", async () => {
  $("job").addEventListener("submit", (ev) => { ev.preventDefault(); predict(); });
  $("search-btn").addEventListener("click", search);
  try {
    await loadCatalog();
  } catch (e) {
    setStatus("cannot load /api/catalog: " + e.message, true);
    return;
  }
  fromHash();
  window.addEventListener("hashchange", fromHash);
});
