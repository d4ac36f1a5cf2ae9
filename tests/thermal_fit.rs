//! The thermal networks and governors of two device presets, fitted to published
//! sustained-load measurements, and the check that the presets as shipped reproduce them.
//!
//! `presets_reproduce_published_sustained_load` simulates each published workload with the
//! shipped presets, prints the comparison and asserts it. `refit_thermal_networks` reruns
//! the search and prints the `[thermal]` sections (and the GPU bandwidth fractions) that
//! were pasted into the device TOMLs (the S25's now lands at another point of the same
//! quality; see "The engine's context slowdown"):
//!
//! ```text
//! cargo test --release --test thermal_fit -- --ignored --nocapture
//! ```
//!
//! # The measurements (datasets/thermal_measurements.csv, plus the runs' own logs)
//!
//! **iPhone 16 Pro** (`apple-a18-pro-8gb`), TinyBench (arXiv 2603.23640,
//! github.com/conscious-engines/TinyBench): MLX Swift 0.29.1 on the GPU, Qwen2.5-1.5B-Instruct
//! 4-bit, 20 back-to-back iterations of a 258-token prompt with a 1 s gap. Each iteration
//! generates up to 1000 tokens: the app stops at `tokens.count >= 1000`
//! (mlx-llm/MLX-app/LLMChat/LLMEvaluator.swift) and its essay prompt "is designed to produce
//! long outputs (~1,000 tokens)" (mlx-llm/README.md); we take 1000. Published: peak ~40
//! tok/s, 22.6 tok/s sustained (56 % retained), −44 % by iteration 8, "nearly half its
//! throughput within two iterations" (abstract). The peak is read as the first iteration's
//! mean generation rate (the app logs one rate per iteration), the sustained figure as the
//! mean of iterations 8–20, and "within two iterations" as at most ~60 % retained by
//! iteration 3. The phone is assumed to start at a 25 °C ambient (not stated).
//!
//! **Galaxy S25** (`snapdragon-8-elite-12gb`), llm_rs2 (github.com/hedone21/llm_rs2,
//! results/README.md and results/data/profile_opencl_*_20260213_*.json): Llama 3.2 1B on the
//! Adreno GPU (OpenCL), prompt "tell me long story" (~6 tokens, eval/short_len.txt), 128
//! generated tokens at 48.8 tok/s from 31.4 °C, 2048 generated tokens at 27.7 tok/s from
//! 31.7 °C and at 30.3 tok/s from 29.9 °C (an unnamed sensor). The runs' JSON logs also
//! sample the GPU clock every ~1.25 s: it holds 1200 MHz for 27.5 s (run from 31.7 °C) and
//! 41.8 s (from 29.9 °C) of decoding, drops to 525 MHz, and climbs back through 607 to
//! 832–967 MHz; the time-weighted mean clock over the decode is 0.757 and 0.821 of 1200 MHz.
//! Those onsets and mean clocks are fitted too: they pin down the heat, while the tok/s
//! averages alone mix heat with the engine's slowdown as its context grows.
//!
//! # The engine's context slowdown (llm_rs2)
//!
//! llm_rs2 (February 2026) quantizes every matrix to Q4_0 and computes in F32; its OpenCL
//! decode attention runs one work-group per *query* head, and the author's later analysis
//! (.agent/research/2026-04-13_gqa_kv_sharing_kernel.md) notes that this re-reads each KV
//! head once per query head, which Adreno (no L1 for buffers) pays at L2/DRAM. The published
//! logs agree: decoding 128 tokens at a 1024-token context ran at 32.9 ms/token at 967 MHz
//! (profile_opencl_prefill_1024_20260213_180028.json) against 20.5 ms at a ~70-token context
//! and 1200 MHz, about 6 µs per context token at full clock, and the 2048-token runs imply
//! ~8 µs; the F32 KV bytes of Llama 3.2 1B (64 KiB per token) at the fitted bandwidth explain
//! only ~1.8 µs. So the S25 scenarios stream the KV cache as the engine does: the
//! `llama-3.2-1b` preset with F32 KV read once per query head, `attention_kv_reads =
//! n_heads / n_kv_heads = 4` in the scenario's cost model (4 × 64 KiB = 256 KiB read per
//! context token, ~7 µs; the new token's write stays 64 KiB). Without the re-reads
//! (`attention_kv_reads = 1`, GQA-shared F32 reads) the search can only trade the short run
//! against the long ones: it lowers the bandwidth fraction (the 128-token run comes out 9 %
//! slow), throttles deeper than the logs show (mean clock 0.73 and 0.76 against 0.757 and
//! 0.821) and pins the board resistance at its bound; and the network fitted here predicts
//! 40–42 tok/s for those 2048-token runs when the KV cache is read once per KV head, as
//! efficient engines do.
//!
//! The S25 preset holds where the search ends with this scenario (R die→board 3.24 K/W,
//! R board→skin 10.2 K/W, C board 9.4 J/K, first trip 62.6 °C, spacing 0.28 °C, fraction
//! 0.435), so a rerun reproduces both presets.
//!
//! # The network and governor
//!
//! Three nodes, die → board → skin → ambient (25 °C). Fixed from physics (see the device
//! TOMLs' `[sources]`): die capacitance 2 J/K; skin capacitance 0.75 J/(g·K) × the phone's
//! mass; skin-to-ambient resistance 1 / (10 W/(m²·K) × surface area) (natural convection
//! ≈ 4–5 plus radiation ≈ 6 W/(m²·K)); leakage 1 %/K; half the DRAM power into the die (the
//! LPDDR sits on the SoC package). Governor: memory bandwidth follows the GPU clock level
//! (`mem_steps = freq_steps`), voltage `0.6 + 0.4 f`, trip points evenly spaced, 2 °C
//! hysteresis, 45 °C skin limit, 0.1 s polling. The S25's levels are the Adreno clocks the
//! logs show (1200, 967, 900, 832, 607, 525 MHz); the iPhone's are a geometric ladder whose
//! ratio is fitted. Free parameters per device: die→board and board→skin resistances,
//! board capacitance, first trip point, the ladder ratio (iPhone) or the trip spacing (S25),
//! and the GPU's share of peak DRAM bandwidth (`accelerators.gpu_bandwidth_fraction`, for the
//! S25 split into the class-default GPU figure and the llm_rs2 profile's share; which
//! sets the unthrottled speed).
//!
//! The search minimizes the weighted sum of squared relative errors on the published
//! figures plus a weak prior on the four network parameters (one sigma, a factor of 2 or
//! 10 °C, costs as much as a 3 % miss), which only decides where the figures leave a
//! parameter free: it scores a coarse grid, then runs Nelder–Mead (with restarts) from the
//! three best points inside the box, and rounds the result to three significant digits (the
//! first trip to 0.1 °C, the trip spacing to 0.01 °C).
//!
//! # What the fit says
//!
//! iPhone: the throttle starts 22 s into the first iteration and reaches the governor's
//! deepest level (0.55 of the bandwidth) ~80 s in, during the third; it stays there, which is
//! what makes iterations 4–20 flat as published (a temperature-regulated level would keep
//! sinking as the skin warms), while the die keeps warming under it to ~94 °C by the end:
//! iOS's sustained "Hot" state behaves like a cap. Galaxy S25: the die is held at the first
//! trips (64–65 °C) while the clock steps down through 967, 900 and 832 to 607 MHz between
//! 30 and 51 s and stays there; the logs instead show one drop to 525 MHz and a partial
//! recovery, with about the same time-averaged clock.

