//! The least-squares core of calibration, and engine figures fitted to decode and prefill
//! measurements.
//!
//! Every least-squares fit in memwall goes through this module:
//! - linear: [`least_squares`] (ordinary least squares by SVD, with standard errors), which
//!   the host calibration ([`crate::hostfit`]: attention cycles, fixed costs) and the
//!   quality fit ([`crate::quality_fit::QualityFit`]) use;
//! - nonlinear: [`fit`], Levenberg–Marquardt (its damped normal equations solved here) on the
//!   estimator's predictions, which the published-row validation ([`crate::published`],
//!   [`crate::cross_validate`]) and the llama-bench calibration ([`crate::llama_bench`]) use.
//!
//! The one optimizer beside it is derivative-free, [`crate::nelder_mead`], for the thermal
//! networks, whose loss is not smooth enough for a Jacobian.
//!
//! The model is memwall's own estimator: for observation `i` with measured rate `mᵢ` (decode
//! or prefill tok/s, [`Phase`]) and parameters `θ` (the logarithms of the fitted figures),
//! the residual is
//! `rᵢ(θ) = ln(predᵢ(θ) / mᵢ) / σ_d` (`σ_d` = 0.1: a row is trusted to about 10 %), and each
//! parameter `k` adds a prior residual `(θₖ − ln priorₖ) / σₖ`. Levenberg–Marquardt
//! minimizes `Σ ρ(rᵢ) + Σ prior²` with a soft L1 loss `ρ(r) = 2 c² (√(1 + (r/c)²) − 1)`
//! (`c` = 3, i.e. beyond about a 35 % error a row counts linearly, not quadratically), so a
//! few rows far off (a mislabelled measurement) do not drag the fit. Across devices
//! ([`Predictor::across_devices`]) the rows of one device share an error of their own, and the
//! residuals are whitened for it before the loss ([`Phase::device_sigma`]; prompt rows are weighted
//! per device instead), so a figure's level rests on devices, not on rows (the soft-L1 threshold
//! then applies to the whitened decode residual: one decode row alone turns linear beyond about
//! 53 %). Parameters stay inside physical bounds ([`Knob::bounds`]). The prior keeps an engine
//! with few rows near its profile and makes every fit well posed.

use std::collections::BTreeMap;

use memwall_sim::{CostPlan, TensorPlan, analytic::estimate_with};
use memwall_spec::{Backend, LayerKind, Scenario, UnitCosts};
use nalgebra::{DMatrix, DVector};

use crate::CalibError;

/// Ordinary least squares `y ≈ X β`: the coefficients and their standard errors
/// (`σ̂² (XᵀX)⁻¹`, `σ̂² = ‖y − Xβ‖² / (n − p)`), by SVD.
pub fn least_squares(x: &DMatrix<f64>, y: &DVector<f64>) -> Result<(DVector<f64>, DVector<f64>), CalibError> {
    let (n, p) = (x.nrows(), x.ncols());
    if n < p || p == 0 {
        return Err(CalibError::Empty(format!("{n} observations cannot fit {p} parameters")));
    }
    let svd = x.clone().svd(true, true);
    let beta = svd.solve(y, 1e-12).map_err(|e| CalibError::Empty(format!("least squares: {e}")))?;
    let resid = y - x * &beta;
    let dof = (n - p).max(1) as f64;
    let s2 = resid.norm_squared() / dof;
    let xtx = x.transpose() * x;
    let se = match xtx.try_inverse() {
        Some(inv) => DVector::from_iterator(p, (0..p).map(|i| (s2 * inv[(i, i)]).max(0.0).sqrt())),
        None => DVector::from_element(p, f64::INFINITY),
    };
    Ok((beta, se))
}

/// Non-negative least squares `min ‖y − X β‖` subject to `β ≥ 0`, exactly, for up to 8
/// parameters: the optimum's free set `F` has `β_F` = the ordinary least squares on `F`, all
/// `≥ 0`, so the best of the least-squares fits on every subset of columns whose coefficients
/// are all `≥ 0` is the optimum (the empty subset, `β = 0`, is always one).
///
/// Example: `X = [[1, 0], [0, 1], [1, 1]]`, `y = [2, −1, 1]` fits `(2, −1)` unconstrained;
/// non-negative, `(1.5, 0)` (residual 1.5 against 6 for `(0, 0)`).
pub fn least_squares_non_negative(x: &DMatrix<f64>, y: &DVector<f64>) -> Result<DVector<f64>, CalibError> {
    let (n, p) = (x.nrows(), x.ncols());
    if p > 8 || n < p || p == 0 {
        return Err(CalibError::Empty(format!("{n} observations cannot fit {p} non-negative parameters")));
    }
    let mut best = (y.norm_squared(), DVector::zeros(p));
    for mask in 1u32..(1 << p) {
        let cols: Vec<usize> = (0..p).filter(|j| mask & (1 << j) != 0).collect();
        let sub = DMatrix::from_fn(n, cols.len(), |i, k| x[(i, cols[k])]);
        let Ok(b) = sub.clone().svd(true, true).solve(y, 1e-12) else { continue };
        if b.iter().any(|v| *v < 0.0 || !v.is_finite()) {
            continue;
        }
        let r = (y - &sub * &b).norm_squared();
        if r < best.0 {
            let mut full = DVector::zeros(p);
            for (k, &j) in cols.iter().enumerate() {
                full[j] = b[k];
            }
            best = (r, full);
        }
    }
    Ok(best.1)
}

/// What a measured rate times: generated tokens or a prompt's prefill.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// Decoded tokens/s (the estimator's `decode_tok_s`; llama-bench `tgN`).
    #[default]
    Decode,
    /// Prompt tokens/s (the estimator's `prefill_tok_s` of the workload's prompt after its
    /// history; llama-bench `ppN`, `ppN @ dD`).
    Prefill,
}

impl Phase {
    /// Spread (natural-log units) of the error a device shares over its rows of this phase
    /// on one (engine, unit), the between-device part of a fit's residuals
    /// ([`Predictor::across_devices`]): decode 0.1, prefill 0.2, twice decode's as a prompt's
    /// rate scatters more between builds and settings.
    ///
    /// The in-sample fit of the shipped table puts the spread of each (device, engine,
    /// unit)'s mean `ln(predicted / measured)` at 0.13 (decode, 1.48 × MAD over 73 groups)
    /// and 0.33 (prefill, 50 groups), against 0.10 and 0.16 within a group. Between 0.1/0.2
    /// and 0.2/0.4 the smaller was chosen by cross-validation, on the table of 558 decode rows
    /// before the June-2023 rows joined it: leave-one-SoC-out from the spec sheet 20.1 %
    /// against 21.8 %, leave-one-engine-out 24.2 % against 25.5 %, prefill leave-one-device-out
    /// 29.8 % against 44.1 % (a plain fit: 20.4 %, 26.5 %, 33.7 %).
    pub fn device_sigma(self) -> f64 {
        match self {
            Phase::Decode => 0.1,
            Phase::Prefill => 0.2,
        }
    }

