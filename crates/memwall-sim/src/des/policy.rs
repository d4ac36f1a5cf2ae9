//! Degradation policies. The simulator asks each policy, in order, what to do when free
//! memory falls below the low-memory-killer threshold (the kill comes only when none acts)
//! and whether to hold back the next token. Built-in policies are configured through
//! [`PolicySpec`]; researchers add their own by implementing [`Policy`] and passing it to
//! [`Simulator::with_policy`](crate::des::Simulator::with_policy).

use memwall_spec::{PolicySpec, WeightQuant};

/// What a policy sees.
#[derive(Debug, Clone)]
pub struct View<'a> {
    /// Simulated time, seconds.
    pub now_s: f64,
    /// Die and skin temperature, °C (ambient when the thermal model is off).
    pub die_c: f64,
    /// Skin temperature, °C.
    pub skin_c: f64,
    /// Governor level.
    pub level: usize,
    /// Tokens held in the context.
    pub context: u64,
    /// Context capacity (KV cache size in tokens).
    pub capacity: u64,
    /// Free memory, bytes (negative: overcommitted).
    pub free_bytes: i64,
    /// Bytes the model holds.
    pub resident_bytes: u64,
    /// Latency of the previous decode step, seconds.
    pub last_token_s: Option<f64>,
    /// Time since the previous decode step started, seconds.
    pub since_token_start_s: Option<f64>,
    /// Sequences decoded per step.
    pub batch: u32,
    /// The weights in use.
    pub weights: &'a WeightQuant,
}

/// A memory action.
#[derive(Debug, Clone, PartialEq)]
pub enum MemoryAction {
    /// Keep only the newest `keep_tokens` and shrink the KV cache to that size.
    TruncateContext {
        /// Tokens kept.
        keep_tokens: u64,
    },
    /// Reload the model with these weights.
    SwitchWeights(WeightQuant),
}

/// A pluggable degradation policy.
pub trait Policy: Send {
    /// Name for traces and summaries.
    fn name(&self) -> &str;
    /// Free memory fell below the threshold: act, or `None` to leave it to the next policy
    /// (and, after the last, to the low-memory killer).
    fn on_low_memory(&mut self, _view: &View) -> Option<MemoryAction> {
        None
    }
    /// Before each decode step: `Some(seconds)` to wait before it.
    fn before_token(&mut self, _view: &View) -> Option<f64> {
        None
    }
}

/// Shrinks the context once.
#[derive(Debug)]
pub struct TruncateContext {
    keep_tokens: u64,
}

impl Policy for TruncateContext {
    fn name(&self) -> &str {
        "truncate_context"
    }
    fn on_low_memory(&mut self, v: &View) -> Option<MemoryAction> {
        (v.capacity > self.keep_tokens).then_some(MemoryAction::TruncateContext { keep_tokens: self.keep_tokens })
    }
}

/// Switches to smaller weights once.
#[derive(Debug)]
pub struct SwitchQuant {
    to: WeightQuant,
}

impl Policy for SwitchQuant {
    fn name(&self) -> &str {
        "switch_quant"
    }
    fn on_low_memory(&mut self, v: &View) -> Option<MemoryAction> {
        (v.weights != &self.to).then(|| MemoryAction::SwitchWeights(self.to.clone()))
    }
}

/// Pauses above a die temperature until it cools down (checked every `recheck_s`).
#[derive(Debug)]
pub struct PauseWhenHot {
    above_c: f64,
    resume_c: f64,
    paused: bool,
    recheck_s: f64,
}

impl Policy for PauseWhenHot {
    fn name(&self) -> &str {
        "pause_when_hot"
    }
    fn before_token(&mut self, v: &View) -> Option<f64> {
        if v.die_c >= self.above_c {
            self.paused = true;
        } else if v.die_c <= self.resume_c {
            self.paused = false;
        }
        self.paused.then_some(self.recheck_s)
    }
}

/// Caps the decode rate: consecutive tokens start at least `batch / tok_s` apart.
#[derive(Debug)]
pub struct CapRate {
    tok_s: f64,
}

impl Policy for CapRate {
    fn name(&self) -> &str {
        "cap_rate"
    }
    fn before_token(&mut self, v: &View) -> Option<f64> {
        let interval = v.batch as f64 / self.tok_s;
        let wait = interval - v.since_token_start_s?;
        // Waits shorter than a microsecond are rounding, not a cap.
        (wait > 1e-6).then_some(wait)
    }
}

/// The built-in policy a spec describes.
pub fn from_spec(spec: &PolicySpec) -> Box<dyn Policy> {
    match spec {
        PolicySpec::TruncateContext { keep_tokens } => Box::new(TruncateContext { keep_tokens: *keep_tokens }),
        PolicySpec::SwitchQuant { to } => Box::new(SwitchQuant { to: to.clone() }),
        PolicySpec::PauseWhenHot { above_c, resume_c } => {
            Box::new(PauseWhenHot { above_c: *above_c, resume_c: *resume_c, paused: false, recheck_s: 0.5 })
        }
        PolicySpec::CapRate { tok_s } => Box::new(CapRate { tok_s: *tok_s }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memwall_spec::Mix;

    fn view(w: &WeightQuant) -> View<'_> {
        View {
            now_s: 0.0,
            die_c: 50.0,
            skin_c: 35.0,
            level: 0,
            context: 1000,
            capacity: 4096,
            free_bytes: 0,
            resident_bytes: 0,
            last_token_s: Some(0.05),
            since_token_start_s: Some(0.05),
            batch: 1,
            weights: w,
        }
    }

    #[test]
    fn pause_when_hot_has_hysteresis() {
        let w = WeightQuant::new("Q4_K_M".parse::<Mix>().unwrap());
        let mut p = from_spec(&PolicySpec::PauseWhenHot { above_c: 60.0, resume_c: 50.0 });
        let mut v = view(&w);
        assert_eq!(p.before_token(&v), None);
        v.die_c = 61.0;
        assert!(p.before_token(&v).is_some());
        v.die_c = 55.0; // between the thresholds: stays paused
        assert!(p.before_token(&v).is_some());
        v.die_c = 49.0;
        assert_eq!(p.before_token(&v), None);
    }

    #[test]
    fn cap_rate_waits_out_the_rest_of_the_interval() {
        let w = WeightQuant::new("Q4_K_M".parse::<Mix>().unwrap());
        let mut p = from_spec(&PolicySpec::CapRate { tok_s: 10.0 });
        let mut v = view(&w); // last token started 50 ms ago; 10 tok/s allows one per 100 ms
        let wait = p.before_token(&v).unwrap();
        assert!((wait - 0.05).abs() < 1e-12);
        v.since_token_start_s = Some(0.1);
        assert_eq!(p.before_token(&v), None);
    }

    #[test]
    fn memory_policies_act_once() {
        let w = WeightQuant::new("Q4_K_M".parse::<Mix>().unwrap());
        let small = WeightQuant::new("Q2_K".parse::<Mix>().unwrap());
        let mut s = from_spec(&PolicySpec::SwitchQuant { to: small.clone() });
        assert_eq!(s.on_low_memory(&view(&w)), Some(MemoryAction::SwitchWeights(small.clone())));
        assert_eq!(s.on_low_memory(&view(&small)), None);
        let mut t = from_spec(&PolicySpec::TruncateContext { keep_tokens: 1024 });
        let mut v = view(&w);
        assert_eq!(t.on_low_memory(&v), Some(MemoryAction::TruncateContext { keep_tokens: 1024 }));
        v.capacity = 1024;
        assert_eq!(t.on_low_memory(&v), None);
    }
}
