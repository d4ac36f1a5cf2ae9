//! Published power and energy per token against memwall's (`memwall validate --energy`,
//! `datasets/energy_measurements.csv`).
//!
//! A published watt figure is a measurement over some boundary and some window: a phone's
//! battery current with its idle draw subtracted over a whole `llama-cli` run, a Jetson's
//! CPU+GPU rail over the decode, a board's rails with idle included. memwall's own energy
//! ([`memwall_sim::Estimate::energy_j_per_token`], [`memwall_sim::Estimate::reply_energy_j`])
//! counts the compute units' power, the SoC's static power and the DRAM's energy per byte over
//! the time it predicts. [`at_boundary`] turns that into what the row's boundary measures, so
//! the two compare like with like; a boundary memwall does not model (the wall socket: power
//! supply losses, storage, display, fans) is set aside with its reason, never scaled to fit.
//!
//! No figure is fitted on these rows: the unit powers, static and idle powers and DRAM
//! energy come from the device presets, each with its source. A row whose device's power
//! figures were themselves set from that device's measured LLM power is in sample, and the
//! table sets it aside with that reason.

use memwall_sim::Estimate;
use memwall_spec::SpecError;

use crate::CalibError;
use crate::published::{ValidationRow, extra_columns, observation, parse_table};

type Result<T> = std::result::Result<T, CalibError>;

/// What a published watt figure measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Boundary {
    /// The whole device at its battery, its idle draw subtracted: the compute units, the
    /// SoC's static power and the DRAM, what memwall's energy counts.
    BatteryAboveIdle,
    /// The board's supply rails with its idle draw included: memwall's energy plus the
    /// device's idle power over the same time.
    Board,
    /// The SoC package (CPU, GPU and NPU with the SoC's static power), DRAM excluded: Apple's
    /// `powermetrics` combined power.
    Package,
    /// The compute units' rails alone (a Jetson's `VDD_CPU_GPU_CV`): memwall's unit power.
    Units,
    /// The wall socket: power supply losses, storage, display and fans beside the SoC, none
    /// of which memwall models; such rows are set aside.
    Wall,
}

impl Boundary {
    /// Every boundary, in the order of [`Boundary::name`].
    pub const ALL: [Boundary; 5] =
        [Boundary::BatteryAboveIdle, Boundary::Board, Boundary::Package, Boundary::Units, Boundary::Wall];

    /// The name in the table's `boundary` column.
    pub fn name(self) -> &'static str {
        match self {
            Boundary::BatteryAboveIdle => "battery_above_idle",
            Boundary::Board => "board",
            Boundary::Package => "package",
            Boundary::Units => "units",
            Boundary::Wall => "wall",
        }
    }

    /// The boundary named `s` ([`Boundary::name`]).
    pub fn from_name(s: &str) -> Option<Boundary> {
        Boundary::ALL.into_iter().find(|b| b.name() == s)
    }
}

/// Over what a published figure was averaged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// The decoded tokens only: J/token is per decoded token, W the mean over the decode.
    Decode,
    /// A whole run, the prompt's prefill and the reply: J/token is the run's energy per
    /// generated token, W the run's mean.
    Run,
    /// A whole run that also holds the model's loading (a `llama-cli` process timed from its
    /// start), which memwall does not model: J/token is compared with the run's, loading's
    /// energy counted in the measurement only (so memwall should come out lower); W is not
    /// compared, the loading's seconds diluting the measured mean.
    RunWithLoad,
}

impl Window {
    /// Every window, in the order of [`Window::name`].
    pub const ALL: [Window; 3] = [Window::Decode, Window::Run, Window::RunWithLoad];

    /// The window named `s` ([`Window::name`]).
    pub fn from_name(s: &str) -> Option<Window> {
        Window::ALL.into_iter().find(|w| w.name() == s)
    }

    /// The name in the table's `window` column.
    pub fn name(self) -> &'static str {
        match self {
            Window::Decode => "decode",
            Window::Run => "run",
            Window::RunWithLoad => "run_with_load",
        }
    }

    /// Whether a measured mean power over this window compares with memwall's.
    pub fn compares_power(self) -> bool {
        self != Window::RunWithLoad
    }
}

