//! Time-series plots of simulated runs as standalone SVG: generation rate and die/skin
//! temperature against time, one line per design point. No plotting dependency: the
//! figure is a few hundred lines of SVG text, written atomically like every output.

use std::fmt::Write as _;
use std::path::Path;

use memwall_sim::des::{Phase, TraceRow};

use crate::error::Result;

/// One design point's curves, bucketed in time.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend text.
    pub label: String,
    /// Bucket width, seconds.
    bucket_s: f64,
    /// Per bucket: what its rows add up to.
    buckets: Vec<Bucket>,
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
    /// `Σ unit_power_w × latency`, `Σ freq_scale × latency` and `Σ latency` over its rows.
    unit_j: f64,
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
    clock: f64,
}

impl Series {
    /// An empty series with buckets of `bucket_s` seconds.
    pub fn new(label: impl Into<String>, bucket_s: f64) -> Self {
        Series { label: label.into(), bucket_s: bucket_s.max(1e-3), buckets: Vec::new() }
    }

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
        b.clock_s += r.freq_scale * r.latency_s;
        b.busy_s += r.latency_s;
        b.seen = true;
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
            clock: mean(b.clock_s, b.busy_s),
        })
    }
}

const PALETTE: [&str; 8] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"];

/// A "nice" tick step for a range: 1, 2 or 5 × 10^k giving about `n` ticks.
pub fn nice_step(range: f64, n: usize) -> f64 {
    if !(range.is_finite() && range > 0.0) {
        return 1.0;
    }
    let raw = range / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let r = raw / mag;
    mag * if r <= 1.0 {
        1.0
    } else if r <= 2.0 {
        2.0
    } else if r <= 5.0 {
        5.0
    } else {
        10.0
    }
}

struct Panel {
    top: f64,
    height: f64,
    y_max: f64,
    y_min: f64,
}

const W: f64 = 900.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 190.0;

fn x_of(t: f64, t_max: f64) -> f64 {
    LEFT + (W - LEFT - RIGHT) * t / t_max
}

fn y_of(p: &Panel, v: f64) -> f64 {
    p.top + p.height * (1.0 - (v - p.y_min) / (p.y_max - p.y_min))
}

