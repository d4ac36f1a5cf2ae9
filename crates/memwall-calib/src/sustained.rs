//! Sustained load against published runs: each row of a sustained table is a published run of
//! back-to-back iterations (a benchmark loop, a chat session), simulated with the
//! discrete-event simulator on the device's own thermal network or, where the preset has
//! none, the class network of its kind and cooling (with its governor, skin controller and
//! the OS's thermal status). What the source published is compared: the rate of later
//! iterations over the first's (retained fraction), the time to −25 %, whether the run ended
//! early, and the hottest die temperature.
//!
//! No figure is fitted on these rows: a row whose preset network was fitted to the same run
//! (`tests/thermal_fit.rs`) carries an `exclude` reason, as do rows naming a device of the
//! hidden evaluation sets.

use memwall_sim::des::{ActionKind, Summary};
use memwall_spec::{Cooling, SpecError, ThermalStatus, Turn};

use crate::CalibError;
use crate::published::{ValidationRow, context_for, extra_columns, observation, parse_table};
use crate::thermal::Observed;

type Result<T, E = CalibError> = std::result::Result<T, E>;

/// The columns a sustained table adds to a validation table ([`parse_table`], whose
/// `gen_tokens` are each iteration's and `measured_tok_s` the first iteration's rate).
pub const SUSTAINED_COLUMNS: [&str; 10] = [
    "prompt_tokens",
    "iterations",
    "gap_s",
    "start_c",
    "cooling",
    "retained_iterations",
    "measured_retained",
    "measured_t25_s",
    "ended_early",
    "measured_max_die_c",
];

/// Most tokens (prompts and replies, all iterations) a sustained row may hold: an hour of
/// decoding at 500 tok/s is 1.8 M; a row beyond it is a typo that would stall the check.
pub const MAX_RUN_TOKENS: u64 = 5_000_000;

/// Most idle time between iterations a run may hold, seconds (a day): the governor polls
/// through it.
pub const MAX_IDLE_S: f64 = 86_400.0;

/// The published retained fraction: the mean rate of iterations `from..=to` (1-based) over
/// the first iteration's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retained {
    /// First iteration averaged.
    pub from: u32,
    /// Last iteration averaged.
    pub to: u32,
    /// The published fraction.
    pub measured: f64,
}

/// One published sustained run.
#[derive(Debug, Clone, PartialEq)]
pub struct SustainedRow {
    /// The run as a validation row.
    pub run: ValidationRow,
    /// Prompt tokens of each iteration.
    pub prompt_tokens: u64,
    /// Iterations run back to back.
    pub iterations: u32,
    /// Idle seconds between iterations.
    pub gap_s: f64,
    /// Temperature every node starts at, °C, where the run started warm (absent: ambient).
    pub start_c: Option<f64>,
    /// How the device was cooled in the run, where it differs from its preset.
    pub cooling: Option<Cooling>,
    /// The published retained fraction, if any.
    pub retained: Option<Retained>,
    /// Published seconds from the first token to a rate 25 % below the first's.
    pub measured_t25_s: Option<f64>,
    /// Whether the run ended early for heat (an app closed, a benchmark stopped).
    pub ended_early: bool,
    /// The published range of the hottest die temperature, °C.
    pub max_die_c: Option<(f64, f64)>,
}

