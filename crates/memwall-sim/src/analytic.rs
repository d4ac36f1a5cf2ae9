//! The closed-form analytic estimator: per-token bytes by source and arithmetic, decode time
//! from an overlap of memory and compute time plus overheads, prefill, TTFT, tokens/s and
//! energy per token, with the term that binds.
//!
//! It sums the steps of the cost plan ([`crate::cost`]) in closed form; every formula lives
//! in [`crate::cost::formulas`], whose functions the discrete-event simulator calls too.

use memwall_spec::Scenario;
use serde::Serialize;

use crate::SimError;
use crate::cost::formulas::battery_pct_per_hour;
use crate::cost::plan::{CostPlan, TensorPlan};
use crate::cost::step::{Binding, StepTime};

/// The analytic estimate of one scenario.
#[derive(Debug, Clone, Serialize)]
pub struct Estimate {
    /// Total parameters.
    pub params: u64,
    /// Parameters whose weights a decoded token reads.
    pub active_params: u64,
    /// Weight bytes.
    pub weight_bytes: u64,
    /// Average bits per weight.
    pub weight_bpw: f64,
    /// KV cache bytes.
    pub kv_bytes: u64,
    /// Recurrent state bytes.
    pub state_bytes: u64,
    /// Compute-buffer bytes.
    pub compute_bytes: u64,
    /// Runtime overhead bytes.
    pub overhead_bytes: u64,
    /// Total footprint bytes.
    pub total_bytes: u64,
    /// Budget: RAM − OS − other apps − margin.
    pub budget_bytes: i64,
    /// Fits within the budget.
    pub fits: bool,
    /// Budget − total (negative: shortfall).
    pub headroom_bytes: i64,
    /// Threads.
    pub threads: u32,
    /// Decode tokens/s (all sequences), averaged over the generated tokens: the tokens
    /// decoded at depths `history + prompt` to `history + prompt + gen − 1` (tokens already in
    /// the KV cache), whatever `context_tokens` allocates.
    pub decode_tok_s: f64,
    /// The depth the per-token figures (`decode_terms`, bytes and MACs per token) are taken
    /// at: tokens attended by the middle generated token, `history + prompt + ⌊gen / 2⌋`
    /// ([`mean_decode_context`]).
    pub decode_depth_tokens: u64,
    /// The 80 % interval of the decode rate: `decode_tok_s × the 10th and 90th percentiles of
    /// measured ÷ predicted` over the engine's rows on this unit, each predicted by a fit
    /// that never saw its device (`memwall validate --devices`); `None` for an engine
    /// without a cross-validated error (the generic one).
    pub decode_tok_s_interval: Option<[f64; 2]>,
    /// Mean seconds per decode step.
    pub decode_s_per_token: f64,
    /// Prefill tokens/s.
    pub prefill_tok_s: f64,
    /// The 80 % interval of the prefill rate: `prefill_tok_s × the 10th and 90th percentiles
    /// of measured ÷ predicted` over the engine's prompt rows on this unit, each predicted
    /// by a fit that never saw its device; `None` for an engine without one, or where the
    /// unit's peak arithmetic is a class default.
    pub prefill_tok_s_interval: Option<[f64; 2]>,
    /// Prefill seconds.
    pub prefill_s: f64,
    /// Time to first token: prefill + sampling, seconds.
    pub ttft_s: f64,
    /// Joules per decoded token.
    pub energy_j_per_token: f64,
    /// Joules of one reply: its prompt's prefill and its generated tokens, per sequence.
    pub reply_energy_j: f64,
    /// Battery charge one reply draws, mAh ([`memwall_spec::BatterySpec::mah_for`] of
    /// `reply_energy_j`); None without a battery in the device.
    pub battery_mah_per_reply: Option<f64>,
    /// Share of the battery an hour of chat takes, %: replies back to back (no reading
    /// time between them, so an upper bound), at their mean power
    /// ([`battery_pct_per_hour`]); None without a battery.
    pub battery_pct_per_hour: Option<f64>,
    /// DRAM bytes per decoded token (at the mean context).
    pub dram_bytes_per_token: f64,
    /// Weight bytes per decoded token.
    pub weight_bytes_per_token: f64,
    /// KV/state bytes per decoded token.
    pub kv_bytes_per_token: f64,
    /// Weight bytes per decoded token read from storage, because the design does not fit
    /// and the memory-mapped weights beyond the budget stay on flash (0 when it fits).
    pub flash_bytes_per_token: f64,
    /// Weight bytes that stay resident in DRAM.
    pub resident_weight_bytes: u64,
    /// Multiply-adds per decoded token.
    pub macs_per_token: f64,
    /// Decode time terms at the mean context.
    pub decode_terms: StepTime,
    /// What limits decode.
    pub binding: Binding,
    /// What limits prefill.
    pub prefill_binding: Option<Binding>,
    /// The context exceeds the model's trained `max_context` ([`Scenario::context_beyond_max`]).
    pub context_beyond_max: bool,
    /// Device figures taken from class defaults under `assume_defaults`, comma-separated
    /// (empty: none).
    pub assumed: String,
    /// Share of a decoded token's weight bytes the unit hands to the CPU: matrices in formats
    /// the engine does not multiply there, or with more rows than it allows
    /// ([`memwall_spec::UnitCosts::cpu_fallback`], [`memwall_spec::UnitCosts::max_rows`]); 0
    /// where the unit runs them all.
    pub cpu_share: f64,
}

