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
    /// Per bucket: (tokens, generation seconds, last die °C, last skin °C, seen).
    buckets: Vec<(f64, f64, f64, f64, bool)>,
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
            self.buckets.resize(i + 1, (0.0, 0.0, f64::NAN, f64::NAN, false));
        }
        let b = &mut self.buckets[i];
        if matches!(r.phase, Phase::Decode | Phase::Pause) {
            b.0 += r.tokens as f64;
            b.1 += r.latency_s;
        }
        b.2 = r.die_c;
        b.3 = r.skin_c;
        b.4 = true;
    }

    /// (time at the bucket's middle, tok/s or NaN when not generating, die °C, skin °C).
    fn points(&self) -> impl Iterator<Item = (f64, f64, f64, f64)> + '_ {
        self.buckets.iter().enumerate().filter(|(_, b)| b.4).map(|(i, b)| {
            let rate = if b.1 > 0.0 { b.0 / b.1 } else { f64::NAN };
            ((i as f64 + 0.5) * self.bucket_s, rate, b.2, b.3)
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

/// Render the figure: generation tok/s on top, die (solid) and skin (dashed) temperature
/// below, against simulated time.
pub fn render_svg(title: &str, series: &[Series]) -> String {
    let t_max = series.iter().filter_map(|s| s.points().last().map(|p| p.0 + s.bucket_s / 2.0)).fold(1.0, f64::max);
    let rate_max = series.iter().flat_map(|s| s.points().map(|p| p.1)).filter(|v| v.is_finite()).fold(0.0, f64::max);
    let temps: Vec<f64> =
        series.iter().flat_map(|s| s.points().flat_map(|p| [p.2, p.3])).filter(|v| v.is_finite()).collect();
    let t_lo = temps.iter().copied().fold(f64::INFINITY, f64::min);
    let t_hi = temps.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (t_lo, t_hi) = if t_lo.is_finite() { ((t_lo - 2.0).floor(), (t_hi + 2.0).ceil()) } else { (20.0, 40.0) };
    let top = Panel { top: 40.0, height: 230.0, y_min: 0.0, y_max: (rate_max * 1.1).max(1.0) };
    let bottom = Panel { top: 310.0, height: 230.0, y_min: t_lo, y_max: t_hi };
    let height = 590.0;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" viewBox="0 0 {W} {height}" font-family="sans-serif">"##
    );
    let _ = writeln!(svg, r##"<rect width="100%" height="100%" fill="white"/>"##);
    let _ = writeln!(svg, r##"<text x="{LEFT}" y="24" font-size="15">{}</text>"##, escape(title));
    axes(&mut svg, &top, t_max, "generation tok/s", false);
    axes(&mut svg, &bottom, t_max, "temperature °C (die —, skin - -)", true);
    let _ = writeln!(
        svg,
        r##"<text x="{:.1}" y="{}" text-anchor="middle" font-size="12">simulated time, s</text>"##,
        (LEFT + W - RIGHT) / 2.0,
        height - 12.0
    );
    for (i, s) in series.iter().enumerate() {
        let c = PALETTE[i % PALETTE.len()];
        polylines(&mut svg, s.points().map(|p| (x_of(p.0, t_max), y_of(&top, p.1))), c, "");
        polylines(&mut svg, s.points().map(|p| (x_of(p.0, t_max), y_of(&bottom, p.2))), c, "");
        polylines(
            &mut svg,
            s.points().map(|p| (x_of(p.0, t_max), y_of(&bottom, p.3))),
            c,
            r##" stroke-dasharray="5,4""##,
        );
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
            s.push(&row(0.1 * (i + 1) as f64, Phase::Decode, 1, 0.1, 50.0));
        }
        s.push(&row(0.6, Phase::Pause, 0, 0.2, 51.0));
        // Bucket 2: only a think step: no rate, but temperatures.
        s.push(&row(2.5, Phase::Think, 0, 1.0, 45.0));
        let p: Vec<_> = s.points().collect();
        assert_eq!(p.len(), 2);
        assert!((p[0].1 - 4.0 / 0.6).abs() < 1e-12);
        assert_eq!(p[0].2, 51.0);
        assert!(p[1].1.is_nan() && p[1].2 == 45.0 && p[1].0 == 2.5);
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
        // Two series × (rate, die, skin) polylines.
        assert_eq!(svg.matches("<polyline").count(), 6);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/fig.svg");
        write_svg(&path, "t", &[Series::new("x", 1.0)]).unwrap();
        assert!(path.exists());
        assert_eq!(std::fs::read_dir(dir.path().join("sub")).unwrap().count(), 1);
    }
}
