//! Drawing the figures with plotters: the time figure of a simulation and the scatter of a
//! sweep, as SVG, PNG or PDF. Not in the WebAssembly build (plotters draws text there through
//! the browser's canvas); the web page draws its own charts from the same rows.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::*;
use crate::error::{LabError, Result};

/// Colour of the OS thermal status ticks (amber, apart from the series' and the kill's).
const STATUS_COLOR: RGBColor = RGBColor(230, 159, 0);

/// Colour of a kill: red, which no series takes.
const KILL_COLOR: RGBColor = RGBColor(214, 39, 40);

/// Colours of the design points, in order: Okabe and Ito's colour-blind-safe set and Tableau
/// hues, without the kill's red or the status ticks' amber, so an event never reads as a series.
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(0, 0, 0),
    RGBColor(23, 190, 207),
];

const FONT: &str = "sans-serif";

/// The figures' typeface, DejaVu Sans, shipped with the crate.
static TTF: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");

/// Register the embedded font with plotters once.
fn font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // The font ships with the crate and parses; a failure would only lose the text.
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, TTF);
    });
}

/// One drawing of a figure for each backend it is written with.
struct Draw<'a> {
    svg: &'a dyn Fn(&DrawingArea<SVGBackend, Shift>) -> Result<()>,
    png: &'a dyn Fn(&DrawingArea<BitMapBackend, Shift>) -> Result<()>,
    pdf: &'a dyn Fn(&DrawingArea<pdf::PdfBackend, Shift>) -> Result<()>,
}

fn draw_err(e: impl std::fmt::Display) -> LabError {
    LabError::Write { path: "<figure>".into(), message: format!("drawing the figure: {e}") }
}

/// Render with `draw` onto a `size` canvas and write it to `path` in its format, atomically.
fn write_figure(path: &Path, size: Size, draw: Draw) -> Result<()> {
    font();
    match Format::of("--plot", path)? {
        Format::Pdf => {
            let mut bytes = Vec::new();
            {
                let page = pdf::PdfBackend::new(&mut bytes, (size.width, size.height), TTF).map_err(draw_err)?;
                let root = page.into_drawing_area();
                (draw.pdf)(&root)?;
                root.present().map_err(draw_err)?;
            }
            crate::files::atomic::write_bytes(path, &bytes)
        }
        Format::Svg => {
            let mut text = String::new();
            {
                let root = SVGBackend::with_string(&mut text, (size.width, size.height)).into_drawing_area();
                (draw.svg)(&root)?;
                root.present().map_err(draw_err)?;
            }
            crate::files::atomic::write_text(path, &text)
        }
        Format::Png => {
            let mut rgb = vec![0u8; size.width as usize * size.height as usize * 3];
            {
                let root = BitMapBackend::with_buffer(&mut rgb, (size.width, size.height)).into_drawing_area();
                (draw.png)(&root)?;
                root.present().map_err(draw_err)?;
            }
            let mut bytes = Vec::new();
            {
                let mut enc = png::Encoder::new(&mut bytes, size.width, size.height);
                enc.set_color(png::ColorType::Rgb);
                enc.set_depth(png::BitDepth::Eight);
                let mut w = enc.write_header().map_err(draw_err)?;
                w.write_image_data(&rgb).map_err(draw_err)?;
            }
            crate::files::atomic::write_bytes(path, &bytes)
        }
    }
}