/// The context at which the estimate reports a decode step's terms and bytes: the middle of
/// the reply, `history + prompt + ⌊gen / 2⌋` tokens already cached (`gen` at least 1).
pub fn mean_decode_context(s: &Scenario) -> u64 {
    s.history_tokens() + s.workload.prompt_tokens + s.workload.gen_tokens.max(1) / 2
}

/// Estimate one scenario in closed form.
pub fn estimate(s: &Scenario) -> Result<Estimate, SimError> {
    let plan = CostPlan::new(s)?;
    Ok(estimate_with(&plan, s))
}

/// An estimator for many design points: it keeps the [`TensorPlan`] (and the validation) of
/// the last (model, device, weight mix, cost model) it saw, so points that share them (a
/// sweep over context, KV format, batch, threads or workload) pay only for the terms that
/// change. Results are identical to [`estimate`]'s. One per thread.
#[derive(Debug, Default)]
pub struct Estimator {
    last: Option<Shared>,
    /// Plans by the caller's key ([`Estimator::estimate_keyed`]).
    keyed: std::collections::HashMap<u64, TensorPlan>,
    /// The cost plan of the last keyed point, with its key, KV formats and workload (token
    /// counts aside): a point that differs only in token counts reuses it.
    last_plan: Option<(u64, memwall_spec::KvQuant, memwall_spec::Workload, CostPlan)>,
}

/// The workload with its token counts (prompt, generated, history, context) cleared.
fn without_tokens(w: &memwall_spec::Workload) -> memwall_spec::Workload {
    memwall_spec::Workload { prompt_tokens: 0, gen_tokens: 0, history_tokens: None, context_tokens: 0, ..w.clone() }
}

#[derive(Debug)]
struct Shared {
    model: memwall_spec::ModelSpec,
    device: memwall_spec::DeviceSpec,
    weights: memwall_spec::WeightQuant,
    cost: memwall_spec::CostModel,
    engine: memwall_spec::EngineSpec,
    plan: TensorPlan,
}

impl Estimator {
    /// Plans an estimator keeps by key before it starts over.
    pub const MAX_KEYED_PLANS: usize = 1024;

    /// A new estimator with nothing cached.
    pub fn new() -> Self {
        Self::default()
    }

    /// Estimate `s` (validated as [`estimate`] validates it).
    pub fn estimate(&mut self, s: &Scenario) -> Result<Estimate, SimError> {
        let same = self.last.as_ref().is_some_and(|c| {
            c.weights == s.weights
                && c.cost == s.cost
                && c.model == s.model
                && c.device == s.device
                && c.engine == s.engine
        });
        if same {
            s.validate_point()?;
        } else {
            s.validate()?;
            self.last = Some(Shared {
                model: s.model.clone(),
                device: s.device.clone(),
                weights: s.weights.clone(),
                cost: s.cost.clone(),
                engine: s.engine.clone(),
                plan: TensorPlan::new(s),
            });
        }
        let tp = &self.last.as_ref().expect("cached above").plan;
        Ok(estimate_with(&CostPlan::with_tensors(s, tp)?, s))
    }