    /// `decode` or `prefill`.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Decode => "decode",
            Phase::Prefill => "prefill",
        }
    }
}

/// A measured decode or prefill rate and the scenario memwall predicts it with.
#[derive(Debug, Clone)]
pub struct Observation {
    /// Identifier (a row of the measurement table).
    pub id: String,
    /// The physical device measured: the unit left out by cross-validation.
    pub device: String,
    /// The device's class (`phone`, `laptop`, …) for the summaries.
    pub class: String,
    /// The design as run.
    pub scenario: Scenario,
    /// Measured tokens/s of `phase`.
    pub measured_tok_s: f64,
    /// What `measured_tok_s` times.
    pub phase: Phase,
}

/// A fitted figure of an engine on a unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Knob {
    /// Share of the unit's achievable DRAM bandwidth.
    BandwidthShare,
    /// Share of the unit's peak arithmetic in decode.
    ComputeEfficiency,
    /// Fixed cost per decoded token, s.
    PerTokenS,
    /// Fixed cost per graph operator, s.
    PerOpS,
    /// Reads of the attended KV cache per decode step (how attention cost grows with the
    /// context).
    AttentionKvReads,
    /// Share of the unit's peak arithmetic in prefill (a matrix-matrix product).
    PrefillEfficiency,
    /// GPU ALU operations to unpack a weight of Q4_0, other formats in proportion to their
    /// unpacking cost (`UnitCosts::dequant_ops_per_weight`): what makes a GPU backend's
    /// k-quant or 2-bit kernels slower than its Q4_0 ones. Fitted on GPUs only.
    DequantOps,
    /// How far the engine's kernels hide arithmetic behind memory streaming (1: time is the
    /// larger of the two; 0: their sum), the engine's `overlap` over the cost model's 0.9.
    Overlap,
    /// Fixed time a layer of this token-mixer kind adds to every step
    /// (`UnitCosts::mixer_s`): operators the backend lacks and hands to the CPU. Fitted for
    /// the recurrent kinds ([`MIXER_KINDS`]) an (engine, unit)'s decode rows run.
    MixerS(LayerKind),
}

/// The token mixers whose layers get a fitted fixed time ([`Knob::MixerS`]): the recurrent
/// kinds, which a backend built around attention and matrix products may lack.
pub const MIXER_KINDS: [LayerKind; 3] = [LayerKind::Ssm, LayerKind::Linear, LayerKind::ShortConv];

/// The prior of a [`Knob::MixerS`]: 10 µs a layer, a few operator launches, as on a backend
/// that runs the layer's operators itself.
pub const MIXER_PRIOR_S: f64 = 1e-5;

impl Knob {
    /// Every knob but the token mixers' ([`Knob::MixerS`], one per layer kind an engine's rows
    /// run, [`default_params`]).
    pub const ALL: [Knob; 8] = [
        Knob::BandwidthShare,
        Knob::ComputeEfficiency,
        Knob::PerTokenS,
        Knob::PerOpS,
        Knob::AttentionKvReads,
        Knob::DequantOps,
        Knob::Overlap,
        Knob::PrefillEfficiency,
    ];

    /// The knobs decode rows are fitted with.
    pub const DECODE: [Knob; 7] = [
        Knob::BandwidthShare,
        Knob::ComputeEfficiency,
        Knob::PerTokenS,
        Knob::PerOpS,
        Knob::AttentionKvReads,
        Knob::DequantOps,
        Knob::Overlap,
    ];

    /// The knobs prefill rows are fitted with, the decode knobs fixed: a prompt's chunks read
    /// the weights once per `ubatch` tokens and are bound by arithmetic, so the one figure
    /// they pin is the matrix-matrix efficiency.
    pub const PREFILL: [Knob; 1] = [Knob::PrefillEfficiency];

    /// Whether the figure changes a prediction of `phase`: prefill steps have no fixed cost
    /// per token, no repeated KV reads and their own efficiency; decode steps never use the
    /// prefill efficiency.
    pub fn acts_on(self, phase: Phase) -> bool {
        match self {
            // A token mixer's time is paid by every step, a prompt's chunks too.
            Knob::BandwidthShare | Knob::PerOpS | Knob::DequantOps | Knob::Overlap | Knob::MixerS(_) => true,
            Knob::ComputeEfficiency | Knob::PerTokenS | Knob::AttentionKvReads => phase == Phase::Decode,
            Knob::PrefillEfficiency => phase == Phase::Prefill,
        }
    }