/// The columns an energy table adds to a validation table's ([`crate::published::COLUMNS`]).
pub const ENERGY_COLUMNS: [&str; 4] = ["measured_w", "measured_j_per_token", "boundary", "window"];

/// One published power measurement: the run ([`ValidationRow`]: device, model, weights,
/// engine, unit, tokens and the rates measured with it) and what was measured.
#[derive(Debug, Clone, PartialEq)]
pub struct EnergyRow {
    /// The run.
    pub run: ValidationRow,
    /// Published mean power over the window, W.
    pub measured_w: f64,
    /// Published energy per generated token over the window, J.
    pub measured_j_per_token: f64,
    /// What the watts measure.
    pub boundary: Boundary,
    /// Over what they were averaged.
    pub window: Window,
}

/// Parse an energy table: a validation table ([`parse_table`]) with the [`ENERGY_COLUMNS`];
/// errors name the line and the column.
pub fn parse_energy_table(text: &str, origin: &str) -> Result<Vec<EnergyRow>> {
    let runs = parse_table(text, origin)?;
    // `gen_tokens` too: parse_table defaults a blank one, which an energy row may not have.
    let names = [&ENERGY_COLUMNS[..], &["gen_tokens"]].concat();
    let extra = extra_columns(text, origin, &names, "the energy table")?;
    let mut out = Vec::with_capacity(runs.len());
    for (run, (line, get)) in runs.into_iter().zip(extra) {
        let bad = |line: usize, field: &str, value: &str, reason: &str| {
            CalibError::Spec(SpecError::invalid(format!("{origin}: line {line}, column {field}"), value, reason))
        };
        let positive = |name: &str| -> Result<f64> {
            let v = get(name);
            match v.parse::<f64>() {
                Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
                _ => Err(bad(line, name, &v, "expected a finite number > 0")),
            }
        };
        let b = get("boundary");
        let boundary = Boundary::from_name(&b).ok_or_else(|| {
            let names: Vec<&str> = Boundary::ALL.iter().map(|b| b.name()).collect();
            bad(line, "boundary", &b, &format!("expected one of {}", names.join(", ")))
        })?;
        let w = get("window");
        let window = Window::from_name(&w).ok_or_else(|| {
            let names: Vec<&str> = Window::ALL.iter().map(|w| w.name()).collect();
            bad(line, "window", &w, &format!("expected one of {}", names.join(", ")))
        })?;
        if run.exclude.is_empty() && get("gen_tokens").is_empty() {
            return Err(bad(line, "gen_tokens", "", "energy per generated token needs the tokens generated"));
        }
        if window != Window::Decode && run.exclude.is_empty() && run.prefill_tokens.is_none() {
            return Err(bad(line, "prefill_tokens", "", "a run's window holds its prompt: state its length and rate"));
        }
        if window != Window::Decode && matches!(boundary, Boundary::Package | Boundary::Units) {
            return Err(bad(
                line,
                "window",
                &w,
                &format!(
                    "a {} boundary (DRAM excluded) is modelled over the decode only: memwall does not split a \
                     prompt's energy into DRAM and the rest",
                    boundary.name()
                ),
            ));
        }
        let row = EnergyRow {
            run,
            measured_w: positive("measured_w")?,
            measured_j_per_token: positive("measured_j_per_token")?,
            boundary,
            window,
        };
        if row.run.exclude.is_empty() {
            check_consistent(&row).map_err(|why| bad(line, "measured_w", &row.measured_w.to_string(), &why))?;
        }
        out.push(row);
    }
    Ok(out)
}

