//! The best-quality weight mix × KV format that fits and reaches a decode rate.

use memwall_catalog::QualityTable;
use memwall_catalog::quality_table::ModelRef;
use memwall_sim::{SimError, estimate};
use memwall_spec::{FileType, GgmlType, KvQuant, Mix, QuantFormat, Scenario, WeightQuant};
use serde::Serialize;

/// The KV-cache formats the searches try, K and V alike.
pub const KV_FORMATS: [QuantFormat; 3] =
    [QuantFormat::Ggml(GgmlType::F16), QuantFormat::Ggml(GgmlType::Q8_0), QuantFormat::Ggml(GgmlType::Q4_0)];

/// One weight mix × KV format of a search.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    /// Weight mix (a llama.cpp file type).
    pub weights: String,
    /// KV format, `k/v`.
    pub kv: String,
    /// Footprint, bytes.
    pub total_bytes: u64,
    /// Budget − footprint, bytes (negative: shortfall).
    pub headroom_bytes: i64,
    /// Fits the budget.
    pub fits: bool,
    /// Decode tokens/s.
    pub decode_tok_s: f64,
    /// Estimated perplexity increase of the weights and the KV cache together (None: either
    /// is unknown).
    pub ppl_delta: Option<f64>,
    /// The same increase in % of the model's unquantized perplexity (what candidates are
    /// ranked by; None: unknown).
    pub ppl_increase_pct: Option<f64>,
    /// Where the quality figures come from (published, scaled from another size, estimated).
    pub quality_source: String,
    /// Set when the weight format is ternary or below 2 bits per weight on a model not trained
    /// for it: such a candidate never meets the constraints (`misses` = `ptq_unusable`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ptq_unusable: Option<String>,
    /// Meets every constraint: fits, reaches the target rate, within the quality bound.
    pub meets: bool,
    /// The first constraint it misses (empty when it meets them all).
    pub misses: String,
}

/// The result of [`cheapest_fit`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FitSearch {
    /// The target decode rate, tokens/s (None: any).
    pub target_tok_s: Option<f64>,
    /// The bound on the perplexity increase (None: any).
    pub max_ppl_delta: Option<f64>,
    /// The bound on the perplexity increase in % of the model's baseline (None: any).
    pub max_ppl_increase_pct: Option<f64>,
    /// Every candidate, best first: those that meet the constraints, then those that fit,
    /// then the rest, each by estimated quality (least perplexity increase, unknown last),
    /// then fastest, then smallest.
    pub candidates: Vec<Candidate>,
    /// Whether the first candidate meets the constraints.
    pub found: bool,
    /// What binds the answer: `quality` (a better mix would fit but misses a constraint or
    /// none is better), or, with no answer, the constraint most candidates miss.
    pub binding: String,
}

/// The weight mix (every llama.cpp file type) × KV format ([`KV_FORMATS`]) with the best
/// estimated quality that fits `s`'s device and decodes at `target_tok_s` or faster with a
/// perplexity increase of at most `max_ppl_delta` (absolute) and `max_ppl_increase_pct` (%
/// of the model's baseline: the seed's +5 % acceptable, +10 % reconsider). Quality is the
/// model's own ([`QualityTable::lookup_model`]). A candidate whose quality is unknown cannot
/// be ranked on it: it comes after every known one, and it fails a quality bound. A weight
/// format the model does not survive (ternary or below 2 bits without training for it) never
/// meets the constraints.
pub fn cheapest_fit(
    s: &Scenario,
    target_tok_s: Option<f64>,
    max_ppl_delta: Option<f64>,
    max_ppl_increase_pct: Option<f64>,
) -> Result<FitSearch, SimError> {
    if let Some(t) = target_tok_s
        && !(t.is_finite() && t > 0.0)
    {
        return Err(super::invalid("target_tok_s", t, "must be a finite number > 0"));
    }
    if let Some(d) = max_ppl_delta
        && !(d.is_finite() && d >= 0.0)
    {
        return Err(super::invalid("max_ppl_delta", d, "must be a finite number >= 0"));
    }
    if let Some(d) = max_ppl_increase_pct
        && !(d.is_finite() && d >= 0.0)
    {
        return Err(super::invalid("max_ppl_increase_pct", d, "must be a finite number >= 0"));
    }
    let bounds = QualityBounds { max_ppl_delta, max_ppl_increase_pct };
    let table = QualityTable::default();
    let mut candidates = Vec::new();
    for ft in FileType::ALL {
        for kv in KV_FORMATS {
            let mut t = s.clone();
            t.weights = WeightQuant::new(Mix::File(*ft));
            t.kv = KvQuant::both(kv);
            candidates.push(candidate(&t, &table, target_tok_s, bounds)?);
        }
    }
    rank(&mut candidates);
    let found = candidates.first().is_some_and(|c| c.meets);
    let binding = if found {
        "quality".to_string()
    } else {
        let mut counts = std::collections::BTreeMap::<&str, usize>::new();
        for c in &candidates {
            *counts.entry(c.misses.as_str()).or_default() += 1;
        }
        counts.into_iter().max_by_key(|x| x.1).map_or("none", |x| x.0).to_string()
    };
    Ok(FitSearch { target_tok_s, max_ppl_delta, max_ppl_increase_pct, candidates, found, binding })
}