use memwall::io::{load_device, load_model};
use memwall::sim::SimError;
use memwall::sim::des::{Phase, Summary, TraceRow, TraceSink, simulate};
use memwall::spec::{
    Backend, CostModel, DeviceSpec, GovernorSpec, KvQuant, QuantFormat, Scenario, SimConfig, ThermalNode, ThermalSpec,
    Turn, WeightQuant, Workload,
};

const AMBIENT_C: f64 = 25.0;

// ----------------------------------------------------------------------------------------
// Workloads and what was published about them.

const IPHONE: &str = "apple-a18-pro-8gb";
const IPHONE_ITERATIONS: u32 = 20;
/// Published: peak (first-iteration) generation rate, tok/s.
const IPHONE_PEAK: f64 = 40.0;
/// Published: sustained rate (iterations 8–20), tok/s.
const IPHONE_SUSTAINED: f64 = 22.6;
/// "Nearly half its throughput within two iterations": retained fraction at iteration 3.
const IPHONE_THIRD_RETAINED: f64 = 0.58;

const S25: &str = "snapdragon-8-elite-12gb";

/// One published llm_rs2 run on the Galaxy S25.
struct S25Run {
    tokens: u64,
    start_c: f64,
    tok_s: f64,
    /// Seconds of decoding before the GPU clock first left 1200 MHz.
    onset_s: Option<f64>,
    /// Time-weighted mean GPU clock over the decode, fraction of 1200 MHz.
    mean_clock: Option<f64>,
}

const S25_RUNS: [S25Run; 3] = [
    S25Run { tokens: 128, start_c: 31.4, tok_s: 48.8, onset_s: None, mean_clock: None },
    S25Run { tokens: 2048, start_c: 31.7, tok_s: 27.7, onset_s: Some(27.5), mean_clock: Some(0.757) },
    S25Run { tokens: 2048, start_c: 29.9, tok_s: 30.3, onset_s: Some(41.8), mean_clock: Some(0.821) },
];

/// Adreno 830 clocks seen in the llm_rs2 logs, MHz, fastest first.
const S25_CLOCKS_MHZ: [f64; 6] = [1200.0, 967.0, 900.0, 832.0, 607.0, 525.0];

fn iphone_scenario(device: DeviceSpec) -> Scenario {
    let mut sim = SimConfig::default();
    sim.storage.load = false;
    sim.session.turns = vec![Turn { prompt_tokens: 258, gen_tokens: 1000, think_s: 1.0 }];
    sim.session.repeat = IPHONE_ITERATIONS;
    Scenario {
        model: load_model("qwen2.5-1.5b").unwrap(),
        device,
        // MLX 4-bit: groups of 64 with a bf16 scale and bias, embeddings included.
        weights: WeightQuant::new("pure-int4-g64-asym-bf16".parse().unwrap()),
        kv: KvQuant::default(),
        workload: Workload {
            prompt_tokens: 258,
            gen_tokens: 1000,
            context_tokens: 2048,
            // One CPU thread drives the GPU.
            threads: Some(1),
            backend: Backend::Gpu,
            ..Workload::default()
        },
        cost: Default::default(),
        engine: Default::default(),
        assume_defaults: false,
        sim,
    }
}

fn s25_scenario(device: DeviceSpec, run: &S25Run) -> Scenario {
    let mut sim = SimConfig::default();
    sim.storage.load = false;
    sim.thermal.start_c = Some(run.start_c);
    let f32: QuantFormat = "f32".parse().unwrap();
    let model = load_model("llama-3.2-1b").unwrap();
    // llm_rs2's decode attention re-reads each KV head once per query head (its profile).
    // In a search the device's GPU figure carries the fitted reach and the engine's share is
    // 1; the shipped preset splits it into the class-default GPU figure and the profile's share.
    let mut engine = memwall::io::load_engine("llm_rs2").unwrap();
    if device.accelerators.gpu_bandwidth_fraction != load_device(S25).unwrap().accelerators.gpu_bandwidth_fraction {
        engine.gpu.as_mut().unwrap().bandwidth_share = 1.0;
    }
    Scenario {
        model,
        device,
        weights: WeightQuant::new("pure-q4_0".parse().unwrap()),
        kv: KvQuant { k: f32, v: f32 },
        workload: Workload {
            prompt_tokens: 6,
            gen_tokens: run.tokens,
            context_tokens: 4096,
            threads: Some(1),
            backend: Backend::Gpu,
            ..Workload::default()
        },
        engine,
        assume_defaults: false,
        cost: CostModel::default(),
        sim,
    }
}

// ----------------------------------------------------------------------------------------
// Running a scenario.