/// The published figures agree with each other: over the decode `W = J/token × tok/s`; over a
/// run `W = J/token × g ÷ (p / prefill tok/s + g / decode tok/s)`, where the prompt's rate is
/// published; a run that also holds loading cannot average more than that
/// ([`run_power_bound_w`]). Each within [`CONSISTENCY`].
fn check_consistent(row: &EnergyRow) -> std::result::Result<(), String> {
    let (w, tol) = (row.measured_w, CONSISTENCY);
    let (expected, what) = match row.window {
        Window::Decode => (row.measured_j_per_token * row.run.measured_tok_s, "J/token × tok/s"),
        Window::Run => match run_power_bound_w(row) {
            Some(b) => (b, "J/token × tokens ÷ the run's time at the published rates"),
            None => return Ok(()),
        },
        Window::RunWithLoad => {
            return match run_power_bound_w(row) {
                Some(b) if w > b * (1.0 + tol) => Err(format!(
                    "a run that also holds loading cannot average more than its energy over its prompt and reply at \
                     the published rates ({b:.3} W)"
                )),
                _ => Ok(()),
            };
        }
    };
    if (w / expected - 1.0).abs() > tol {
        return Err(format!("disagrees with {what} = {expected:.3} W by more than {:.0} %", 100.0 * tol));
    }
    Ok(())
}

/// How far a row's published watts may stray from what its energy and rates imply (rounding
/// in the source, medians taken separately).
pub const CONSISTENCY: f64 = 0.15;

/// The device's figures that move energy across a boundary.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PowerFigures {
    /// Static power of the SoC under load, W (`power.static_w`).
    pub static_w: f64,
    /// Whole-device idle power, W (`power.idle_w`).
    pub idle_w: f64,
    /// DRAM energy, pJ per bit (`memory.dram_pj_per_bit`).
    pub dram_pj_per_bit: f64,
}

/// Energy per generated token (J) and mean power (W) of a run as `boundary` measures them over
/// `window`, from memwall's estimate `e` of that run.
///
/// Over the decode, the time is `t = decode_s_per_token` and memwall's energy
/// `E = energy_j_per_token` (units' power and static power for `t`, DRAM bytes × 8 × pJ/bit);
/// over a run (with or without loading) of `g` generated tokens,
/// `t = (prefill_s + g × decode_s_per_token) / g` and
/// `E = reply_energy_j / g`. Then, per token:
///
/// - battery above idle: `E`;
/// - board: `E + idle_w × t`;
/// - package (decode only): `E − dram_bytes_per_token × 8 × pJ/bit × 1e−12`;
/// - units (decode only): `E − static_w × t − dram_bytes_per_token × 8 × pJ/bit × 1e−12`;
///
/// and the power is `J / t`, for one sequence (the rows' runs decode one). `None` at the wall,
/// which memwall does not model, and for package or units over a run (memwall does not split a
/// prompt's energy into DRAM and the rest).
pub fn at_boundary(
    e: &Estimate,
    p: &PowerFigures,
    boundary: Boundary,
    window: Window,
    generated: u64,
) -> Option<(f64, f64)> {
    let g = generated.max(1) as f64;
    let (j, t) = match window {
        Window::Decode => (e.energy_j_per_token, e.decode_s_per_token),
        Window::Run | Window::RunWithLoad => (e.reply_energy_j / g, (e.prefill_s + g * e.decode_s_per_token) / g),
    };
    let dram_j = e.dram_bytes_per_token * 8.0 * p.dram_pj_per_bit * 1e-12;
    if window != Window::Decode && matches!(boundary, Boundary::Package | Boundary::Units) {
        return None;
    }
    let j = match boundary {
        Boundary::BatteryAboveIdle => j,
        Boundary::Board => j + p.idle_w * t,
        Boundary::Package => j - dram_j,
        Boundary::Units => j - p.static_w * t - dram_j,
        Boundary::Wall => return None,
    };
    Some((j, j / t))
}

/// The most a run's prompt and reply can have drawn on average when the published energy
/// also holds the model's loading, W: `J/token × g ÷ (p / prefill tok/s + g / decode tok/s)`,
/// the whole published energy put on the prompt and reply as timed at the published rates
/// (loading at 0 W). `None` without a published prompt rate.
pub fn run_power_bound_w(row: &EnergyRow) -> Option<f64> {
    let r = &row.run;
    let (p, pp) = (r.prefill_tokens? as f64, r.measured_prefill_tok_s?);
    let g = r.gen_tokens.max(1) as f64;
    Some(row.measured_j_per_token * g / (p / pp + g / r.measured_tok_s))
}

