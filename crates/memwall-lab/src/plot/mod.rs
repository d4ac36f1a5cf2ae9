//! Figures for papers, drawn with plotters (PDF, SVG or PNG by the file's extension, any
//! size; the PDF is vector with its font embedded, by the private `pdf` module):
//! a simulated run against time (generation rate, die and skin temperature, the compute
//! unit's power and its clock, one colour per design point, with kills, policy actions and
//! background events marked), and a sweep's memory against decode rate, coloured by
//! estimated quality, with its Pareto front. Legends sit beside the panels, never over the
//! data; text is set in DejaVu Sans, embedded, so a PNG looks the same on every machine.
//! Written atomically like every output.

// The buckets' drawing is native only ([`draw`]); the WebAssembly build keeps the series.
#![cfg_attr(target_arch = "wasm32", allow(dead_code))]

use std::path::Path;
use std::str::FromStr;

use memwall_sim::des::{ActionKind, Phase, SimEvent, TraceRow};
use memwall_spec::SpecError;

use crate::error::{LabError, Result};

#[cfg(not(target_arch = "wasm32"))]
mod draw;
#[cfg(not(target_arch = "wasm32"))]
mod pdf;
#[cfg(not(target_arch = "wasm32"))]
pub use draw::{quality_color, write_scatter, write_table_scatter, write_timeline};

/// The WebAssembly build draws no figures (the web page draws its charts from the rows): a
/// figure asked for is refused, naming the path.
#[cfg(target_arch = "wasm32")]
pub fn write_timeline(path: &Path, _title: &str, _series: &[Series], _size: Size) -> Result<()> {
    Err(SpecError::invalid("plot", path.display(), "figures are drawn by the native build (the command line, Python)")
        .into())
}

/// One design point's curves, bucketed in time.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend text.
    pub label: String,
    /// Bucket width, seconds.
    bucket_s: f64,
    /// Per bucket: what its rows add up to.
    buckets: Vec<Bucket>,
    /// Events to mark on the time axis: (time, kind, text), at most [`Series::MAX_MARKS`].
    marks: Vec<(f64, Mark, String)>,
}

/// What a mark on the time axis shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// The app was ended (low-memory killer, thermal shutdown).
    Kill,
    /// A policy acted (truncated the context, switched weights).
    Policy,
    /// A background app or bus master came or went.
    Background,
    /// The OS's thermal status changed.
    Status,
}

/// One time bucket of a series.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    /// Tokens generated and the generation seconds they took (decode steps and pauses).
    tokens: f64,
    gen_s: f64,
    /// Die and skin temperature of the bucket's last row, °C.
    die_c: f64,
    skin_c: f64,
    /// `Σ unit_power_w × latency`, `Σ dram_power_w × latency`, `Σ freq_scale × latency` and
    /// `Σ latency` over its rows.
    unit_j: f64,
    dram_j: f64,
    clock_s: f64,
    busy_s: f64,
    seen: bool,
}

impl Default for Bucket {
    fn default() -> Self {
        Bucket {
            tokens: 0.0,
            gen_s: 0.0,
            die_c: f64::NAN,
            skin_c: f64::NAN,
            unit_j: 0.0,
            dram_j: 0.0,
            clock_s: 0.0,
            busy_s: 0.0,
            seen: false,
        }
    }
}

/// What one bucket draws: its middle time, tok/s (NaN when not generating), die and skin
/// °C, the compute unit's mean power (W) and the mean clock (fraction of the maximum).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Point {
    t: f64,
    rate: f64,
    die_c: f64,
    skin_c: f64,
    unit_w: f64,
    dram_w: f64,
    clock: f64,
}

impl Series {
    /// An empty series with buckets of `bucket_s` seconds.
    pub fn new(label: impl Into<String>, bucket_s: f64) -> Self {
        Series { label: label.into(), bucket_s: bucket_s.max(1e-3), buckets: Vec::new(), marks: Vec::new() }
    }

    /// Marks kept per series (a busy background schedule would otherwise cover the figure).
    pub const MAX_MARKS: usize = 200;
    /// Policy actions and background events named beside their marks, at most (more would
    /// cover the panel; the marks stay), as `event_labels` picks them.
    pub const MAX_NAMED: usize = 20;

