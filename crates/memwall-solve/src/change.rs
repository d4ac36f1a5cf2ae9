//! For a design that does not fit: the nearest fitting design along each axis.

use memwall_catalog::quality_table::ModelRef;
use memwall_catalog::{QualityTable, load_device};
use memwall_sim::{SimError, estimate};
use memwall_spec::{FileType, KvQuant, Mix, Scenario, WeightQuant};
use serde::Serialize;

use crate::search::{Candidate, KV_FORMATS, QualityBounds, candidate, rank};

/// One change that makes a design fit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// The axis changed: `weights`, `kv`, `weights+kv`, `context`, `window`, `margin`,
    /// `device`.
    pub axis: String,
    /// The change, `from → to`.
    pub change: String,
    /// Footprint after the change, bytes.
    pub total_bytes: u64,
    /// Budget − footprint after the change, bytes.
    pub headroom_bytes: i64,
    /// Decode tokens/s after the change.
    pub decode_tok_s: f64,
    /// Decode rate after the change over the rate before it.
    pub tok_s_ratio: f64,
    /// Estimated perplexity increase the change adds (0: none; None: unknown).
    pub ppl_cost: Option<f64>,
    /// The same in percentage points of the model's baseline perplexity.
    pub ppl_increase_pct_cost: Option<f64>,
    /// What else it costs, in words.
    pub cost: String,
}