/// One row predicted.
#[derive(Debug, Clone, PartialEq)]
pub struct EnergyCheck {
    /// Row identifier.
    pub id: String,
    /// Physical device.
    pub unit_device: String,
    /// Device preset.
    pub device: String,
    /// Device class.
    pub class: String,
    /// Engine.
    pub engine: String,
    /// Unit.
    pub backend: String,
    /// Model preset.
    pub model: String,
    /// Weight mix.
    pub weights: String,
    /// What the watts measure.
    pub boundary: Boundary,
    /// Over what.
    pub window: Window,
    /// Published decode tok/s.
    pub measured_tok_s: f64,
    /// memwall's decode tok/s for the run.
    pub predicted_tok_s: f64,
    /// Published mean power, W.
    pub measured_w: f64,
    /// For a run that holds the model's loading: the most its prompt and reply can have drawn
    /// on average, W ([`run_power_bound_w`]); `None` for other windows.
    pub run_bound_w: Option<f64>,
    /// memwall's mean power at the boundary, W.
    pub predicted_w: f64,
    /// Published energy per generated token, J.
    pub measured_j_per_token: f64,
    /// memwall's, at the boundary, J.
    pub predicted_j_per_token: f64,
}

/// An energy validation: the rows predicted and those set aside (id, reason).
#[derive(Debug, Clone)]
pub struct EnergyValidation {
    /// Rows predicted.
    pub checks: Vec<EnergyCheck>,
    /// Rows set aside, with the reason.
    pub excluded: Vec<(String, String)>,
}

