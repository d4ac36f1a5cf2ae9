//! Simulating experiments: every grid point through the discrete-event simulator, the
//! per-token traces of all points streamed into one Parquet file (a `point` column tells
//! them apart), summaries returned in grid order.

use std::cell::Cell;
use std::path::Path;

use arrow::record_batch::RecordBatch;

use memwall_sim::SimError;
use memwall_sim::des::{NullSink, Simulator, Summary, TraceRow, TraceSink};

use crate::error::{LabError, Result};
use crate::experiment::{Experiment, Point};
use crate::files::metadata::{Resolved, metadata};
use crate::plot::{Series, Size, write_timeline};
use crate::trace::{BatchTraceSink, ParquetTraceSink, PointSink};

/// Passes rows on to a sink and keeps a plot series of them; ends the run when told to stop.
struct Tee<'a> {
    inner: &'a mut dyn TraceSink,
    series: Option<&'a mut Series>,
    /// Set when the caller asked to stop: the next row ends the run.
    stop: &'a Cell<bool>,
}

impl TraceSink for Tee<'_> {
    fn push(&mut self, row: &TraceRow) -> std::result::Result<(), SimError> {
        if self.stop.get() {
            return Err(SimError::Sink("interrupted".into()));
        }
        if let Some(s) = &mut self.series {
            s.push(row);
        }
        self.inner.push(row)
    }
}

/// One simulated design point.
#[derive(Debug, Clone)]
pub struct Simulated {
    /// The point.
    pub point: Point,
    /// What the run reports.
    pub summary: Summary,
}

/// Parse a duration ([`memwall_spec::units::Seconds`]): a number of seconds, or a number
/// with a unit `ms`, `s`, `m`, `h` (`90`, `10m`, `1.5h`); errors name `duration`.
pub fn parse_duration(text: &str) -> Result<f64> {
    Ok(text.parse::<memwall_spec::units::Seconds>().map_err(|e| e.within("duration"))?.0)
}

/// Parse a size in bytes ([`memwall_spec::units::ByteSize`]): a number with an optional
/// decimal unit (`500MB`, `2GB`, `4096`); errors name `field`.
pub fn parse_bytes(field: &str, text: &str) -> Result<u64> {
    Ok(text.parse::<memwall_spec::units::ByteSize>().map_err(|e| e.within(field))?.0)
}

/// Default cap on the size of a trace ([`Outputs::trace_limit_bytes`]): 2 GB.
pub const TRACE_LIMIT_BYTES: u64 = 2_000_000_000;

/// Bytes a trace row takes in memory without its event text: 18 eight-byte fields, three
/// four-byte ones (point, turn, level), the phase byte and the four-byte text offset,
/// `144 + 12 + 1 + 4`; the Parquet file is smaller.
pub const TRACE_ROW_BYTES: f64 = 161.0;

/// Where the outputs of a simulated experiment go.
#[derive(Debug, Clone, Copy)]
pub struct Outputs<'a> {
    /// Per-token trace (Parquet).
    pub trace: Option<&'a Path>,
    /// Figure of generation rate, temperatures, the compute unit's power and clock over time, one
    /// line per point, with kills, policy actions and background events marked (SVG or PNG by
    /// the extension).
    pub plot: Option<&'a Path>,
    /// The figure's size.
    pub plot_size: Size,
    /// Refuse a trace whose estimated size exceeds this many bytes ([`trace_rows_estimate`]).
    pub trace_limit_bytes: u64,
}

impl Default for Outputs<'_> {
    fn default() -> Self {
        Outputs { trace: None, plot: None, plot_size: Size::TIMELINE, trace_limit_bytes: TRACE_LIMIT_BYTES }
    }
}

/// Trace rows a point will write, at most about: per pass over the session's turns, a row
/// per decoded token, per prefill chunk and per think pause; passes as many as the run's
/// duration holds at the analytic estimate's nominal speed (throttling only slows steps
/// down), bounded by `session.repeat`.
pub fn trace_rows_estimate(s: &memwall_spec::Scenario) -> Result<f64> {
    let e = memwall_sim::estimate(s)?;
    let turns: Vec<(u64, u64, f64)> = if s.sim.session.turns.is_empty() {
        vec![(s.workload.prompt_tokens, s.workload.gen_tokens, 0.0)]
    } else {
        s.sim.session.turns.iter().map(|t| (t.prompt_tokens, t.gen_tokens, t.think_s)).collect()
    };
    let ubatch = s.workload.ubatch.max(1);
    let rows_per_pass: f64 = turns.iter().map(|&(p, g, _)| (g + p.div_ceil(ubatch) + 1) as f64).sum();
    let pass_s: f64 = turns
        .iter()
        .map(|&(p, g, think)| {
            g as f64 * e.decode_s_per_token + e.prefill_s * p as f64 / s.workload.prompt_tokens.max(1) as f64 + think
        })
        .sum();
    let repeat = s.sim.session.repeat;
    let passes = match s.sim.duration_s {
        Some(d) if pass_s > 0.0 => {
            let timed = (d / pass_s).ceil().max(1.0);
            if repeat == 0 { timed } else { timed.min(repeat as f64) }
        }
        _ => repeat.max(1) as f64,
    };
    Ok(rows_per_pass * passes)
}