/// What a run produced, gathered from its trace.
#[derive(Default)]
struct Observed {
    summary: Summary,
    /// Per turn: decoded tokens and decode seconds.
    turns: Vec<(u64, f64)>,
    /// Σ freq_scale × latency and Σ latency over decode steps.
    clock: (f64, f64),
    /// Per turn: energy and duration of every step (prefill, decode, think), J and s.
    power: Vec<(f64, f64)>,
}

impl TraceSink for Observed {
    fn push(&mut self, row: &TraceRow) -> Result<(), SimError> {
        let t = row.turn as usize;
        if self.power.len() <= t {
            self.power.resize(t + 1, (0.0, 0.0));
        }
        self.power[t].0 += row.energy_j;
        self.power[t].1 += row.latency_s;
        if row.phase == Phase::Decode {
            if self.turns.len() <= t {
                self.turns.resize(t + 1, (0, 0.0));
            }
            self.turns[t].0 += row.tokens;
            self.turns[t].1 += row.latency_s;
            self.clock.0 += row.freq_scale * row.latency_s;
            self.clock.1 += row.latency_s;
        }
        Ok(())
    }
}

impl Observed {
    fn run(s: &Scenario) -> Observed {
        let mut o = Observed::default();
        o.summary = simulate(s, &mut o).unwrap();
        o
    }

    /// Generation rate of turn `i` (0-based), tok/s.
    fn rate(&self, i: usize) -> f64 {
        let (n, d) = self.turns[i];
        n as f64 / d
    }

    /// Generation rate over the whole run, tok/s.
    fn tok_s(&self) -> f64 {
        let (n, d) = self.turns.iter().fold((0, 0.0), |a, t| (a.0 + t.0, a.1 + t.1));
        n as f64 / d
    }

    fn mean_clock(&self) -> f64 {
        self.clock.0 / self.clock.1
    }

    /// Mean power of turns `from..`, W (think time included).
    fn power_w(&self, from: usize) -> f64 {
        let (e, t) = self.power[from..].iter().fold((0.0, 0.0), |a, p| (a.0 + p.0, a.1 + p.1));
        e / t
    }
}

/// iPhone results: per-iteration rates.
struct IphoneFit {
    obs: Observed,
}

impl IphoneFit {
    fn run(device: DeviceSpec) -> Self {
        let obs = Observed::run(&iphone_scenario(device));
        assert_eq!(obs.turns.len(), IPHONE_ITERATIONS as usize);
        IphoneFit { obs }
    }

    fn first(&self) -> f64 {
        self.obs.rate(0)
    }

    /// Mean rate of iterations 8–20.
    fn sustained(&self) -> f64 {
        (7..IPHONE_ITERATIONS as usize).map(|i| self.obs.rate(i)).sum::<f64>() / (IPHONE_ITERATIONS - 7) as f64
    }

    fn retained(&self, iteration: usize) -> f64 {
        self.obs.rate(iteration - 1) / self.first()
    }

    /// Relative errors weighted for the search.
    fn loss(&self) -> f64 {
        let rel = |a: f64, b: f64| (a - b) / b;
        rel(self.first(), IPHONE_PEAK).powi(2)
            + rel(self.sustained(), IPHONE_SUSTAINED).powi(2)
            + 0.5 * rel(self.retained(3), IPHONE_THIRD_RETAINED).powi(2)
    }
}

fn s25_runs(device: &DeviceSpec) -> Vec<Observed> {
    S25_RUNS.iter().map(|r| Observed::run(&s25_scenario(device.clone(), r))).collect()
}

fn s25_loss(obs: &[Observed]) -> f64 {
    let rel = |a: f64, b: f64| (a - b) / b;
    let mut loss = 0.0;
    for (o, r) in obs.iter().zip(&S25_RUNS) {
        loss += rel(o.tok_s(), r.tok_s).powi(2);
        if let Some(t) = r.onset_s {
            // No throttle at all counts as twice the published onset.
            let sim = o.summary.throttle_onset_s.unwrap_or(2.0 * t);
            loss += 0.25 * rel(sim, t).powi(2);
        }
        if let Some(c) = r.mean_clock {
            loss += 0.5 * rel(o.mean_clock(), c).powi(2);
        }
    }
    loss
}

// ----------------------------------------------------------------------------------------
// The parametrized network.

/// Fixed physical structure of one phone.
struct Structure {
    c_die: f64,
    c_skin: f64,
    r_skin: f64,
}

/// iPhone 16 Pro: 199 g, 149.6 × 71.45 × 8.25 mm (0.0250 m² of surface).
const IPHONE_STRUCTURE: Structure = Structure { c_die: 2.0, c_skin: 150.0, r_skin: 4.0 };
/// Galaxy S25: ~160 g, 146.9 × 70.5 × 7.2 mm (0.0238 m²).
const S25_STRUCTURE: Structure = Structure { c_die: 2.0, c_skin: 120.0, r_skin: 4.2 };

/// A free parameter: its search box, the points of the coarse grid the search starts from,
/// and a weak prior (`center`, `sigma`; in log units when `log`) that only decides where the
/// published figures leave it free.
struct Param {
    name: &'static str,
    lo: f64,
    hi: f64,
    grid: &'static [f64],
    center: f64,
    sigma: f64,
    log: bool,
}

impl Param {
    fn penalty(&self, x: f64) -> f64 {
        let d = if self.log { (x / self.center).ln() / self.sigma } else { (x - self.center) / self.sigma };
        PRIOR_WEIGHT * d * d
    }
}

/// A parameter one prior sigma off costs as much as a 3 % miss on one published figure.
const PRIOR_WEIGHT: f64 = 0.001;

/// Typical phone values: SoC package to board through the PoP stack and TIM ~3 K/W, board to
/// skin through graphite or a vapor chamber ~5 K/W, PCB + shields + spreader ~20 J/K, SoC
/// throttling starting around 80 °C; each within a factor of 2 (10 °C).
const R_DIE: Param =
    Param { name: "r_die_k_per_w", lo: 0.5, hi: 10.0, grid: &[1.5, 3.0, 6.0], center: 3.0, sigma: LN2, log: true };
const R_BOARD: Param =
    Param { name: "r_board_k_per_w", lo: 0.5, hi: 15.0, grid: &[2.0, 4.5, 9.0], center: 5.0, sigma: LN2, log: true };
