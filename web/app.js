// The page: a design from the form (kept in the URL), its answers from the estimator, and
// charts drawn as SVG from those answers. Every number shown is one the estimator returned;
// this script only formats and draws them.

import { Memwall, MemwallError } from "./memwall.js";
import { svgBars, svgLines, svgScatter, svgStack } from "./charts.js";

const $ = (id) => document.getElementById(id);
const GB = 1e9;

/** The form's fields, in the order the URL lists them. */
const FIELDS = ["model", "device", "backend", "engine", "threads", "weights", "kv_k", "kv_v",
  "context", "prompt", "gen_tokens", "margin_gb", "assume_defaults"];
const DEFAULTS = { model: "qwen3-4b", device: "Pixel 8", backend: "cpu", engine: "", threads: "",
  weights: "Q4_K_M", kv_k: "f16", kv_v: "f16", context: "4096", prompt: "512", gen_tokens: "128",
  margin_gb: "0", assume_defaults: "" };

let mw;            // the estimator
let presets;       // memwall.presets document
let imported = null; // the answer of the last import: {name, model_toml, ...}
let last = null;   // the last answer: {state, request, estimate, footprint}
let compared = []; // states of the designs side by side
let sweepAnswer = null, simAnswer = null;

// ---------------------------------------------------------------- state and URL

function formState() {
  const s = {};
  for (const f of FIELDS) s[f] = $(f).type === "checkbox" ? ($(f).checked ? "1" : "") : $(f).value.trim();
  if (imported && s.model === "") s.imported = imported.name;
  return s;
}

function setForm(state) {
  for (const f of FIELDS) {
    if (state[f] === undefined) continue;
    if ($(f).type === "checkbox") $(f).checked = state[f] === "1"; else $(f).value = state[f];
  }
}

function stateToHash(state) {
  const p = new URLSearchParams();
  for (const f of FIELDS) if (state[f] !== "" && state[f] !== undefined) p.set(f, state[f]);
  if (state.imported) p.set("imported", state.imported);
  for (const c of compared) p.append("cmp", JSON.stringify(c));
  return "#" + p.toString();
}

function hashToState() {
  const p = new URLSearchParams(location.hash.slice(1));
  const s = { ...DEFAULTS };
  for (const f of FIELDS) if (p.has(f)) s[f] = p.get(f);
  if (p.has("imported")) { s.imported = p.get("imported"); s.model = ""; }
  compared = p.getAll("cmp").flatMap((c) => { try { return [JSON.parse(c)]; } catch { return []; } });
  return s;
}

/** A design request (the flags of `memwall estimate`) from a form state. */
function designRequest(s, depths = []) {
  const whole = (k) => {
    const v = Number(s[k]);
    if (!Number.isSafeInteger(v) || v < 0) throw new MemwallError(`invalid \`${k}\` = ${s[k]}: must be a whole number from 0 to 2^53`);
    return v;
  };
  if (!s.imported && !s.model) throw new MemwallError("no model: pick a preset, or drop a .gguf or config.json on the page");
  const margin = Number(s.margin_gb);
  if (s.margin_gb === "" || !Number.isFinite(margin)) throw new MemwallError(`invalid \`margin_gb\` = ${s.margin_gb}: must be a number`);
  const r = {
    op: "estimate", device: s.device, kv_k: s.kv_k, kv_v: s.kv_v,
    context: whole("context"), prompt: whole("prompt"), gen_tokens: whole("gen_tokens"),
    batch: 1, backend: s.backend, margin_gb: margin, depths,
  };
  if (s.imported) r.imported = s.imported; else r.model = s.model;
  if (s.weights) r.weights = s.weights;
  if (s.engine) r.engine = s.engine;
  if (s.threads !== "") r.threads = whole("threads");
  if (s.assume_defaults === "1") r.assume_defaults = true;
  return r;
}

// ---------------------------------------------------------------- formatting

const fmt = (v, d = 2) => (v === null || v === undefined || Number.isNaN(v) ? "–" : Number(v).toFixed(d));
const gb = (b) => fmt(b / GB, 2) + " GB";
const band = (iv, d = 1, unit = " tok/s") => (iv ? `80 % range ${fmt(iv[0], d)} to ${fmt(iv[1], d)}${unit}` : "80 % range unknown for this engine and unit");

