//! Expert identities per token for the simulator's caches: each MoE layer ranks its experts
//! by a random permutation; a token picks `top_k` distinct experts with Zipf probabilities
//! `p_rank ∝ (rank + 1)^−skew` (the estimator's law), keeping each of the previous token's
//! experts with probability `correlation` (consecutive tokens often share experts).

use rand::rngs::SmallRng;
use rand::{RngExt, seq::SliceRandom};

/// Walker's alias table for sampling index `i` with probability `w_i / Σ w`: bucket `i`
/// (chosen uniformly) keeps `i` with probability `keep[i]` and otherwise yields `alias[i]`.
pub fn alias_table(weights: &[f64]) -> (Vec<f64>, Vec<u32>) {
    let n = weights.len();
    let total: f64 = weights.iter().sum();
    let mut scaled: Vec<f64> = weights.iter().map(|w| w * n as f64 / total).collect();
    let mut keep = vec![1.0; n];
    let mut alias: Vec<u32> = (0..n as u32).collect();
    let (mut small, mut large): (Vec<usize>, Vec<usize>) = (0..n).partition(|&i| scaled[i] < 1.0);
    while let (Some(s), Some(&l)) = (small.pop(), large.last()) {
        keep[s] = scaled[s];
        alias[s] = l as u32;
        scaled[l] -= 1.0 - scaled[s];
        if scaled[l] < 1.0 {
            large.pop();
            small.push(l);
        }
    }
    (keep, alias)
}

/// Draws routed experts.
#[derive(Debug, Clone)]
pub struct Router {
    top_k: u32,
    layers: usize,
    batch: usize,
    correlation: f64,
    /// Walker alias table over ranks: keep rank `i` with probability `keep[i]`, else take
    /// `alias[i]` (one uniform draw per pick).
    keep: Vec<f64>,
    alias: Vec<u32>,
    /// Per layer: rank → expert id.
    perm: Vec<Vec<u32>>,
    /// Previous token's picks, `[layer][seq][k]`, flattened.
    prev: Vec<u32>,
    has_prev: bool,
    scratch: Vec<u32>,
    picked: Vec<u32>,
    /// Bitsets over expert ids: picked by the current sequence, and by any sequence of the step.
    mine: Vec<u64>,
    union: Vec<u64>,
}

#[inline]
fn get(bits: &[u64], e: u32) -> bool {
    bits[(e >> 6) as usize] >> (e & 63) & 1 != 0
}

#[inline]
fn set(bits: &mut [u64], e: u32) {
    bits[(e >> 6) as usize] |= 1 << (e & 63);
}

#[inline]
fn clear(bits: &mut [u64], e: u32) {
    bits[(e >> 6) as usize] &= !(1 << (e & 63));
}

impl Router {
    /// A router for `layers` MoE layers of `n_experts` experts, `top_k` per token.
    pub fn new(
        n_experts: u32,
        top_k: u32,
        layers: usize,
        batch: u32,
        skew: f64,
        correlation: f64,
        rng: &mut SmallRng,
    ) -> Self {
        let weights: Vec<f64> = (0..n_experts).map(|i| ((i + 1) as f64).powf(-skew)).collect();
        let (keep, alias) = alias_table(&weights);
        let perm = (0..layers)
            .map(|_| {
                let mut p: Vec<u32> = (0..n_experts).collect();
                p.shuffle(rng);
                p
            })
            .collect();
        Router {
            top_k,
            layers,
            batch: batch as usize,
            correlation,
            keep,
            alias,
            perm,
            prev: vec![0; layers * batch as usize * top_k as usize],
            has_prev: false,
            scratch: Vec::with_capacity(top_k as usize * batch as usize),
            picked: vec![0; top_k as usize],
            mine: vec![0; (n_experts as usize).div_ceil(64)],
            union: vec![0; (n_experts as usize).div_ceil(64)],
        }
    }

    /// MoE layers.
    pub fn layers(&self) -> usize {
        self.layers
    }

    fn rank(&self, rng: &mut SmallRng) -> usize {
        let u = rng.random::<f64>() * self.keep.len() as f64;
        let i = (u as usize).min(self.keep.len() - 1);
        if u - (i as f64) < self.keep[i] { i } else { self.alias[i] as usize }
    }