/// The metadata of a simulated experiment's files: [`metadata`], the `--duration` override
/// (`duration_s`) and the specs of its `scenarios` ([`Resolved`]).
pub fn simulation_metadata<'a>(
    exp: &Experiment,
    duration_s: Option<f64>,
    scenarios: impl IntoIterator<Item = &'a memwall_spec::Scenario>,
) -> Vec<(String, String)> {
    let mut meta = metadata(Some(exp));
    if let Some(d) = duration_s {
        meta.push(("duration_s".into(), d.to_string()));
    }
    let mut r = Resolved::default();
    for s in scenarios {
        r.add(s);
    }
    meta.push(r.entry());
    meta
}

/// Build and check the points `range` of `exp` before any work or file: `duration_s`
/// overrides each point's `sim.duration_s` (its turns repeat until then), and with `trace` a
/// run whose trace would exceed `trace_limit_bytes` ([`trace_rows_estimate`]) is refused.
fn prepare(
    exp: &Experiment,
    range: std::ops::Range<usize>,
    duration_s: Option<f64>,
    trace: bool,
    trace_limit_bytes: u64,
) -> Result<Vec<(Point, Simulator)>> {
    let mut trace_rows = 0.0;
    let mut points = Vec::with_capacity(range.len());
    for i in range {
        let mut p = exp.point(i)?;
        if let Some(d) = duration_s {
            p.scenario.sim.duration_s = Some(d);
            p.scenario.sim.session.repeat = 0;
        }
        let wrap = |e: memwall_sim::SimError| LabError::Point {
            index: i,
            params: exp.describe(&p.choice),
            source: Box::new(LabError::Sim(e)),
        };
        // Validates the scenario (with any duration override) and its simulator options.
        let sim = Simulator::new(&p.scenario).map_err(wrap)?;
        if trace {
            trace_rows += trace_rows_estimate(&p.scenario)?;
        }
        points.push((p, sim));
    }
    let trace_bytes = trace_rows * TRACE_ROW_BYTES;
    if trace_bytes > trace_limit_bytes as f64 {
        return Err(LabError::Spec(memwall_spec::SpecError::invalid(
            "trace",
            format!("{:.1} GB", trace_bytes / 1e9),
            format!(
                "the trace would hold about {trace_rows:.3e} rows ({:.1} GB at {TRACE_ROW_BYTES} B a row), above the \
                 {:.1} GB limit; shorten the run, drop the trace (`--trace`), or raise its limit \
                 (`--trace-limit`; `trace_limit` in Python)",
                trace_bytes / 1e9,
                trace_limit_bytes as f64 / 1e9
            ),
        )));
    }
    Ok(points)
}

/// Run the prepared points in order, their rows into `sink` tagged with the point's index in
/// the grid, keeping a plot series per point when `plot`. `progress(point, simulated seconds)` is
/// called every few thousand events; when it returns false the run stops with
/// [`LabError::Interrupted`].
fn run_points(
    exp: &Experiment,
    points: Vec<(Point, Simulator)>,
    mut sink: Option<&mut dyn PointSink>,
    plot: bool,
    progress: &mut dyn FnMut(usize, f64) -> bool,
) -> Result<(Vec<Simulated>, Vec<Series>)> {
    let mut results = Vec::with_capacity(points.len());
    let mut series = Vec::new();
    let stop = Cell::new(false);
    for (point, mut sim) in points {
        let i = point.index;
        let mut null = NullSink;
        let inner: &mut dyn TraceSink = match &mut sink {
            Some(p) => {
                p.set_point(i as u32);
                *p
            }
            None => &mut null,
        };
        // Buckets of 1/600 of the run (at least 0.1 s) keep long runs' figures small.
        let horizon = point.scenario.sim.duration_s.unwrap_or(600.0);
        let label = if exp.len() > 1 { exp.describe(&point.choice) } else { exp.name.clone() };
        let mut s = plot.then(|| Series::new(label, (horizon / 600.0).max(0.1)));
        let mut tee = Tee { inner, series: s.as_mut(), stop: &stop };
        let run = sim.run(&mut tee, &mut |t| {
            if !progress(i, t) {
                stop.set(true);
            }
        });
        if stop.get() {
            return Err(LabError::Interrupted);
        }
        let summary = run.map_err(|e| LabError::Point {
            index: i,
            params: exp.describe(&point.choice),
            source: Box::new(LabError::Sim(e)),
        })?;
        series.extend(s);
        results.push(Simulated { point, summary });
    }
    Ok((results, series))
}