const C_BOARD: Param =
    Param { name: "c_board_j_per_k", lo: 3.0, hi: 80.0, grid: &[6.0, 15.0, 40.0], center: 20.0, sigma: LN2, log: true };
const TRIP: Param =
    Param { name: "trip_c", lo: 50.0, hi: 105.0, grid: &[65.0, 77.0, 90.0], center: 80.0, sigma: 10.0, log: false };
const LN2: f64 = std::f64::consts::LN_2;

const IPHONE_PARAMS: [Param; 6] = [
    R_DIE,
    R_BOARD,
    C_BOARD,
    TRIP,
    Param { name: "ladder_ratio", lo: 0.70, hi: 0.97, grid: &[], center: 0.85, sigma: 1.0, log: false },
    Param { name: "accel_fraction", lo: 0.3, hi: 0.9, grid: &[], center: 0.6, sigma: 10.0, log: false },
];

const S25_PARAMS: [Param; 6] = [
    R_DIE,
    R_BOARD,
    C_BOARD,
    TRIP,
    Param { name: "trip_spacing_c", lo: 0.2, hi: 8.0, grid: &[], center: 2.0, sigma: 10.0, log: false },
    Param { name: "accel_fraction", lo: 0.2, hi: 0.9, grid: &[], center: 0.5, sigma: 10.0, log: false },
];

fn prior(params: &[Param], x: &[f64]) -> f64 {
    params.iter().zip(x).map(|(p, x)| p.penalty(*x)).sum()
}

fn governor(freq: Vec<f64>, trip_c: f64, spacing_c: f64) -> GovernorSpec {
    let round3 = |x: f64| (x * 1000.0).round() / 1000.0;
    let freq: Vec<f64> = freq.into_iter().map(round3).collect();
    GovernorSpec {
        volt_steps: freq.iter().map(|f| round3(0.6 + 0.4 * f)).collect(),
        mem_steps: freq.clone(),
        trip_c: (1..freq.len()).map(|i| ((trip_c + (i - 1) as f64 * spacing_c) * 100.0).round() / 100.0).collect(),
        freq_steps: freq,
        hysteresis_c: 2.0,
        skin_limit_c: 45.0,
        skin_integral_k_s: None,
        skin_gain_levels_per_k: None,
        poll_s: 0.1,
        critical_c: None,
        shutdown_skin_c: None,
    }
}

fn network(s: &Structure, r_die: f64, r_board: f64, c_board: f64, governor: GovernorSpec, source: &str) -> ThermalSpec {
    let node =
        |name: &str, c: f64, r: f64| ThermalNode { name: name.into(), capacitance_j_per_k: c, resistance_k_per_w: r };
    ThermalSpec {
        ambient_c: AMBIENT_C,
        nodes: vec![node("die", s.c_die, r_die), node("board", c_board, r_board), node("skin", s.c_skin, s.r_skin)],
        leakage_per_c: 0.01,
        dram_heat_in_die: 0.5,
        governor,
        source: source.into(),
    }
}

const IPHONE_SOURCE: &str = "fit to TinyBench (arXiv 2603.23640) iPhone 16 Pro MLX runs: tests/thermal_fit.rs";
const S25_SOURCE: &str = "fit to llm_rs2 Galaxy S25 OpenCL runs of 2026-02-13: tests/thermal_fit.rs";

fn iphone_device(x: &[f64]) -> DeviceSpec {
    let mut d = load_device(IPHONE).unwrap();
    let ratio = x[4];
    let ladder = (0..5).map(|k| ratio.powi(k)).collect();
    d.thermal = Some(network(&IPHONE_STRUCTURE, x[0], x[1], x[2], governor(ladder, x[3], 2.0), IPHONE_SOURCE));
    d.accelerators.gpu_bandwidth_fraction = Some(x[5]);
    d
}

fn s25_device(x: &[f64]) -> DeviceSpec {
    let mut d = load_device(S25).unwrap();
    let clocks = S25_CLOCKS_MHZ.iter().map(|c| c / S25_CLOCKS_MHZ[0]).collect();
    d.thermal = Some(network(&S25_STRUCTURE, x[0], x[1], x[2], governor(clocks, x[3], x[4]), S25_SOURCE));
    // The reach llm_rs2 gets on this GPU, carried by the GPU's figure during the search.
    d.accelerators.gpu_bandwidth_fraction = Some(x[5]);
    d
}

// ----------------------------------------------------------------------------------------
// The search.

/// Nelder–Mead on `f` from `x0` with initial simplex steps `step` (per coordinate).
fn nelder_mead(f: &dyn Fn(&[f64]) -> f64, x0: &[f64], step: &[f64], iterations: usize) -> (Vec<f64>, f64) {
    let n = x0.len();
    let mut simplex: Vec<(Vec<f64>, f64)> = vec![(x0.to_vec(), f(x0))];
    for i in 0..n {
        let mut x = x0.to_vec();
        x[i] += step[i];
        let fx = f(&x);
        simplex.push((x, fx));
    }
    let lerp = |a: &[f64], b: &[f64], t: f64| a.iter().zip(b).map(|(a, b)| a + t * (b - a)).collect::<Vec<f64>>();
    for _ in 0..iterations {
        simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
        let centroid: Vec<f64> = (0..n).map(|j| simplex[..n].iter().map(|p| p.0[j]).sum::<f64>() / n as f64).collect();
        let worst = simplex[n].clone();
        // Reflect, expand, contract, or shrink toward the best point.
        let xr = lerp(&centroid, &worst.0, -1.0);
        let fr = f(&xr);
        if fr < simplex[0].1 {
            let xe = lerp(&centroid, &worst.0, -2.0);
            let fe = f(&xe);
            simplex[n] = if fe < fr { (xe, fe) } else { (xr, fr) };
        } else if fr < simplex[n - 1].1 {
            simplex[n] = (xr, fr);
        } else {
            let xc = if fr < worst.1 { lerp(&centroid, &xr, 0.5) } else { lerp(&centroid, &worst.0, 0.5) };
            let fc = f(&xc);
            if fc < fr.min(worst.1) {
                simplex[n] = (xc, fc);
            } else {
                let best = simplex[0].0.clone();
                for p in simplex.iter_mut().skip(1) {
                    p.0 = lerp(&best, &p.0, 0.5);
                    p.1 = f(&p.0);
                }
            }
        }
    }
    simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
    simplex.swap_remove(0)
}