function option(select, value, text = value) {
  const o = document.createElement("option");
  o.value = value; o.textContent = text;
  select.appendChild(o);
}

// ---------------------------------------------------------------- the design

/** Show an error in box `where` ("error": the design's answer, which is then stale;
 * "sweep-error", "sim-error": that section's). */
function showError(e, where = "error") {
  $(where).hidden = false;
  $(where).textContent = e instanceof MemwallError ? e.message : `unexpected: ${e}`;
  if (where === "error") $("answer").classList.add("stale");
}

function update() {
  const state = formState();
  history.replaceState(null, "", stateToHash(state));
  let request;
  try {
    // Replies started from an empty cache to the deepest start the context leaves room for.
    const deepest = Number(state.context) - Number(state.gen_tokens);
    const depths = Number.isInteger(deepest) && deepest > 0
      ? [...new Set(Array.from({ length: 9 }, (_, i) => Math.round((deepest * i) / 8)))] : [];
    request = designRequest(state, depths);
    const a = mw.call(request);
    last = { state, request, estimate: a.estimate, footprint: a.footprint, command: a.command, warning: a.warning };
    window.memwallAnswer = last; // for scripts driving the page (its test reads it)
  } catch (e) {
    showError(e);
    return;
  }
  $("error").hidden = true;
  $("answer").classList.remove("stale");
  render(last);
}

function render(a) {
  const e = a.estimate.estimate, d = a.estimate.design, f = a.footprint, q = a.estimate.quality;
  $("headline").textContent = `${d.model} on ${d.device}, ${d.weights} weights, KV ${d.kv_k}/${d.kv_v}, ` +
    `${d.context_tokens} tokens, ${d.backend.toUpperCase()} via ${d.engine}: ` +
    (f.fits ? `fits, ${gb(f.headroom_bytes)} to spare` : `does not fit, ${gb(-f.headroom_bytes)} over the budget`);
  $("headline").className = f.fits ? "fits" : "nofit";
  $("decode").textContent = `${fmt(e.decode_tok_s, 1)} tok/s`;
  $("decode-band").textContent = `${band(e.decode_tok_s_interval)}; at depth ${e.decode_depth_tokens}`;
  $("prefill").textContent = `${fmt(e.prefill_tok_s, 1)} tok/s`;
  $("prefill-band").textContent = band(e.prefill_tok_s_interval);
  $("ttft").textContent = `${fmt(e.ttft_s, 2)} s`;
  $("binding").textContent = `decode bound by ${e.binding}, prefill by ${e.prefill_binding}`;
  $("energy").textContent = `${fmt(e.energy_j_per_token, 3)} J/token`;
  $("quality").textContent = q.ppl_delta_weights === null ? "perplexity change unknown"
    : `perplexity +${fmt(q.ppl_delta_weights + (q.ppl_delta_kv ?? 0), 3)} (${q.weights_provenance?.kind ?? "?"})`;
  const c = f.components;
  $("footprint-chart").innerHTML = svgStack({
    parts: [["weights", c.weight_bytes], ["KV cache", c.kv_bytes], ["state", c.state_bytes],
      ["compute", c.compute_bytes], ["runtime", c.overhead_bytes]].map(([k, v]) => [k, v / GB]),
    marks: [["budget", f.budget_bytes / GB], ["app limit", f.app_limit_bytes / GB], ["RAM", f.ram_bytes / GB]],
    unit: "GB",
  });
  $("footprint-note").textContent = `total ${gb(c.total_bytes)}; budget ${gb(f.budget_bytes)} = what one app may hold ` +
    `(${gb(f.app_limit_bytes)} of ${gb(f.ram_bytes)} RAM) − other apps ${gb(f.other_apps_bytes)} − margin ${gb(d.margin_bytes)}` +
    (e.assumed ? `. Assumed, as the device states none: ${e.assumed}` : "") + (a.warning ? `. Warning: ${a.warning}` : "");
  $("limit-source").textContent = f.app_limit_source;
  const depths = a.estimate.depths ?? [];
  $("depth-chart").innerHTML = svgLines({
    x: depths.map((p) => p.depth_tokens), xLabel: "depth, tokens", yLabel: "decode tok/s",
    series: [{ name: "decode tok/s", y: depths.map((p) => p.decode_tok_s),
      lo: depths.map((p) => p.decode_tok_s_interval?.[0] ?? null), hi: depths.map((p) => p.decode_tok_s_interval?.[1] ?? null) }],
  });
  const t = e.decode_terms;
  $("terms-chart").innerHTML = svgBars({
    bars: [["memory", t.t_mem], ["arithmetic", t.t_arith], ["dequantization", t.t_dequant],
      ["attention", t.t_attention], ["storage", t.t_storage], ["overheads", t.t_overhead]].map(([k, v]) => [k, v * 1e3]),
    unit: "ms per token (each term alone; the token takes " + fmt(t.total * 1e3, 1) + " ms)",
  });
  $("command").textContent = "memwall " + a.command.map((w) => (/^[\w.,:@+-]+$/.test(w) ? w : `'${w}'`)).join(" ");
}

