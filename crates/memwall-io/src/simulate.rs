//! Simulating experiments: every grid point through the discrete-event simulator, the
//! per-token traces of all points streamed into one Parquet file (a `point` column tells
//! them apart), summaries returned in grid order.

use std::path::Path;

use memwall_sim::des::{NullSink, Simulator, Summary, TraceSink};

use crate::error::{IoError, Result};
use crate::experiment::{Experiment, Point};
use crate::results::metadata;
use crate::trace::ParquetTraceSink;

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
    Ok(v * scale)
}

/// Simulate every point of `exp`. `duration_s` overrides each point's `sim.duration_s`
/// and repeats its turns until then. With `trace`, rows go to that Parquet file (written
/// to a temporary file and renamed at the end: on any error nothing is left). `progress`
/// gets (point index, simulated seconds of that point).
pub fn simulate_experiment(
    exp: &Experiment,
    duration_s: Option<f64>,
    trace: Option<&Path>,
    progress: &mut dyn FnMut(usize, f64),
) -> Result<Vec<Simulated>> {
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
        p.scenario.validate().map_err(|e| wrap(e.into()))?;
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
    let mut out = Vec::with_capacity(points.len());
    for (i, (point, mut sim)) in points.into_iter().enumerate() {
        let mut null = NullSink;
        let s: &mut dyn TraceSink = match &mut sink {
            Some(p) => {
                p.set_point(i as u32);
                p
            }
            None => &mut null,
        };
        let summary = sim.run(s, &mut |t| progress(i, t)).map_err(|e| IoError::Point {
            index: i,
            params: exp.describe(&point.choice),
            source: Box::new(IoError::Sim(e)),
        })?;
        out.push(Simulated { point, summary });
    }
    if let Some(s) = sink {
        s.finish()?;
    }
    Ok(out)
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