/// Box coordinates ↔ unconstrained ones (logistic).
fn to_box(params: &[Param], u: &[f64]) -> Vec<f64> {
    params.iter().zip(u).map(|(p, u)| p.lo + (p.hi - p.lo) / (1.0 + (-u).exp())).collect()
}

fn from_box(params: &[Param], x: &[f64]) -> Vec<f64> {
    params.iter().zip(x).map(|(p, x)| ((x - p.lo) / (p.hi - x)).ln()).collect()
}

/// Round to `digits` significant digits.
fn sig(x: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits - 1 - x.abs().log10().floor() as i32);
    (x * scale).round() / scale
}

/// Search from the best points of a coarse grid (and `x0`) with Nelder–Mead and a few
/// restarts; returns the box coordinates rounded for the TOML.
fn search(params: &[Param], x0: &[f64], loss: &dyn Fn(&[f64]) -> f64) -> Vec<f64> {
    let total = |x: &[f64]| loss(x) + prior(params, x);
    // The grid over the parameters that have one, the others at x0.
    let mut points = vec![x0.to_vec()];
    for (i, p) in params.iter().enumerate() {
        if p.grid.is_empty() {
            continue;
        }
        points = points
            .into_iter()
            .flat_map(|x| {
                p.grid.iter().map(move |g| {
                    let mut y = x.clone();
                    y[i] = *g;
                    y
                })
            })
            .collect();
    }
    points.push(x0.to_vec());
    let mut scored: Vec<(f64, Vec<f64>)> = points.into_iter().map(|x| (total(&x), x)).collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0));
    let f = |u: &[f64]| total(&to_box(params, u));
    let mut best: Option<(Vec<f64>, f64)> = None;
    for (_, start) in scored.iter().take(3) {
        let mut u = from_box(params, start);
        let mut fu = f(&u);
        for _ in 0..4 {
            let (v, fv) = nelder_mead(&f, &u, &vec![0.5; params.len()], 100);
            let improved = fv < fu - 1e-7;
            (u, fu) = (v, fv);
            if !improved {
                break;
            }
        }
        println!(
            "  from {:?}: loss {fu:.5} at {:?}",
            start.iter().map(|x| sig(*x, 3)).collect::<Vec<_>>(),
            to_box(params, &u).iter().map(|x| sig(*x, 4)).collect::<Vec<_>>()
        );
        if best.as_ref().is_none_or(|b| fu < b.1) {
            best = Some((u, fu));
        }
    }
    let x = to_box(params, &best.unwrap().0);
    params
        .iter()
        .zip(x)
        .map(|(p, x)| match p.name {
            "trip_c" => (x * 10.0).round() / 10.0,
            "trip_spacing_c" => (x * 100.0).round() / 100.0,
            _ => sig(x, 3),
        })
        .collect()
}

fn toml_section(t: &ThermalSpec, fitted: &str) -> String {
    let list = |v: &[f64]| format!("[{}]", v.iter().map(|x| format!("{x:?}")).collect::<Vec<_>>().join(", "));
    let g = &t.governor;
    let mut s = String::from("[thermal]\n");
    s += &format!("ambient_c = {:?}\n", t.ambient_c);
    s += &format!("leakage_per_c = {:?}\n", t.leakage_per_c);
    s += &format!("dram_heat_in_die = {:?}\n", t.dram_heat_in_die);
    s += &format!("source = {:?}\n", format!("{} ({fitted})", t.source));
    s += "nodes = [\n";
    for n in &t.nodes {
        s += &format!(
            "    {{ name = {:?}, capacitance_j_per_k = {:?}, resistance_k_per_w = {:?} }},\n",
            n.name, n.capacitance_j_per_k, n.resistance_k_per_w
        );
    }
    s += "]\n\n[thermal.governor]\n";
    s += &format!("freq_steps = {}\n", list(&g.freq_steps));
    s += &format!("volt_steps = {}\n", list(&g.volt_steps));
    s += &format!("mem_steps = {}\n", list(&g.mem_steps));
    s += &format!("trip_c = {}\n", list(&g.trip_c));
    s +=
        &format!("hysteresis_c = {:?}\nskin_limit_c = {:?}\npoll_s = {:?}\n", g.hysteresis_c, g.skin_limit_c, g.poll_s);
    s
}

/// Where the searches start (R_die, R_board, C_board, first trip, ladder ratio or trip
/// spacing, bandwidth fraction): the priors' centres, fixed so that a rerun reproduces the
/// shipped values whatever the TOMLs hold.
const IPHONE_START: [f64; 6] = [3.0, 5.0, 20.0, 80.0, 0.86, 0.65];
const S25_START: [f64; 6] = [3.0, 5.0, 20.0, 80.0, 1.0, 0.43];

/// Share of peak bandwidth the shipped preset's GPU reaches with its engine: the GPU figure,
/// times llm_rs2's share on the S25.
fn reach(d: &DeviceSpec) -> f64 {
    let gpu = d.accelerators.gpu_bandwidth_fraction.unwrap_or(f64::NAN);
    if d.name == S25 { gpu * memwall::io::load_engine("llm_rs2").unwrap().gpu.unwrap().bandwidth_share } else { gpu }
}

/// The shipped preset's values of the fitted parameters.
fn shipped(d: &DeviceSpec, ladder: bool) -> Vec<f64> {
    let t = d.thermal.as_ref().expect("the preset has a [thermal] section");
    let g = &t.governor;
    vec![
        t.nodes[0].resistance_k_per_w,
        t.nodes[1].resistance_k_per_w,
        t.nodes[1].capacitance_j_per_k,
        g.trip_c[0],
        if ladder { g.mem_steps[1] } else { ((g.trip_c[1] - g.trip_c[0]) * 100.0).round() / 100.0 },
        reach(d),
    ]
}