/// Predict every row of `rows` not marked `exclude` with the shipped presets: its run (the
/// prompt's prefill where the window holds it, then the generated tokens) estimated, and
/// energy and power taken at its boundary ([`at_boundary`]). Rows that cannot be stated or
/// estimated, and wall measurements, are set aside with their reason.
pub fn validate_energy(rows: &[EnergyRow]) -> Result<EnergyValidation> {
    let mut checks = Vec::new();
    let mut excluded = Vec::new();
    for r in rows {
        let run = &r.run;
        if !run.exclude.is_empty() {
            excluded.push((run.id.clone(), run.exclude.clone()));
            continue;
        }
        if r.boundary == Boundary::Wall {
            excluded.push((
                run.id.clone(),
                "wall power: power supply losses, storage, display and fans are not modelled".to_string(),
            ));
            continue;
        }
        let mut o = match observation(run) {
            Ok(o) => o,
            Err(e) => {
                excluded.push((run.id.clone(), format!("cannot be stated: {e}")));
                continue;
            }
        };
        if r.window != Window::Decode
            && let Some(prompt) = run.prefill_tokens
        {
            let context =
                match crate::published::context_for("prefill_tokens", &[run.prefill_depth, prompt, run.gen_tokens]) {
                    Ok(c) => c,
                    Err(e) => {
                        excluded.push((run.id.clone(), format!("cannot be stated: {e}")));
                        continue;
                    }
                };
            let wl = &mut o.scenario.workload;
            wl.prompt_tokens = prompt;
            wl.history_tokens = Some(run.prefill_depth);
            wl.context_tokens = context;
        }
        let s = &o.scenario;
        let e = match memwall_sim::estimate(s) {
            Ok(e) => e,
            Err(e) => {
                excluded.push((run.id.clone(), format!("cannot be estimated: {e}")));
                continue;
            }
        };
        let figures = PowerFigures {
            static_w: s.device.power.static_w,
            idle_w: s.device.power.idle_w,
            dram_pj_per_bit: s.device.memory.dram_pj_per_bit,
        };
        let (j, w) = at_boundary(&e, &figures, r.boundary, r.window, s.workload.gen_tokens)
            .expect("the wall is set aside above, package and units over a run refused by the parser");
        checks.push(EnergyCheck {
            id: run.id.clone(),
            unit_device: run.unit_device.clone(),
            device: run.device.clone(),
            class: o.class.clone(),
            engine: run.engine.clone(),
            backend: run.backend.clone(),
            model: run.model.clone(),
            weights: run.weights.clone(),
            boundary: r.boundary,
            window: r.window,
            measured_tok_s: run.measured_tok_s,
            predicted_tok_s: e.decode_tok_s,
            measured_w: r.measured_w,
            run_bound_w: if r.window == Window::RunWithLoad { run_power_bound_w(r) } else { None },
            predicted_w: w,
            measured_j_per_token: r.measured_j_per_token,
            predicted_j_per_token: j,
        });
    }
    Ok(EnergyValidation { checks, excluded })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "id,unit_device,device,ram_gib,model,weights,engine,backend,threads,depth,gen_tokens,\
                        measured_tok_s,prefill_tokens,prefill_depth,measured_prefill_tok_s,measured_w,\
                        measured_j_per_token,boundary,window,exclude,source\n";

    fn estimate() -> Estimate {
        let s = memwall_spec::Scenario {
            model: memwall_catalog::load_model("llama-3.2-1b").unwrap(),
            device: memwall_catalog::load_device("snapdragon-8-elite-12gb").unwrap(),
            weights: memwall_spec::WeightQuant::new("Q4_K_M".parse().unwrap()),
            kv: Default::default(),
            workload: memwall_spec::Workload {
                prompt_tokens: 100,
                gen_tokens: 50,
                context_tokens: 512,
                history_tokens: Some(0),
                ..Default::default()
            },
            engine: memwall_catalog::load_engine("llama.cpp").unwrap(),
            assume_defaults: false,
            cost: Default::default(),
            sim: Default::default(),
        };
        memwall_sim::estimate(&s).unwrap()
    }

    #[test]
    fn each_boundary_adds_or_removes_its_terms_by_hand() {
        let e = estimate();
        let p = PowerFigures { static_w: 0.7, idle_w: 0.3, dram_pj_per_bit: 3.5 };
        let t = e.decode_s_per_token;
        let dram = e.dram_bytes_per_token * 8.0 * 3.5e-12;
        let at = |b| at_boundary(&e, &p, b, Window::Decode, 50).unwrap();
        let (j, w) = at(Boundary::BatteryAboveIdle);
        assert_eq!(j, e.energy_j_per_token);
        assert!((w - j / t).abs() < 1e-12);
        assert!((at(Boundary::Board).0 - (j + 0.3 * t)).abs() < 1e-12);
        assert!((at(Boundary::Package).0 - (j - dram)).abs() < 1e-12);
        let units = at(Boundary::Units).0;
        assert!((units - (j - 0.7 * t - dram)).abs() < 1e-12);
        assert!(units > 0.0 && units < j);
        assert_eq!(at_boundary(&e, &p, Boundary::Wall, Window::Decode, 50), None);
        // A run of 50 tokens: the reply's energy and time, each per generated token.
        let (j, w) = at_boundary(&e, &p, Boundary::BatteryAboveIdle, Window::Run, 50).unwrap();
        assert!((j - e.reply_energy_j / 50.0).abs() < 1e-12);
        let t_run = (e.prefill_s + 50.0 * t) / 50.0;
        assert!((w - j / t_run).abs() < 1e-9);
        assert!(t_run > t, "the prompt adds time per generated token");
    }

    #[test]
    fn a_run_with_loading_bounds_the_power_of_its_prompt_and_reply_by_hand() {
        let text = format!(
            "{HEAD}en-1,p,snapdragon-8-elite-12gb,,llama-3.2-1b,Q4_0,llama.cpp,cpu,8,0,100,50,100,0,200,8,0.44,\
             battery_above_idle,run_with_load,,src\n"
        );
        let rows = parse_energy_table(&text, "t.csv").unwrap();
        // 44 J over 100 / 200 + 100 / 50 = 2.5 s of prompt and reply: at most 17.6 W.
        assert!((run_power_bound_w(&rows[0]).unwrap() - 17.6).abs() < 1e-12);
        let v = validate_energy(&rows).unwrap();
        assert_eq!(v.checks[0].run_bound_w, Some(run_power_bound_w(&rows[0]).unwrap()));
        assert!(!v.checks[0].window.compares_power());
    }

    #[test]
    fn bad_energy_columns_name_line_and_column() {
        let row = |b: &str, w: &str, watts: &str, prompt: &str| {
            format!(
                "{HEAD}en-1,p,snapdragon-8-elite-12gb,,llama-3.2-1b,Q4_0,llama.cpp,cpu,8,0,100,30,{prompt},0,{},\
                 {watts},0.4,{b},{w},,src\n",
                if prompt.is_empty() { "" } else { "100" }
            )
        };
        for (text, says) in [
            (row("solar", "run", "8", "103"), "boundary"),
            (row("board", "forever", "8", "103"), "window"),
            (row("board", "run", "-1", "103"), "measured_w"),
            (row("board", "run", "NaN", "103"), "measured_w"),
            (row("board", "run", "8", ""), "prefill_tokens"),
            (row("package", "run", "8", "103"), "window"),
            (row("units", "run", "8", "103"), "units boundary"),
            // 0.4 J a token over 103 / 100 + 100 / 30 s is 9.2 W, not 12.
            (row("board", "run", "12", "103"), "measured_w"),
            (row("board", "run_with_load", "12", "103"), "cannot average more"),
            (row("board", "run", "8", "103").replace(",100,30,", ",,30,"), "gen_tokens"),
        ] {
            let e = parse_energy_table(&text, "t.csv").unwrap_err().to_string();
            assert!(e.contains("line 2") && e.contains(says), "{says}: {e}");
        }
        let missing = HEAD.replace(",window", "");
        let e = parse_energy_table(&missing, "t.csv").unwrap_err().to_string();
        assert!(e.contains("window") && e.contains("line 1"), "{e}");
        let ok = parse_energy_table(&row("battery_above_idle", "run", "8", "103"), "t.csv").unwrap();
        assert_eq!(ok[0].boundary, Boundary::BatteryAboveIdle);
        assert_eq!(ok[0].measured_w, 8.0);
    }

    #[test]
    fn wall_rows_and_excluded_rows_are_set_aside_with_their_reason() {
        let text = format!(
            "{HEAD}en-1,p,snapdragon-8-elite-12gb,,llama-3.2-1b,Q4_0,llama.cpp,cpu,8,0,100,30,103,0,100,8,0.4,\
             battery_above_idle,run,,src\n\
             en-2,p,snapdragon-8-elite-12gb,,llama-3.2-1b,Q4_0,llama.cpp,cpu,8,0,100,30,,,,24,0.8,wall,decode,,src\n\
             en-3,p,snapdragon-8-elite-12gb,,llama-3.2-1b,Q4_0,llama.cpp,cpu,8,0,100,30,,,,20,0.8,board,decode,in sample,src\n\
             en-4,p,no-such-device,,llama-3.2-1b,Q4_0,llama.cpp,cpu,8,0,100,30,,,,24,0.8,board,decode,,src\n\
             en-5,p,snapdragon-8-elite-12gb,,llama-3.2-1b,Q4_0,llama.cpp,cpu,8,0,18446744073709551615,30,103,0,100,8,0.4,\
             battery_above_idle,run_with_load,,src\n"
        );
        let v = validate_energy(&parse_energy_table(&text, "t.csv").unwrap()).unwrap();
        assert_eq!(v.checks.len(), 1);
        let c = &v.checks[0];
        assert!(c.predicted_w > 0.0 && c.predicted_j_per_token > 0.0 && c.predicted_tok_s > 0.0);
        // Energy per token and power agree through the run's time per generated token.
        assert!((c.predicted_w / c.predicted_j_per_token) < c.predicted_tok_s, "the prompt's time is in the run");
        let reasons: Vec<&str> = v.excluded.iter().map(|(_, r)| r.as_str()).collect();
        assert!(reasons[0].contains("wall"), "{reasons:?}");
        assert_eq!(reasons[1], "in sample");
        assert!(reasons[2].contains("cannot be stated") && reasons[2].contains("no-such-device"), "{reasons:?}");
        // Generated tokens whose sum with the prompt overflows: set aside, naming the field.
        assert!(reasons[3].contains("gen_tokens") && reasons[3].contains("overflows"), "{reasons:?}");
    }
}
