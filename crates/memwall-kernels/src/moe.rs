//! Mixture-of-experts routing: router logits → softmax → top-k → renormalized weights,
//! dispatch to the chosen experts' GEMVs with per-expert hit counters, and routing
//! generators (uniform, Zipf-skewed, correlated across consecutive tokens) that feed the
//! simulator's expert-cache model.

use rand::{Rng, RngExt};

use crate::KernelError;

/// The experts a token uses and their weights (summing to 1).
#[derive(Debug, Clone, PartialEq)]
pub struct Routing {
    /// Expert indices, highest weight first.
    pub experts: Vec<usize>,
    /// Their renormalized softmax weights.
    pub weights: Vec<f32>,
}

/// Route one token: softmax over `logits`, keep the `top_k` largest (ties to the lower
/// index), renormalize their probabilities to sum to 1.
pub fn route(logits: &[f32], top_k: usize) -> Result<Routing, KernelError> {
    if top_k == 0 || top_k > logits.len() {
        return Err(KernelError::Shape { what: "top_k", len: top_k, expected: logits.len() });
    }
    if let Some(i) = logits.iter().position(|v| !v.is_finite()) {
        return Err(KernelError::NonFinite { index: i, value: logits[i] });
    }
    let max = logits.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    let probs: Vec<f32> = logits.iter().map(|v| (v - max).exp()).collect();
    let mut order: Vec<usize> = (0..logits.len()).collect();
    order.sort_by(|&a, &b| probs[b].total_cmp(&probs[a]).then(a.cmp(&b)));
    order.truncate(top_k);
    let sum: f32 = order.iter().map(|&e| probs[e]).sum();
    let weights = order.iter().map(|&e| probs[e] / sum).collect();
    Ok(Routing { experts: order, weights })
}

/// Per-expert hit counters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HitCounter {
    /// Tokens routed to each expert.
    pub hits: Vec<u64>,
    /// Tokens counted.
    pub tokens: u64,
}

impl HitCounter {
    /// Counters for `n_experts`.
    pub fn new(n_experts: usize) -> Self {
        HitCounter { hits: vec![0; n_experts], tokens: 0 }
    }

    /// Count one token's routing.
    pub fn record(&mut self, r: &Routing) {
        for &e in &r.experts {
            self.hits[e] += 1;
        }
        self.tokens += 1;
    }

    /// Distinct experts hit so far.
    pub fn distinct(&self) -> usize {
        self.hits.iter().filter(|&&h| h > 0).count()
    }
}

/// Apply a routed MoE FFN: `y = Σ_k weight_k × expert_{e_k}(x)`, calling `expert(e, x, out)`
/// for each chosen expert (in practice its up/gate/down GEMVs), and counting the hits.
pub fn dispatch(
    r: &Routing,
    x: &[f32],
    y: &mut [f32],
    counter: &mut HitCounter,
    mut expert: impl FnMut(usize, &[f32], &mut [f32]) -> Result<(), KernelError>,
) -> Result<(), KernelError> {
    y.fill(0.0);
    let mut tmp = vec![0f32; y.len()];
    for (&e, &w) in r.experts.iter().zip(&r.weights) {
        expert(e, x, &mut tmp)?;
        for (o, t) in y.iter_mut().zip(&tmp) {
            *o += w * t;
        }
    }
    counter.record(r);
    Ok(())
}

/// How synthetic tokens pick experts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RoutingModel {
    /// Every expert equally likely.
    Uniform,
    /// Expert of popularity rank `i` drawn with probability ∝ `(i + 1)^−s`.
    Zipf {
        /// Exponent `s ≥ 0`.
        s: f64,
    },
    /// Each of the previous token's experts is kept with probability `stickiness`, the rest
    /// drawn from the Zipf law (`s = 0`: uniform).
    Correlated {
        /// Probability of reusing a previous expert.
        stickiness: f64,
        /// Zipf exponent of the fresh draws.
        s: f64,
    },
}

/// Generates expert choices for consecutive tokens.
#[derive(Debug, Clone)]
pub struct RoutingGenerator {
    n_experts: usize,
    top_k: usize,
    model: RoutingModel,
    cdf: Vec<f64>,
    previous: Vec<usize>,
}

impl RoutingGenerator {
    /// A generator for `top_k` of `n_experts`.
    pub fn new(n_experts: usize, top_k: usize, model: RoutingModel) -> Result<Self, KernelError> {
        if top_k == 0 || top_k > n_experts {
            return Err(KernelError::Shape { what: "top_k", len: top_k, expected: n_experts });
        }
        let s = match model {
            RoutingModel::Uniform => 0.0,
            RoutingModel::Zipf { s } => s,
            RoutingModel::Correlated { stickiness, s } => {
                if !(0.0..=1.0).contains(&stickiness) {
                    return Err(KernelError::Invalid {
                        what: "stickiness",
                        value: stickiness,
                        reason: "must lie in [0, 1]",
                    });
                }
                s
            }
        };
        if !(s.is_finite() && s >= 0.0) {
            return Err(KernelError::Invalid { what: "zipf exponent s", value: s, reason: "must be finite and >= 0" });
        }
        let w: Vec<f64> = (0..n_experts).map(|i| ((i + 1) as f64).powf(-s)).collect();
        let total: f64 = w.iter().sum();
        let cdf = w
            .iter()
            .scan(0.0, |acc, v| {
                *acc += v / total;
                Some(*acc)
            })
            .collect();
        Ok(RoutingGenerator { n_experts, top_k, model, cdf, previous: Vec::new() })
    }

    fn draw(&self, rng: &mut impl Rng, taken: &[usize]) -> usize {
        loop {
            let u: f64 = rng.random();
            let e = self.cdf.partition_point(|&c| c < u).min(self.n_experts - 1);
            if !taken.contains(&e) {
                return e;
            }
        }
    }

    /// The experts of the next token (distinct, `top_k` of them).
    pub fn next(&mut self, rng: &mut impl Rng) -> Vec<usize> {
        let mut chosen = Vec::with_capacity(self.top_k);
        if let RoutingModel::Correlated { stickiness, .. } = self.model {
            for &e in &self.previous {
                if rng.random_bool(stickiness) {
                    chosen.push(e);
                }
            }
        }
        while chosen.len() < self.top_k {
            let e = self.draw(rng, &chosen);
            chosen.push(e);
        }
        self.previous = chosen.clone();
        chosen
    }
}
