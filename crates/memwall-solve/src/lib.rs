//! Design questions answered directly over the analytic estimator: the longest context a
//! design holds, the least RAM it needs, the DRAM bandwidth a target decode rate needs (or
//! that none suffices), the best-quality weight mix × KV format that fits and reaches a rate,
//! and, for a design that does not fit, the nearest fitting designs along each axis.
//!
//! Each answer names the constraint that binds it. Where the model is monotone the answer is
//! exact: the footprint grows with the context and the window, so the longest context and
//! window are found by bisection on integers (the answer fits, one more token does not); the
//! budget is linear in RAM, so the least RAM is closed-form (and checked against the
//! estimator); the decode rate never falls as bandwidth rises, so the least bandwidth is a
//! bisection on the data rate to a relative 1e-9. Formats are enumerated.

mod change;
mod search;

pub use change::{Change, what_to_change};
pub use search::{Candidate, FitSearch, KV_FORMATS, cheapest_fit};

use memwall_sim::{Estimate, SimError, estimate};
use memwall_spec::bounds::{MAX_DATA_RATE_MTPS, MAX_TOKENS};
use memwall_spec::{ContextPolicy, Scenario, SpecError};
use serde::Serialize;

/// The longest context a design holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextAnswer {
    /// KV formats, `k/v`.
    pub kv: String,
    /// Sliding window of the model's windowed layers, tokens (None: no window).
    pub window: Option<u64>,
    /// The longest context whose KV cache, allocated in full, fits the budget (None: not even
    /// the workload's own prompt and reply fit).
    pub max_context_tokens: Option<u64>,
    /// The footprint stops growing before memwall's bound on tokens (2^32): every layer
    /// holds a window or a fixed state, so no context is too long for memory.
    pub unbounded: bool,
    /// The context the model was trained for, if stated.
    pub trained_context: Option<u64>,
    /// Footprint at the answer, bytes.
    pub total_bytes: Option<u64>,
    /// Budget: the device's app limit less other apps and the margin, bytes.
    pub budget_bytes: i64,
    /// What binds: `budget`, `workload` (the prompt and reply alone do not fit) or `none`.
    pub binding: String,
}

/// The least RAM a design needs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RamAnswer {
    /// Footprint of the design, bytes.
    pub footprint_bytes: u64,
    /// The least installed RAM whose app limit holds the footprint, other apps and the
    /// margin, bytes.
    pub min_ram_bytes: u64,
    /// The smallest common RAM size (GiB) at or above it (None: beyond 512 GiB).
    pub next_size_gib: Option<u64>,
    /// The device's RAM, bytes.
    pub device_ram_bytes: u64,
    /// What binds: `footprint` (the design's own bytes; the rest is the device's reserve).
    pub binding: String,
}

/// The DRAM bandwidth a decode rate needs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BandwidthAnswer {
    /// The target decode rate, tokens/s.
    pub target_tok_s: f64,
    /// The least peak DRAM bandwidth reaching it, GB/s (None: no bandwidth suffices).
    pub min_peak_gbps: Option<f64>,
    /// The device's peak bandwidth, GB/s.
    pub device_peak_gbps: f64,
    /// The decode rate on the device as it is, tokens/s.
    pub device_tok_s: f64,
    /// The decode rate with unlimited DRAM bandwidth (memwall's bound on data rates), tokens/s.
    pub ceiling_tok_s: f64,
    /// What binds at the answer (`memory` when bandwidth decides) or, when no bandwidth
    /// suffices, what binds the ceiling: `compute`, `dequant`, `overhead`, `storage`, `cache`,
    /// or `memory` again when the cores' own bandwidth (threads × per-core GB/s) caps it.
    pub binding: String,
}

/// A question [`answer`] answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Question {
    /// The longest context that fits, per KV format ([`max_context`] over [`KV_FORMATS`]).
    MaxContext,
    /// The least RAM ([`min_ram`]).
    MinRam,
    /// The least DRAM bandwidth for a decode rate ([`min_bandwidth`]).
    MinBandwidth,
    /// The best-quality weight mix × KV format that fits ([`cheapest_fit`]).
    CheapestFit,
    /// The nearest fitting designs ([`what_to_change`]).
    WhatToChange,
}

impl Question {
    /// Every question.
    pub const ALL: [Question; 5] =
        [Question::MaxContext, Question::MinRam, Question::MinBandwidth, Question::CheapestFit, Question::WhatToChange];