/// Parse a sustained table; errors name the line and the column.
pub fn parse_sustained_table(text: &str, origin: &str) -> Result<Vec<SustainedRow>> {
    let runs = parse_table(text, origin)?;
    let extra = extra_columns(text, origin, &SUSTAINED_COLUMNS, "the sustained table")?;
    let mut out = Vec::with_capacity(runs.len());
    for (run, (line, get)) in runs.into_iter().zip(extra) {
        let bad = |field: &str, value: &str, reason: &str| {
            CalibError::Spec(SpecError::invalid(format!("{origin}: line {line}, column {field}"), value, reason))
        };
        let number = |field: &str, positive: bool| -> Result<Option<f64>> {
            let v = get(field);
            if v.is_empty() {
                return Ok(None);
            }
            match v.parse::<f64>() {
                Ok(x) if x.is_finite() && (x > 0.0 || (!positive && x == 0.0)) => Ok(Some(x)),
                _ => Err(bad(
                    field,
                    &v,
                    if positive { "expected a finite number > 0" } else { "expected a finite number >= 0" },
                )),
            }
        };
        let p = get("prompt_tokens");
        let prompt_tokens = match p.as_str() {
            "" => 0,
            v => v.parse::<u64>().map_err(|_| bad("prompt_tokens", v, "expected a whole number"))?,
        };
        let it = get("iterations");
        let iterations = match it.parse::<u32>() {
            Ok(n) if n >= 1 => n,
            _ => return Err(bad("iterations", &it, "expected a whole number >= 1")),
        };
        let gap_s = number("gap_s", false)?.unwrap_or(0.0);
        if gap_s * iterations as f64 > MAX_IDLE_S {
            return Err(bad(
                "gap_s",
                &gap_s.to_string(),
                &format!("{iterations} gaps of {gap_s} s exceed {MAX_IDLE_S} s of idle time in one run"),
            ));
        }
        let t = get("start_c");
        let start_c = match t.as_str() {
            "" => None,
            v => match v.parse::<f64>() {
                Ok(x) if (-40.0..=150.0).contains(&x) => Some(x),
                _ => return Err(bad("start_c", v, "expected a temperature from -40 to 150 °C")),
            },
        };
        let c = get("cooling");
        let cooling = match c.as_str() {
            "" => None,
            "passive" => Some(Cooling::Passive),
            "heatsink" => Some(Cooling::Heatsink),
            "fan" => Some(Cooling::Fan),
            other => return Err(bad("cooling", other, "expected passive, heatsink or fan (or empty)")),
        };
        let range = get("retained_iterations");
        let measured = number("measured_retained", true)?;
        let retained = match (range.as_str(), measured) {
            ("", None) => None,
            ("", Some(m)) => {
                return Err(bad(
                    "retained_iterations",
                    "",
                    &format!("measured_retained is {m}: name the iterations it averages (2-20)"),
                ));
            }
            (r, None) => {
                return Err(bad(
                    "measured_retained",
                    "",
                    &format!("retained_iterations is {r}: the fraction is needed too"),
                ));
            }
            (r, Some(m)) => {
                let (from, to) = r.split_once('-').unwrap_or((r, r));
                match (from.trim().parse::<u32>(), to.trim().parse::<u32>()) {
                    (Ok(from), Ok(to)) if from >= 2 && from <= to && to <= iterations => {
                        Some(Retained { from, to, measured: m })
                    }
                    _ => {
                        return Err(bad(
                            "retained_iterations",
                            r,
                            &format!("expected iterations a-b with 2 <= a <= b <= iterations ({iterations})"),
                        ));
                    }
                }
            }
        };
        let e = get("ended_early");
        let ended_early = match e.as_str() {
            "yes" => true,
            "no" | "" => false,
            other => return Err(bad("ended_early", other, "expected yes or no")),
        };
        let d = get("measured_max_die_c");
        let max_die_c = if d.is_empty() {
            None
        } else {
            let (lo, hi) = d.split_once('-').unwrap_or((&d, &d));
            match (lo.trim().parse::<f64>(), hi.trim().parse::<f64>()) {
                (Ok(lo), Ok(hi)) if lo.is_finite() && hi.is_finite() && lo <= hi && hi < 200.0 => Some((lo, hi)),
                _ => {
                    return Err(bad(
                        "measured_max_die_c",
                        &d,
                        "expected a temperature or a range lo-hi in °C, below 200",
                    ));
                }
            }
        };
        if run.exclude.is_empty() {
            context_for("gen_tokens", &[prompt_tokens, run.gen_tokens])
                .map_err(|e| bad("gen_tokens", &run.gen_tokens.to_string(), &e.to_string()))?;
            // A run is simulated token by token: bound its length so a row cannot stall the check.
            let tokens = (prompt_tokens.saturating_add(run.gen_tokens.max(1))).saturating_mul(iterations as u64);
            if tokens > MAX_RUN_TOKENS {
                return Err(bad(
                    "iterations",
                    &iterations.to_string(),
                    &format!(
                        "{iterations} iterations of {} tokens make {tokens} tokens; a published run holds at most \
                         {MAX_RUN_TOKENS}",
                        prompt_tokens.saturating_add(run.gen_tokens.max(1))
                    ),
                ));
            }
        }
        out.push(SustainedRow {
            run,
            prompt_tokens,
            iterations,
            gap_s,
            start_c,
            cooling,
            retained,
            measured_t25_s: number("measured_t25_s", true)?,
            ended_early,
            max_die_c,
        });
    }
    Ok(out)
}

/// One sustained run predicted.
#[derive(Debug, Clone)]
pub struct SustainedCheck {
    /// Row identifier.
    pub id: String,
    /// Physical device.
    pub unit_device: String,
    /// Device preset.
    pub device: String,
    /// Device class (`phone`, `laptop`, …).
    pub class: String,
    /// Where the network comes from: the preset's `[thermal]` table or the class network.
    pub network: String,
    /// Engine profile.
    pub engine: String,
    /// Compute unit.
    pub backend: String,
    /// Model preset.
    pub model: String,
    /// Published rate of the first iteration, tok/s.
    pub measured_first_tok_s: f64,
    /// Simulated rate of the first iteration, tok/s.
    pub predicted_first_tok_s: f64,
    /// The published retained fraction and the iterations it averages.
    pub retained: Option<Retained>,
    /// The simulated one over the same iterations.
    pub predicted_retained: Option<f64>,
    /// Published seconds to −25 %.
    pub measured_t25_s: Option<f64>,
    /// Simulated seconds to −25 % (from the first decoded token; `None`: never).
    pub predicted_t25_s: Option<f64>,
    /// Whether the run ended early, published.
    pub ended_early: bool,
    /// When the simulated run ended early for heat (the OS or the app stopped it); a kill
    /// for memory is not an end for heat.
    pub predicted_end_s: Option<f64>,
    /// Published range of the hottest die temperature, °C.
    pub measured_max_die_c: Option<(f64, f64)>,
    /// Simulated hottest die temperature, °C.
    pub predicted_max_die_c: f64,
    /// Deepest governor level reached.
    pub max_level: u32,
    /// Highest OS thermal status reached.
    pub max_status: ThermalStatus,
    /// The simulator's summary.
    pub summary: Summary,
}