    /// The field's name in an engine profile.
    pub fn name(self) -> &'static str {
        match self {
            Knob::BandwidthShare => "bandwidth_share",
            Knob::ComputeEfficiency => "compute_efficiency",
            Knob::PerTokenS => "per_token_s",
            Knob::PerOpS => "per_op_s",
            Knob::AttentionKvReads => "attention_kv_reads",
            Knob::PrefillEfficiency => "prefill_efficiency",
            Knob::DequantOps => "dequant_ops_per_weight",
            Knob::Overlap => "overlap",
            Knob::MixerS(k) => match k {
                LayerKind::Full => "mixer_s.full",
                LayerKind::Sliding => "mixer_s.sliding",
                LayerKind::Ssm => "mixer_s.ssm",
                LayerKind::Linear => "mixer_s.linear",
                LayerKind::ShortConv => "mixer_s.short_conv",
            },
        }
    }

    /// The figure in `u`.
    pub fn get(self, u: &UnitCosts) -> f64 {
        match self {
            Knob::BandwidthShare => u.bandwidth_share,
            Knob::ComputeEfficiency => u.compute_efficiency,
            Knob::PerTokenS => u.per_token_s,
            Knob::PerOpS => u.per_op_s,
            Knob::AttentionKvReads => u.attention_kv_reads,
            Knob::PrefillEfficiency => u.prefill_efficiency,
            Knob::DequantOps => u.dequant_ops_per_weight,
            Knob::Overlap => u.overlap.unwrap_or(memwall_spec::CostModel::default().overlap),
            Knob::MixerS(k) => u.mixer_s.get(k.name()).copied().unwrap_or(0.0),
        }
    }

    /// Set the figure in `u`.
    pub fn set(self, u: &mut UnitCosts, v: f64) {
        match self {
            Knob::BandwidthShare => u.bandwidth_share = v,
            Knob::ComputeEfficiency => u.compute_efficiency = v,
            Knob::PerTokenS => u.per_token_s = v,
            Knob::PerOpS => u.per_op_s = v,
            Knob::AttentionKvReads => u.attention_kv_reads = v,
            Knob::PrefillEfficiency => u.prefill_efficiency = v,
            Knob::DequantOps => u.dequant_ops_per_weight = v,
            Knob::Overlap => u.overlap = Some(v),
            Knob::MixerS(k) => {
                u.mixer_s.insert(k.name().to_string(), v);
            }
        }
    }

    /// Physical bounds of the figure: a bandwidth share in [0.02,
    /// [`memwall_spec::engine::MAX_BANDWIDTH_SHARE`]] of the device's figure, decode efficiencies
    /// in [0.02, 1], prefill efficiency in [0.002, 1] (an engine may run an NPU's matrix products
    /// on its vector units alone: llama.cpp's Hexagon backend multiplies on HVX, a few percent of
    /// the HMX TOP/s a spec sheet quotes); a fixed cost per token in [10 µs, 0.2 s], per operator
    /// in [10 ns, 1 ms]; KV reads in [1, 8] (8 is a per-query-head engine on an 8-way GQA model);
    /// GPU unpacking in [0.1, 64] operations per Q4_0 weight; a token mixer's layer in
    /// [0.1 µs, 0.1 s].
    pub fn bounds(self) -> (f64, f64) {
        match self {
            Knob::BandwidthShare => (0.02, memwall_spec::engine::MAX_BANDWIDTH_SHARE),
            Knob::ComputeEfficiency => (0.02, 1.0),
            Knob::PrefillEfficiency => (0.002, 1.0),
            Knob::PerTokenS => (1e-5, 0.2),
            Knob::PerOpS => (1e-8, 1e-3),
            Knob::AttentionKvReads => (1.0, 8.0),
            Knob::DequantOps => (0.1, 64.0),
            Knob::Overlap => (0.2, 1.0),
            Knob::MixerS(_) => (1e-7, 0.1),
        }
    }

    /// Spread of the prior, in natural-log units: shares, efficiencies and KV reads 1 (a
    /// factor of 2.7), fixed costs 2.5 (a factor of 12; they vary most between engines), a
    /// token mixer's 3.5 (a factor of 33: a layer the backend runs costs microseconds, one
    /// handed to the CPU and back milliseconds). Weak enough
    /// that a few coherent rows move a figure, strong enough to hold one no row informs.
    pub fn prior_sigma(self) -> f64 {
        match self {
            Knob::BandwidthShare
            | Knob::ComputeEfficiency
            | Knob::PrefillEfficiency
            | Knob::AttentionKvReads
            | Knob::DequantOps => 1.0,
            Knob::Overlap => 0.5,
            Knob::PerTokenS | Knob::PerOpS => 2.5,
            Knob::MixerS(_) => 3.5,
        }
    }
}

/// The depth, tokens in the KV cache when decode starts, from which a row informs the KV
/// cache's reads per token ([`params_for`]).
pub const KV_READS_MIN_DEPTH: u64 = 1024;

/// One fitted parameter: a knob of an engine on a unit, with its prior.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    /// Engine name.
    pub engine: String,
    /// Unit.
    pub unit: Backend,
    /// The figure.
    pub knob: Knob,
    /// Prior value (the profile's figure before the fit).
    pub prior: f64,
    /// Prior spread, natural-log units.
    pub sigma: f64,
    /// Bounds of the fitted value: the knob's ([`Knob::bounds`]) unless a fit narrows them.
    pub bounds: (f64, f64),
}

impl Param {
    /// `engine.unit.knob`, as in the profile (`llama.cpp.gpu.per_op_s`).
    pub fn label(&self) -> String {
        format!("{}.{}.{}", self.engine, self.unit.name(), self.knob.name())
    }

    /// The unit of `s`'s engine this figure sets: the design's own unit where the figure is
    /// its engine's there, the CPU where the figure is the CPU's of the engine that lends
    /// `s`'s engine its CPU figures (`EngineSpec::cpu_from`) and the design runs elsewhere
    /// (what its unit hands to the CPU runs with them); else none.
    pub fn target(&self, s: &Scenario) -> Option<Backend> {
        let unit = s.workload.backend;
        if self.engine == s.engine.name && self.unit == unit {
            Some(unit)
        } else if self.unit == Backend::Cpu
            && unit != Backend::Cpu
            && s.engine.cpu_from.as_deref() == Some(&self.engine)
        {
            Some(Backend::Cpu)
        } else {
            None
        }
    }

    /// Set the figure to `v` in `s` where it acts there ([`Param::target`]).
    pub fn set_in(&self, s: &mut Scenario, v: f64) {
        if let Some(unit) = self.target(s)
            && let Some(u) = s.engine.unit_mut(unit)
        {
            self.knob.set(u, v);
        }
    }

    /// Whether no row can move the figure from its prior: the KV reads of an (engine, unit)
    /// without a decode row at [`KV_READS_MIN_DEPTH`] tokens or more, held by a tight prior.
    pub fn held(&self) -> bool {
        self.knob == Knob::AttentionKvReads && self.sigma < 0.1
    }
}

/// Every decode knob ([`Knob::DECODE`]) of every (engine, unit) the observations use (see
/// [`params_for`]),
/// and a [`Knob::MixerS`] of each recurrent token mixer ([`MIXER_KINDS`]) an (engine, unit)'s
/// decode rows run, from [`MIXER_PRIOR_S`] (the generic engine hands no layer anywhere).
pub fn default_params(obs: &[Observation]) -> Vec<Param> {
    let mut params = params_for(obs, &Knob::DECODE);
    let mut mixers: Vec<(String, Backend, LayerKind)> = Vec::new();
    for o in obs.iter().filter(|o| o.phase == Phase::Decode) {
        let s = &o.scenario;
        for k in s.model.layer_kinds() {
            let key = (s.engine.name.clone(), s.workload.backend, k);
            if MIXER_KINDS.contains(&k) && !mixers.contains(&key) {
                mixers.push(key);
            }
        }
    }
    for (engine, unit, k) in mixers {
        let knob = Knob::MixerS(k);
        params.push(Param {
            engine,
            unit,
            knob,
            prior: MIXER_PRIOR_S,
            sigma: knob.prior_sigma(),
            bounds: knob.bounds(),
        });
    }
    params
}