/// Simulate every point of `exp`. `duration_s` overrides each point's `sim.duration_s`
/// and repeats its turns until then. Outputs are written to temporary files and renamed at
/// the end: on any error nothing is left. `progress` gets (point index, simulated seconds
/// of that point).
pub fn simulate_experiment(
    exp: &Experiment,
    duration_s: Option<f64>,
    out: Outputs,
    progress: &mut dyn FnMut(usize, f64),
) -> Result<Vec<Simulated>> {
    let points = prepare(exp, 0..exp.len(), duration_s, out.trace.is_some(), out.trace_limit_bytes)?;
    let mut sink = match out.trace {
        Some(path) => {
            let meta = simulation_metadata(exp, duration_s, points.iter().map(|(p, _)| &p.scenario));
            Some(ParquetTraceSink::create(path, &meta)?)
        }
        None => None,
    };
    let (results, series) =
        run_points(exp, points, sink.as_mut().map(|s| s as &mut dyn PointSink), out.plot.is_some(), &mut |i, t| {
            progress(i, t);
            true
        })?;
    if let Some(p) = out.plot {
        write_timeline(p, &timeline_title(exp), &series, out.plot_size)?;
    }
    if let Some(s) = sink {
        s.finish()?;
    }
    Ok(results)
}

/// The title of an experiment's time figure.
fn timeline_title(exp: &Experiment) -> String {
    format!("{}: generation rate, temperatures, unit power and clock", exp.name)
}

/// Simulate the points `range` of `exp` like [`simulate_experiment`] (a range is a partition
/// of a distributed run; rows keep their point's index in the whole grid), keeping the
/// per-token trace (when `trace`) in memory as record batches of
/// [`crate::trace::trace_schema`] instead of a file, and drawing the time figure
/// `simulate --plot` draws to `plot` when given (checked first, written whole at the end).
/// `progress(point, simulated seconds)` returning false stops the run
/// ([`LabError::Interrupted`]).
pub fn simulate_in_memory(
    exp: &Experiment,
    range: std::ops::Range<usize>,
    duration_s: Option<f64>,
    trace: bool,
    trace_limit_bytes: u64,
    plot: Option<(&std::path::Path, Size)>,
    progress: &mut dyn FnMut(usize, f64) -> bool,
) -> Result<(Vec<Simulated>, Vec<RecordBatch>)> {
    if let Some((p, _)) = plot {
        crate::plot::Format::of("plot", p)?;
    }
    if range.start > range.end || range.end > exp.len() {
        return Err(LabError::Spec(memwall_spec::SpecError::invalid(
            "range",
            format!("{}..{}", range.start, range.end),
            format!("the experiment has points 0..{}", exp.len()),
        )));
    }
    let points = prepare(exp, range, duration_s, trace, trace_limit_bytes)?;
    if let Some((p, _)) = plot {
        // Never over a file the run reads (a model file), nor over anything not a file.
        let models: Vec<&std::path::Path> = points
            .iter()
            .filter_map(|(pt, _)| pt.scenario.model.from_file.as_deref().map(std::path::Path::new))
            .collect();
        crate::check_outputs(&models, &[("plot", p)])?;
    }
    let mut sink = trace.then(BatchTraceSink::default);
    let (results, series) =
        run_points(exp, points, sink.as_mut().map(|s| s as &mut dyn PointSink), plot.is_some(), progress)?;
    let batches = sink.map(BatchTraceSink::finish).transpose()?.unwrap_or_default();
    if let Some((p, size)) = plot {
        write_timeline(p, &timeline_title(exp), &series, size)?;
    }
    Ok((results, batches))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units_and_reject_nonsense() {
        assert_eq!(parse_duration("90").unwrap(), 90.0);
        assert_eq!(parse_duration("10m").unwrap(), 600.0);
        assert_eq!(parse_duration("1.5h").unwrap(), 5400.0);
        assert_eq!(parse_duration("250ms").unwrap(), 0.25);
        for bad in ["", "-3s", "ten minutes", "0", "NaNs"] {
            let e = parse_duration(bad).unwrap_err().to_string();
            assert!(e.contains("duration"), "{bad}: {e}");
        }
    }
}