    /// Estimate `s` with the plan kept under `key`, for a caller that knows which points
    /// share a model, device, weight mix, cost model and engine (a sweep numbering the
    /// combinations of the axes that set them) and so need not compare them: **every
    /// scenario given one key must have the same model, device, weights, cost model, engine,
    /// `assume_defaults` and `sim` settings**; consecutive points that differ only in the
    /// workload's token counts share the rest of their cost plan too. The first point of a
    /// key is validated whole, the others as [`Scenario::validate_point`] does. Results are
    /// identical to [`estimate`]'s.
    pub fn estimate_keyed(&mut self, key: u64, s: &Scenario) -> Result<Estimate, SimError> {
        let tp = match self.keyed.get(&key) {
            Some(tp) => {
                s.validate_point()?;
                tp
            }
            None => {
                s.validate()?;
                if self.keyed.len() >= Self::MAX_KEYED_PLANS {
                    self.keyed.clear();
                }
                self.last_plan = None;
                self.keyed.entry(key).or_insert_with(|| TensorPlan::new(s))
            }
        };
        let bare = without_tokens(&s.workload);
        let plan = match &self.last_plan {
            Some((k, kv, w, plan)) if *k == key && *kv == s.kv && *w == bare => plan.with_tokens_of(s, tp)?,
            _ => CostPlan::with_tensors(s, tp)?,
        };
        let e = estimate_with(&plan, s);
        self.last_plan = Some((key, s.kv, bare, plan));
        Ok(e)
    }
}

/// Estimate with a precomputed plan.
pub fn estimate_with(plan: &CostPlan, s: &Scenario) -> Estimate {
    let wl = &s.workload;
    let p = wl.prompt_tokens;
    let g = wl.gen_tokens.max(1);
    // Decode: Σ over generated tokens of the step time at their context (piecewise-linear
    // closed form, exact to rounding).
    let h = s.history_tokens();
    let (decode_s, energy) = plan.decode_sums(h + p, g);
    let mid = mean_decode_context(s);
    let (w_mid, t_mid) = plan.decode_step(mid);
    let (prefill_s, prefill_j, prefill_last) = plan.prefill(h, p, wl.ubatch);
    let b = wl.batch as f64;
    let battery = s.device.battery.map(|bat| {
        let reply_j = (prefill_j + energy) / b;
        (bat.mah_for(reply_j), battery_pct_per_hour((prefill_j + energy) / (prefill_s + decode_s), bat.energy_j()))
    });
    let fp = &plan.footprint;
    let decode_tok_s = b * g as f64 / decode_s;
    let prefill_tok_s = if prefill_s > 0.0 { b * p as f64 / prefill_s } else { 0.0 };
    Estimate {
        params: plan.weights.params,
        active_params: plan.active_params,
        weight_bytes: fp.weights,
        weight_bpw: plan.weights.bits_per_weight(),
        kv_bytes: fp.kv,
        state_bytes: fp.state,
        compute_bytes: fp.compute,
        overhead_bytes: fp.overhead,
        total_bytes: fp.total,
        budget_bytes: fp.budget,
        fits: fp.fits,
        headroom_bytes: fp.headroom,
        threads: plan.threads(),
        decode_tok_s,
        decode_depth_tokens: mid,
        decode_tok_s_interval: plan.error_ratio.map(|[lo, hi]| [lo * decode_tok_s, hi * decode_tok_s]),
        decode_s_per_token: decode_s / g as f64,
        prefill_tok_s,
        prefill_tok_s_interval: plan
            .prefill_error_ratio
            .filter(|_| prefill_s > 0.0)
            .map(|[lo, hi]| [lo * prefill_tok_s, hi * prefill_tok_s]),
        prefill_s,
        ttft_s: if p > 0 { prefill_s + plan.per_token_s } else { plan.decode_step(h).1.total },
        energy_j_per_token: energy / (g as f64 * b),
        reply_energy_j: (prefill_j + energy) / b,
        battery_mah_per_reply: battery.map(|x| x.0),
        battery_pct_per_hour: battery.map(|x| x.1),
        dram_bytes_per_token: plan.dram_bytes(&w_mid, &t_mid) / b,
        weight_bytes_per_token: w_mid.weight_bytes / b,
        kv_bytes_per_token: w_mid.kv_bytes / b,
        flash_bytes_per_token: plan.flash_bytes(&w_mid) / b,
        resident_weight_bytes: fp.resident_weights,
        macs_per_token: (w_mid.weight_macs + w_mid.attn_macs) / b,
        decode_terms: t_mid,
        binding: t_mid.binding(),
        prefill_binding: prefill_last.map(|t| t.binding()),
        context_beyond_max: s.context_beyond_max(),
        assumed: plan.assumed.join(", "),
        cpu_share: plan.host.as_ref().map_or(0.0, |h| h.bytes_share),
    }
}