/// A tick label: a whole number without decimals (`10`, not `10.0`), else at most three
/// decimal places without trailing zeros (`0.25`).
fn tick(v: &f64) -> String {
    if (v - v.round()).abs() < 1e-9 * v.abs().max(1.0) {
        format!("{:.0}", v.round())
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// The time figure's panels: its axis label, what it draws.
const PANELS: [(&str, Field); 4] = [
    ("generation tok/s", |p| p.rate),
    ("temperature °C", |p| p.die_c),
    ("power W", |p| p.unit_w),
    ("clock / max", |p| p.clock),
];

fn timeline<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, title: &str, series: &[Series]) -> Result<()> {
    root.fill(&WHITE).map_err(draw_err)?;
    let (w, _) = root.dim_in_pixel();
    let root = root.titled(title, (FONT, 20)).map_err(draw_err)?;
    let legend_w = (w as f64 * 0.26).clamp(180.0, 360.0) as u32;
    let (plots, legend) = root.split_horizontally(w.saturating_sub(legend_w));
    let t_max = series.iter().filter_map(|s| s.points().last().map(|p| p.t + s.bucket_s / 2.0)).fold(1.0, f64::max);
    let all = |f: fn(&Point) -> f64| -> Vec<f64> {
        series.iter().flat_map(|s| s.points().map(move |p| f(&p))).filter(|v| v.is_finite()).collect()
    };
    let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    let temps: Vec<f64> = all(|p| p.die_c).into_iter().chain(all(|p| p.skin_c)).collect();
    let t_lo = temps.iter().copied().fold(f64::INFINITY, f64::min);
    let t_hi = temps.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (t_lo, t_hi) = if t_lo.is_finite() { ((t_lo - 2.0).floor(), (t_hi + 2.0).ceil()) } else { (20.0, 40.0) };
    let ranges = [
        (0.0, (max(&all(|p| p.rate)) * 1.1).max(1.0)),
        (t_lo, t_hi),
        (0.0, (max(&all(|p| p.unit_w)).max(max(&all(|p| p.dram_w))) * 1.1).max(0.1)),
        (0.0, 1.05),
    ];
    let n = series.len();
    for (k, area) in plots.split_evenly((4, 1)).iter().enumerate() {
        let last = k == 3;
        let (y0, y1) = ranges[k];
        let mut chart = ChartBuilder::on(area)
            .margin(6)
            .margin_right(24)
            .x_label_area_size(if last { 40 } else { 14 })
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..t_max, y0..y1)
            .map_err(draw_err)?;
        let mut mesh = chart.configure_mesh();
        mesh.y_desc(PANELS[k].0)
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .light_line_style(WHITE.mix(0.0))
            .y_label_formatter(&tick);
        if last {
            mesh.x_desc("simulated time, s").x_label_formatter(&tick);
        } else {
            mesh.x_label_formatter(&|_| String::new());
        }
        mesh.draw().map_err(draw_err)?;
        // Marks under the lines: kills red with a triangle at the top, policy actions dark
        // grey, background events and status changes as ticks at the top; in the first
        // panel the policy actions and background events are named ([`event_labels`]).
        if k == 0 {
            let style = (FONT, 11).into_font().color(&RGBColor(90, 90, 90)).transform(FontTransform::Rotate90);
            for (t, label) in event_labels(series, t_max) {
                chart.draw_series(std::iter::once(Text::new(label, (t, y1), style.clone()))).map_err(draw_err)?;
            }
        }
        for s in series {
            for (t, kind, _) in &s.marks {
                if *kind == Mark::Kill {
                    chart
                        .draw_series(std::iter::once(TriangleMarker::new((*t, y1), 6, KILL_COLOR.filled())))
                        .map_err(draw_err)?;
                }
                let (style, top) = match kind {
                    Mark::Kill => (KILL_COLOR.stroke_width(3), y0),
                    Mark::Policy => (RGBColor(80, 80, 80).stroke_width(1), y0),
                    Mark::Background => (RGBColor(150, 150, 150).stroke_width(1), y1 - 0.06 * (y1 - y0)),
                    Mark::Status => (STATUS_COLOR.stroke_width(1), y1 - 0.12 * (y1 - y0)),
                };
                chart
                    .draw_series(std::iter::once(PathElement::new(vec![(*t, top), (*t, y1)], style)))
                    .map_err(draw_err)?;
            }
        }
        // Earlier series are drawn first and wider, so a later one running on top of it
        // leaves its colour showing at the edges instead of hiding it.
        for (i, s) in series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let width = 2 + (n - 1 - i).min(3) as u32;
            let segments = |f: Field| s.segments(f);
            for seg in segments(PANELS[k].1) {
                chart.draw_series(LineSeries::new(seg, color.stroke_width(width))).map_err(draw_err)?;
            }
            // The dashed line of a panel: the skin beside the die, the DRAM beside the unit.
            let dashed: Option<Field> = match k {
                1 => Some(|p| p.skin_c),
                2 => Some(|p| p.dram_w),
                _ => None,
            };
            if let Some(f) = dashed {
                for seg in segments(f) {
                    chart.draw_series(DashedLineSeries::new(seg, 7, 5, color.stroke_width(width))).map_err(draw_err)?;
                }
            }
        }
    }
    // The legend beside the panels: one colour per point, then the line styles and marks.
    legend.fill(&WHITE).map_err(draw_err)?;
    let text = |area: &DrawingArea<DB, Shift>, s: &str, y: i32| {
        area.draw(&Text::new(s.to_string(), (34, y - 7), (FONT, 13).into_font().color(&BLACK))).map_err(draw_err)
    };
    let line = |area: &DrawingArea<DB, Shift>, y: i32, style: ShapeStyle, dashed: bool| -> Result<()> {
        if dashed {
            for x in [4, 16] {
                area.draw(&PathElement::new(vec![(x, y), (x + 8, y)], style)).map_err(draw_err)?;
            }
            Ok(())
        } else {
            area.draw(&PathElement::new(vec![(4, y), (28, y)], style)).map_err(draw_err)
        }
    };
    let mut y = 40;
    for (i, s) in series.iter().enumerate() {
        line(&legend, y, PALETTE[i % PALETTE.len()].stroke_width(4), false)?;
        text(&legend, &s.label, y)?;
        y += 20;
    }
    y += 12;
    let grey = RGBColor(60, 60, 60);
    for (label, style, dashed) in [
        ("die (temperature panel)", grey.stroke_width(2), false),
        ("skin (temperature panel)", grey.stroke_width(2), true),
        ("compute unit (power panel)", grey.stroke_width(2), false),
        ("DRAM (power panel)", grey.stroke_width(2), true),
        ("kill (with a triangle at the top)", KILL_COLOR.stroke_width(3), false),
        ("policy action", RGBColor(80, 80, 80).stroke_width(1), false),
        ("background event (tick)", RGBColor(150, 150, 150).stroke_width(1), false),
        ("OS thermal status change (tick)", STATUS_COLOR.stroke_width(1), false),
    ] {
        line(&legend, y, style, dashed)?;
        text(&legend, label, y)?;
        y += 20;
    }
    Ok(())
}