impl SustainedCheck {
    /// Retained fraction error, percentage points (simulated − published).
    pub fn retained_error_pp(&self) -> Option<f64> {
        Some(100.0 * (self.predicted_retained? - self.retained?.measured))
    }

    /// Whether the simulated hottest die lies within the published range.
    pub fn die_within(&self) -> Option<bool> {
        self.measured_max_die_c.map(|(lo, hi)| (lo..=hi).contains(&self.predicted_max_die_c.round()))
    }
}

/// The rows predicted and those set aside.
#[derive(Debug, Clone, Default)]
pub struct SustainedValidation {
    /// Rows simulated.
    pub checks: Vec<SustainedCheck>,
    /// Rows set aside, with the reason.
    pub excluded: Vec<(String, String)>,
}

/// Simulate every row of `rows` not marked `exclude` with the shipped presets and its
/// iterations; rows that cannot be stated or simulated are set aside with their reason.
pub fn validate_sustained(rows: &[SustainedRow]) -> Result<SustainedValidation> {
    let mut v = SustainedValidation::default();
    for r in rows {
        let run = &r.run;
        if !run.exclude.is_empty() {
            v.excluded.push((run.id.clone(), run.exclude.clone()));
            continue;
        }
        match check(r) {
            Ok(c) => v.checks.push(c),
            Err(e) => v.excluded.push((run.id.clone(), format!("cannot be simulated: {e}"))),
        }
    }
    Ok(v)
}

/// One row simulated.
fn check(r: &SustainedRow) -> Result<SustainedCheck> {
    let run = &r.run;
    let mut s = observation(run)?.scenario;
    let prompt = r.prompt_tokens;
    if let Some(c) = r.cooling {
        s.device.cooling = Some(c);
    }
    s.workload.prompt_tokens = prompt;
    s.workload.context_tokens = context_for("gen_tokens", &[prompt, run.gen_tokens])?;
    let sim = &mut s.sim;
    sim.storage.load = false;
    sim.thermal.start_c = r.start_c;
    sim.session.turns = vec![Turn { prompt_tokens: prompt, gen_tokens: run.gen_tokens.max(1), think_s: r.gap_s }];
    sim.session.repeat = r.iterations;
    sim.session.fresh_context = true;
    let network = match &s.device.thermal {
        Some(_) => "device".to_string(),
        None => format!(
            "class: {} ({})",
            s.device.kind.map_or("unspecified", |k| k.name()),
            s.device.cooling.map_or("its usual cooling", |c| c.name())
        ),
    };
    let obs = Observed::run(&s).map_err(|e| CalibError::Row { id: run.id.clone(), source: Box::new(e) })?;
    if obs.turns.is_empty() {
        return Err(CalibError::Empty(format!("{}: the run decoded no token", run.id)));
    }
    if let Some(ret) = r.retained
        && !(2 <= ret.from && ret.from <= ret.to && ret.to <= r.iterations)
    {
        return Err(CalibError::Spec(SpecError::invalid(
            "retained_iterations",
            format!("{}-{}", ret.from, ret.to),
            format!("expected iterations a-b with 2 <= a <= b <= iterations ({})", r.iterations),
        )));
    }
    // A turn that decoded nothing has no rate (a run ended early): the retained fraction is
    // then unknown.
    let rate = |i: usize| obs.turns.get(i).filter(|t| t.0 > 0 && t.1 > 0.0).map(|_| obs.rate(i));
    let predicted_retained = r.retained.and_then(|ret| {
        let (from, to) = (ret.from as usize - 1, ret.to as usize);
        let later: Option<Vec<f64>> = (from..to).map(rate).collect();
        Some(later?.iter().sum::<f64>() / (to - from) as f64 / rate(0)?)
    });
    let sum = &obs.summary;
    Ok(SustainedCheck {
        id: run.id.clone(),
        unit_device: run.unit_device.clone(),
        device: run.device.clone(),
        class: s.device.kind.map_or("unspecified", |k| k.name()).to_string(),
        network,
        engine: run.engine.clone(),
        backend: run.backend.clone(),
        model: run.model.clone(),
        measured_first_tok_s: run.measured_tok_s,
        predicted_first_tok_s: rate(0).unwrap_or(0.0),
        retained: r.retained,
        predicted_retained,
        measured_t25_s: r.measured_t25_s,
        predicted_t25_s: sum.time_to_minus_25pct_s,
        ended_early: r.ended_early,
        predicted_end_s: sum
            .actions
            .iter()
            .find(|a| matches!(a.what, ActionKind::ThermalShutdown { .. } | ActionKind::ThermalStop { .. }))
            .map(|a| a.t_s),
        measured_max_die_c: r.max_die_c,
        predicted_max_die_c: sum.max_die_c,
        max_level: sum.max_level,
        max_status: sum.max_thermal_status,
        summary: sum.clone(),
    })
}
