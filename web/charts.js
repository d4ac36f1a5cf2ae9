// Small SVG charts for the page, drawn from the estimator's answers. The colours are the
// figures' (crates/memwall-lab/src/plot/draw.rs): a colour-blind-safe set without the red
// that marks events.

export const PALETTE = ["#0072b2", "#009e73", "#cc79a7", "#56b4e9", "#9467bd", "#8c564b", "#000000", "#17becf"];
const EVENT = "#d62728";
const W = 760;

const esc = (v) => String(v).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
const num = (v) => (Math.abs(v) >= 100 || Number.isInteger(v) ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2));

/** About five round ticks from lo to hi. */
function ticks(lo, hi) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / 5, mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.round(v / step) * step);
  return out;
}

function frame({ xLo, xHi, yLo, yHi, xLabel, yLabel, height }) {
  const m = { l: 64, r: 20, t: 14, b: 44 };
  const X = (v) => m.l + ((v - xLo) / (xHi - xLo || 1)) * (W - m.l - m.r);
  const Y = (v) => height - m.b - ((v - yLo) / (yHi - yLo || 1)) * (height - m.t - m.b);
  let s = `<rect x="${m.l}" y="${m.t}" width="${W - m.l - m.r}" height="${height - m.t - m.b}" fill="none" stroke="#999"/>`;
  for (const t of ticks(xLo, xHi)) s += `<text x="${X(t)}" y="${height - m.b + 16}" text-anchor="middle">${num(t)}</text><line x1="${X(t)}" x2="${X(t)}" y1="${height - m.b}" y2="${height - m.b + 4}" stroke="#999"/>`;
  for (const t of ticks(yLo, yHi)) s += `<text x="${m.l - 6}" y="${Y(t) + 4}" text-anchor="end">${num(t)}</text><line x1="${m.l}" x2="${W - m.r}" y1="${Y(t)}" y2="${Y(t)}" stroke="#eee"/>`;
  s += `<text x="${(W + m.l) / 2}" y="${height - 6}" text-anchor="middle">${esc(xLabel)}</text>`;
  s += `<text transform="translate(14 ${(height - m.b + m.t) / 2}) rotate(-90)" text-anchor="middle">${esc(yLabel)}</text>`;
  return { s, X, Y, m };
}

const svg = (height, body, label) => `<svg viewBox="0 0 ${W} ${height}" width="100%" role="img" aria-label="${esc(label)}" font-family="sans-serif" font-size="12">${body}</svg>`;

/** Lines over `x`, each series with an optional band (`lo`, `hi`); `events`: [[x, text]];
 * `xRange`: [lo, hi] of the x axis (default: the data's); `eventLabels`: name the events
 * (else their lines only, whose hover names them). */
export function svgLines({ x, series, xLabel, yLabel, events = [], height = 260, xRange = null, eventLabels = true }) {
  const finite = (a) => a.filter((v) => v !== null && Number.isFinite(v));
  const ys = series.flatMap((s) => finite([...s.y, ...(s.lo ?? []), ...(s.hi ?? [])]));
  if (x.length === 0 || ys.length === 0) return svg(40, `<text x="8" y="24">no rows to draw</text>`, yLabel);
  const [xLo, xHi] = xRange ?? [Math.min(...x), Math.max(...x)];
  const f = frame({ xLo, xHi, yLo: Math.min(0, ...ys), yHi: Math.max(...ys) * 1.05, xLabel, yLabel, height });
  let s = f.s;
  series.forEach((se, k) => {
    const c = PALETTE[k % PALETTE.length];
    if (se.lo && se.hi) {
      const ok = x.map((_, i) => i).filter((i) => se.lo[i] !== null && se.hi[i] !== null);
      if (ok.length > 1) {
        const pts = [...ok.map((i) => `${f.X(x[i])},${f.Y(se.hi[i])}`), ...ok.reverse().map((i) => `${f.X(x[i])},${f.Y(se.lo[i])}`)];
        s += `<polygon points="${pts.join(" ")}" fill="${c}" fill-opacity="0.15" stroke="none"><title>80 % range</title></polygon>`;
      }
    }
    // A line breaks where a value is missing (nothing drawn across a gap).
    let run = [];
    const flush = () => { if (run.length > 1) s += `<polyline points="${run.join(" ")}" fill="none" stroke="${c}" stroke-width="2"/>`; run = []; };
    x.forEach((xv, i) => { const v = se.y[i]; if (v === null || !Number.isFinite(v)) flush(); else run.push(`${f.X(xv)},${f.Y(v)}`); });
    flush();
    if (x.length < 40) x.forEach((xv, i) => { if (Number.isFinite(se.y[i])) s += `<circle cx="${f.X(xv)}" cy="${f.Y(se.y[i])}" r="3" fill="${c}"><title>${num(xv)}: ${num(se.y[i])}</title></circle>`; });
    s += `<text x="${f.m.l + 8}" y="${f.m.t + 16 + 16 * k}" fill="${c}">${esc(se.name)}</text>`;
  });
  let lastLabel = -Infinity;
  for (const [t, text] of events.slice(0, 200)) {
    s += `<line x1="${f.X(t)}" x2="${f.X(t)}" y1="${f.m.t}" y2="${height - f.m.b}" stroke="${EVENT}" stroke-dasharray="3 3"><title>${esc(text)}</title></line>`;
    if (eventLabels && f.X(t) - lastLabel > 90) { s += `<text x="${f.X(t) + 3}" y="${f.m.t + 12}" fill="${EVENT}" font-size="10">${esc(text.slice(0, 24))}</text>`; lastLabel = f.X(t); }
  }
  return svg(height, s, yLabel);
}