    /// Add a trace row: decode steps and policy pauses count toward the generation rate
    /// (tokens / their time within the bucket); every row updates the temperatures.
    pub fn push(&mut self, r: &TraceRow) {
        let i = (r.time_s / self.bucket_s) as usize;
        if self.buckets.len() <= i {
            self.buckets.resize(i + 1, Bucket::default());
        }
        let b = &mut self.buckets[i];
        if matches!(r.phase, Phase::Decode | Phase::Pause) {
            b.tokens += r.tokens as f64;
            b.gen_s += r.latency_s;
        }
        b.die_c = r.die_c;
        b.skin_c = r.skin_c;
        b.unit_j += r.unit_power_w * r.latency_s;
        b.dram_j += r.dram_power_w * r.latency_s;
        b.clock_s += r.freq_scale * r.latency_s;
        b.busy_s += r.latency_s;
        b.seen = true;
        for e in r.events.iter() {
            let mark = match e {
                SimEvent::Action(a) => match a.what {
                    ActionKind::Kill { .. } | ActionKind::ThermalShutdown { .. } | ActionKind::ThermalStop { .. } => {
                        Some((Mark::Kill, "kill".to_string()))
                    }
                    ActionKind::TruncateContext { .. }
                    | ActionKind::SwitchWeights { .. }
                    | ActionKind::SwitchFailed { .. } => Some((Mark::Policy, a.what.to_string())),
                },
                SimEvent::Alloc { .. }
                | SimEvent::Free { .. }
                | SimEvent::BusMasterStart { .. }
                | SimEvent::BusMasterEnd { .. } => Some((Mark::Background, e.to_string())),
                SimEvent::ThermalStatus { .. } => Some((Mark::Status, e.to_string())),
                _ => None,
            };
            if let Some((kind, text)) = mark
                && (self.marks.len() < Self::MAX_MARKS || kind == Mark::Kill)
            {
                self.marks.push((r.time_s, kind, text));
            }
        }
    }

    /// The lines of `f`: runs of consecutive buckets that have rows and a finite value. A
    /// bucket without rows (a gap, the run's end) or without the value (no token in it)
    /// breaks the line, so nothing is drawn across it (no ramp to 0 W over a pause).
    fn segments(&self, f: Field) -> Vec<Vec<(f64, f64)>> {
        let mut out: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
        let mut last_t = f64::NEG_INFINITY;
        for p in self.points() {
            let v = f(&p);
            let gap = p.t - last_t > 1.5 * self.bucket_s;
            last_t = p.t;
            if (gap || !v.is_finite()) && !out.last().is_some_and(Vec::is_empty) {
                out.push(Vec::new());
            }
            if v.is_finite() {
                out.last_mut().expect("never empty").push((p.t, v));
            }
        }
        out.retain(|s| !s.is_empty());
        out
    }

    /// The buckets with rows, as points to draw.
    fn points(&self) -> impl Iterator<Item = Point> + '_ {
        let mean = |x: f64, d: f64| if d > 0.0 { x / d } else { f64::NAN };
        self.buckets.iter().enumerate().filter(|(_, b)| b.seen).map(move |(i, b)| Point {
            t: (i as f64 + 0.5) * self.bucket_s,
            rate: mean(b.tokens, b.gen_s),
            die_c: b.die_c,
            skin_c: b.skin_c,
            unit_w: mean(b.unit_j, b.busy_s),
            dram_w: mean(b.dram_j, b.busy_s),
            clock: mean(b.clock_s, b.busy_s),
        })
    }
}

/// What a panel draws of a bucket.
type Field = fn(&Point) -> f64;

/// A figure's file format, from its path's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Scalable vector graphics (`.svg`).
    Svg,
    /// Portable network graphics (`.png`).
    Png,
    /// Portable document format (`.pdf`): vector, the text in the embedded font.
    Pdf,
}

