//! A GGUF's metadata checked against the shapes of the tensors it describes. The mapping sizes
//! the KV cache, the FFN and the experts from the metadata; a file whose `head_count_kv` says 8
//! while its K projections hold 2 heads would be believed, and its cache counted 4× too big.
//! Here every number the shapes can confirm is compared with them, and a file where they
//! disagree is refused naming both the key (and its value) and the tensor (and its shape).
//!
//! Only what llama.cpp's own loader requires of the architectures mapped is checked: query rows
//! `heads × key width`, K rows `kv_heads × key width`, V rows `kv_heads × value width`, fused
//! QKV rows their sum, per layer where the counts are per layer; FFN widths (gate and up rows,
//! down's row length; up may hold gate and up fused, twice the width, when no gate exists);
//! expert counts (the third dimension of `ffn_*_exps`, the router's rows) and expert widths;
//! the latent of multi-head latent attention (`kv_lora_rank + rope`); and the vocabulary
//! (`token_embd` and `output` rows). Layers of latent attention skip the head checks (their
//! queries and keys are compressed), and tensors a layer does not hold (shared-KV layers,
//! state-space and short-convolution layers) are not asked for.

use std::collections::HashSet;

use memwall_spec::{StoredTensor, TensorClass};

use crate::ImportError;
use crate::gguf::TensorInfo;

/// A number the metadata states, with its full key.
#[derive(Debug, Clone)]
pub(crate) struct Claim {
    /// The full metadata key (`llama.attention.head_count_kv`).
    pub key: String,
    /// The value.
    pub value: u64,
}

impl Claim {
    /// A scalar key `key` = `value`.
    pub fn new(key: impl Into<String>, value: u64) -> Self {
        Self { key: key.into(), value }
    }
}

/// A width formed from metadata: its value and how (`` `llama.attention.key_length` ``).
#[derive(Debug, Clone)]
pub(crate) struct Width {
    /// The width.
    pub value: u64,
    /// Where it comes from, for the message.
    pub how: String,
}

/// What the metadata says about the tensors' shapes, as the mapping read it.
#[derive(Debug, Default)]
pub(crate) struct Claims {
    /// The file, for errors.
    pub origin: String,
    /// Query heads per layer (`attention.head_count`), when the key is given.
    pub heads: Option<(String, Vec<u64>)>,
    /// KV heads per layer (`attention.head_count_kv`, else the query heads' key).
    pub kv_heads: Option<(String, Vec<u64>)>,
    /// Width of a query or key head.
    pub key_width: Option<Width>,
    /// Width of a value head.
    pub value_width: Option<Width>,
    /// Dense FFN width per layer (`feed_forward_length`), when the key is given.
    pub ffn: Option<(String, Vec<u64>)>,
    /// Routed experts per layer (`expert_count`).
    pub experts: Option<Claim>,
    /// Width of one expert (`expert_feed_forward_length`).
    pub expert_ffn: Option<Claim>,
    /// Latent attention: `attention.kv_lora_rank` and `rope.dimension_count`.
    pub mla: Option<(Claim, Claim)>,
    /// Vocabulary entries (`vocab_size`, else the tokenizer's token count).
    pub vocab: Option<Claim>,
}

/// Layers that hold any tensor of `classes`.
fn layers_with(stored: &[StoredTensor], classes: &[TensorClass]) -> HashSet<u32> {
    stored.iter().filter(|t| classes.contains(&t.tensor.class)).filter_map(|t| t.tensor.layer).collect()
}

/// Refuse the file unless every tensor agrees with `c`. `tensors` and `stored` are the file's
/// tensors and their classification, in the same order.
pub(crate) fn cross_check(c: &Claims, tensors: &[TensorInfo], stored: &[StoredTensor]) -> Result<(), ImportError> {
    use TensorClass as C;
    let latent = layers_with(stored, &[C::AttnQA, C::AttnQB, C::AttnKvAMqa, C::AttnKvB]);
    let gated = layers_with(stored, &[C::FfnGate]);
    for (info, t) in tensors.iter().zip(stored) {
        let Some(l) = t.tensor.layer else {
            check_global(c, info, t.tensor.class)?;
            continue;
        };
        if latent.contains(&l) {
            check_latent(c, info, t.tensor.class)?;
        } else {
            check_attention(c, info, t.tensor.class, l)?;
        }
        check_ffn(c, info, t.tensor.class, l, gated.contains(&l))?;
        check_experts(c, info, t.tensor.class)?;
    }
    Ok(())
}

/// The vocabulary: rows of the token embedding and of the output projection.
fn check_global(c: &Claims, info: &TensorInfo, class: TensorClass) -> Result<(), ImportError> {
    match (class, &c.vocab) {
        (TensorClass::TokenEmbd | TensorClass::Output, Some(v)) => {
            expect(c, info, 1, Some(v.value), None, &v.key, || {
                let n = v.value;
                if v.key.ends_with(".tokens") {
                    format!("holds {n} tokens: {n} rows (ne[1])")
                } else {
                    format!("= {n}: {n} rows (ne[1])")
                }
            })
        }
        _ => Ok(()),
    }
}

/// Per-layer value `l` of a per-layer claim.
fn at(claim: &Option<(String, Vec<u64>)>, l: u32) -> Option<(&str, u64)> {
    let (key, values) = claim.as_ref()?;
    Some((key.as_str(), *values.get(l as usize)?))
}