fn axes(svg: &mut String, p: &Panel, t_max: f64, label: &str, x_label: bool) {
    let (x0, x1) = (LEFT, W - RIGHT);
    let _ = writeln!(
        svg,
        r##"<rect x="{x0}" y="{}" width="{}" height="{}" fill="none" stroke="#444"/>"##,
        p.top,
        x1 - x0,
        p.height
    );
    let ys = nice_step(p.y_max - p.y_min, 5);
    let mut v = (p.y_min / ys).ceil() * ys;
    while v <= p.y_max + 1e-9 {
        let y = y_of(p, v);
        let _ = writeln!(svg, r##"<line x1="{x0}" y1="{y:.1}" x2="{x1}" y2="{y:.1}" stroke="#ddd"/>"##);
        let _ =
            writeln!(svg, r##"<text x="{}" y="{:.1}" text-anchor="end" font-size="11">{v}</text>"##, x0 - 6.0, y + 4.0);
        v += ys;
    }
    let xs = nice_step(t_max, 8);
    let mut t = 0.0;
    while t <= t_max + 1e-9 {
        let x = x_of(t, t_max);
        let y = p.top + p.height;
        let _ = writeln!(svg, r##"<line x1="{x:.1}" y1="{y}" x2="{x:.1}" y2="{}" stroke="#444"/>"##, y + 4.0);
        if x_label {
            let _ =
                writeln!(svg, r##"<text x="{x:.1}" y="{}" text-anchor="middle" font-size="11">{t}</text>"##, y + 16.0);
        }
        t += xs;
    }
    let _ = writeln!(
        svg,
        r##"<text x="16" y="{:.1}" font-size="12" transform="rotate(-90 16 {:.1})" text-anchor="middle">{label}</text>"##,
        p.top + p.height / 2.0,
        p.top + p.height / 2.0
    );
}

/// Polyline segments of `(x, y)` points, broken where a value is missing.
fn polylines(svg: &mut String, pts: impl Iterator<Item = (f64, f64)>, color: &str, dash: &str) {
    let mut seg: Vec<(f64, f64)> = Vec::new();
    let flush = |seg: &mut Vec<(f64, f64)>, svg: &mut String| {
        if seg.len() > 1 {
            let d: Vec<String> = seg.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
            let _ = writeln!(
                svg,
                r##"<polyline points="{}" fill="none" stroke="{color}" stroke-width="1.5"{dash}/>"##,
                d.join(" ")
            );
        }
        seg.clear();
    };
    for (x, y) in pts {
        if y.is_finite() {
            seg.push((x, y));
        } else {
            flush(&mut seg, svg);
        }
    }
    flush(&mut seg, svg);
}

/// Render the figure against simulated time, four panels: generation tok/s; die (solid) and
/// skin (dashed) temperature; the compute unit's power; its clock as a fraction of the
/// maximum (the governor's throttling).
pub fn render_svg(title: &str, series: &[Series]) -> String {
    let t_max = series.iter().filter_map(|s| s.points().last().map(|p| p.t + s.bucket_s / 2.0)).fold(1.0, f64::max);
    let max_of = |f: fn(&Point) -> f64| {
        series.iter().flat_map(|s| s.points().map(|p| f(&p))).filter(|v| v.is_finite()).fold(0.0, f64::max)
    };
    let temps: Vec<f64> =
        series.iter().flat_map(|s| s.points().flat_map(|p| [p.die_c, p.skin_c])).filter(|v| v.is_finite()).collect();
    let t_lo = temps.iter().copied().fold(f64::INFINITY, f64::min);
    let t_hi = temps.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (t_lo, t_hi) = if t_lo.is_finite() { ((t_lo - 2.0).floor(), (t_hi + 2.0).ceil()) } else { (20.0, 40.0) };
    let panel = |k: f64, y_min: f64, y_max: f64| Panel { top: 40.0 + 200.0 * k, height: 165.0, y_min, y_max };
    let panels = [
        (panel(0.0, 0.0, (max_of(|p| p.rate) * 1.1).max(1.0)), "generation tok/s"),
        (panel(1.0, t_lo, t_hi), "°C (die —, skin - -)"),
        (panel(2.0, 0.0, (max_of(|p| p.unit_w) * 1.1).max(0.1)), "compute unit W"),
        (panel(3.0, 0.0, 1.05), "clock / max"),
    ];
    let height = 40.0 + 200.0 * 4.0 + 10.0;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" viewBox="0 0 {W} {height}" font-family="sans-serif">"##
    );
    let _ = writeln!(svg, r##"<rect width="100%" height="100%" fill="white"/>"##);
    let _ = writeln!(svg, r##"<text x="{LEFT}" y="24" font-size="15">{}</text>"##, escape(title));
    for (k, (p, label)) in panels.iter().enumerate() {
        axes(&mut svg, p, t_max, label, k + 1 == panels.len());
    }
    let _ = writeln!(
        svg,
        r##"<text x="{:.1}" y="{}" text-anchor="middle" font-size="12">simulated time, s</text>"##,
        (LEFT + W - RIGHT) / 2.0,
        height - 4.0
    );
    let [rate, temp, power, clock] = &panels;
    for (i, s) in series.iter().enumerate() {
        let c = PALETTE[i % PALETTE.len()];
        let draw = |svg: &mut String, p: &Panel, f: fn(&Point) -> f64, dash: &str| {
            polylines(svg, s.points().map(|q| (x_of(q.t, t_max), y_of(p, f(&q)))), c, dash);
        };
        draw(&mut svg, &rate.0, |q| q.rate, "");
        draw(&mut svg, &temp.0, |q| q.die_c, "");
        draw(&mut svg, &temp.0, |q| q.skin_c, r##" stroke-dasharray="5,4""##);
        draw(&mut svg, &power.0, |q| q.unit_w, "");
        draw(&mut svg, &clock.0, |q| q.clock, "");
        let y = 50.0 + 18.0 * i as f64;
        let x = W - RIGHT + 14.0;
        let _ =
            writeln!(svg, r##"<line x1="{x}" y1="{y}" x2="{}" y2="{y}" stroke="{c}" stroke-width="3"/>"##, x + 18.0);
        let _ = writeln!(svg, r##"<text x="{}" y="{}" font-size="11">{}</text>"##, x + 24.0, y + 4.0, escape(&s.label));
    }
    svg.push_str("</svg>\n");
    svg
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// Write the figure to `path` (temporary file beside it, then renamed).
pub fn write_svg(path: &Path, title: &str, series: &[Series]) -> Result<()> {
    crate::atomic::write_text(path, &render_svg(title, series))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: f64, phase: Phase, tokens: u64, latency: f64, die: f64) -> TraceRow {
        TraceRow {
            time_s: t,
            token: 0,
            turn: 0,
            phase,
            latency_s: latency,
            context: 0,
            tokens,
            dram_bytes: 0.0,
            cache_bytes: 0.0,
            flash_bytes: 0.0,
            freq_scale: 1.0,
            bandwidth_scale: 1.0,
            level: 0,
            die_c: die,
            skin_c: 30.0,
            power_w: 1.0,
            unit_power_w: 0.0,
            energy_j: 1.0,
            resident_bytes: 0,
            free_bytes: 0,
            events: Default::default(),
        }
    }

    #[test]
    fn buckets_average_generation_rate_including_pauses() {
        let mut s = Series::new("a", 1.0);
        // Bucket 0: four 0.1 s tokens and a 0.2 s pause → 4 / 0.6 tok/s.
        for i in 0..4 {
            s.push(&TraceRow { unit_power_w: 2.0, ..row(0.1 * (i + 1) as f64, Phase::Decode, 1, 0.1, 50.0) });
        }
        s.push(&TraceRow { unit_power_w: 0.5, freq_scale: 0.5, ..row(0.6, Phase::Pause, 0, 0.2, 51.0) });
        // Bucket 2: only a think step: no rate, but temperatures.
        s.push(&row(2.5, Phase::Think, 0, 1.0, 45.0));
        let p: Vec<_> = s.points().collect();
        assert_eq!(p.len(), 2);
        assert!((p[0].rate - 4.0 / 0.6).abs() < 1e-12);
        assert_eq!(p[0].die_c, 51.0);
        assert!(p[1].rate.is_nan() && p[1].die_c == 45.0 && p[1].t == 2.5);
        // Unit power and clock are time means over the bucket's rows: 4 × 0.1 s at 2 W and
        // clock 1, 0.2 s at 0.5 W and clock 0.5 → 0.9 J / 0.6 s, 0.5 / 0.6.
        assert!((p[0].unit_w - 0.9 / 0.6).abs() < 1e-12, "{}", p[0].unit_w);
        assert!((p[0].clock - 0.5 / 0.6).abs() < 1e-12, "{}", p[0].clock);
    }

    #[test]
    fn nice_steps_and_a_well_formed_figure() {
        assert_eq!(nice_step(600.0, 8), 100.0);
        assert_eq!(nice_step(37.0, 5), 10.0);
        assert_eq!(nice_step(0.9, 5), 0.2);
        let mut a = Series::new("none <policy>", 1.0);
        let mut b = Series::new("cap", 1.0);
        for i in 0..100 {
            let t = i as f64 * 0.5;
            a.push(&row(t, Phase::Decode, 1, 0.1, 40.0 + t));
            b.push(&row(t, Phase::Decode, 1, 0.25, 40.0 + t / 2.0));
        }
        let svg = render_svg("test & title", &[a, b]);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("none &lt;policy&gt;") && svg.contains("test &amp; title"));
        // Two series × (rate, die, skin, unit power, clock) polylines, in four panels.
        assert_eq!(svg.matches("<polyline").count(), 10);
        assert!(svg.contains("compute unit W") && svg.contains("clock / max"));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/fig.svg");
        write_svg(&path, "t", &[Series::new("x", 1.0)]).unwrap();
        assert!(path.exists());
        assert_eq!(std::fs::read_dir(dir.path().join("sub")).unwrap().count(), 1);
    }
}