    /// Its name, `max_context` … (the CLI also takes `max-context`).
    pub fn name(self) -> &'static str {
        match self {
            Question::MaxContext => "max_context",
            Question::MinRam => "min_ram",
            Question::MinBandwidth => "min_bandwidth",
            Question::CheapestFit => "cheapest_fit",
            Question::WhatToChange => "what_to_change",
        }
    }
}

impl std::str::FromStr for Question {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, SpecError> {
        let norm = s.trim().to_ascii_lowercase().replace('-', "_");
        Question::ALL.into_iter().find(|q| q.name() == norm).ok_or_else(|| {
            let names: Vec<String> = Question::ALL.iter().map(|q| q.name().replace('_', "-")).collect();
            SpecError::unknown(
                "",
                "question",
                s,
                names.iter().map(String::as_str),
                format!("; expected one of {}", names.join(", ")),
            )
        })
    }
}

/// The answer to a [`Question`] (serialized as the answer itself).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Answer {
    /// One row per KV format.
    MaxContext(Vec<ContextAnswer>),
    /// The least RAM.
    MinRam(RamAnswer),
    /// The least bandwidth.
    MinBandwidth(BandwidthAnswer),
    /// The ranked candidates.
    CheapestFit(FitSearch),
    /// The changes, ranked (empty: it fits).
    WhatToChange(Vec<Change>),
}