/// The nearest fitting design along each axis of `s`, ranked by the perplexity the change
/// adds in % of the model's baseline (known first, least first), then by decode rate: the best-quality weight mix that
/// fits with the design's KV format; the best KV format with its weights; the best pair; the
/// longest context that fits; the widest sliding window that fits with three layers in four
/// made local; the margin that would let it fit; and the preset devices it fits, smallest
/// RAM first (three at most). Empty when `s` already fits.
pub fn what_to_change(s: &Scenario) -> Result<Vec<Change>, SimError> {
    let base = estimate(s)?;
    if base.fits {
        return Ok(Vec::new());
    }
    let table = QualityTable::default();
    let q0 = table.lookup_model(&ModelRef::of(&s.model), &s.weights, &s.kv);
    let ppl0 = q0.ppl_delta_weights.zip(q0.ppl_delta_kv).map(|(w, k)| w + k);
    let pct0 = q0.ppl_increase_pct();
    let kv_name = |kv: &KvQuant| format!("{}/{}", kv.k, kv.v);
    let mut out = Vec::new();
    let from_candidate = |axis: &str, change: String, c: &Candidate, out: &mut Vec<Change>| {
        out.push(Change {
            axis: axis.into(),
            change,
            total_bytes: c.total_bytes,
            headroom_bytes: c.headroom_bytes,
            decode_tok_s: c.decode_tok_s,
            tok_s_ratio: c.decode_tok_s / base.decode_tok_s,
            ppl_cost: c.ppl_delta.zip(ppl0).map(|(a, b)| a - b).filter(|_| c.ptq_unusable.is_none()),
            ppl_increase_pct_cost: c
                .ppl_increase_pct
                .zip(pct0)
                .map(|(a, b)| a - b)
                .filter(|_| c.ptq_unusable.is_none()),
            cost: match (&c.ptq_unusable, c.ppl_increase_pct) {
                (Some(why), _) => format!("NOT USABLE on this model: {why}"),
                (None, None) => "quality of the new format unknown".into(),
                (None, Some(_)) => format!("quality: {}", c.quality_source),
            },
        });
    };
    // Weights, KV, both.
    let try_all = |mixes: &[Mix], kvs: &[KvQuant]| -> Result<Option<Candidate>, SimError> {
        let mut c = Vec::new();
        for m in mixes {
            for kv in kvs {
                let mut t = s.clone();
                t.weights = WeightQuant::new(*m);
                t.kv = *kv;
                c.push(candidate(&t, &table, None, QualityBounds::default())?);
            }
        }
        rank(&mut c);
        // The best that meets every constraint; else one that fits only in a format the model
        // does not survive, listed so that the answer says so rather than staying silent.
        let usable = c.iter().find(|c| c.meets).cloned();
        Ok(usable.or_else(|| c.into_iter().find(|c| c.fits && c.misses == "ptq_unusable")))
    };
    let files: Vec<Mix> = FileType::ALL.iter().map(|f| Mix::File(*f)).collect();
    let kvs: Vec<KvQuant> = KV_FORMATS.iter().map(|f| KvQuant::both(*f)).collect();
    let w = try_all(&files, &[s.kv])?;
    if let Some(c) = &w {
        from_candidate("weights", format!("{} → {}", s.weights.mix, c.weights), c, &mut out);
    }
    let k = try_all(&[s.weights.mix], &kvs)?;
    if let Some(c) = &k {
        from_candidate("kv", format!("{} → {}", kv_name(&s.kv), c.kv), c, &mut out);
    }
    if let Some(c) = try_all(&files, &kvs)?
        && w.as_ref() != Some(&c)
        && k.as_ref() != Some(&c)
    {
        let change = format!("{} + {} → {} + {}", s.weights.mix, kv_name(&s.kv), c.weights, c.kv);
        from_candidate("weights+kv", change, &c, &mut out);
    }
    let mut push = |axis: &str, change: String, e: &memwall_sim::Estimate, ppl_cost: Option<f64>, cost: String| {
        out.push(Change {
            axis: axis.into(),
            change,
            total_bytes: e.total_bytes,
            headroom_bytes: e.headroom_bytes,
            decode_tok_s: e.decode_tok_s,
            tok_s_ratio: e.decode_tok_s / base.decode_tok_s,
            ppl_cost,
            ppl_increase_pct_cost: ppl_cost,
            cost,
        })
    };
    // Context.
    let ctx = s.workload.kv_tokens();
    if let Some(c) = super::max_context(s)?.max_context_tokens.filter(|&c| c < ctx) {
        let e = estimate(&super::at_context(s, c))?;
        push(
            "context",
            format!("{ctx} → {c} tokens"),
            &e,
            Some(0.0),
            format!("holds {c} tokens of context, not {ctx}"),
        );
    }
    // Sliding window.
    if let Some((win, e)) = super::max_window(s)? {
        push(
            "window",
            format!("3 of 4 layers local, window {win} tokens"),
            &e,
            None,
            "an architecture change: quality unknown without a model trained so".into(),
        );
    }
    // Margin.
    let short = (-base.headroom_bytes) as u64;
    let margin = s.workload.margin_bytes;
    if short <= margin {
        let mut t = s.clone();
        t.workload.margin_bytes = margin - short;
        let e = estimate(&t)?;
        push(
            "margin",
            format!("{:.2} → {:.2} GB", margin as f64 / 1e9, (margin - short) as f64 / 1e9),
            &e,
            Some(0.0),
            "less of the app limit kept free for what the footprint does not count".into(),
        );
    }
    // Devices.
    let mut devices = Vec::new();
    for (name, _) in memwall_catalog::presets::DEVICES {
        if *name == s.device.name {
            continue;
        }
        let mut t = s.clone();
        t.device = load_device(name).map_err(|e| super::invalid("device", name, &e.to_string()))?;
        if t.workload.backend != memwall_spec::Backend::Cpu && t.validate().is_err() {
            continue;
        }
        if let Ok(e) = estimate(&t)
            && e.fits
        {
            devices.push((t.device.memory.ram_bytes, e, name.to_string()));
        }
    }
    devices.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.decode_tok_s.total_cmp(&a.1.decode_tok_s)));
    for (ram, e, name) in devices.into_iter().take(3) {
        let cost = format!("{:.0} GiB of RAM", ram as f64 / (1u64 << 30) as f64);
        push("device", format!("{} → {name}", s.device.name), &e, Some(0.0), cost);
    }
    out.sort_by(|a, b| {
        a.ppl_increase_pct_cost
            .unwrap_or(f64::INFINITY)
            .total_cmp(&b.ppl_increase_pct_cost.unwrap_or(f64::INFINITY))
            .then(b.decode_tok_s.total_cmp(&a.decode_tok_s))
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::scenario;

    /// Llama 3.1 8B at Q6_K with a 16k F16 cache does not fit a 16 GB phone with a 2 GB
    /// margin (0.6 of 16 GiB, 10.3 GB, less 2 GB: 8.3 GB for ~6.6 GB of weights and 2.1 GB of
    /// cache). Each proposed change fits (checked by the estimator again), the weight change
    /// is the best-quality mix that fits (no file type with a smaller perplexity increase
    /// fits), and the ranking puts known, smaller quality costs first.
    #[test]
    fn each_change_fits_and_the_weight_change_is_the_best_that_does() {
        let s = scenario("llama-3.1-8b", "snapdragon-8-gen3-16gb", "Q6_K", "f16", 16384);
        assert!(!estimate(&s).unwrap().fits);
        let changes = what_to_change(&s).unwrap();
        assert!(changes.iter().all(|c| c.headroom_bytes >= 0), "{changes:?}");
        let axes: Vec<&str> = changes.iter().map(|c| c.axis.as_str()).collect();
        for axis in ["weights", "kv", "context", "window", "device"] {
            assert!(axes.contains(&axis), "{axis}: {axes:?}");
        }
        let w = changes.iter().find(|c| c.axis == "weights").unwrap();
        let to = w.change.split(" → ").nth(1).unwrap();
        let table = QualityTable::default();
        let cost = |mix: &str| {
            let mut t = s.clone();
            t.weights = WeightQuant::new(mix.parse().unwrap());
            (
                estimate(&t).unwrap().fits,
                table.lookup_model(&ModelRef::of(&t.model), &t.weights, &t.kv).ppl_increase_pct(),
            )
        };
        let (fits, best) = cost(to);
        assert!(fits);
        for ft in FileType::ALL {
            let (fits, d) = cost(ft.name());
            if fits && let (Some(d), Some(b)) = (d, best) {
                assert!(d >= b, "{} fits with dPPL {d} < {b}", ft.name());
            }
        }
        let known: Vec<f64> = changes.iter().filter_map(|c| c.ppl_increase_pct_cost).collect();
        assert!(known.windows(2).all(|p| p[0] <= p[1]), "{known:?}");
        // A design that fits needs no change.
        let ok = scenario("llama-3.2-1b", "snapdragon-8-gen3-16gb", "Q4_K_M", "f16", 4096);
        assert!(what_to_change(&ok).unwrap().is_empty());
    }

    /// The seed question: on the phone only ternary or 1-bit weights would fit; the change is
    /// listed with its cost saying the model does not survive it, never as a plain answer.
    #[test]
    fn a_format_the_model_does_not_survive_is_listed_only_with_the_warning() {
        let mut s = scenario("hypothetical-35b-moe", "snapdragon-8-gen3-16gb", "Q4_K_M", "f16", 32768);
        // No margin (the default): the Android app limit alone, 0.6 of 16 GiB.
        s.workload.margin_bytes = 0;
        let changes = what_to_change(&s).unwrap();
        let weights: Vec<&Change> = changes.iter().filter(|c| c.axis.starts_with("weights")).collect();
        assert!(!weights.is_empty(), "{changes:?}");
        for c in weights {
            assert!(c.cost.starts_with("NOT USABLE on this model") && c.cost.contains("trained_bits"), "{c:?}");
            assert_eq!(c.ppl_increase_pct_cost, None);
        }
    }
}