/// `knobs` of every (engine, unit) the observations use. The priors are the generic
/// engine's figures on that unit ([`memwall_spec::EngineSpec::generic`]), never the
/// profile's: a profile's figures may themselves be fitted to these rows, and a prior that
/// has seen a device would make leaving that device out meaningless.
///
/// The KV cache's reads per token are pinned at their prior (a spread of 0.05 in logs) for an
/// (engine, unit) without a decode row at [`KV_READS_MIN_DEPTH`] tokens or more: at shallow
/// depths the KV cache is a sliver of the traffic, and a free figure there absorbs whatever
/// else the rows disagree on (llama.cpp on CPUs reached 5.8 reads per token on rows none
/// deeper than 256 tokens), then multiplies every long-context prediction.
pub fn params_for(obs: &[Observation], knobs: &[Knob]) -> Vec<Param> {
    let mut seen: BTreeMap<(String, &'static str), (Backend, &UnitCosts)> = BTreeMap::new();
    let mut deep: std::collections::BTreeSet<(String, &'static str)> = Default::default();
    for o in obs {
        let s = &o.scenario;
        let unit = s.workload.backend;
        if let Some(u) = s.engine.unit(unit) {
            seen.entry((s.engine.name.clone(), unit.name())).or_insert((unit, u));
        }
        let depth = s.workload.prompt_tokens + s.workload.history_tokens.unwrap_or(0);
        if o.phase == Phase::Decode && depth >= KV_READS_MIN_DEPTH {
            deep.insert((s.engine.name.clone(), unit.name()));
        }
    }
    let generic = memwall_spec::EngineSpec::generic();
    let mut out = Vec::new();
    for ((engine, unit_name), (unit, u)) in seen {
        let u = generic.unit(unit).unwrap_or(u);
        let shallow = !deep.contains(&(engine.clone(), unit_name));
        for &knob in knobs {
            // Unpacking is the CPU's measured cycles per format and an NPU runtime's own
            // affair: only a GPU's is fitted.
            if knob == Knob::DequantOps && unit != Backend::Gpu {
                continue;
            }
            let (lo, hi) = knob.bounds();
            out.push(Param {
                engine: engine.clone(),
                unit,
                knob,
                prior: knob.get(u).clamp(lo, hi),
                bounds: (lo, hi),
                sigma: if knob == Knob::AttentionKvReads && shallow { 0.05 } else { knob.prior_sigma() },
            });
        }
    }
    out
}

/// Evaluates observations under parameter values: each observation's tensor plan is built
/// once, and each prediction is the estimator's rate of the observation's phase with the
/// engine's figures set.
pub struct Predictor<'a> {
    obs: &'a [Observation],
    params: &'a [Param],
    plans: Vec<TensorPlan>,
    /// Per observation, the parameters that act on it.
    touch: Vec<Vec<usize>>,
    scratch: Vec<Scenario>,
    /// Whether the fit treats each device's rows as sharing an error of their own
    /// ([`Predictor::across_devices`]).
    device_effect: bool,
}

impl<'a> Predictor<'a> {
    /// Prepare `obs` (each scenario must be valid) for `params`.
    pub fn new(obs: &'a [Observation], params: &'a [Param]) -> Result<Self, CalibError> {
        let mut plans = Vec::with_capacity(obs.len());
        for o in obs {
            o.scenario.validate().map_err(|e| CalibError::Scenario { id: o.id.clone(), source: e.into() })?;
            plans.push(TensorPlan::new(&o.scenario));
        }
        let touch = obs
            .iter()
            .enumerate()
            .map(|(i, o)| {
                let s = &o.scenario;
                // The CPU figures of an engine that lends them act only where the unit hands
                // weights to the CPU.
                let hands_off = CostPlan::with_tensors(s, &plans[i]).is_ok_and(|c| c.host.is_some());
                // A token mixer's time acts on models with layers of its kind.
                let kinds = s.model.layer_kinds();
                params
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| {
                        p.target(s).is_some_and(|u| u == s.workload.backend || hands_off)
                            && p.knob.acts_on(o.phase)
                            && !matches!(p.knob, Knob::MixerS(k) if !kinds.contains(&k))
                    })
                    .map(|(i, _)| i)
                    .collect()
            })
            .collect();
        Ok(Predictor {
            obs,
            params,
            plans,
            touch,
            scratch: obs.iter().map(|o| o.scenario.clone()).collect(),
            device_effect: false,
        })
    }

    /// The same predictor for a fit across devices: each device's rows on an (engine, unit)
    /// share an error of the device's own (its bandwidth, clocks, build and settings as
    /// measured), of spread [`Phase::device_sigma`], beside each row's own (0.1 in logs).
    /// The fit then weighs the rows by generalized least squares with that covariance: what
    /// sets a figure's level is the number of devices behind it,
    /// not of rows, so a device published with a hundred rows does not outvote ten devices
    /// with a few each, and the figure is the one a device no fit saw is best predicted with.
    /// Contrasts within a device (formats, depths, models) keep each row's full weight. A
    /// calibration on one host keeps the plain fit: its level is the host's own.
    pub fn across_devices(mut self) -> Self {
        self.device_effect = true;
        self
    }

    /// The parameters acting on observation `i`.
    pub fn touching(&self, i: usize) -> &[usize] {
        &self.touch[i]
    }

    /// Predicted tok/s of observation `i` (of its phase) with parameter values `values` (not
    /// logs).
    pub fn predict(&mut self, i: usize, values: &[f64]) -> Result<f64, CalibError> {
        let s = &mut self.scratch[i];
        for &k in &self.touch[i] {
            let p = &self.params[k];
            p.set_in(s, values[k]);
        }
        let plan = CostPlan::with_tensors(s, &self.plans[i])
            .map_err(|e| CalibError::Scenario { id: self.obs[i].id.clone(), source: e })?;
        let e = estimate_with(&plan, s);
        Ok(match self.obs[i].phase {
            Phase::Decode => e.decode_tok_s,
            Phase::Prefill => e.prefill_tok_s,
        })
    }
}