/// Heads and head widths: query, key, value and fused projections of layer `l`.
fn check_attention(c: &Claims, info: &TensorInfo, class: TensorClass, l: u32) -> Result<(), ImportError> {
    let (Some(kw), Some(vw)) = (&c.key_width, &c.value_width) else { return Ok(()) };
    let width = |w: &Width| format!("head width {} ({})", w.value, w.how);
    let fused = info.name.ends_with(".attn_qkv.weight");
    match (class, at(&c.heads, l), at(&c.kv_heads, l)) {
        (TensorClass::AttnQ, Some((key, h)), _) => {
            let want = h.checked_mul(kw.value);
            expect(c, info, 1, want, None, key, || format!("= {h} with {}: {} rows (ne[1])", width(kw), shown(want)))
        }
        (TensorClass::AttnK, _, Some((key, kv))) => {
            let want = kv.checked_mul(kw.value);
            expect(c, info, 1, want, None, key, || format!("= {kv} with {}: {} rows (ne[1])", width(kw), shown(want)))
        }
        (TensorClass::AttnV, _, Some((key, kv))) => {
            let want = kv.checked_mul(vw.value);
            expect(c, info, 1, want, None, key, || format!("= {kv} with {}: {} rows (ne[1])", width(vw), shown(want)))
        }
        (_, Some((q_key, h)), Some((key, kv))) if fused => {
            let q = h.checked_mul(kw.value);
            let want = kv.checked_mul(kw.value.saturating_add(vw.value)).zip(q).and_then(|(a, b)| a.checked_add(b));
            expect(c, info, 1, want, None, key, || {
                format!(
                    "= {kv} and `{q_key}` = {h} with key {} and value {}: q + k + v = {} rows (ne[1])",
                    width(kw),
                    width(vw),
                    shown(want)
                )
            })
        }
        _ => Ok(()),
    }
}

/// The dense FFN width of layer `l`: gate and up rows (up twice the width when it holds the
/// gate too, in a layer without a gate tensor), down's row length.
fn check_ffn(c: &Claims, info: &TensorInfo, class: TensorClass, l: u32, gated: bool) -> Result<(), ImportError> {
    let Some((key, f)) = at(&c.ffn, l) else { return Ok(()) };
    match class {
        TensorClass::FfnGate => expect(c, info, 1, Some(f), None, key, || format!("= {f}: {f} rows (ne[1])")),
        TensorClass::FfnUp if gated => expect(c, info, 1, Some(f), None, key, || format!("= {f}: {f} rows (ne[1])")),
        TensorClass::FfnUp => expect(c, info, 1, Some(f), f.checked_mul(2), key, || {
            format!("= {f}: {f} rows (ne[1]), or {} with gate and up fused", shown(f.checked_mul(2)))
        }),
        TensorClass::FfnDown => expect(c, info, 0, Some(f), None, key, || format!("= {f}: row length (ne[0]) {f}")),
        _ => Ok(()),
    }
}

/// Routed experts: the stacked experts' count (ne[2]) and width, the router's rows.
fn check_experts(c: &Claims, info: &TensorInfo, class: TensorClass) -> Result<(), ImportError> {
    use TensorClass as C;
    let stacked = matches!(class, C::FfnUpExps | C::FfnGateExps | C::FfnDownExps);
    if let Some(e) = &c.experts {
        let n = e.value;
        if stacked {
            expect(c, info, 2, Some(n), None, &e.key, || format!("= {n}: {n} experts (ne[2])"))?;
        } else if class == C::FfnGateInp {
            expect(c, info, 1, Some(n), None, &e.key, || format!("= {n}: {n} router rows (ne[1])"))?;
        }
    }
    match (&c.expert_ffn, class) {
        (Some(w), C::FfnUpExps | C::FfnGateExps) => {
            expect(c, info, 1, Some(w.value), None, &w.key, || format!("= {0}: {0} rows (ne[1])", w.value))
        }
        (Some(w), C::FfnDownExps) => {
            expect(c, info, 0, Some(w.value), None, &w.key, || format!("= {0}: row length (ne[0]) {0}", w.value))
        }
        _ => Ok(()),
    }
}

/// Latent attention: the compressed KV projection's rows, `kv_lora_rank + rope`.
fn check_latent(c: &Claims, info: &TensorInfo, class: TensorClass) -> Result<(), ImportError> {
    match (class, &c.mla) {
        (TensorClass::AttnKvAMqa, Some((rank, rope))) => {
            let want = rank.value.checked_add(rope.value);
            expect(c, info, 1, want, None, &rank.key, || {
                format!("= {} + `{}` = {}: {} rows (ne[1])", rank.value, rope.key, rope.value, shown(want))
            })
        }
        _ => Ok(()),
    }
}

/// A count that may have overflowed, for messages.
fn shown(v: Option<u64>) -> String {
    v.map_or_else(|| "more than 2^64".to_string(), |v| v.to_string())
}

/// Refuse unless dimension `axis` of `info` (1 past its last) is `want` or `alt`; `said`
/// tells what metadata `key` says, and the error adds the tensor and its shape.
fn expect(
    c: &Claims,
    info: &TensorInfo,
    axis: usize,
    want: Option<u64>,
    alt: Option<u64>,
    key: &str,
    said: impl FnOnce() -> String,
) -> Result<(), ImportError> {
    let has = info.dims.get(axis).copied().unwrap_or(1);
    if Some(has) == want || Some(has) == alt {
        return Ok(());
    }
    Err(ImportError::Key {
        origin: c.origin.clone(),
        key: key.to_string(),
        what: format!("{}, but tensor `{}` has shape {:?}", said(), info.name, info.dims),
    })
}