fn compare(device: &str, fitted: &[f64], shipped: &[f64]) {
    let same = fitted.iter().zip(shipped).all(|(a, b)| (a - b).abs() <= 1e-9 * a.abs().max(1.0));
    println!("{device}: the search reproduces the shipped preset: {}", if same { "yes" } else { "NO" });
    if !same {
        println!("  fitted  {fitted:?}\n  shipped {shipped:?}");
    }
}

#[test]
#[ignore = "the search: cargo test --release --test thermal_fit -- --ignored --nocapture"]
fn refit_thermal_networks() {
    let start = std::time::Instant::now();
    println!("{IPHONE}: {}", IPHONE_PARAMS.iter().map(|p| p.name).collect::<Vec<_>>().join(", "));
    let x = search(&IPHONE_PARAMS, &IPHONE_START, &|x| IphoneFit::run(iphone_device(x)).loss());
    let fit = IphoneFit::run(iphone_device(&x));
    println!(
        "\n# {IPHONE}: R_die {} K/W, R_board {} K/W, C_board {} J/K, first trip {} °C, ladder ratio {}, \
         data loss {:.5}\n# iteration 1 {:.2} tok/s, iterations 8-20 {:.2}, retained at 3 {:.3}, at 8 {:.3}, \
         onset {:?} s, power over 8-20 {:.2} W\n\nGPU reach (accelerators.gpu_bandwidth_fraction, x llm_rs2's share on the S25) = {:?}\n",
        x[0],
        x[1],
        x[2],
        x[3],
        x[4],
        fit.loss(),
        fit.first(),
        fit.sustained(),
        fit.retained(3),
        fit.retained(8),
        fit.obs.summary.throttle_onset_s,
        fit.obs.power_w(7),
        x[5]
    );
    println!("{}", toml_section(iphone_device(&x).thermal.as_ref().unwrap(), "see [sources]"));
    let iphone = x;

    println!("{S25}: {}", S25_PARAMS.iter().map(|p| p.name).collect::<Vec<_>>().join(", "));
    let x = search(&S25_PARAMS, &S25_START, &|x| s25_loss(&s25_runs(&s25_device(x))));
    let obs = s25_runs(&s25_device(&x));
    println!(
        "\n# {S25}: R_die {} K/W, R_board {} K/W, C_board {} J/K, first trip {} °C, trip spacing {} °C, \
         data loss {:.5}",
        x[0],
        x[1],
        x[2],
        x[3],
        x[4],
        s25_loss(&obs)
    );
    for (o, r) in obs.iter().zip(&S25_RUNS) {
        println!(
            "# {} tokens from {} °C: {:.2} tok/s, onset {:?} s, mean clock {:.3}, max die {:.1} °C",
            r.tokens,
            r.start_c,
            o.tok_s(),
            o.summary.throttle_onset_s,
            o.mean_clock(),
            o.summary.max_die_c
        );
    }
    println!("\nGPU reach (accelerators.gpu_bandwidth_fraction x llm_rs2's share) = {:?}\n", x[5]);
    println!("{}", toml_section(s25_device(&x).thermal.as_ref().unwrap(), "see [sources]"));

    compare(IPHONE, &iphone, &shipped(&load_device(IPHONE).unwrap(), true));
    compare(S25, &x, &shipped(&load_device(S25).unwrap(), false));
    println!("search took {:.0} s", start.elapsed().as_secs_f64());
}

// ----------------------------------------------------------------------------------------
// The check of the shipped presets.

/// The comparison table: one row per metric, with its verdict.
#[derive(Default)]
struct Report {
    rows: Vec<[String; 5]>,
    failures: Vec<String>,
}

impl Report {
    /// A simulated figure against a published one, within `ok`.
    fn check(&mut self, device: &str, metric: &str, sim: f64, published: &str, ok: bool, tolerance: &str) {
        self.rows.push([device.into(), metric.into(), format!("{sim:.2}"), published.into(), tolerance.into()]);
        if !ok {
            self.failures.push(format!("{device}: {metric}: simulated {sim:.3}, published {published} ({tolerance})"));
        }
    }

    /// A simulated figure shown for information.
    fn show(&mut self, device: &str, metric: &str, sim: String, published: &str) {
        self.rows.push([device.into(), metric.into(), sim, published.into(), "(not asserted)".into()]);
    }