/// The names drawn beside the policy actions and background events of `series` (over a time
/// axis to `t_max`): each event once however many series share it, at most
/// [`Series::MAX_NAMED`], none closer than 2.5 % of the axis to the one before (it would
/// print over it), each cut to 32 characters.
fn event_labels(series: &[Series], t_max: f64) -> Vec<(f64, String)> {
    let mut all: Vec<(f64, &str)> = series
        .iter()
        .flat_map(|s| s.marks.iter())
        .filter(|m| matches!(m.1, Mark::Policy | Mark::Background))
        .map(|m| (m.0, m.2.as_str()))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(b.1)));
    all.dedup();
    let mut out: Vec<(f64, String)> = Vec::new();
    for (t, text) in all {
        if out.last().is_none_or(|l| t - l.0 >= 0.025 * t_max) && out.len() < Series::MAX_NAMED {
            out.push((t, text.chars().take(32).collect()));
        }
    }
    out
}

/// Write the time figure of simulated runs to `path` (`.svg` or `.png`), `size` pixels:
/// four panels against simulated time — generation tok/s; die (solid) and skin (dashed)
/// temperature; the compute unit's (solid) and the DRAM's (dashed) power; the unit's clock as
/// a fraction of the maximum (the governor's throttling) — one colour per series, with kills,
/// policy actions, background events and the OS's thermal status changes marked, and the
/// legend beside the panels.
pub fn write_timeline(path: &Path, title: &str, series: &[Series], size: Size) -> Result<()> {
    write_figure(
        path,
        size,
        Draw {
            svg: &|r| timeline(r, title, series),
            png: &|r| timeline(r, title, series),
            pdf: &|r| timeline(r, title, series),
        },
    )
}

/// Front members named by their point in the scatter, at most.
const MAX_NAMED_POINTS: usize = 40;

