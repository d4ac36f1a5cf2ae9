//! Simulating experiments: every grid point through the discrete-event simulator, the
//! per-token traces of all points streamed into one Parquet file (a `point` column tells
//! them apart), summaries returned in grid order.

use std::path::Path;

use memwall_sim::SimError;
use memwall_sim::des::{NullSink, Simulator, Summary, TraceRow, TraceSink};

use crate::error::{IoError, Result};
use crate::experiment::{Experiment, Point};
use crate::plot::{Series, write_svg};
use crate::results::metadata;
use crate::trace::ParquetTraceSink;

/// Passes rows on to a sink and keeps a plot series of them.
struct Tee<'a> {
    inner: &'a mut dyn TraceSink,
    series: Option<&'a mut Series>,
}

impl TraceSink for Tee<'_> {
    fn push(&mut self, row: &TraceRow) -> std::result::Result<(), SimError> {
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

/// Parse a duration: a number of seconds, or a number with a unit `ms`, `s`, `m`, `h`
/// (`90`, `10m`, `1.5h`).
pub fn parse_duration(text: &str) -> Result<f64> {
    let t = text.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    let v: f64 = num.trim().parse().map_err(|_| {
        IoError::Spec(memwall_spec::SpecError::invalid("duration", text, "expected a number with s, m or h (`10m`)"))
    })?;
    if !(v.is_finite() && v > 0.0) {
        return Err(IoError::Spec(memwall_spec::SpecError::invalid("duration", text, "must be > 0")));
    }
    let seconds = v * scale;
    memwall_spec::bounds::at_most("duration", seconds, memwall_spec::bounds::MAX_SECONDS, "seconds")?;
    Ok(seconds)
}

/// Where the outputs of a simulated experiment go.
#[derive(Debug, Clone, Copy, Default)]
pub struct Outputs<'a> {
    /// Per-token trace (Parquet).
    pub trace: Option<&'a Path>,
    /// Figure of generation rate and temperatures over time, one line per point (SVG).
    pub plot: Option<&'a Path>,
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
    let trace = out.trace;
    // Build and check every point before any file is created.
    let mut points = Vec::with_capacity(exp.len());
    for i in 0..exp.len() {
        let mut p = exp.point(i)?;
        if let Some(d) = duration_s {
            p.scenario.sim.duration_s = Some(d);
            p.scenario.sim.session.repeat = 0;
        }
        let wrap = |e: memwall_sim::SimError| IoError::Point {
            index: i,
            params: exp.describe(&p.choice),
            source: Box::new(IoError::Sim(e)),
        };
        // Validates the scenario (with any duration override) and its simulator options.
        let sim = Simulator::new(&p.scenario).map_err(wrap)?;
        points.push((p, sim));
    }
    let mut sink = match trace {
        Some(path) => {
            let mut meta = metadata(Some(exp));
            if let Some(d) = duration_s {
                meta.push(("duration_s".into(), d.to_string()));
            }
            Some(ParquetTraceSink::create(path, &meta)?)
        }
        None => None,
    };
    let mut results = Vec::with_capacity(points.len());
    let mut series = Vec::new();
    for (i, (point, mut sim)) in points.into_iter().enumerate() {
        let mut null = NullSink;
        let inner: &mut dyn TraceSink = match &mut sink {
            Some(p) => {
                p.set_point(i as u32);
                p
            }
            None => &mut null,
        };
        // Buckets of 1/600 of the run (at least 0.1 s) keep long runs' figures small.
        let horizon = point.scenario.sim.duration_s.unwrap_or(600.0);
        let label = if exp.len() > 1 { exp.describe(&point.choice) } else { exp.name.clone() };
        let mut s = out.plot.map(|_| Series::new(label, (horizon / 600.0).max(0.1)));
        let mut tee = Tee { inner, series: s.as_mut() };
        let summary = sim.run(&mut tee, &mut |t| progress(i, t)).map_err(|e| IoError::Point {
            index: i,
            params: exp.describe(&point.choice),
            source: Box::new(IoError::Sim(e)),
        })?;
        series.extend(s);
        results.push(Simulated { point, summary });
    }
    if let Some(p) = out.plot {
        write_svg(p, &format!("{}: generation rate and temperatures", exp.name), &series)?;
    }
    if let Some(s) = sink {
        s.finish()?;
    }
    Ok(results)
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