    fn print(&self) {
        let w: Vec<usize> = (0..5).map(|i| self.rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
        let head = ["device", "metric", "simulated", "published", "tolerance"];
        let line = |r: &[String; 5]| {
            r.iter().zip(&w).map(|(c, w)| format!("{c:<w$}")).collect::<Vec<_>>().join(" | ").trim_end().to_string()
        };
        println!("{}", line(&head.map(String::from)));
        println!("{}", w.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("-|-"));
        for r in &self.rows {
            println!("{}", line(r));
        }
    }
}

fn within(sim: f64, published: f64, rel: f64) -> bool {
    (sim - published).abs() <= rel * published
}

fn opt(x: Option<f64>) -> String {
    x.map_or("never".into(), |x| format!("{x:.1}"))
}

/// The shipped presets against the published runs. Tolerances: ±15 % on the burst and
/// short-run rates (as asked of every preset); ±10 % on the sustained and long-run rates,
/// about the spread of the measurements themselves (the two nominally identical 2048-token
/// S25 runs differ by 9 %); ±0.06 on retained fractions and mean clocks (~10 %); ±35 % on
/// throttle onsets, which hinge on temperatures we do not know (the die and board of a
/// phone that just ran are warmer than the one sensor logged, and a 1 K error moves the
/// onset by seconds) and are sampled every ~1.25 s.
#[test]
fn presets_reproduce_published_sustained_load() {
    let mut r = Report::default();

    let dev = "iPhone 16 Pro (apple-a18-pro-8gb)";
    let fit = IphoneFit::run(load_device(IPHONE).unwrap());
    let s = &fit.obs.summary;
    r.check(
        dev,
        "iteration 1 generation rate, tok/s",
        fit.first(),
        "~40 (peak)",
        within(fit.first(), IPHONE_PEAK, 0.15),
        "±15 %",
    );
    r.check(
        dev,
        "burst_tok_s (first 30 s of decoding)",
        s.burst_tok_s,
        "~40 (peak)",
        within(s.burst_tok_s, IPHONE_PEAK, 0.15),
        "±15 %",
    );
    r.check(
        dev,
        "iterations 8-20 mean rate, tok/s",
        fit.sustained(),
        "22.6",
        within(fit.sustained(), IPHONE_SUSTAINED, 0.10),
        "±10 %",
    );
    let retained = fit.sustained() / fit.first();
    r.check(dev, "retained, iterations 8-20 / iteration 1", retained, "0.56", (retained - 0.56).abs() <= 0.06, "±0.06");
    r.check(
        dev,
        "retained at iteration 8",
        fit.retained(8),
        "0.56 (-44 %)",
        (fit.retained(8) - 0.56).abs() <= 0.06,
        "±0.06",
    );
    r.check(
        dev,
        "retained at iteration 3",
        fit.retained(3),
        "'nearly half lost within two iterations'",
        fit.retained(3) <= 0.70,
        "≤ 0.70",
    );
    r.show(dev, "sustained_tok_s (last 60 s)", format!("{:.2}", s.sustained_tok_s), "22.6");
    r.show(
        dev,
        "per-iteration rates, tok/s",
        (0..IPHONE_ITERATIONS as usize).map(|i| format!("{:.1}", fit.obs.rate(i))).collect::<Vec<_>>().join(" "),
        "~40 ... 22.6",
    );
    r.check(
        dev,
        "throttle onset, s",
        s.throttle_onset_s.unwrap_or(f64::INFINITY),
        "within iterations 1-2 (< ~55 s)",
        s.throttle_onset_s.is_some_and(|t| t < 55.0),
        "< 55 s",
    );
    r.show(
        dev,
        "time to -10 % / -25 %, s",
        format!("{} / {}", opt(s.time_to_minus_10pct_s), opt(s.time_to_minus_25pct_s)),
        "-44 % by iteration 8",
    );
    r.show(dev, "max die / skin, °C", format!("{:.1} / {:.1}", s.max_die_c, s.max_skin_c), "iOS thermal state 'Hot'");
    r.show(
        dev,
        "mean power, iterations 8-20, W",
        format!("{:.2}", fit.obs.power_w(7)),
        "A18 Pro sustained ~4 W (Notebookcheck)",
    );

    let dev = "Galaxy S25 (snapdragon-8-elite-12gb)";
    let runs = s25_runs(&load_device(S25).unwrap());
    for (o, run) in runs.iter().zip(&S25_RUNS) {
        let s = &o.summary;
        let w = format!("{} tokens from {} °C", run.tokens, run.start_c);
        let tol = if run.tokens <= 128 { 0.15 } else { 0.10 };
        r.check(
            dev,
            &format!("{w}: mean rate, tok/s"),
            o.tok_s(),
            &format!("{}", run.tok_s),
            within(o.tok_s(), run.tok_s, tol),
            &format!("±{:.0} %", tol * 100.0),
        );
        if let Some(t) = run.onset_s {
            let sim = s.throttle_onset_s.unwrap_or(f64::INFINITY);
            r.check(
                dev,
                &format!("{w}: throttle onset, s"),
                sim,
                &format!("{t} (GPU leaves 1200 MHz)"),
                within(sim, t, 0.35),
                "±35 %",
            );
        }
        if let Some(c) = run.mean_clock {
            r.check(
                dev,
                &format!("{w}: mean GPU clock / max"),
                o.mean_clock(),
                &format!("{c}"),
                (o.mean_clock() - c).abs() <= 0.06,
                "±0.06",
            );
        }
        r.show(
            dev,
            &format!("{w}: burst / last-60 s tok/s"),
            format!("{:.1} / {:.1}", s.burst_tok_s, s.sustained_tok_s),
            "-",
        );
        r.show(
            dev,
            &format!("{w}: time to -10 % / -25 %, s"),
            format!("{} / {}", opt(s.time_to_minus_10pct_s), opt(s.time_to_minus_25pct_s)),
            "-",
        );
        r.show(
            dev,
            &format!("{w}: max die / skin, °C"),
            format!("{:.1} / {:.1}", s.max_die_c, s.max_skin_c),
            "unnamed sensor +4.6 to +6.5 K (2048 tokens)",
        );
    }
    r.print();
    assert!(r.failures.is_empty(), "the presets no longer reproduce the published runs:\n{}", r.failures.join("\n"));
}

/// Leave-one-device-out for the phone class: each phone's published run predicted with the
/// *other* phone's fitted network (its own figures otherwise), beside its own fit (in
/// sample), the class network a phone without a fit gets (the mean of both fits: half in
/// sample) and no thermal model at all. Printed as a table (`cargo test --release --test
/// thermal_fit cross -- --nocapture`); asserted: the held-out prediction of the retained
/// fraction is closer to the measurement than the no-thermal baseline's 1.0.
#[test]
fn phone_networks_cross_validated() {
    let own_iphone = load_device(IPHONE).unwrap();
    let own_s25 = load_device(S25).unwrap();
    let with_network = |d: &DeviceSpec, net: Option<ThermalSpec>| {
        let mut d = d.clone();
        d.thermal = net;
        d
    };
    let no_thermal = |s: &mut Scenario| s.sim.thermal.enabled = false;
    println!("device | network | first tok/s | sustained tok/s | retained | time to -10 % / -25 %, s | mean power, W");
    // iPhone: 20 iterations; retained = iterations 8-20 over iteration 1 (published 0.56).
    let mut iphone_errors = Vec::new();
    for (label, device, thermal) in [
        ("own fit (in sample)", own_iphone.clone(), true),
        ("S25's fit (held out)", with_network(&own_iphone, own_s25.thermal.clone()), true),
        ("phone class (mean of both fits)", with_network(&own_iphone, None), true),
        ("no thermal model", own_iphone.clone(), false),
    ] {
        let mut s = iphone_scenario(device);
        if !thermal {
            no_thermal(&mut s);
        }
        let mut obs = Observed::default();
        obs.summary = simulate(&s, &mut obs).unwrap();
        assert_eq!(obs.turns.len(), IPHONE_ITERATIONS as usize);
        let fit = IphoneFit { obs };
        let retained = fit.sustained() / fit.first();
        let s = &fit.obs.summary;
        println!(
            "iPhone 16 Pro | {label} | {:.1} | {:.1} | {retained:.2} (measured 0.56) | {} / {} | {:.2}",
            fit.first(),
            fit.sustained(),
            opt(s.time_to_minus_10pct_s),
            opt(s.time_to_minus_25pct_s),
            fit.obs.power_w(7)
        );
        iphone_errors.push((label, (retained - 0.56).abs()));
    }
    // S25: the 2048-token run from 31.7 °C; retained = mean rate over the 128-token run's
    // (published 27.7 / 48.8 = 0.57, which mixes heat with the engine's context slowdown).
    let mut s25_errors = Vec::new();
    for (label, device, thermal) in [
        ("own fit (in sample)", own_s25.clone(), true),
        ("iPhone's fit (held out)", with_network(&own_s25, own_iphone.thermal.clone()), true),
        ("phone class (mean of both fits)", with_network(&own_s25, None), true),
        ("no thermal model", own_s25.clone(), false),
    ] {
        let rates: Vec<(f64, Summary)> = S25_RUNS[..2]
            .iter()
            .map(|run| {
                let mut s = s25_scenario(device.clone(), run);
                if !thermal {
                    no_thermal(&mut s);
                }
                let o = Observed::run(&s);
                (o.tok_s(), o.summary)
            })
            .collect();
        let retained = rates[1].0 / rates[0].0;
        let s = &rates[1].1;
        println!(
            "Galaxy S25 | {label} | {:.1} | {:.1} | {retained:.2} (measured 0.57) | {} / {} | {:.2}",
            rates[0].0,
            rates[1].0,
            opt(s.time_to_minus_10pct_s),
            opt(s.time_to_minus_25pct_s),
            s.mean_power_w
        );
        s25_errors.push((label, (retained - 27.7 / 48.8).abs()));
    }
    let held_out = |e: &[(&str, f64)]| e.iter().find(|x| x.0.contains("held out")).unwrap().1;
    let baseline = |e: &[(&str, f64)]| e.iter().find(|x| x.0.contains("no thermal")).unwrap().1;
    assert!(held_out(&iphone_errors) < baseline(&iphone_errors), "{iphone_errors:?}");
    assert!(held_out(&s25_errors) < baseline(&s25_errors), "{s25_errors:?}");
}

/// The fit recovers a network it did not see: a synthetic phone (the iPhone preset with a
/// known board resistance, board capacitance and first trip point) runs a sustained workload;
/// a Nelder–Mead search from 40 % off, on what such a run logs (each turn's generation rate
/// and energy, the die temperature at the end of each turn), finds the three values again.
#[test]
fn a_synthetic_fit_recovers_known_parameters() {
    let truth = [6.0, 15.0, 58.0]; // r_board K/W, c_board J/K, first trip °C
    let device = |x: &[f64]| {
        let mut d = load_device(IPHONE).unwrap();
        let ladder = (0..5).map(|k| 0.85f64.powi(k)).collect();
        d.thermal = Some(network(&IPHONE_STRUCTURE, 3.0, x[0], x[1], governor(ladder, x[2], 2.0), "synthetic"));
        d
    };
    let scenario = |x: &[f64]| {
        let mut s = iphone_scenario(device(x));
        s.sim.session.turns[0].gen_tokens = 500;
        s.sim.session.repeat = 10;
        s
    };
    /// Per turn: decoded tokens, decode seconds, energy, die °C at its end.
    struct Log(Vec<(u64, f64, f64, f64)>);
    impl TraceSink for Log {
        fn push(&mut self, row: &TraceRow) -> Result<(), SimError> {
            let t = row.turn as usize;
            if self.0.len() <= t {
                self.0.resize(t + 1, (0, 0.0, 0.0, 0.0));
            }
            let e = &mut self.0[t];
            if row.phase == Phase::Decode {
                e.0 += row.tokens;
                e.1 += row.latency_s;
            }
            e.2 += row.energy_j;
            e.3 = row.die_c;
            Ok(())
        }
    }
    let observe = |x: &[f64]| -> Vec<[f64; 3]> {
        let mut log = Log(Vec::new());
        simulate(&scenario(x), &mut log).unwrap();
        log.0.iter().filter(|t| t.1 > 0.0).map(|t| [t.0 as f64 / t.1, t.2, t.3]).collect()
    };
    let measured = observe(&truth);
    assert!(measured.len() == 10 && measured[0][0] > 1.1 * measured[9][0], "the run must throttle: {measured:?}");
    let params = [
        Param { name: "r_board", lo: 1.0, hi: 20.0, grid: &[], center: 5.0, sigma: 1.0, log: true },
        Param { name: "c_board", lo: 3.0, hi: 80.0, grid: &[], center: 20.0, sigma: 1.0, log: true },
        Param { name: "trip", lo: 45.0, hi: 95.0, grid: &[], center: 80.0, sigma: 10.0, log: false },
    ];
    let loss = |u: &[f64]| -> f64 {
        let x = to_box(&params, u);
        let sim = observe(&x);
        if sim.len() != measured.len() {
            return 1e9;
        }
        sim.iter()
            .zip(&measured)
            .map(|(a, b)| {
                ((a[0] - b[0]) / b[0]).powi(2) + ((a[1] - b[1]) / b[1]).powi(2) + ((a[2] - b[2]) / 10.0).powi(2)
            })
            .sum()
    };
    let start = [truth[0] * 1.4, truth[1] * 0.6, truth[2] + 8.0];
    let u0 = from_box(&params, &start);
    let (u, best) = nelder_mead(&loss, &u0, &[0.3, 0.3, 0.3], 120);
    let x = to_box(&params, &u);
    println!("synthetic fit: truth {truth:?}, start {start:?}, found {x:?}, loss {best:.2e}");
    assert!((x[0] / truth[0] - 1.0).abs() < 0.05, "r_board {} vs {}", x[0], truth[0]);
    assert!((x[1] / truth[1] - 1.0).abs() < 0.10, "c_board {} vs {}", x[1], truth[1]);
    assert!((x[2] - truth[2]).abs() < 1.0, "trip {} vs {}", x[2], truth[2]);
}