/// Answer `q` for design `s`: `target_tok_s` is required by [`Question::MinBandwidth`] and
/// taken by [`Question::CheapestFit`], as are `max_ppl_delta` and `max_ppl_increase_pct`.
pub fn answer(
    s: &Scenario,
    q: Question,
    target_tok_s: Option<f64>,
    max_ppl_delta: Option<f64>,
    max_ppl_increase_pct: Option<f64>,
) -> Result<Answer, SimError> {
    Ok(match q {
        Question::MaxContext => Answer::MaxContext(
            KV_FORMATS
                .iter()
                .map(|f| {
                    let mut t = s.clone();
                    t.kv = memwall_spec::KvQuant::both(*f);
                    max_context(&t)
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Question::MinRam => Answer::MinRam(min_ram(s)?),
        Question::MinBandwidth => {
            let t = target_tok_s
                .ok_or_else(|| invalid("target_tok_s", "none", "min_bandwidth needs a target decode rate"))?;
            Answer::MinBandwidth(min_bandwidth(s, t)?)
        }
        Question::CheapestFit => {
            Answer::CheapestFit(cheapest_fit(s, target_tok_s, max_ppl_delta, max_ppl_increase_pct)?)
        }
        Question::WhatToChange => Answer::WhatToChange(what_to_change(s)?),
    })
}

/// Common RAM sizes of phones, boards, laptops and desktops, GiB.
pub const RAM_SIZES_GIB: [u64; 17] = [2, 3, 4, 6, 8, 12, 16, 18, 24, 32, 36, 48, 64, 96, 128, 192, 512];

fn invalid(field: &str, value: impl std::fmt::Display, reason: &str) -> SimError {
    SimError::Spec(SpecError::invalid(field, value, reason))
}

/// The scenario with the KV cache allocated for `context` tokens.
fn at_context(s: &Scenario, context: u64) -> Scenario {
    let mut t = s.clone();
    t.workload.context_tokens = context;
    t.workload.context_policy = ContextPolicy::Allocate;
    t
}

/// The largest `x` in `[lo, hi]` with `ok(x)`, given `ok(lo)` and `!ok(hi)` and `ok`
/// non-increasing (true up to some point, false after it).
fn last_true(mut lo: u64, mut hi: u64, ok: &mut dyn FnMut(u64) -> Result<bool, SimError>) -> Result<u64, SimError> {
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid)? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(lo)
}

/// The longest context `s` holds: the largest `c` such that the design with its KV cache
/// allocated for `c` tokens fits the budget (`total(c) ≤ budget`). The footprint never falls
/// as `c` grows, so bisection between the workload's own tokens (`prompt + gen`, the least
/// valid context) and memwall's bound (2^32) finds it exactly.
pub fn max_context(s: &Scenario) -> Result<ContextAnswer, SimError> {
    let lo = (s.workload.prompt_tokens + s.workload.gen_tokens).max(1);
    let mut fits = |c: u64| -> Result<bool, SimError> { Ok(estimate(&at_context(s, c))?.fits) };
    let first = estimate(&at_context(s, lo))?;
    let mut answer = ContextAnswer {
        kv: format!("{}/{}", s.kv.k, s.kv.v),
        window: s.model.sliding_window.filter(|_| s.model.layer_kinds().contains(&memwall_spec::LayerKind::Sliding)),
        max_context_tokens: None,
        unbounded: false,
        trained_context: s.model.max_context,
        total_bytes: None,
        budget_bytes: first.budget_bytes,
        binding: "workload".into(),
    };
    if !first.fits {
        return Ok(answer);
    }
    let (c, e) = if fits(MAX_TOKENS)? {
        answer.unbounded = true;
        answer.binding = "none".into();
        (MAX_TOKENS, estimate(&at_context(s, MAX_TOKENS))?)
    } else {
        answer.binding = "budget".into();
        let c = last_true(lo, MAX_TOKENS, &mut fits)?;
        (c, estimate(&at_context(s, c))?)
    };
    answer.max_context_tokens = Some(c);
    answer.total_bytes = Some(e.total_bytes);
    Ok(answer)
}

/// The least RAM with which `s` fits, bytes: the budget is `app_limit(ram) − other_apps −
/// margin` and the footprint does not depend on the RAM, so it is the least RAM whose app
/// limit holds `footprint + other_apps + margin` ([`memwall_spec::DeviceSpec::min_ram_for_app`]).
pub fn min_ram(s: &Scenario) -> Result<RamAnswer, SimError> {
    let e = estimate(s)?;
    let m = &s.device.memory;
    let need = s.device.min_ram_for_app(e.total_bytes + m.other_apps_bytes + s.workload.margin_bytes);
    const GIB: u64 = 1 << 30;
    Ok(RamAnswer {
        footprint_bytes: e.total_bytes,
        min_ram_bytes: need,
        next_size_gib: RAM_SIZES_GIB.iter().copied().find(|g| g * GIB >= need),
        device_ram_bytes: m.ram_bytes,
        binding: "footprint".into(),
    })
}

/// The scenario with the DRAM data rate `mtps` (peak bandwidth scales with it).
fn at_data_rate(s: &Scenario, mtps: f64) -> Scenario {
    let mut t = s.clone();
    t.device.memory.data_rate_mtps = mtps;
    t
}

/// The least peak DRAM bandwidth at which `s` decodes at `target_tok_s` or faster: the
/// decode rate never falls as the data rate rises, so bisection on the data rate (to a
/// relative 1e-9) between a thousandth of an MT/s and memwall's bound (10^5 MT/s) finds it;
/// when even that bound falls short, no bandwidth suffices and the answer says what binds
/// the ceiling.
pub fn min_bandwidth(s: &Scenario, target_tok_s: f64) -> Result<BandwidthAnswer, SimError> {
    if !(target_tok_s.is_finite() && target_tok_s > 0.0) {
        return Err(invalid("target_tok_s", target_tok_s, "must be a finite number > 0"));
    }
    let here = estimate(s)?;
    let top = estimate(&at_data_rate(s, MAX_DATA_RATE_MTPS))?;
    let mut answer = BandwidthAnswer {
        target_tok_s,
        min_peak_gbps: None,
        device_peak_gbps: s.device.memory.peak_gbps(),
        device_tok_s: here.decode_tok_s,
        ceiling_tok_s: top.decode_tok_s,
        binding: top.binding.name().into(),
    };
    if top.decode_tok_s < target_tok_s {
        return Ok(answer);
    }
    let rate = |mtps: f64| -> Result<Estimate, SimError> { estimate(&at_data_rate(s, mtps)) };
    let (mut lo, mut hi) = (1e-3, MAX_DATA_RATE_MTPS);
    if rate(lo)?.decode_tok_s >= target_tok_s {
        hi = lo;
    }
    while hi / lo > 1.0 + 1e-9 {
        let mid = (lo * hi).sqrt();
        if rate(mid)?.decode_tok_s >= target_tok_s {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let t = at_data_rate(s, hi);
    answer.min_peak_gbps = Some(t.device.memory.peak_gbps());
    answer.binding = estimate(&t)?.binding.name().into();
    Ok(answer)
}

/// The largest sliding window (tokens) with which `s`, its full-attention layers made local
/// three to one (`[sliding, sliding, sliding, full]`, as Gemma-style stacks interleave them),
/// fits; None when the model has no full-attention layer or no window fits. Bisection on the
/// window (the footprint never falls as it widens) between 1 and the context.
pub fn max_window(s: &Scenario) -> Result<Option<(u64, Estimate)>, SimError> {
    use memwall_spec::LayerKind::{Full, Sliding};
    if !s.model.layer_kinds().contains(&Full) {
        return Ok(None);
    }
    let with = |w: u64| {
        let mut t = s.clone();
        t.model.layer_kinds = None;
        t.model.layer_pattern = vec![Sliding, Sliding, Sliding, Full];
        t.model.sliding_window = Some(w);
        t
    };
    let mut fits = |w: u64| -> Result<bool, SimError> { Ok(estimate(&with(w))?.fits) };
    let ctx = s.workload.kv_tokens().max(1);
    if !fits(1)? {
        return Ok(None);
    }
    let w = if fits(ctx)? { ctx } else { last_true(1, ctx, &mut fits)? };
    Ok(Some((w, estimate(&with(w))?)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use memwall_catalog::{load_device, load_model};
    use memwall_spec::{KvQuant, WeightQuant, Workload};

    pub(crate) fn scenario(model: &str, device: &str, mix: &str, kv: &str, context: u64) -> Scenario {
        Scenario {
            model: load_model(model).unwrap(),
            device: load_device(device).unwrap(),
            weights: WeightQuant::new(mix.parse().unwrap()),
            kv: KvQuant::both(kv.parse().unwrap()),
            workload: Workload {
                prompt_tokens: 512,
                gen_tokens: 128,
                context_tokens: context,
                margin_bytes: 2_000_000_000,
                ..Workload::default()
            },
            cost: Default::default(),
            engine: Default::default(),
            assume_defaults: false,
            sim: Default::default(),
        }
    }

    /// Llama 3.1 8B (32 layers, 8 KV heads of 128) with an F16 KV cache holds
    /// 2 × 32 × 8 × 128 × 2 B = 131072 B per token, so by hand the longest context is the
    /// budget left after the context-free bytes divided by 128 KiB, less what the compute
    /// buffers grow with the context.
    #[test]
    fn max_context_by_hand() {
        let s = scenario("llama-3.1-8b", "snapdragon-8-gen3-16gb", "Q4_K_M", "f16", 4096);
        let a = max_context(&s).unwrap();
        let c = a.max_context_tokens.unwrap();
        assert_eq!(a.binding, "budget");
        // Exact: c fits, c + 1 does not.
        assert!(estimate(&at_context(&s, c)).unwrap().fits);
        assert!(!estimate(&at_context(&s, c + 1)).unwrap().fits);
        // By hand from the footprint at 4096 tokens.
        let e = estimate(&at_context(&s, 4096)).unwrap();
        assert_eq!(e.kv_bytes, 4096 * 131_072);
        let fixed = e.total_bytes - e.kv_bytes;
        let hand = (e.budget_bytes as u64 - fixed) / 131_072;
        assert!(c <= hand && c as f64 > 0.95 * hand as f64, "solver {c}, by hand at most {hand}");
        // A q8_0 cache (34 B per 32 values against 64) holds about 1.88× as many tokens.
        let q8 = max_context(&scenario("llama-3.1-8b", "snapdragon-8-gen3-16gb", "Q4_K_M", "q8_0", 4096)).unwrap();
        let ratio = q8.max_context_tokens.unwrap() as f64 / c as f64;
        assert!((1.75..1.89).contains(&ratio), "{ratio}");
    }

    #[test]
    fn max_context_when_nothing_or_everything_fits() {
        // A 35B dense model at F16 does not fit a 16 GB phone even with its prompt alone.
        let s = scenario("hypothetical-35b-dense", "snapdragon-8-gen3-16gb", "F16", "f16", 4096);
        let a = max_context(&s).unwrap();
        assert_eq!((a.max_context_tokens, a.binding.as_str()), (None, "workload"));
        // A state-space model's footprint does not grow with the context.
        let s = scenario("falcon-mamba-7b", "snapdragon-8-gen3-16gb", "Q4_K_M", "f16", 4096);
        let a = max_context(&s).unwrap();
        assert!(a.unbounded && a.binding == "none" && a.max_context_tokens == Some(MAX_TOKENS), "{a:?}");
    }

    /// The least RAM by hand: an Android phone's app limit is 0.6 of its RAM, so it is
    /// `⌈(footprint + margin) / 0.6⌉` (to the byte that ⌊0.6 × ram⌋ rounds); the estimator
    /// agrees that it fits there and not one byte below.
    #[test]
    fn min_ram_by_hand() {
        let s = scenario("llama-3.1-8b", "snapdragon-8-gen3-16gb", "Q8_0", "f16", 32768);
        let a = min_ram(&s).unwrap();
        let e = estimate(&s).unwrap();
        let need = e.total_bytes + 2_000_000_000;
        assert!(a.min_ram_bytes.abs_diff((need as f64 / 0.6) as u64) <= 2, "{} vs {need} / 0.6", a.min_ram_bytes);
        let mut t = s.clone();
        t.device.memory.ram_bytes = a.min_ram_bytes;
        assert!(estimate(&t).unwrap().fits);
        t.device.memory.ram_bytes -= 1;
        assert!(!estimate(&t).unwrap().fits);
        let g = a.next_size_gib.unwrap();
        assert!(g << 30 >= a.min_ram_bytes && RAM_SIZES_GIB.iter().all(|&x| x >= g || x << 30 < a.min_ram_bytes));
    }

    /// A memory-bound decode needs bandwidth in proportion to its rate: at the answer the
    /// estimator reaches the target, 0.1 % below it does not, and twice the rate needs
    /// about twice the bandwidth while memory binds. A target beyond what compute allows is
    /// refused with the ceiling and what binds it.
    #[test]
    fn min_bandwidth_by_hand() {
        let s = scenario("llama-3.1-8b", "snapdragon-8-gen3-16gb", "Q4_K_M", "f16", 4096);
        let here = estimate(&s).unwrap();
        assert_eq!(here.binding.name(), "memory");
        let a = min_bandwidth(&s, here.decode_tok_s).unwrap();
        let need = a.min_peak_gbps.unwrap();
        // The device's own rate needs at most the device's own bandwidth.
        assert!(need <= a.device_peak_gbps * (1.0 + 1e-6), "{need} vs {}", a.device_peak_gbps);
        let scale = |gbps: f64| {
            let mut t = s.clone();
            t.device.memory.data_rate_mtps *= gbps / s.device.memory.peak_gbps();
            estimate(&t).unwrap().decode_tok_s
        };
        assert!(scale(need * (1.0 + 1e-6)) >= here.decode_tok_s * (1.0 - 1e-9));
        assert!(scale(need * 0.999) < here.decode_tok_s);
        // Half the rate: with t = B / bw + F (bytes over bandwidth plus the terms bandwidth
        // does not touch), 2t = B / bw' + F gives bw' = B / (2B / bw + F): below half the
        // bandwidth, and above a third of it while memory binds (F < B / bw).
        let half = min_bandwidth(&s, here.decode_tok_s / 2.0).unwrap().min_peak_gbps.unwrap();
        assert!(half < need / 2.0 + 1e-9 && half > need / 3.0, "{half} vs {need}");
        // Far beyond: refused, with the ceiling and its binding.
        let far = min_bandwidth(&s, 1e6).unwrap();
        assert_eq!(far.min_peak_gbps, None);
        assert!(far.ceiling_tok_s < 1e6 && !far.binding.is_empty(), "{far:?}");
        assert!(min_bandwidth(&s, f64::NAN).unwrap_err().to_string().contains("target_tok_s"));
        assert!(min_bandwidth(&s, 0.0).unwrap_err().to_string().contains("target_tok_s"));
    }

    #[test]
    fn max_window_is_exact() {
        let s = scenario("llama-3.1-8b", "snapdragon-8-gen3-16gb", "Q4_K_M", "f16", 65_536);
        assert!(!estimate(&s).unwrap().fits);
        let (w, e) = max_window(&s).unwrap().unwrap();
        assert!(e.fits && w < 65_536 && w > 1024, "{w}");
        // The window one token wider does not fit.
        let mut t = s.clone();
        t.model.layer_kinds = None;
        use memwall_spec::LayerKind::{Full, Sliding};
        t.model.layer_pattern = vec![Sliding, Sliding, Sliding, Full];
        t.model.sliding_window = Some(w + 1);
        assert!(!estimate(&t).unwrap().fits);
    }
}