    /// Draw one step's experts for every layer; `visit(layer, distinct experts)` is called
    /// per layer with the union over the batch's sequences.
    pub fn step(&mut self, rng: &mut SmallRng, mut visit: impl FnMut(usize, &[u32])) {
        let k = self.top_k as usize;
        let mut picked = std::mem::take(&mut self.picked);
        picked.resize(k, 0);
        for l in 0..self.layers {
            self.scratch.clear();
            for s in 0..self.batch {
                let base = (l * self.batch + s) * k;
                let mut n = 0;
                if self.has_prev && self.correlation > 0.0 {
                    for j in 0..k {
                        let e = self.prev[base + j];
                        if rng.random::<f64>() < self.correlation {
                            picked[n] = e;
                            set(&mut self.mine, e);
                            n += 1;
                        }
                    }
                }
                while n < k {
                    let e = self.perm[l][self.rank(rng)];
                    if !get(&self.mine, e) {
                        set(&mut self.mine, e);
                        picked[n] = e;
                        n += 1;
                    }
                }
                self.prev[base..base + k].copy_from_slice(&picked[..k]);
                for &e in &picked[..k] {
                    clear(&mut self.mine, e);
                    if !get(&self.union, e) {
                        set(&mut self.union, e);
                        self.scratch.push(e);
                    }
                }
            }
            for &e in &self.scratch {
                clear(&mut self.union, e);
            }
            visit(l, &self.scratch);
        }
        self.picked = picked;
        self.has_prev = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expected_distinct_experts;
    use rand::SeedableRng;
    use rand::rngs::SmallRng;

    #[test]
    fn alias_table_reproduces_the_weights() {
        let w = [5.0, 1.0, 3.0, 1.0];
        let (keep, alias) = alias_table(&w);
        // Probability of i = (keep[i] + Σ_{j: alias[j] = i, j ≠ i} (1 − keep[j])) / n.
        for i in 0..4 {
            let p = (keep[i]
                + (0..4).filter(|&j| j != i && alias[j] as usize == i).map(|j| 1.0 - keep[j]).sum::<f64>())
                / 4.0;
            assert!((p - w[i] / 10.0).abs() < 1e-12, "{i}: {p}");
        }
    }

    #[test]
    fn one_sequence_picks_exactly_top_k_distinct_experts() {
        let mut rng = SmallRng::seed_from_u64(1);
        let mut r = Router::new(64, 8, 3, 1, 1.0, 0.0, &mut rng);
        for _ in 0..100 {
            r.step(&mut rng, |_, e| {
                assert_eq!(e.len(), 8);
                assert!(e.iter().all(|&x| x < 64));
            });
        }
    }

    #[test]
    fn batch_distinct_count_matches_the_estimators_expectation() {
        // Uniform routing, 4 sequences: E[distinct] = E(1 − (1 − k/E)^T) for independent
        // draws with replacement; drawing k distinct per token lowers it slightly.
        let mut rng = SmallRng::seed_from_u64(2);
        let (e, k, b) = (64, 4, 4);
        let mut r = Router::new(e, k, 1, b, 0.0, 0.0, &mut rng);
        let mut total = 0usize;
        let steps = 20_000;
        for _ in 0..steps {
            r.step(&mut rng, |_, x| total += x.len());
        }
        let mean = total as f64 / steps as f64;
        let expect = expected_distinct_experts(e, k, b as u64, 0.0);
        assert!((mean - expect).abs() / expect < 0.02, "{mean} vs {expect}");
    }

    #[test]
    fn correlation_keeps_experts_and_skew_concentrates_them() {
        let mut rng = SmallRng::seed_from_u64(3);
        let mut r = Router::new(64, 4, 1, 1, 0.0, 0.9, &mut rng);
        let mut prev: Vec<u32> = Vec::new();
        let mut kept = 0usize;
        for _ in 0..5000 {
            r.step(&mut rng, |_, x| {
                kept += x.iter().filter(|e| prev.contains(e)).count();
                prev = x.to_vec();
            });
        }
        // ≈ 0.9 × 4 kept per token (plus chance re-draws).
        let per_token = kept as f64 / 5000.0;
        assert!(per_token > 3.4 && per_token < 3.9, "{per_token}");
        // With a strong skew a few experts take most picks.
        let mut rng = SmallRng::seed_from_u64(4);
        let mut r = Router::new(64, 1, 1, 1, 2.0, 0.0, &mut rng);
        let mut counts = [0u32; 64];
        for _ in 0..10_000 {
            r.step(&mut rng, |_, x| counts[x[0] as usize] += 1);
        }
        let max = *counts.iter().max().unwrap();
        assert!(max > 5_000, "most popular expert got {max} of 10000");
    }
}