/// The quality bounds of a search (None: any).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct QualityBounds {
    /// On the absolute perplexity increase.
    pub max_ppl_delta: Option<f64>,
    /// On the increase in % of the model's baseline.
    pub max_ppl_increase_pct: Option<f64>,
}

/// Estimate one weight mix × KV format and check it against the constraints.
pub(crate) fn candidate(
    s: &Scenario,
    table: &QualityTable,
    target_tok_s: Option<f64>,
    bounds: QualityBounds,
) -> Result<Candidate, SimError> {
    let e = estimate(s)?;
    let q = table.lookup_model(&ModelRef::of(&s.model), &s.weights, &s.kv);
    let ppl_delta = q.ppl_delta_weights.zip(q.ppl_delta_kv).map(|(w, k)| w + k);
    let pct = q.ppl_increase_pct();
    let misses = if !e.fits {
        "fits"
    } else if q.ptq_unusable.is_some() {
        "ptq_unusable"
    } else if target_tok_s.is_some_and(|t| e.decode_tok_s < t) {
        "target_tok_s"
    } else if bounds.max_ppl_delta.is_some_and(|m| ppl_delta.is_none_or(|d| d > m)) {
        "max_ppl_delta"
    } else if bounds.max_ppl_increase_pct.is_some_and(|m| pct.is_none_or(|d| d > m)) {
        "max_ppl_increase_pct"
    } else {
        ""
    };
    Ok(Candidate {
        weights: s.weights.mix.to_string(),
        kv: format!("{}/{}", s.kv.k, s.kv.v),
        total_bytes: e.total_bytes,
        headroom_bytes: e.headroom_bytes,
        fits: e.fits,
        decode_tok_s: e.decode_tok_s,
        ppl_delta,
        ppl_increase_pct: pct,
        quality_source: q.source,
        ptq_unusable: q.ptq_unusable,
        meets: misses.is_empty(),
        misses: misses.into(),
    })
}