/** One horizontal bar of stacked `parts` ([name, value]) with vertical `marks` ([name, value]). */
export function svgStack({ parts, marks, unit }) {
  const height = 120, m = { l: 20, r: 20 };
  const total = parts.reduce((a, [, v]) => a + v, 0);
  const hi = Math.max(total, ...marks.map(([, v]) => v)) * 1.08 || 1;
  const X = (v) => m.l + (v / hi) * (W - m.l - m.r);
  let s = "", at = 0;
  parts.filter(([, v]) => v > 0).forEach(([name, v], k) => {
    s += `<rect x="${X(at)}" y="30" width="${Math.max(X(at + v) - X(at), 0.5)}" height="34" fill="${PALETTE[k % PALETTE.length]}"><title>${esc(name)}: ${num(v)} ${unit}</title></rect>`;
    s += `<rect x="${m.l + k * 130}" y="${height - 18}" width="10" height="10" fill="${PALETTE[k % PALETTE.length]}"/><text x="${m.l + k * 130 + 14}" y="${height - 9}">${esc(name)} ${num(v)}</text>`;
    at += v;
  });
  marks.forEach(([name, v], k) => {
    const dash = k === 0 ? "" : ' stroke-dasharray="4 3"';
    s += `<line x1="${X(v)}" x2="${X(v)}" y1="18" y2="72" stroke="#333" stroke-width="${k === 0 ? 2.5 : 1}"${dash}/><text x="${X(v)}" y="${12 + (k % 2) * 70}" text-anchor="middle">${esc(name)} ${num(v)} ${unit}</text>`;
  });
  return svg(height, s, "memory against the budget");
}

/** Horizontal bars ([name, value]). */
export function svgBars({ bars, unit }) {
  const height = 28 * bars.length + 30, l = 130;
  const hi = Math.max(...bars.map(([, v]) => v), 1e-12) * 1.1;
  let s = "";
  bars.forEach(([name, v], i) => {
    const w = (v / hi) * (W - l - 80);
    s += `<text x="${l - 8}" y="${24 + 28 * i}" text-anchor="end">${esc(name)}</text><rect x="${l}" y="${10 + 28 * i}" width="${Math.max(w, 0)}" height="18" fill="${PALETTE[0]}"/><text x="${l + w + 6}" y="${24 + 28 * i}">${num(v)}</text>`;
  });
  s += `<text x="${l}" y="${height - 4}" fill="#555">${esc(unit)}</text>`;
  return svg(height, s, unit);
}

/** Designs as memory against speed: filled when they fit, hollow when not, the front ringed
 * and named, the budget as a vertical line. */
export function svgScatter({ points, budget, xLabel, yLabel, height = 420 }) {
  if (points.length === 0) return svg(40, `<text x="8" y="24">no designs</text>`, yLabel);
  const xs = points.map((p) => p.x).concat(budget ?? []), ys = points.map((p) => p.y).filter(Number.isFinite);
  const f = frame({ xLo: 0, xHi: Math.max(...xs) * 1.05, yLo: 0, yHi: Math.max(...ys) * 1.1, xLabel, yLabel, height });
  let s = f.s;
  if (budget !== undefined) s += `<line x1="${f.X(budget)}" x2="${f.X(budget)}" y1="${f.m.t}" y2="${height - f.m.b}" stroke="#333" stroke-width="2"/><text x="${f.X(budget) + 4}" y="${f.m.t + 12}">budget ${num(budget)} GB</text>`;
  const named = [];
  for (const p of points) {
    const c = p.front ? PALETTE[0] : "#888";
    const [x, y] = [f.X(p.x), f.Y(p.y)];
    s += `<circle cx="${x}" cy="${y}" r="5" fill="${p.fits ? c : "white"}" stroke="${c}" stroke-width="1.5"><title>${esc(p.label)}: ${num(p.x)} GB, ${num(p.y)} tok/s${p.fits ? "" : ", does not fit"}${p.front ? ", on the front" : ""}</title></circle>`;
    if (!p.front) continue;
    s += `<circle cx="${x}" cy="${y}" r="9" fill="none" stroke="${c}"/>`;
    // A front member is named unless the name would cover another's (hover shows every one).
    const w = 6 * p.label.length;
    if (named.every(([nx, ny, nw]) => Math.abs(ny - y) > 12 || x + 11 > nx + nw || x + 11 + w < nx)) {
      s += `<text x="${x + 11}" y="${y + 4}" font-size="10">${esc(p.label)}</text>`;
      named.push([x + 11, y, w]);
    }
  }
  return svg(height, s, yLabel);
}