/// The result of a fit.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    /// Fitted value of each parameter (same order as the parameters).
    pub values: Vec<f64>,
    /// Root mean square of the observation residuals `ln(pred / measured)`.
    pub rms_log: f64,
    /// Iterations taken.
    pub iterations: usize,
}

/// How far a row is trusted: its residual is `ln(pred / measured) / ROW_SIGMA`.
const ROW_SIGMA: f64 = 0.1;

/// Soft-L1 scale of the scaled residuals.
const HUBER_C: f64 = 3.0;

/// Weight that turns a residual's square into its soft-L1 loss:
/// `ρ(r) = 2c²(√(1 + (r/c)²) − 1) = 2r² / (√(1 + (r/c)²) + 1)`, so `√ρ(r) / |r|` =
/// `√(2 / (√(1 + (r/c)²) + 1))` scales the residual to make least squares minimize `Σ ρ`.
fn robust_scale(r: f64) -> f64 {
    (2.0 / (soft(r) + 1.0)).sqrt()
}

/// `√(1 + (r/c)²)`.
fn soft(r: f64) -> f64 {
    (1.0 + (r / HUBER_C).powi(2)).sqrt()
}

/// Slope of the robust residual `sign(r)·√ρ(r)` in `r`: `|ρ'(r)| / (2√ρ(r))` with
/// `ρ'(r) = 2r / s`, `s = √(1 + (r/c)²)`, which is `√((s + 1)/2) / s` (written so, with
/// `ρ = 2r²/(s + 1)`, it does not cancel for tiny `r`); 1 at `r` = 0, ½·[`robust_scale`] far
/// out. The Jacobian must carry this slope, not the scale itself: with the scale,
/// Gauss–Newton's fixed point is not the loss's minimum once rows are far off, and
/// Levenberg–Marquardt crawls towards it.
fn robust_slope(r: f64) -> f64 {
    let s = soft(r);
    ((s + 1.0) / 2.0).sqrt() / s
}