impl Format {
    /// The format of `path` (`.pdf`, `.svg` or `.png`, any case), or an error naming `flag`.
    pub fn of(flag: &str, path: &Path) -> Result<Format> {
        match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("svg") => Ok(Format::Svg),
            Some("png") => Ok(Format::Png),
            Some("pdf") => Ok(Format::Pdf),
            other => Err(LabError::Spec(SpecError::invalid(
                flag,
                path.display(),
                format!(
                    "unknown figure format {}: name the file .pdf, .svg or .png",
                    other.map_or("(no extension)".to_string(), |e| format!(".{e}"))
                ),
            ))),
        }
    }
}

/// A figure's size in pixels (`1200x900`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
}

impl Size {
    /// The default time figure: 1100 × 1000.
    pub const TIMELINE: Size = Size { width: 1100, height: 1000 };
    /// The default scatter: 1000 × 700.
    pub const SCATTER: Size = Size { width: 1000, height: 700 };
}

impl FromStr for Size {
    type Err = SpecError;
    /// `WIDTHxHEIGHT`, each 200 to 8000 pixels; an error leaves the field for the caller to
    /// name ([`SpecError::within`]), as the other parsers of flags do.
    fn from_str(s: &str) -> std::result::Result<Self, SpecError> {
        let bad = |why: &str| SpecError::invalid("", s, why);
        let (w, h) =
            s.trim().split_once(['x', 'X']).ok_or_else(|| bad("expected WIDTHxHEIGHT in pixels, e.g. 1200x900"))?;
        let px = |v: &str| v.trim().parse::<u32>().ok().filter(|p| (200..=8000).contains(p));
        match (px(w), px(h)) {
            (Some(width), Some(height)) => Ok(Size { width, height }),
            _ => Err(bad("each side must be a whole number of pixels from 200 to 8000")),
        }
    }
}

/// One design of a sweep in the scatter figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Design {
    /// Its point in the sweep (the `point` column), which labels it on the front.
    pub point: u64,
    /// Footprint, bytes.
    pub total_bytes: u64,
    /// Decode tokens/s.
    pub decode_tok_s: f64,
    /// Estimated perplexity increase (None: unknown).
    pub ppl_delta: Option<f64>,
    /// Fits its device with the margin.
    pub fits: bool,
    /// On the Pareto front.
    pub pareto: bool,
}

/// The designs of a batch of sweep results (columns `point`, `total_bytes`, `decode_tok_s`,
/// `ppl_delta_weights`, `ppl_delta_kv`, `fits`, `budget_bytes`) whose point is a multiple of
/// `stride` (a sample of a large sweep), with their points and budgets; `pareto` is left
/// false (the front is known only at the end: [`crate::pareto::Fronts::points`]).
pub fn designs_of(batch: &arrow::record_batch::RecordBatch, stride: u64) -> Result<Vec<(u64, Design, i64)>> {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{Float64Type, UInt64Type};
    let col = |name: &str| crate::columns::by_name(batch, name);
    let point = col("point")?.as_primitive::<UInt64Type>();
    let total = col("total_bytes")?.as_primitive::<UInt64Type>();
    let tok = col("decode_tok_s")?.as_primitive::<Float64Type>();
    let w = col("ppl_delta_weights")?.as_primitive::<Float64Type>();
    let kv = col("ppl_delta_kv")?.as_primitive::<Float64Type>();
    let fits = col("fits")?.as_boolean();
    let budget = col("budget_bytes")?.as_primitive::<arrow::datatypes::Int64Type>();
    Ok((0..batch.num_rows())
        .filter(|&i| point.value(i).is_multiple_of(stride.max(1)))
        .map(|i| {
            let ppl = (!w.is_null(i) && !kv.is_null(i)).then(|| w.value(i) + kv.value(i));
            let d = Design {
                point: point.value(i),
                total_bytes: total.value(i),
                decode_tok_s: tok.value(i),
                ppl_delta: ppl,
                fits: fits.value(i),
                pareto: false,
            };
            (point.value(i), d, budget.value(i))
        })
        .collect())
}

/// The budget a scatter marks, GB: the one every design has (`budget_bytes`), None when they
/// differ (designs on several devices or margins have no one line).
pub fn shared_budget_gb(designs: &[(u64, Design, i64)]) -> Option<f64> {
    let first = designs.first()?.2;
    designs.iter().all(|d| d.2 == first).then_some(first as f64 / 1e9)
}