/// Sort: those that meet the constraints first, then those that at least fit; within each,
/// least perplexity increase in % of the baseline (unknown last), fastest, smallest.
pub(crate) fn rank(c: &mut [Candidate]) {
    c.sort_by(|a, b| {
        b.meets
            .cmp(&a.meets)
            .then(b.fits.cmp(&a.fits))
            .then(a.ppl_increase_pct.unwrap_or(f64::INFINITY).total_cmp(&b.ppl_increase_pct.unwrap_or(f64::INFINITY)))
            .then(b.decode_tok_s.total_cmp(&a.decode_tok_s))
            .then(a.total_bytes.cmp(&b.total_bytes))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::scenario;

    /// By hand over the candidates themselves: the answer meets every constraint, and no
    /// candidate that meets them has a smaller perplexity increase.
    #[test]
    fn the_answer_is_the_best_quality_that_meets_the_constraints() {
        let s = scenario("llama-3.1-8b", "snapdragon-8-gen3-16gb", "Q4_K_M", "f16", 8192);
        let r = cheapest_fit(&s, Some(8.0), Some(0.5), None).unwrap();
        assert!(r.found && r.binding == "quality");
        let best = &r.candidates[0];
        assert!(best.fits && best.decode_tok_s >= 8.0 && best.ppl_delta.unwrap() <= 0.5, "{best:?}");
        for c in &r.candidates {
            let ok =
                c.fits && c.ptq_unusable.is_none() && c.decode_tok_s >= 8.0 && c.ppl_delta.is_some_and(|d| d <= 0.5);
            assert_eq!(ok, c.meets, "{c:?}");
            if ok {
                assert!(c.ppl_increase_pct.unwrap() >= best.ppl_increase_pct.unwrap());
            }
        }
        // A faster target moves the answer to fewer bits; an impossible one finds nothing and
        // says which constraint most candidates miss.
        let fast = cheapest_fit(&s, Some(best.decode_tok_s * 1.2), Some(0.5), None).unwrap();
        assert!(!fast.found || fast.candidates[0].ppl_increase_pct >= best.ppl_increase_pct);
        let none = cheapest_fit(&s, Some(1e5), None, None).unwrap();
        assert!(!none.found && none.binding == "target_tok_s", "{}", none.binding);
        assert!(cheapest_fit(&s, Some(-1.0), None, None).unwrap_err().to_string().contains("target_tok_s"));
        assert!(cheapest_fit(&s, None, Some(f64::NAN), None).unwrap_err().to_string().contains("max_ppl_delta"));
        let e = cheapest_fit(&s, None, None, Some(-5.0)).unwrap_err().to_string();
        assert!(e.contains("max_ppl_increase_pct") && e.contains("-5"), "{e}");
    }

    /// The seed's threshold: with +5 % of the baseline at most, every candidate that meets the
    /// constraints has a known increase within it, and a fast target that only low-bit mixes
    /// reach finds nothing within +5 % but something within no bound.
    #[test]
    fn the_percentage_threshold_bounds_the_answer() {
        let s = scenario("llama-2-7b", "snapdragon-8-gen3-16gb", "Q4_K_M", "f16", 4096);
        let r = cheapest_fit(&s, None, None, Some(5.0)).unwrap();
        assert!(r.found);
        for c in &r.candidates {
            let within = c.ppl_increase_pct.is_some_and(|p| p <= 5.0);
            if c.meets {
                assert!(within, "{c:?}");
            }
            if c.fits && c.ptq_unusable.is_none() && !within {
                assert_eq!(c.misses, "max_ppl_increase_pct", "{c:?}");
            }
        }
        // Tighter bound, no better answer.
        let tight = cheapest_fit(&s, None, None, Some(0.1)).unwrap();
        assert!(tight.candidates[0].ppl_increase_pct.unwrap() <= 0.1 || !tight.found);
        assert!(r.candidates.iter().filter(|c| c.meets).count() >= tight.candidates.iter().filter(|c| c.meets).count());
    }

    /// Ternary and 1-bit formats on a model not trained for them are never the answer, and
    /// say why.
    #[test]
    fn sub_2_bit_formats_are_not_recommended_for_a_model_not_trained_for_them() {
        let s = scenario("llama-3.1-8b", "snapdragon-8-gen3-16gb", "Q4_K_M", "f16", 4096);
        let r = cheapest_fit(&s, None, None, None).unwrap();
        for name in ["TQ1_0", "TQ2_0", "IQ1_S", "IQ1_M"] {
            let c = r.candidates.iter().find(|c| c.weights == name).unwrap();
            assert!(!c.meets, "{c:?}");
            if c.fits {
                assert_eq!(c.misses, "ptq_unusable");
            }
            assert!(c.ptq_unusable.as_deref().is_some_and(|w| w.contains("not usable")), "{c:?}");
        }
        // A model trained ternary may use them.
        let mut t = s.clone();
        t.model.trained_bits = Some(1.58);
        let r = cheapest_fit(&t, None, None, None).unwrap();
        let c = r.candidates.iter().find(|c| c.weights == "TQ1_0").unwrap();
        assert!(c.ptq_unusable.is_none() && (c.meets || !c.fits), "{c:?}");
    }
}