/// The whitening of the rows `use_obs` for a fit across devices ([`Predictor::across_devices`]):
/// per row, its group (the rows of one device on one engine and unit, of one phase) and per
/// group its `(shrink c, scale a)`, each row becoming `a·(x − c·mean)` ([`whiten`], then the
/// scale).
///
/// Decode: a group of `n` rows whose errors are `σ²I + τ²11ᵀ` (row spread `σ` =
/// [`ROW_SIGMA`], device spread `τ` = [`Phase::device_sigma`]) is whitened by
/// `Σ^(−1/2) = (I − c·11ᵀ/n) / σ` with `c = 1 − σ / √(σ² + n τ²)`, `a` = 1: each row minus `c`
/// times its group's mean. One decode row alone (`n` = 1, `τ` = σ) keeps `σ/√(σ²+τ²)` = 0.71 of
/// its residual; a hundred rows of one device weigh, in their mean, at most what `1/τ²` allows,
/// twice the single row's `1/(σ²+τ²)`, where a plain fit would weigh them a hundred times.
/// Contrasts within a device keep each row's full weight: they inform the format, depth and
/// model knobs.
///
/// Prefill: each row is scaled by `a = σ / √(σ² + n τ²)`, `c` = 0, so a device's rows weigh in
/// their level exactly what the decode whitening gives its mean (`n a² / σ² = 1/(σ²/n + τ²)`),
/// but nothing is taken out of the level. A prompt's one fitted figure is a level, and the
/// whitening left it almost unidentified (`1 − c` = 0.1 for 30 rows): the fit then chose it by
/// the within-device contrasts the model cannot express (llama.cpp's Hexagon backend runs
/// k-quants on the CPU, 3.5× slower than Q4_0 on the same phone), and ended 3.5× fast in sample
/// on every Hexagon device (245 % median in-sample error, 49 % so weighted; leave-one-device-out
/// llama.cpp on CPUs 25.0 % → 22.4 %, Vulkan 62 % → 49 %). Weighting decode the same way was
/// tried and lost, twice (leave-one-SoC-out 17.0 % → 19.9 %; with the soft-L1 threshold kept
/// per row, 15.8 % → 18.8 %, family out 31.9 % → 38.9 %).
fn device_whitening(pred: &Predictor, use_obs: &[usize]) -> (Vec<usize>, Vec<(f64, f64)>) {
    if !pred.device_effect {
        return (vec![0; use_obs.len()], vec![(0.0, 1.0)]);
    }
    let mut ids: BTreeMap<(&str, &str, &'static str, Phase), usize> = BTreeMap::new();
    let mut counts: Vec<(usize, Phase)> = Vec::new();
    let groups = use_obs
        .iter()
        .map(|&i| {
            let o = &pred.obs[i];
            let key = (o.device.as_str(), o.scenario.engine.name.as_str(), o.scenario.workload.backend.name(), o.phase);
            let next = ids.len();
            let g = *ids.entry(key).or_insert(next);
            if g == counts.len() {
                counts.push((0, o.phase));
            }
            counts[g].0 += 1;
            g
        })
        .collect();
    let shrink = counts
        .iter()
        .map(|&(n, phase)| {
            let tau = phase.device_sigma();
            let k = ROW_SIGMA / (ROW_SIGMA * ROW_SIGMA + n as f64 * tau * tau).sqrt();
            match phase {
                Phase::Decode => (1.0 - k, 1.0),
                Phase::Prefill => (0.0, k),
            }
        })
        .collect();
    (groups, shrink)
}

/// `v` (one value per row) less `c` times the mean of its group `g`, with `(c, a) =
/// shrink[g]` ([`device_whitening`]); the fit multiplies each row's robust residual by `a`
/// afterwards, so the soft-L1 threshold stays a row's own (a prompt row far off still counts
/// linearly beyond about 35 %).
fn whiten(v: &[f64], groups: &[usize], shrink: &[(f64, f64)]) -> Vec<f64> {
    let mut sum = vec![0.0; shrink.len()];
    let mut n = vec![0.0; shrink.len()];
    for (x, &g) in v.iter().zip(groups) {
        sum[g] += x;
        n[g] += 1.0;
    }
    v.iter().zip(groups).map(|(x, &g)| x - shrink[g].0 * sum[g] / n[g]).collect()
}

/// Fit `params` to the observations `use_obs` (indices into the predictor's observations).
pub fn fit(pred: &mut Predictor, use_obs: &[usize]) -> Result<Fit, CalibError> {
    let params = pred.params;
    let n = params.len();
    if use_obs.is_empty() {
        return Err(CalibError::Empty("no observation to fit".into()));
    }
    let bounds: Vec<(f64, f64)> = params.iter().map(|p| (p.bounds.0.ln(), p.bounds.1.ln())).collect();
    let prior: Vec<f64> = params.iter().map(|p| p.prior.ln()).collect();
    let (groups, shrink) = device_whitening(pred, use_obs);
    let mut theta = prior.clone();
    let values = |t: &[f64]| t.iter().map(|x| x.exp()).collect::<Vec<f64>>();
    // Residuals (whitened, then robust-scaled), their raw values and their whitened values.
    type Residuals = (Vec<f64>, Vec<f64>, Vec<f64>);
    let residuals = |pred: &mut Predictor, t: &[f64]| -> Result<Residuals, CalibError> {
        let v = values(t);
        let mut raw = Vec::with_capacity(use_obs.len());
        for &i in use_obs {
            let p = pred.predict(i, &v)?;
            raw.push((p / pred.obs[i].measured_tok_s).ln());
        }
        let white = whiten(&raw, &groups, &shrink);
        let mut r: Vec<f64> = white
            .iter()
            .zip(&groups)
            .map(|(&x, &g)| shrink[g].1 * x / ROW_SIGMA * robust_scale(x / ROW_SIGMA))
            .collect();
        r.extend(t.iter().zip(&prior).zip(params).map(|((x, p0), p)| (x - p0) / p.sigma));
        Ok((r, raw, white))
    };
    let cost = |r: &[f64]| r.iter().map(|x| x * x).sum::<f64>();
    let (mut r, mut raw, mut white) = residuals(pred, &theta)?;
    let mut lambda = 1e-2;
    let mut iterations = 0;
    for _ in 0..200 {
        iterations += 1;
        // Jacobian of the raw residuals by forward differences in log space (each parameter
        // moves only the observations it acts on), whitened column by column as the
        // residuals are, then robust-scaled.
        let m = r.len();
        let mut jac = DMatrix::<f64>::zeros(m, n);
        let h = 1e-5;
        let v0 = values(&theta);
        for (row, &i) in use_obs.iter().enumerate() {
            let touching = pred.touching(i).to_vec();
            for k in touching {
                let mut v = v0.clone();
                v[k] = (theta[k] + h).exp();
                let p = pred.predict(i, &v)?;
                jac[(row, k)] = ((p / pred.obs[i].measured_tok_s).ln() - raw[row]) / h;
            }
        }
        for k in 0..n {
            let column: Vec<f64> = (0..use_obs.len()).map(|row| jac[(row, k)]).collect();
            for (row, d) in whiten(&column, &groups, &shrink).into_iter().enumerate() {
                jac[(row, k)] = shrink[groups[row]].1 * d * (robust_slope(white[row] / ROW_SIGMA) / ROW_SIGMA);
            }
            jac[(use_obs.len() + k, k)] = 1.0 / params[k].sigma;
        }
        let rv = DVector::from_vec(r.clone());
        let jt = jac.transpose();
        let a = &jt * &jac;
        let g = &jt * rv;
        let mut improved = false;
        for _ in 0..12 {
            let mut damped = a.clone();
            for k in 0..n {
                damped[(k, k)] += lambda * (a[(k, k)] + 1e-9);
            }
            let Some(step) = damped.lu().solve(&(-&g)) else {
                lambda *= 10.0;
                continue;
            };
            let trial: Vec<f64> =
                theta.iter().zip(step.iter()).zip(&bounds).map(|((t, d), (lo, hi))| (t + d).clamp(*lo, *hi)).collect();
            let (r2, raw2, white2) = residuals(pred, &trial)?;
            if cost(&r2) < cost(&r) {
                let moved = trial.iter().zip(&theta).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
                theta = trial;
                r = r2;
                raw = raw2;
                white = white2;
                lambda = (lambda / 3.0).max(1e-9);
                improved = moved > 1e-7;
                break;
            }
            lambda *= 4.0;
        }
        if !improved {
            break;
        }
    }
    let rms_log = (raw.iter().map(|x| x * x).sum::<f64>() / raw.len() as f64).sqrt();
    Ok(Fit { values: values(&theta), rms_log, iterations })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_negative_least_squares_by_hand() {
        let x = DMatrix::from_row_slice(3, 2, &[1.0, 0.0, 0.0, 1.0, 1.0, 1.0]);
        let y = DVector::from_row_slice(&[2.0, -1.0, 1.0]);
        let (free, _) = least_squares(&x, &y).unwrap();
        assert!((free[0] - 2.0).abs() < 1e-12 && (free[1] + 1.0).abs() < 1e-12);
        let b = least_squares_non_negative(&x, &y).unwrap();
        assert!((b[0] - 1.5).abs() < 1e-12 && b[1] == 0.0, "{b}");
        // A fit already non-negative is left as it is.
        let y = DVector::from_row_slice(&[2.0, 1.0, 3.0]);
        let b = least_squares_non_negative(&x, &y).unwrap();
        assert!((b[0] - 2.0).abs() < 1e-12 && (b[1] - 1.0).abs() < 1e-12, "{b}");
        // All negative: nothing.
        let b = least_squares_non_negative(&x, &(-y)).unwrap();
        assert_eq!(b.as_slice(), [0.0, 0.0]);
    }

    #[test]
    fn each_knob_acts_on_the_phases_whose_time_it_enters() {
        // A prefill chunk: weights read (bandwidth share), operators (per-op cost), its own
        // efficiency; no per-token cost, no repeated KV reads, not decode's efficiency.
        let prefill: Vec<Knob> = [Knob::DECODE.as_slice(), &Knob::PREFILL]
            .concat()
            .into_iter()
            .filter(|k| k.acts_on(Phase::Prefill))
            .collect();
        // A prompt's chunks unpack their weights too.
        assert_eq!(
            prefill,
            [Knob::BandwidthShare, Knob::PerOpS, Knob::DequantOps, Knob::Overlap, Knob::PrefillEfficiency]
        );
        assert_eq!([Knob::DECODE.as_slice(), &Knob::PREFILL].concat(), Knob::ALL);
        assert!(Knob::DECODE.iter().all(|k| k.acts_on(Phase::Decode)));
        assert!(!Knob::PrefillEfficiency.acts_on(Phase::Decode));
        let mut u = memwall_spec::EngineSpec::generic().cpu.unwrap();
        Knob::PrefillEfficiency.set(&mut u, 0.25);
        assert_eq!((u.prefill_efficiency, Knob::PrefillEfficiency.get(&u)), (0.25, 0.25));
        assert_eq!(Knob::PrefillEfficiency.name(), "prefill_efficiency");
        let mut g = memwall_spec::EngineSpec::generic().gpu.unwrap();
        Knob::DequantOps.set(&mut g, 7.0);
        assert_eq!((g.dequant_ops_per_weight, Knob::DequantOps.name()), (7.0, "dequant_ops_per_weight"));
    }

    #[test]
    fn a_token_mixers_time_is_a_decode_figure_set_by_its_kind() {
        let k = Knob::MixerS(LayerKind::Linear);
        assert!(k.acts_on(Phase::Decode) && k.acts_on(Phase::Prefill));
        let mut u = memwall_spec::EngineSpec::generic().npu.unwrap();
        assert_eq!(k.get(&u), 0.0);
        k.set(&mut u, 4e-3);
        assert_eq!((u.mixer_s.get("linear").copied(), k.get(&u), k.name()), (Some(4e-3), 4e-3, "mixer_s.linear"));
        for kind in LayerKind::ALL {
            assert_eq!(Knob::MixerS(kind).name(), format!("mixer_s.{}", kind.name()));
        }
    }

    #[test]
    fn an_engines_cpu_figures_act_on_the_engine_that_borrows_them_off_the_cpu() {
        let p = |engine: &str, unit| Param {
            engine: engine.into(),
            unit,
            knob: Knob::BandwidthShare,
            prior: 1.0,
            sigma: 1.0,
            bounds: (0.02, 1.5),
        };
        let mut s = Scenario {
            model: memwall_catalog::load_model("llama-3.2-1b").unwrap(),
            device: memwall_catalog::load_device("snapdragon-8-gen2-8gb").unwrap(),
            weights: memwall_spec::WeightQuant::new("Q4_0".parse().unwrap()),
            kv: Default::default(),
            workload: Default::default(),
            cost: Default::default(),
            engine: memwall_catalog::load_engine("llama.cpp-hexagon").unwrap(),
            assume_defaults: true,
            sim: Default::default(),
        };
        s.workload.backend = Backend::Npu;
        assert_eq!(p("llama.cpp-hexagon", Backend::Npu).target(&s), Some(Backend::Npu));
        assert_eq!(p("llama.cpp", Backend::Cpu).target(&s), Some(Backend::Cpu));
        assert_eq!(p("llama.cpp", Backend::Gpu).target(&s), None);
        assert_eq!(p("llama.cpp-opencl", Backend::Cpu).target(&s), None);
        p("llama.cpp", Backend::Cpu).set_in(&mut s, 0.5);
        assert_eq!(s.engine.cpu.as_ref().unwrap().bandwidth_share, 0.5);
        // On the CPU the design is the engine's own CPU run: the lender's figures do not act.
        s.workload.backend = Backend::Cpu;
        assert_eq!(p("llama.cpp", Backend::Cpu).target(&s), None);
    }

    #[test]
    fn whitening_gives_the_generalized_least_squares_form_of_a_device_s_rows() {
        // Two decode rows of one device, one of another (σ = τ = 0.1), grouped and shrunk by
        // the fit's own rule; the whitened sum of squares / σ² must equal vᵀ Σ⁻¹ v with
        // Σ = σ²I + τ²11ᵀ within each device.
        let table = "id,unit_device,device,ram_gib,model,weights,engine,backend,threads,depth,gen_tokens,measured_tok_s,exclude,source\n\
                     a,pi-a,raspberry-pi-5-8gb,,llama-3.2-1b,Q4_0,llama.cpp,cpu,4,0,128,12.0,,t\n\
                     b,pi-a,raspberry-pi-5-8gb,,llama-3.2-3b,Q4_0,llama.cpp,cpu,4,0,128,5.0,,t\n\
                     c,pi-b,raspberry-pi-5-8gb,,llama-3.2-1b,Q4_0,llama.cpp,cpu,4,0,128,11.0,,t\n";
        let rows = crate::published::parse_table(table, "t.csv").unwrap();
        let obs: Vec<Observation> = rows.iter().map(|r| crate::published::observation(r).unwrap()).collect();
        let params = default_params(&obs);
        let pred = Predictor::new(&obs, &params).unwrap().across_devices();
        let (groups, shrink) = device_whitening(&pred, &[0, 1, 2]);
        assert_eq!(groups, [0, 0, 1]);
        // By hand: c(2) = 1 − 0.1/√0.03 = 0.42265, c(1) = 1 − 0.1/√0.02 = 0.29289.
        assert!((shrink[0].0 - 0.42265).abs() < 1e-5 && (shrink[1].0 - 0.29289).abs() < 1e-5, "{shrink:?}");
        assert_eq!((shrink[0].1, shrink[1].1), (1.0, 1.0));
        let v = [1.0, 3.0, -2.0];
        let w = whiten(&v, &groups, &shrink);
        assert!((w[0] - (1.0 - 0.42265 * 2.0)).abs() < 1e-4 && (w[1] - (3.0 - 0.42265 * 2.0)).abs() < 1e-4);
        let sigma = DMatrix::from_row_slice(3, 3, &[0.02, 0.01, 0.0, 0.01, 0.02, 0.0, 0.0, 0.0, 0.02]);
        let vv = DVector::from_row_slice(&v);
        let gls = (vv.transpose() * sigma.try_inverse().unwrap() * &vv)[(0, 0)];
        let ours = w.iter().map(|x| x * x).sum::<f64>() / 0.01;
        assert!((gls - ours).abs() < 1e-9 * gls, "{gls} vs {ours}");
        // A plain fit (one host's calibration) has no device effect: one group, no shrink.
        let plain = Predictor::new(&obs, &params).unwrap();
        let (groups, shrink) = device_whitening(&plain, &[0, 1, 2]);
        assert_eq!(whiten(&v, &groups, &shrink), v);
    }

    #[test]
    fn the_robust_residual_and_its_slope_by_hand() {
        // ρ(r) = 2c²(√(1 + (r/c)²) − 1), c = 3: at r = 4, √(1 + 16/9) = 5/3, ρ = 18 × 2/3 = 12,
        // the residual √12 = 3.4641 and its slope ρ'/(2√ρ) = (4 / (5/3)) / √12 = 0.69282.
        assert!((4.0 * robust_scale(4.0) - 12f64.sqrt()).abs() < 1e-12);
        assert!((robust_slope(4.0) - 2.4 / 12f64.sqrt()).abs() < 1e-12);
        // Against a central difference, near 0 too (no cancellation) and far out.
        for r in [1e-9f64, 1e-7, 0.3, 2.0, 30.0] {
            let f = |x: f64| x * robust_scale(x);
            let h = 1e-6 * r.max(1e-3);
            let numeric = (f(r + h) - f(r - h)) / (2.0 * h);
            assert!((robust_slope(r) - numeric).abs() < 1e-6, "r = {r}: {} vs {numeric}", robust_slope(r));
        }
        assert_eq!((robust_scale(0.0), robust_slope(0.0)), (1.0, 1.0));
    }

    #[test]
    fn prefill_rows_are_weighted_by_device_and_keep_their_level() {
        // Three prompt rows of one board, one of another (σ = 0.1, τ = 0.2): each row scaled by
        // a = σ/√(σ² + nτ²), nothing subtracted, so a device's common offset x weighs
        // n·a²·x²/σ² = x²/(σ²/n + τ²), what the decode whitening gives a group's mean.
        let table = "id,unit_device,device,ram_gib,model,weights,engine,backend,threads,depth,gen_tokens,measured_tok_s,\
                     prefill_tokens,prefill_depth,measured_prefill_tok_s,exclude,source\n\
                     a,pi-a,raspberry-pi-5-8gb,,llama-3.2-1b,Q4_0,llama.cpp,cpu,4,0,128,12.0,64,0,40.0,,t\n\
                     b,pi-a,raspberry-pi-5-8gb,,llama-3.2-3b,Q4_0,llama.cpp,cpu,4,0,128,5.0,64,0,15.0,,t\n\
                     c,pi-a,raspberry-pi-5-8gb,,llama-3.2-1b,Q8_0,llama.cpp,cpu,4,0,128,8.0,64,0,38.0,,t\n\
                     d,pi-b,raspberry-pi-5-8gb,,llama-3.2-1b,Q4_0,llama.cpp,cpu,4,0,128,11.0,64,0,35.0,,t\n";
        let rows = crate::published::parse_table(table, "t.csv").unwrap();
        let obs: Vec<Observation> =
            rows.iter().map(|r| crate::published::prefill_observation(r).unwrap().unwrap()).collect();
        let params = params_for(&obs, &Knob::PREFILL);
        let pred = Predictor::new(&obs, &params).unwrap().across_devices();
        let (groups, shrink) = device_whitening(&pred, &[0, 1, 2, 3]);
        assert_eq!(groups, [0, 0, 0, 1]);
        // By hand: a(3) = 0.1/√(0.01 + 3·0.04) = 0.27735, a(1) = 0.1/√0.05 = 0.44721.
        assert_eq!((shrink[0].0, shrink[1].0), (0.0, 0.0));
        assert!((shrink[0].1 - 0.27735).abs() < 1e-5 && (shrink[1].1 - 0.44721).abs() < 1e-5, "{shrink:?}");
        let x = 0.5;
        let w = whiten(&[x, x, x, 0.0], &groups, &shrink);
        assert_eq!(w, [x, x, x, 0.0], "nothing is taken out of a prompt row");
        let level = w.iter().zip(&groups).map(|(v, &g)| (shrink[g].1 * v).powi(2)).sum::<f64>() / 0.01;
        assert!((level - x * x / (0.01 / 3.0 + 0.04)).abs() < 1e-9, "{level}");
    }

    #[test]
    fn across_devices_a_device_with_many_rows_does_not_outvote_the_others() {
        // One board published ten times at 12 tok/s, two others once each at 6 tok/s, same
        // design: a plain fit follows the ten rows, a fit across devices the three devices.
        let mut table = String::from(
            "id,unit_device,device,ram_gib,model,weights,engine,backend,threads,depth,gen_tokens,measured_tok_s,exclude,source\n",
        );
        for i in 0..10 {
            table += &format!("a{i},pi-a,raspberry-pi-5-8gb,,llama-3.2-1b,Q4_0,llama.cpp,cpu,4,0,128,12.0,,t\n");
        }
        table += "b,pi-b,raspberry-pi-5-8gb,,llama-3.2-1b,Q4_0,llama.cpp,cpu,4,0,128,6.0,,t\n";
        table += "c,pi-c,raspberry-pi-5-8gb,,llama-3.2-1b,Q4_0,llama.cpp,cpu,4,0,128,6.0,,t\n";
        let rows = crate::published::parse_table(&table, "t.csv").unwrap();
        let obs: Vec<Observation> = rows.iter().map(|r| crate::published::observation(r).unwrap()).collect();
        let params = default_params(&obs);
        let all: Vec<usize> = (0..obs.len()).collect();
        let rate = |mut pred: Predictor| {
            let v = fit(&mut pred, &all).unwrap().values;
            pred.predict(0, &v).unwrap()
        };
        let plain = rate(Predictor::new(&obs, &params).unwrap());
        let across = rate(Predictor::new(&obs, &params).unwrap().across_devices());
        assert!(plain > 10.0, "plain fit {plain}");
        assert!(across > 6.0 && across < plain - 1.0, "across devices {across}, plain {plain}");
    }

    #[test]
    fn only_a_gpu_s_unpacking_is_fitted() {
        let table = "id,unit_device,device,ram_gib,model,weights,engine,backend,threads,depth,gen_tokens,measured_tok_s,exclude,source\n\
                     a,pi5,raspberry-pi-5-8gb,,llama-3.2-1b,Q4_0,llama.cpp,cpu,4,0,128,12.0,,t\n\
                     b,s24,snapdragon-8-gen3-16gb,,llama-3.2-1b,Q4_0,llama.cpp-opencl,gpu,,0,128,20.0,,t\n\
                     c,s24,snapdragon-8-gen3-16gb,,llama-3.2-1b,Q4_0,llama.cpp-hexagon,npu,,0,128,30.0,,t\n";
        let rows = crate::published::parse_table(table, "t.csv").unwrap();
        let obs: Vec<Observation> = rows.iter().map(|r| crate::published::observation(r).unwrap()).collect();
        let params = default_params(&obs);
        let dq: Vec<String> = params.iter().filter(|p| p.knob == Knob::DequantOps).map(Param::label).collect();
        assert_eq!(dq, ["llama.cpp-opencl.gpu.dequant_ops_per_weight"]);
        // Its prior is the generic GPU estimate, 4 operations per Q4_0 weight.
        assert_eq!(params.iter().find(|p| p.knob == Knob::DequantOps).unwrap().prior, 4.0);
    }
}