/// Colour of a perplexity increase on a log scale from 0.01 (dark blue) to 10 (yellow), the
/// viridis map's ends; grey when unknown.
pub fn quality_color(ppl_delta: Option<f64>) -> RGBColor {
    let Some(d) = ppl_delta else { return RGBColor(170, 170, 170) };
    let x = ((d.max(1e-2).log10() + 2.0) / 3.0).clamp(0.0, 1.0);
    // Viridis at five stops, interpolated.
    const STOPS: [(f64, f64, f64); 5] =
        [(68.0, 1.0, 84.0), (59.0, 82.0, 139.0), (33.0, 145.0, 140.0), (94.0, 201.0, 98.0), (253.0, 231.0, 37.0)];
    let f = x * 4.0;
    let i = (f.floor() as usize).min(3);
    let u = f - i as f64;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let mix = |p: f64, q: f64| (p + (q - p) * u).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

fn scatter<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    designs: &[Design],
    budget_gb: Option<f64>,
) -> Result<()> {
    root.fill(&WHITE).map_err(draw_err)?;
    let (w, _) = root.dim_in_pixel();
    let root = root.titled(title, (FONT, 20)).map_err(draw_err)?;
    let legend_w = (w as f64 * 0.24).clamp(180.0, 320.0) as u32;
    let (plot, legend) = root.split_horizontally(w.saturating_sub(legend_w));
    let gb = |d: &Design| d.total_bytes as f64 / 1e9;
    let x_max = designs.iter().map(gb).fold(budget_gb.unwrap_or(1.0), f64::max) * 1.05;
    let y_max = designs.iter().map(|d| d.decode_tok_s).filter(|v| v.is_finite()).fold(1.0, f64::max) * 1.1;
    let mut chart = ChartBuilder::on(&plot)
        .margin(10)
        .margin_right(24)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max)
        .map_err(draw_err)?;
    chart
        .configure_mesh()
        .x_desc("memory (footprint), GB")
        .y_desc("decode tok/s")
        .x_label_formatter(&tick)
        .y_label_formatter(&tick)
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 14))
        .draw()
        .map_err(draw_err)?;
    if let Some(b) = budget_gb {
        chart
            .draw_series(std::iter::once(PathElement::new(vec![(b, 0.0), (b, y_max)], BLACK.mix(0.5).stroke_width(1))))
            .map_err(draw_err)?;
        chart
            .draw_series(std::iter::once(Text::new("budget", (b, y_max * 0.97), (FONT, 12).into_font().color(&BLACK))))
            .map_err(draw_err)?;
    }
    // Designs that do not fit as hollow circles, those that fit filled, by quality.
    chart
        .draw_series(designs.iter().filter(|d| d.decode_tok_s.is_finite()).map(|d| {
            let c = quality_color(d.ppl_delta);
            let style = if d.fits { c.filled() } else { c.stroke_width(1) };
            Circle::new((gb(d), d.decode_tok_s), 4, style)
        }))
        .map_err(draw_err)?;
    let mut front: Vec<(f64, f64, u64)> =
        designs.iter().filter(|d| d.pareto).map(|d| (gb(d), d.decode_tok_s, d.point)).collect();
    front.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    // Ringed, not joined: a front over several objectives (or one per group) is not a curve
    // in memory and tok/s, and a line through it would draw one. Each member is named by its
    // point while there are few enough to read.
    if !front.is_empty() {
        chart
            .draw_series(front.iter().map(|&(x, y, _)| Circle::new((x, y), 7, BLACK.stroke_width(2))))
            .map_err(draw_err)?;
    }
    let named = front.len() <= MAX_NAMED_POINTS;
    if named {
        chart
            .draw_series(front.iter().map(|&(x, y, p)| {
                // Above and right of its ring, clear of the point.
                let style = (FONT, 11).into_font().color(&BLACK).pos(Pos::new(HPos::Left, VPos::Bottom));
                EmptyElement::at((x, y)) + Text::new(format!("#{p}"), (7, -6), style)
            }))
            .map_err(draw_err)?;
    }
    legend.fill(&WHITE).map_err(draw_err)?;
    let text = |s: &str, y: i32| {
        legend.draw(&Text::new(s.to_string(), (30, y - 7), (FONT, 13).into_font().color(&BLACK))).map_err(draw_err)
    };
    let mut y = 40;
    text("estimated dPPL (colour)", y)?;
    y += 22;
    for d in [0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0] {
        legend.draw(&Circle::new((14, y), 5, quality_color(Some(d)).filled())).map_err(draw_err)?;
        text(&format!("{d}"), y)?;
        y += 18;
    }
    legend.draw(&Circle::new((14, y), 5, quality_color(None).filled())).map_err(draw_err)?;
    text("unknown", y)?;
    y += 28;
    legend.draw(&Circle::new((14, y), 5, RGBColor(100, 100, 100).filled())).map_err(draw_err)?;
    text("fits", y)?;
    y += 18;
    legend.draw(&Circle::new((14, y), 5, RGBColor(100, 100, 100).stroke_width(1))).map_err(draw_err)?;
    text("does not fit", y)?;
    y += 18;
    legend.draw(&Circle::new((14, y), 7, BLACK.stroke_width(2))).map_err(draw_err)?;
    text("Pareto front", y)?;
    if named && !front.is_empty() {
        y += 18;
        text("#N: its point (column point)", y)?;
    }
    Ok(())
}