// ---------------------------------------------------------------- side by side

function renderCompare() {
  if (compared.length === 0) { $("compare").innerHTML = '<p class="note">Add designs with “Add to comparison”.</p>'; return; }
  const rows = compared.map((s) => {
    try {
      const a = mw.call(designRequest(s));
      const e = a.estimate.estimate, d = a.estimate.design, f = a.footprint;
      return { model: d.model, device: d.device, unit: d.backend, engine: d.engine, weights: d.weights,
        kv: `${d.kv_k}/${d.kv_v}`, context: d.context_tokens, fits: f.fits, total_gb: c2(f.components.total_bytes / GB),
        budget_gb: c2(f.budget_bytes / GB), decode_tok_s: c2(e.decode_tok_s),
        decode_80: e.decode_tok_s_interval ? e.decode_tok_s_interval.map(c2).join("–") : "unknown",
        prefill_tok_s: c2(e.prefill_tok_s), ttft_s: c2(e.ttft_s), bound_by: e.binding, j_per_token: c2(e.energy_j_per_token) };
    } catch (err) { return { model: s.model || s.imported, device: s.device, error: err.message }; }
  });
  compareRows = rows;
  const cols = [...new Set(rows.flatMap(Object.keys))];
  $("compare").innerHTML = `<table><thead><tr>${cols.map((c) => `<th>${c}</th>`).join("")}<th></th></tr></thead><tbody>` +
    rows.map((r, i) => `<tr>${cols.map((c) => `<td>${esc(r[c] ?? "")}</td>`).join("")}<td><button type="button" data-remove="${i}">remove</button></td></tr>`).join("") +
    "</tbody></table>";
}
let compareRows = [];
const c2 = (v) => (v === null ? null : Math.round(v * 100) / 100);
const esc = (v) => String(v).replace(/[&<>"]/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[ch]);

// ---------------------------------------------------------------- experiments

const tomlString = (s) => JSON.stringify(String(s));

/** An experiment's [base] for the current design (an imported model inline, its shapes). */
function baseToml(s, r) {
  const lines = ["[base]"];
  if (!s.imported) lines.push(`model = ${tomlString(s.model)}`);
  lines.push(`device = ${tomlString(s.device)}`);
  // An experiment's mix is one named mix: a file's own (its stored types, a config.json's
  // quantization) is written as the mix it states.
  const fromFile = s.imported && imported ? (imported.weights ?? imported.file_type) : null;
  const weights = r.weights && r.weights !== "stored" ? r.weights : (fromFile ?? "Q4_K_M");
  lines.push(`weights = { mix = ${tomlString(weights)} }`, `kv = { k = ${tomlString(s.kv_k)}, v = ${tomlString(s.kv_v)} }`);
  if (s.engine) lines.push(`engine = ${tomlString(s.engine)}`);
  if (r.assume_defaults) lines.push("assume_defaults = true");
  lines.push("", "[base.workload]", `prompt_tokens = ${r.prompt}`, `gen_tokens = ${r.gen_tokens}`,
    `context_tokens = ${r.context}`, `backend = ${tomlString(s.backend)}`, `margin_bytes = ${Math.round(r.margin_gb * GB)}`);
  if (r.threads !== undefined) lines.push(`threads = ${r.threads}`);
  if (s.imported && imported) {
    // The imported spec's keys under [base.model], its tables under base.model.
    lines.push("", "[base.model]", ...imported.model_toml.split("\n").map((l) => l.replace(/^(\[+)([^\]])/, "$1base.model.$2")));
  }
  return lines.join("\n");
}

const SWEEP_WEIGHTS = ["F16", "Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q3_K_M", "Q2_K", "IQ2_XS", "TQ1_0"];
const SWEEP_KV = ["f16", "q8_0", "q4_0"];

function sweepToml() {
  const s = formState(), r = designRequest(s);
  return [`name = "page-sweep"`, `description = "the page's design over weight and KV-cache formats"`, "seed = 0", "",
    baseToml(s, r), "", "[grid]", `"weights.mix" = ${JSON.stringify(SWEEP_WEIGHTS)}`,
    `"kv.k+kv.v" = ${JSON.stringify(SWEEP_KV)}`, ""].join("\n");
}

function runSweep() {
  $("sweep-error").hidden = true;
  try {
    const text = sweepToml();
    $("sweep-toml").textContent = text;
    sweepAnswer = mw.call({ op: "sweep", experiment: text });
    window.memwallSweep = { experiment: text, ...sweepAnswer };
  } catch (e) { showError(e, "sweep-error"); return; }
  const t = sweepAnswer.table.data;
  const n = t.point.length;
  $("sweep-chart").innerHTML = svgScatter({
    points: Array.from({ length: n }, (_, i) => ({
      x: t.total_bytes[i] / GB, y: t.decode_tok_s[i], fits: t.fits[i], front: t.pareto[i],
      label: `${t["weights.mix"][i]} · KV ${t["kv.k"][i]}`,
    })),
    budget: t.budget_bytes[0] / GB, xLabel: "memory, GB", yLabel: "decode tok/s",
  });
}

function simToml(minutes) {
  const s = formState(), r = designRequest(s);
  return [`name = "page-sustained"`, `description = "the page's design in back-to-back chat"`, "seed = 1", "",
    baseToml(s, r), "", "[base.sim]", `duration_s = ${Math.round(minutes * 60)}`, "",
    "[base.sim.session]", `turns = [{ prompt_tokens = ${r.prompt}, gen_tokens = ${Math.max(r.gen_tokens, 1)}, think_s = 4 }]`,
    "repeat = 0", "fresh_context = false", ""].join("\n");
}

function runSim() {
  $("sim-error").hidden = true;
  const minutes = Number($("sim-minutes").value);
  if (!(minutes >= 0.5 && minutes <= 30)) {
    showError(new MemwallError(`invalid \`minutes\` = ${$("sim-minutes").value}: from 0.5 to 30`), "sim-error");
    return;
  }
  try {
    const text = simToml(minutes);
    $("sim-toml").textContent = text;
    simAnswer = mw.call({ op: "simulate", experiment: text, max_trace_rows: 1500 });
    window.memwallSimulation = { experiment: text, ...simAnswer };
  } catch (e) { showError(e, "sim-error"); return; }
  const t = simAnswer.trace.data;
  const idx = t.time_s.map((_, i) => i).filter((i) => t.phase[i] === "decode" && t.latency_s[i] > 0);
  const events = t.time_s.map((x, i) => [x, t.events[i]]).filter(([, ev]) => ev);
  // One time axis for the three panels: the whole simulated span.
  const xRange = [0, Math.max(...t.time_s)];
  $("sim-chart").innerHTML =
    svgLines({ x: idx.map((i) => t.time_s[i]), xLabel: "time, s", yLabel: "decode tok/s",
      series: [{ name: "decode tok/s", y: idx.map((i) => t.tokens[i] / t.latency_s[i]) }], events, height: 220, xRange }) +
    svgLines({ x: t.time_s, xLabel: "time, s", yLabel: "°C",
      series: [{ name: "die °C", y: t.die_c }, { name: "skin °C", y: t.skin_c }], events, eventLabels: false, height: 200, xRange }) +
    svgLines({ x: t.time_s, xLabel: "time, s", yLabel: "clock / max", series: [{ name: "clock / max", y: t.freq_scale }], events, eventLabels: false, height: 160, xRange });
  const sm = simAnswer.summary;
  $("sim-summary").textContent = sm.columns.filter((c) => typeof sm.data[c][0] === "number" && /tok_s|_c$|_s$|kills|energy/.test(c))
    .map((c) => `${c} ${fmt(sm.data[c][0], 2)}`).join(" · ") + ` (${simAnswer.trace_rows} trace rows, ${t.time_s.length} drawn)`;
}

// ---------------------------------------------------------------- downloads

function toCsv(table) {
  const cell = (v) => (v === null ? "" : /[",\n]/.test(String(v)) ? `"${String(v).replace(/"/g, '""')}"` : String(v));
  const n = table.data[table.columns[0]]?.length ?? 0;
  const lines = [table.columns.join(",")];
  for (let i = 0; i < n; i++) lines.push(table.columns.map((c) => cell(table.data[c][i])).join(","));
  return lines.join("\n") + "\n";
}

function rowsTable(rows) {
  const columns = [...new Set(rows.flatMap(Object.keys))];
  return { columns, data: Object.fromEntries(columns.map((c) => [c, rows.map((r) => r[c] ?? null)])) };
}

function save(name, type, content) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([content], { type }));
  a.download = name;
  document.body.appendChild(a);
  a.click();
  setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
}

const DOWNLOADS = {
  "estimate-json": () => last && save("estimate.json", "application/json", JSON.stringify(last.estimate, null, 2)),
  "footprint-json": () => last && save("footprint.json", "application/json", JSON.stringify(last.footprint, null, 2)),
  "compare-csv": () => save("comparison.csv", "text/csv", toCsv(rowsTable(compareRows))),
  "compare-json": () => save("comparison.json", "application/json", JSON.stringify(compareRows, null, 2)),
  "sweep-parquet": () => {
    try { save("sweep.parquet", "application/vnd.apache.parquet", mw.call({ op: "sweep", experiment: sweepToml(), parquet: true })); } catch (e) { showError(e, "sweep-error"); }
  },
  "sweep-csv": () => { if (!sweepAnswer) runSweep(); sweepAnswer && save("sweep.csv", "text/csv", toCsv(sweepAnswer.table)); },
  "sweep-json": () => { if (!sweepAnswer) runSweep(); sweepAnswer && save("sweep.json", "application/json", JSON.stringify(sweepAnswer)); },
  "sim-csv": () => simAnswer && save("trace.csv", "text/csv", toCsv(simAnswer.trace)),
  "sim-json": () => simAnswer && save("simulation.json", "application/json", JSON.stringify(simAnswer)),
};

// ---------------------------------------------------------------- model files

async function importFile(file) {
  const name = file.name, lower = name.toLowerCase();
  const kind = lower.endsWith(".gguf") ? "gguf" : lower.endsWith(".json") ? "hf" : null;
  if (!kind) { showError(new MemwallError(`invalid file \`${name}\`: drop a .gguf or a config.json (.json)`)); return; }
  if (kind === "hf" && file.size > 64 * 2 ** 20) {
    showError(new MemwallError(`invalid file \`${name}\` = ${file.size} bytes: a config.json is far smaller (at most 64 MiB read)`));
    return;
  }
  // A GGUF's header sits at its start; its tensor data is never read.
  const head = kind === "gguf" ? file.slice(0, Math.min(file.size, 256 * 2 ** 20)) : file;
  try {
    const bytes = new Uint8Array(await head.arrayBuffer());
    imported = mw.call({ op: "import", kind, name, file_len: file.size }, bytes);
  } catch (e) { showError(e); return; }
  $("imported").textContent = `${imported.name}: ${imported.layers} layers, hidden ${imported.hidden}` +
    (imported.file_type ? `, file type ${imported.file_type}, ${imported.stored_tensors} tensors` : "") +
    (imported.notes.length ? `. Notes: ${imported.notes.join("; ")}` : "") +
    (imported.unmapped.length ? `. Not used by memwall's model: ${imported.unmapped.map(([k]) => k).join(", ")}` : "");
  $("model").value = "";
  if (imported.file_type) { ensureOption($("weights"), "stored"); $("weights").value = "stored"; }
  else if (imported.weights) $("weights").value = ""; // the config.json's quantization, as the CLI takes it
  update();
}

function ensureOption(select, value) {
  if (![...select.options].some((o) => o.value === value)) option(select, value);
}

// ---------------------------------------------------------------- start

function fillPickers() {
  option($("model"), "", "(an imported file)");
  for (const m of presets.models) option($("model"), m.name, `${m.name} (${fmt(m.params / 1e9, 1)}B)`);
  const names = new Set(presets.devices.map((d) => d.name));
  for (const chip of presets.database) {
    for (const n of chip.names.split(";").filter(Boolean)) names.add(n);
    for (const ram of chip.ram_gb.split(";").filter(Boolean)) names.add(`${chip.id}-${ram}gb`);
  }
  for (const n of [...names].sort()) option($("devices"), n);
  option($("engine"), "", "the unit's default");
  for (const e of presets.engines) option($("engine"), e.name);
  option($("weights"), "", "the file's, else Q4_K_M");
  for (const t of presets.file_types) option($("weights"), t);
  for (const k of presets.kv_formats) { option($("kv_k"), k); option($("kv_v"), k); }
}

function describeDevice() {
  const v = $("device").value.trim().toLowerCase();
  const chip = presets.database.find((c) => c.names.toLowerCase().split(";").includes(v) || v.startsWith(c.id.toLowerCase()));
  $("device-facts").textContent = chip
    ? `${chip.soc} (${chip.kind}, ${chip.year ?? "?"}): ${chip.mem_type}, ${fmt(chip.peak_gbps, 1)} GB/s peak, ${chip.cores} cores; RAM ${chip.ram_gb.replace(/;/g, "/")} GB` +
      (chip.predictable ? "" : `. Not predicted from its sheet: ${chip.why_not}`)
    : "";
}

async function start() {
  try {
    mw = await Memwall.load();
    presets = mw.call({ op: "presets" });
  } catch (e) {
    $("status").textContent = `The estimator did not load: ${e.message}. Serve this folder over HTTP (memwall ui).`;
    return;
  }
  fillPickers();
  setForm(hashToState());
  const s = hashToState();
  if (s.imported) $("imported").textContent = `${s.imported} was imported in an earlier visit: drop the file again.`;
  describeDevice();
  let timer;
  const later = () => { clearTimeout(timer); timer = setTimeout(() => { describeDevice(); update(); }, 120); };
  $("design").addEventListener("input", later);
  $("design").addEventListener("change", later);
  $("file").addEventListener("change", (ev) => ev.target.files[0] && importFile(ev.target.files[0]));
  const drop = $("drop");
  drop.addEventListener("dragover", (ev) => { ev.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (ev) => { ev.preventDefault(); drop.classList.remove("over"); ev.dataTransfer.files[0] && importFile(ev.dataTransfer.files[0]); });
  $("compare-add").addEventListener("click", () => { compared.push(formState()); renderCompare(); update(); });
  $("compare-clear").addEventListener("click", () => { compared = []; renderCompare(); update(); });
  $("compare").addEventListener("click", (ev) => {
    const i = ev.target.dataset?.remove;
    if (i !== undefined) { compared.splice(Number(i), 1); renderCompare(); update(); }
  });
  $("link").addEventListener("click", () => navigator.clipboard?.writeText(location.href));
  $("sweep-run").addEventListener("click", runSweep);
  $("sim-run").addEventListener("click", runSim);
  document.addEventListener("click", (ev) => { const k = ev.target.dataset?.download; if (k) DOWNLOADS[k](); });
  $("version").textContent = presets.version ? `(JSON schema ${presets.version})` : "";
  $("status").textContent = "ready";
  document.body.dataset.ready = "1";
  update();
  renderCompare();
}

start();