/// [`write_scatter`] of a table of sweep results (`memwall.sweep`'s, or a Parquet file's
/// batches): every design, the front from its `pareto` column (none marked without one), the
/// budget when all share it ([`shared_budget_gb`]).
pub fn write_table_scatter(
    path: &Path,
    title: &str,
    batches: &[arrow::record_batch::RecordBatch],
    size: Size,
) -> Result<()> {
    use arrow::array::{Array, AsArray};
    let mut designs = Vec::new();
    for b in batches {
        let pareto = b.column_by_name("pareto").map(|c| c.as_boolean().clone());
        for (i, (p, d, budget)) in designs_of(b, 1)?.into_iter().enumerate() {
            let on = pareto.as_ref().is_some_and(|c| !c.is_null(i) && c.value(i));
            designs.push((p, Design { pareto: on, ..d }, budget));
        }
    }
    let budget = shared_budget_gb(&designs);
    // As `memwall run` draws them: the others in point order, then the front in point order.
    designs.sort_by_key(|d| (d.1.pareto, d.0));
    let all: Vec<Design> = designs.into_iter().map(|d| d.1).collect();
    write_scatter(path, title, &all, budget, size)
}

/// Write a sweep's designs as memory against decode tok/s to `path` (`.svg` or `.png`),
/// `size` pixels: filled when the design fits, hollow when not, coloured by estimated dPPL
/// (grey: unknown), the Pareto front's members ringed, the budget (when all designs
/// share one) as a vertical line.
pub fn write_scatter(path: &Path, title: &str, designs: &[Design], budget_gb: Option<f64>, size: Size) -> Result<()> {
    write_figure(
        path,
        size,
        Draw {
            svg: &|r| scatter(r, title, designs, budget_gb),
            png: &|r| scatter(r, title, designs, budget_gb),
            pdf: &|r| scatter(r, title, designs, budget_gb),
        },
    )
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
            dram_power_w: 0.0,
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
        // clock 1, 0.2 s at 0.5 W and clock 0.5 → 0.9 J / 0.6 s, 0.5 / 0.6; DRAM power alike
        // (0 W in these rows).
        assert!((p[0].unit_w - 0.9 / 0.6).abs() < 1e-12, "{}", p[0].unit_w);
        assert_eq!(p[0].dram_w, 0.0);
        assert!((p[0].clock - 0.5 / 0.6).abs() < 1e-12, "{}", p[0].clock);
    }

    #[test]
    fn ticks_are_whole_where_they_can_be() {
        assert_eq!(
            [0.0, 10.0, 2.5, 0.1 + 0.2, 1e6, -3.0].map(|v| tick(&v)),
            ["0", "10", "2.5", "0.3", "1000000", "-3"]
        );
    }

    #[test]
    fn lines_break_at_gaps_and_events_keep_colours_no_series_has() {
        let mut s = Series::new("a", 1.0);
        // Tokens in seconds 0-4 and 10-12 (nothing between: the session paused off-trace),
        // then a think step in second 12 (temperatures, no rate).
        for t in [0.5, 1.5, 2.5, 3.5, 10.5, 11.5] {
            s.push(&TraceRow { unit_power_w: 2.0, ..row(t, Phase::Decode, 1, 0.1, 40.0) });
        }
        s.push(&row(12.5, Phase::Think, 0, 1.0, 39.0));
        let rate = s.segments(|p| p.rate);
        assert_eq!(rate.iter().map(Vec::len).collect::<Vec<_>>(), vec![4, 2], "{rate:?}");
        let die = s.segments(|p| p.die_c);
        assert_eq!(die.iter().map(Vec::len).collect::<Vec<_>>(), vec![4, 3], "{die:?}");
        assert!(die.iter().flatten().all(|&(t, _)| !(4.0..10.0).contains(&t)));
        // Named events: once however many series share them, never on top of each other.
        let mut b = s.clone();
        for x in [&mut s, &mut b] {
            x.marks = vec![
                (1.0, Mark::Background, "camera".into()),
                (1.1, Mark::Background, "bus master 25%".into()),
                (5.0, Mark::Policy, "truncate_context: keep 2048 tokens and more words than fit".into()),
                (6.0, Mark::Kill, "kill".into()),
            ];
        }
        let labels = event_labels(&[s.clone(), b], 12.0);
        assert_eq!(labels, vec![(1.0, "camera".into()), (5.0, "truncate_context: keep 2048 toke".into())]);
        // Kills and status changes never share a colour with a series.
        assert!(!PALETTE.contains(&KILL_COLOR) && !PALETTE.contains(&STATUS_COLOR));
        let distinct: std::collections::HashSet<_> = PALETTE.iter().map(|c| (c.0, c.1, c.2)).collect();
        assert_eq!(distinct.len(), PALETTE.len());
    }

    /// The distinct colours and the size of a PNG file.
    fn png_facts(path: &Path) -> (u32, u32, usize) {
        let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).unwrap();
        let px = info.color_type.samples();
        let colours: std::collections::HashSet<&[u8]> = buf[..info.buffer_size()].chunks(px).collect();
        (info.width, info.height, colours.len())
    }

    fn events(list: Vec<SimEvent>) -> memwall_sim::des::Events {
        let mut e = memwall_sim::des::Events::default();
        for x in list {
            e.push(x);
        }
        e
    }

    #[test]
    fn the_time_figure_as_png_and_svg() {
        let mut a = Series::new("none <policy>", 1.0);
        let mut b = Series::new("cap", 1.0);
        for i in 0..100 {
            let t = i as f64 * 0.5;
            a.push(&TraceRow { unit_power_w: 3.0, ..row(t, Phase::Decode, 1, 0.1, 40.0 + t) });
            b.push(&TraceRow { unit_power_w: 2.0, freq_scale: 0.7, ..row(t, Phase::Decode, 1, 0.25, 40.0 + t / 2.0) });
        }
        use memwall_sim::des::Action;
        let kill = SimEvent::Action(Action { t_s: 40.0, what: ActionKind::Kill { lmk_free_bytes: 1 } });
        use memwall_spec::ThermalStatus::{Moderate, Severe};
        a.push(&TraceRow {
            events: events(vec![
                kill,
                SimEvent::Alloc { bytes: 1 << 30 },
                SimEvent::ThermalStatus { from: Moderate, to: Severe },
            ]),
            dram_power_w: 1.5,
            ..row(40.0, Phase::Decode, 1, 0.1, 80.0)
        });
        assert_eq!(a.marks.len(), 3);
        assert_eq!(a.marks[2].1, Mark::Status);
        let dir = tempfile::tempdir().unwrap();
        let png = dir.path().join("sub/fig.png");
        write_timeline(&png, "test & title", &[a.clone(), b.clone()], Size { width: 900, height: 800 }).unwrap();
        let (w, h, colours) = png_facts(&png);
        assert_eq!((w, h), (900, 800));
        // White, black text and axes, two series colours, the dashed-skin grey, the kill's
        // red, the background tick's grey, the status tick's amber, and anti-aliased text:
        // far more than a blank page.
        assert!(colours >= 9, "{colours} colours");
        // The status tick adds amber to the panels (the legend's sample has it either way).
        let amber_pixels = |path: &Path| {
            let mut reader = png::Decoder::new(std::fs::File::open(path).unwrap()).read_info().unwrap();
            let mut buf = vec![0; reader.output_buffer_size()];
            let info = reader.next_frame(&mut buf).unwrap();
            let amber = [STATUS_COLOR.0, STATUS_COLOR.1, STATUS_COLOR.2];
            buf[..info.buffer_size()].chunks(3).filter(|px| *px == amber).count()
        };
        let plain = dir.path().join("plain.png");
        let mut quiet = a.clone();
        quiet.marks.retain(|m| m.1 != Mark::Status);
        write_timeline(&plain, "test & title", &[quiet, b.clone()], Size { width: 900, height: 800 }).unwrap();
        assert!(amber_pixels(&png) > amber_pixels(&plain), "the status tick is drawn in the panels");
        let svg = dir.path().join("fig.svg");
        write_timeline(&svg, "test & title", &[a, b], Size::TIMELINE).unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(text.starts_with("<svg") && text.trim_end().ends_with("</svg>"));
        for needle in [
            "none &lt;policy&gt;",
            "test &amp; title",
            "skin (temperature panel)",
            "DRAM (power panel)",
            "OS thermal status change",
            "kill",
            "clock / max",
        ] {
            assert!(text.contains(needle), "{needle}");
        }
        // Nothing else left beside the figures.
        assert_eq!(std::fs::read_dir(dir.path().join("sub")).unwrap().count(), 1);
        // Unknown formats and sizes are refused, naming the flag.
        let e = write_timeline(&dir.path().join("fig.jpg"), "t", &[], Size::TIMELINE).unwrap_err().to_string();
        assert!(e.contains("--plot") && e.contains(".jpg"), "{e}");
        let e = "12x900".parse::<Size>().unwrap_err().within("--plot-size").to_string();
        assert!(e.contains("`--plot-size` = 12x900") && e.contains("200 to 8000"), "{e}");
        assert_eq!("1200X900".parse::<Size>().unwrap(), Size { width: 1200, height: 900 });
    }

    /// A PDF's page size and the strings its text operators show (decoded through its
    /// ToUnicode map), checking its structure on the way: the header, every cross-reference
    /// offset at its object, the trailer's `startxref` at the table.
    fn pdf_facts(path: &Path) -> ((u32, u32), Vec<String>) {
        use std::io::Read;
        let pdf = std::fs::read(path).unwrap();
        assert!(pdf.starts_with(b"%PDF-1.4\n") && pdf.ends_with(b"%%EOF\n"));
        // Byte offsets: the file holds binary streams, so it is searched as bytes.
        let find = |needle: &str, from: usize| -> usize {
            from + pdf[from..].windows(needle.len()).position(|w| w == needle.as_bytes()).unwrap()
        };
        let line_at = |at: usize| -> &str {
            let end = at + pdf[at..].iter().position(|&b| b == b'\n').unwrap();
            std::str::from_utf8(&pdf[at..end]).unwrap()
        };
        let tail = pdf.len() - 40;
        let xref: usize = line_at(find("startxref\n", tail) + "startxref\n".len()).parse().unwrap();
        assert!(pdf[xref..].starts_with(b"xref\n0 10\n"), "the table is where startxref says");
        let mut row = xref + "xref\n0 10\n".len() + 20;
        for n in 1..=9 {
            let off: usize = line_at(row)[..10].parse().unwrap();
            assert!(pdf[off..].starts_with(format!("{n} 0 obj\n").as_bytes()), "object {n}");
            row += 20;
        }
        let body = |n: usize| -> &[u8] {
            let s = find("stream\n", find(&format!("\n{n} 0 obj\n"), 0)) + "stream\n".len();
            &pdf[s..find("\nendstream", s)]
        };
        let mut content = String::new();
        flate2::read::ZlibDecoder::new(body(4)).read_to_string(&mut content).unwrap();
        let cmap = String::from_utf8(body(9).to_vec()).unwrap();
        let glyph: std::collections::HashMap<&str, char> = cmap
            .lines()
            .filter_map(|l| l.strip_prefix('<')?.split_once("> <"))
            .filter(|(g, _)| g.len() == 4)
            .map(|(g, u)| (g, char::from_u32(u32::from_str_radix(&u[..4], 16).unwrap()).unwrap()))
            .collect();
        let shown = content
            .lines()
            .filter_map(|l| l.split_once("> Tj").map(|(a, _)| &a[a.rfind('<').unwrap() + 1..]))
            .map(|hex| (0..hex.len()).step_by(4).map(|i| glyph[&hex[i..i + 4]]).collect())
            .collect();
        let media = line_at(find("/MediaBox [0 0 ", 0) + "/MediaBox [0 0 ".len());
        let mut wh = media.split(']').next().unwrap().split(' ').map(|v| v.parse::<u32>().unwrap());
        ((wh.next().unwrap(), wh.next().unwrap()), shown)
    }

    #[test]
    fn figures_as_pdf_are_vector_pages_with_their_text() {
        let mut a = Series::new("none <policy>", 1.0);
        for i in 0..60 {
            let t = i as f64 * 0.5;
            a.push(&TraceRow { unit_power_w: 3.0, ..row(t, Phase::Decode, 1, 0.1, 40.0 + t) });
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fig.PDF");
        write_timeline(&path, "test & title", &[a], Size { width: 900, height: 800 }).unwrap();
        let (size, shown) = pdf_facts(&path);
        assert_eq!(size, (900, 800));
        for needle in [
            "test & title",
            "none <policy>",
            "temperature °C",
            "simulated time, s",
            "kill (with a triangle at the top)",
            "10",
            "0.5",
        ] {
            assert!(shown.iter().any(|s| s == needle), "{needle} not in {shown:?}");
        }
        let designs: Vec<Design> = (0..30)
            .map(|i| Design {
                point: i,
                total_bytes: 1_000_000_000 + i * 200_000_000,
                decode_tok_s: 30.0 - i as f64,
                ppl_delta: Some(0.05 * i as f64),
                fits: i < 20,
                pareto: i % 4 == 0,
            })
            .collect();
        let path = dir.path().join("sweep.pdf");
        write_scatter(&path, "sweep", &designs, Some(5.0), Size::SCATTER).unwrap();
        let (size, shown) = pdf_facts(&path);
        assert_eq!(size, (Size::SCATTER.width, Size::SCATTER.height));
        for needle in ["memory (footprint), GB", "decode tok/s", "Pareto front", "does not fit", "budget", "#0", "#28"]
        {
            assert!(shown.iter().any(|s| s == needle), "{needle} not in {shown:?}");
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "nothing beside the figures");
    }

    #[test]
    fn the_scatter_colours_quality_and_draws_the_front() {
        // Viridis ends and a grey for the unknown.
        assert_eq!(quality_color(Some(0.001)), RGBColor(68, 1, 84));
        assert_eq!(quality_color(Some(100.0)), RGBColor(253, 231, 37));
        assert_eq!(quality_color(None), RGBColor(170, 170, 170));
        let designs: Vec<Design> = (0..60)
            .map(|i| Design {
                point: i,
                total_bytes: 1_000_000_000 + i * 150_000_000,
                decode_tok_s: 40.0 - i as f64 * 0.5,
                ppl_delta: if i % 7 == 0 { None } else { Some(10f64.powf(-2.0 + 3.0 * (59 - i) as f64 / 59.0)) },
                fits: i < 45,
                pareto: i % 5 == 0,
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let png = dir.path().join("sweep.png");
        write_scatter(&png, "sweep", &designs, Some(7.5), Size::SCATTER).unwrap();
        let (w, h, colours) = png_facts(&png);
        assert_eq!((w, h), (Size::SCATTER.width, Size::SCATTER.height));
        assert!(colours >= 20, "{colours} colours");
        let svg = dir.path().join("sweep.svg");
        write_scatter(&svg, "sweep", &designs, Some(7.5), Size::SCATTER).unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(text.contains("Pareto front") && text.contains("does not fit") && text.contains("budget"));
    }
}
