//! Quantization mixes: how llama.cpp's file types (`Q4_K_M`, `Q3_K_S`, `IQ2_XS`, ...) assign
//! a ggml type to each tensor, plus user overrides (the "sensitive layers" recipe).
//!
//! The rules reproduce `llama_tensor_get_type` of llama.cpp's `src/llama-quant.cpp` for the
//! tensor classes memwall models, including the fallback for rows whose length is not a
//! multiple of the chosen type's block size (`convert_incompatible_tensor`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{Result, SpecError};
use crate::model::{ModelSpec, Tensor, TensorClass};
use crate::quant::{GgmlType, QuantFormat};

macro_rules! file_types {
    ($( $variant:ident => $name:literal, $default:ident; )*) => {
        /// A llama.cpp file type (`LLAMA_FTYPE_MOSTLY_*`): a default ggml type plus per-tensor rules.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[allow(non_camel_case_types, missing_docs)]
        pub enum FileType { $( $variant, )* }

        impl FileType {
            /// Every file type.
            pub const ALL: &'static [FileType] = &[$(FileType::$variant),*];

            /// llama.cpp's name (`"Q4_K_M"`).
            pub fn name(self) -> &'static str {
                match self { $(FileType::$variant => $name,)* }
            }

            /// The type of tensors no rule singles out (`default_type` in llama.cpp).
            pub fn default_type(self) -> GgmlType {
                match self { $(FileType::$variant => GgmlType::$default,)* }
            }
        }
    };
}

file_types! {
    F32 => "F32", F32;
    F16 => "F16", F16;
    BF16 => "BF16", BF16;
    Q4_0 => "Q4_0", Q4_0;
    Q4_1 => "Q4_1", Q4_1;
    Q5_0 => "Q5_0", Q5_0;
    Q5_1 => "Q5_1", Q5_1;
    Q8_0 => "Q8_0", Q8_0;
    Q2_K => "Q2_K", Q2_K;
    Q2_K_S => "Q2_K_S", Q2_K;
    Q3_K_S => "Q3_K_S", Q3_K;
    Q3_K_M => "Q3_K_M", Q3_K;
    Q3_K_L => "Q3_K_L", Q3_K;
    Q4_K_S => "Q4_K_S", Q4_K;
    Q4_K_M => "Q4_K_M", Q4_K;
    Q5_K_S => "Q5_K_S", Q5_K;
    Q5_K_M => "Q5_K_M", Q5_K;
    Q6_K => "Q6_K", Q6_K;
    IQ1_S => "IQ1_S", IQ1_S;
    IQ1_M => "IQ1_M", IQ1_M;
    IQ2_XXS => "IQ2_XXS", IQ2_XXS;
    IQ2_XS => "IQ2_XS", IQ2_XS;
    IQ2_S => "IQ2_S", IQ2_XS;
    IQ2_M => "IQ2_M", IQ2_S;
    IQ3_XXS => "IQ3_XXS", IQ3_XXS;
    IQ3_XS => "IQ3_XS", IQ3_S;
    IQ3_S => "IQ3_S", IQ3_S;
    IQ3_M => "IQ3_M", IQ3_S;
    IQ4_NL => "IQ4_NL", IQ4_NL;
    IQ4_XS => "IQ4_XS", IQ4_XS;
    TQ1_0 => "TQ1_0", TQ1_0;
    TQ2_0 => "TQ2_0", TQ2_0;
    MXFP4_MOE => "MXFP4_MOE", MXFP4;
}

impl FileType {
    /// Parse a file-type name case-insensitively.
    pub fn parse(name: &str) -> Option<FileType> {
        FileType::ALL.iter().copied().find(|t| t.name().eq_ignore_ascii_case(name))
    }
}

/// A weight quantization recipe: a llama.cpp file type, or one format for every weight
/// (`--pure`), possibly generic group-wise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mix {
    /// A llama.cpp file type with its per-tensor rules.
    File(FileType),
    /// Every quantizable weight in this format.
    Pure(QuantFormat),
    /// Each tensor in the type its model file stores it in (`stored`; needs a model read from
    /// a GGUF file, [`ModelSpec::stored`]).
    Stored,
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mix::File(t) => f.write_str(t.name()),
            Mix::Pure(q) => write!(f, "pure-{q}"),
            Mix::Stored => f.write_str("stored"),
        }
    }
}

impl FromStr for Mix {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<Self> {
        if let Some(t) = FileType::parse(s.trim()) {
            return Ok(Mix::File(t));
        }
        if s.trim().eq_ignore_ascii_case("stored") {
            return Ok(Mix::Stored);
        }
        let body = s.trim().strip_prefix("pure-").unwrap_or(s.trim());
        body.parse::<QuantFormat>().map(Mix::Pure).map_err(|_| {
            SpecError::unknown(
                String::new(),
                "quantization mix",
                s,
                FileType::ALL.iter().map(|t| t.name()).chain(crate::GgmlType::ALL.iter().map(|t| t.name())),
                format!(
                    "; expected a llama.cpp file type ({}), a format such as q4_0 or int4-g128 \
                 (optionally prefixed pure-), or stored (the types of a GGUF model file)",
                    FileType::ALL.iter().map(|t| t.name()).collect::<Vec<_>>().join(", ")
                ),
            )
        })
    }
}

impl Serialize for Mix {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Mix {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

/// Which layers an override applies to: `"all"`, or a comma-separated list of `first:N`,
/// `last:N`, `A-B` (inclusive) and single indices, e.g. `"first:2,last:2"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LayerSelector(pub String);

impl LayerSelector {
    /// Whether layer `i` of `n` (or a global tensor, `None`) is selected. Global tensors
    /// are selected only by `"all"`.
    pub fn matches(&self, layer: Option<u32>, n: u32) -> Result<bool> {
        let spec = self.0.trim();
        if spec.is_empty() || spec == "all" {
            return Ok(true);
        }
        let Some(i) = layer else { return Ok(false) };
        let bad = |item: &str| SpecError::invalid("layers", item, "expected all, first:N, last:N, A-B or an index");
        for item in spec.split(',').map(str::trim) {
            let hit = if let Some(k) = item.strip_prefix("first:") {
                i < k.parse::<u32>().map_err(|_| bad(item))?
            } else if let Some(k) = item.strip_prefix("last:") {
                i + k.parse::<u32>().map_err(|_| bad(item))? >= n
            } else if let Some((a, b)) = item.split_once('-') {
                let (a, b): (u32, u32) = (a.parse().map_err(|_| bad(item))?, b.parse().map_err(|_| bad(item))?);
                (a..=b).contains(&i)
            } else {
                i == item.parse::<u32>().map_err(|_| bad(item))?
            };
            if hit {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

fn all_layers() -> LayerSelector {
    LayerSelector("all".into())
}

/// Force a format on some tensor classes in some layers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Override {
    /// Tensor class names (`"attn_output"`, `"ffn_down"`, `"output"`); a trailing `*` matches
    /// a prefix (`"attn_*"`).
    pub tensors: Vec<String>,
    /// Layers the override applies to.
    #[serde(default = "all_layers")]
    pub layers: LayerSelector,
    /// The format to use.
    pub format: QuantFormat,
}

/// `tensors=format`, with `@layers` unless every layer: `output=q8_0`, `attn_v,ffn_down=q6_K@first:4`.
impl std::fmt::Display for Override {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={}", self.tensors.join(","), self.format)?;
        match self.layers.0.trim() {
            "" | "all" => Ok(()),
            l => write!(f, "@{l}"),
        }
    }
}

impl Override {
    fn matches_class(&self, class: TensorClass) -> bool {
        self.tensors.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => class.name().starts_with(prefix),
            None => class.name() == p,
        })
    }
}

/// The weight quantization of a scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WeightQuant {
    /// File type or pure format.
    pub mix: Mix,
    /// Whether an importance matrix was used (changes a few IQ/Q4_0 rules, as in llama.cpp).
    #[serde(default)]
    pub imatrix: bool,
    /// Overrides applied after the mix rules, later entries winning.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<Override>,
}

impl WeightQuant {
    /// A plain mix without overrides.
    pub fn new(mix: Mix) -> Self {
        WeightQuant { mix, imatrix: false, overrides: Vec::new() }
    }

    /// Check overrides name real tensor classes and parsable layer selectors.
    pub fn validate(&self) -> Result<()> {
        for (i, o) in self.overrides.iter().enumerate() {
            let field = format!("overrides[{i}].tensors");
            if o.tensors.is_empty() {
                return Err(SpecError::invalid(field, "[]", "name at least one tensor class"));
            }
            for p in &o.tensors {
                let known = match p.strip_suffix('*') {
                    Some(prefix) => TensorClass::ALL.iter().any(|c| c.name().starts_with(prefix)),
                    None => TensorClass::parse(p).is_some(),
                };
                if !known {
                    return Err(SpecError::unknown(
                        field,
                        "tensor class",
                        p.clone(),
                        TensorClass::ALL.iter().map(|c| c.name()),
                        format!(
                            "; known classes: {}",
                            TensorClass::ALL.iter().map(|c| c.name()).collect::<Vec<_>>().join(", ")
                        ),
                    ));
                }
            }
            o.layers.matches(Some(0), 1).map_err(|e| e.within(&format!("overrides[{i}]")))?;
        }
        Ok(())
    }

    /// The storage format of every tensor of `model`, in [`ModelSpec::tensors`] order, with
    /// the format the recipe asked for (they differ where llama.cpp's fallback applied).
    pub fn assign(&self, model: &ModelSpec) -> Vec<Assignment> {
        if let (Mix::Stored, Some(stored)) = (self.mix, &model.stored) {
            // The file's own types: no rule, no fallback (the file already holds them).
            return stored
                .iter()
                .map(|t| {
                    let forced = (t.tensor.class.quantizable() && !t.tensor.is_vector())
                        .then(|| self.override_of(&t.tensor, model.n_layers))
                        .flatten();
                    let format = forced.map_or(QuantFormat::Ggml(t.ggml), |f| fallback(f, t.tensor.row_len));
                    Assignment { tensor: t.tensor, format, requested: format }
                })
                .collect();
        }
        let tensors = model.tensors();
        let mut state = RuleState::new(model, &tensors);
        tensors
            .into_iter()
            .map(|tensor| {
                let mut requested = self.rule_format(model, &tensor, &mut state);
                if let Some(f) = self.override_of(&tensor, model.n_layers) {
                    requested = f;
                }
                if !tensor.class.quantizable() || tensor.is_vector() {
                    requested = QuantFormat::Ggml(GgmlType::F32);
                }
                Assignment { tensor, format: fallback(requested, tensor.row_len), requested }
            })
            .collect()
    }

    /// The format the last override matching `t` forces, if one does.
    fn override_of(&self, t: &Tensor, n_layers: u32) -> Option<QuantFormat> {
        self.overrides
            .iter()
            .rev()
            .find(|o| o.matches_class(t.class) && o.layers.matches(t.layer, n_layers).unwrap_or(false))
            .map(|o| o.format)
    }

    /// The format the mix rules ask for, before any fallback.
    fn rule_format(&self, model: &ModelSpec, t: &Tensor, st: &mut RuleState) -> QuantFormat {
        let ftype = match self.mix {
            Mix::Pure(q) => return q,
            Mix::File(ft) => ft,
            // Without a stored table (refused by `Scenario::validate`): the file's usual type.
            Mix::Stored => return QuantFormat::Ggml(GgmlType::F16),
        };
        let default = ftype.default_type();
        if !default.is_quantized() {
            // F32/F16/BF16 files: llama.cpp applies no per-tensor rules.
            return QuantFormat::Ggml(default);
        }
        QuantFormat::Ggml(tensor_type(ftype, self.imatrix, model, t, st))
    }
}

/// The storage format of one tensor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Assignment {
    /// The tensor.
    pub tensor: Tensor,
    /// The format it is stored in.
    pub format: QuantFormat,
    /// The format the recipe asked for; differs from `format` where the rows do not fill
    /// whole blocks and llama.cpp falls back ([`fallback`]).
    pub requested: QuantFormat,
}

impl Assignment {
    /// Whether the stored format differs from the requested one.
    pub fn fell_back(&self) -> bool {
        self.format != self.requested
    }
}

/// Counters llama.cpp keeps while it walks the tensors.
struct RuleState {
    n_attention_wv: u32,
    i_attention_wv: u32,
    n_gqa: u64,
    n_expert: u32,
}

impl RuleState {
    fn new(model: &ModelSpec, tensors: &[Tensor]) -> Self {
        let n_attention_wv =
            tensors.iter().filter(|t| matches!(t.class, TensorClass::AttnV | TensorClass::AttnKvB)).count() as u32;
        let n_gqa = model.n_heads.checked_div(model.n_kv_heads).unwrap_or(1);
        RuleState { n_attention_wv, i_attention_wv: 0, n_gqa, n_expert: model.moe.as_ref().map_or(0, |m| m.n_experts) }
    }
}

/// llama.cpp's `use_more_bits(i, n)`: the first and last eighth of the layers and every third
/// layer in between get more bits.
pub fn use_more_bits(i: u32, n: u32) -> bool {
    i < n / 8 || i >= 7 * n / 8 || (i as i64 - (n / 8) as i64) % 3 == 2
}

/// The ggml type llama.cpp's `llama_tensor_get_type` picks for tensor `t` under `ftype`.
fn tensor_type(ftype: FileType, imatrix: bool, model: &ModelSpec, t: &Tensor, st: &mut RuleState) -> GgmlType {
    use FileType as F;
    use GgmlType as G;
    use TensorClass as C;
    let default = ftype.default_type();
    let n_layer = model.n_layers;
    let i_layer = t.layer.unwrap_or(0);
    let gqa4 = st.n_gqa >= 4;
    let iq_low = matches!(ftype, F::IQ2_XXS | F::IQ2_XS | F::IQ1_S | F::IQ2_S | F::IQ2_M | F::IQ1_M);
    let class = t.class;
    let is_output = class == C::Output || (model.tied_embeddings && class == C::TokenEmbd);
    if is_output {
        if ftype == F::MXFP4_MOE || !t.row_len.is_multiple_of(default.block_size()) {
            return G::Q8_0;
        }
        if matches!(ftype, F::IQ2_XXS | F::IQ2_XS | F::IQ3_XXS | F::IQ1_S | F::IQ2_S | F::IQ2_M | F::IQ1_M) {
            return G::Q5_K;
        }
        return if default != G::Q8_0 { G::Q6_K } else { default };
    }
    if ftype == F::MXFP4_MOE {
        return if t.experts > 1 { G::MXFP4 } else { G::Q8_0 };
    }
    if class == C::TokenEmbd {
        return match ftype {
            F::IQ2_XXS | F::IQ2_XS | F::IQ1_S | F::IQ1_M => G::Q2_K,
            F::IQ2_S | F::IQ2_M | F::IQ3_XXS => G::IQ3_S,
            F::TQ1_0 | F::TQ2_0 => G::Q4_K,
            _ => default,
        };
    }
    let is_down = matches!(class, C::FfnDown | C::FfnDownExps | C::FfnDownShexp);
    if iq_low {
        let iq2s = matches!(ftype, F::IQ2_S | F::IQ2_M);
        return match class {
            C::AttnV => {
                st.i_attention_wv += 1;
                if gqa4 || st.n_expert >= 4 {
                    G::Q4_K
                } else if iq2s {
                    G::IQ3_S
                } else {
                    G::Q2_K
                }
            }
            C::AttnK if st.n_expert == 8 => G::Q4_K,
            _ if is_down => {
                if i_layer < n_layer / 8 {
                    if iq2s { G::IQ3_S } else { G::Q2_K }
                } else {
                    default
                }
            }
            C::AttnOutput => {
                if st.n_expert == 8 {
                    G::Q5_K
                } else if matches!(ftype, F::IQ1_S | F::IQ1_M) {
                    G::IQ2_XXS
                } else if iq2s {
                    G::IQ3_S
                } else {
                    default
                }
            }
            _ => default,
        };
    }
    match class {
        C::AttnV => {
            let i = st.i_attention_wv;
            let mut ty = match ftype {
                F::Q2_K => {
                    if gqa4 {
                        G::Q4_K
                    } else {
                        G::Q3_K
                    }
                }
                F::Q2_K_S if gqa4 => G::Q4_K,
                F::IQ3_XXS => {
                    if gqa4 {
                        G::Q4_K
                    } else if !imatrix {
                        G::IQ3_S
                    } else {
                        G::IQ3_XXS
                    }
                }
                F::IQ3_XS | F::IQ3_S if gqa4 => G::Q4_K,
                F::IQ3_M => G::Q4_K,
                F::Q3_K_M => {
                    if i < 2 {
                        G::Q5_K
                    } else {
                        G::Q4_K
                    }
                }
                F::Q3_K_L => G::Q5_K,
                F::IQ4_NL | F::IQ4_XS if gqa4 => G::Q5_K,
                F::Q4_K_M | F::Q5_K_M if use_more_bits(i, st.n_attention_wv) => G::Q6_K,
                F::Q4_K_S if i < 4 => G::Q5_K,
                _ => default,
            };
            if st.n_expert == 8 {
                ty = G::Q8_0;
            }
            st.i_attention_wv += 1;
            ty
        }
        C::AttnK => match ftype {
            _ if st.n_expert == 8 => G::Q8_0,
            F::IQ3_XS => G::IQ3_XXS,
            F::IQ3_XXS => G::IQ2_S,
            _ => default,
        },
        C::AttnQ => match ftype {
            F::IQ3_XS => G::IQ3_XXS,
            F::IQ3_XXS => G::IQ2_S,
            _ => default,
        },
        _ if is_down => match ftype {
            F::Q2_K => G::Q3_K,
            F::Q2_K_S if i_layer < n_layer / 8 => G::Q4_K,
            F::IQ3_XXS if !imatrix => {
                if i_layer < n_layer / 8 {
                    G::Q4_K
                } else {
                    G::Q3_K
                }
            }
            F::Q3_K_M => {
                if i_layer < n_layer / 16 {
                    G::Q5_K
                } else {
                    G::Q4_K
                }
            }
            F::IQ3_M if i_layer < n_layer / 8 || (st.n_expert == 8 && use_more_bits(i_layer, n_layer)) => G::Q4_K,
            F::Q3_K_L => G::Q5_K,
            F::Q4_K_M if use_more_bits(i_layer, n_layer) => G::Q6_K,
            F::IQ4_NL | F::IQ4_XS if i_layer < n_layer / 8 && !imatrix => G::Q5_K,
            F::Q5_K_M if use_more_bits(i_layer, n_layer) => G::Q6_K,
            F::Q4_K_S if i_layer < n_layer / 8 => G::Q5_K,
            F::Q4_0 if imatrix && i_layer < n_layer / 8 => G::Q4_1,
            F::Q5_0 if imatrix && i_layer < n_layer / 8 => G::Q5_1,
            _ => default,
        },
        C::AttnOutput => {
            if st.n_expert == 8 {
                match ftype {
                    F::Q2_K
                    | F::IQ3_XS
                    | F::IQ3_XXS
                    | F::Q3_K_S
                    | F::Q3_K_M
                    | F::IQ4_NL
                    | F::Q4_K_S
                    | F::Q4_K_M
                    | F::IQ3_S
                    | F::IQ3_M
                    | F::IQ4_XS => G::Q5_K,
                    _ => default,
                }
            } else {
                match ftype {
                    F::Q2_K => G::Q3_K,
                    F::IQ3_XXS => G::IQ3_S,
                    F::Q3_K_M => G::Q4_K,
                    F::Q3_K_L => G::Q5_K,
                    F::IQ3_M => G::Q4_K,
                    _ => default,
                }
            }
        }
        C::FfnGate | C::FfnGateExps | C::FfnGateShexp | C::FfnUp | C::FfnUpExps | C::FfnUpShexp
            if ftype == F::IQ3_XS && i_layer >= n_layer / 8 && i_layer < 7 * n_layer / 8 =>
        {
            G::IQ3_XXS
        }
        _ => default,
    }
}

/// llama.cpp's fallback when a row of `row_len` elements does not fill whole blocks of `f`:
/// K- and IQ-quants fall back to a 32-element format of similar size, then to F16.
///
/// Generic group, per-channel and FP8 formats never fall back: they pad the last group (or
/// tile) instead.
pub fn fallback(f: QuantFormat, row_len: u64) -> QuantFormat {
    if f.row_bytes(row_len).is_some() {
        return f;
    }
    use GgmlType as G;
    let alt = match f {
        QuantFormat::Ggml(t) => match t {
            G::TQ1_0 | G::TQ2_0 => Some(G::Q4_0),
            G::IQ2_XXS
            | G::IQ2_XS
            | G::IQ2_S
            | G::IQ3_XXS
            | G::IQ3_S
            | G::IQ1_S
            | G::IQ1_M
            | G::Q2_K
            | G::Q3_K
            | G::IQ4_XS => Some(G::IQ4_NL),
            G::Q4_K => Some(G::Q5_0),
            G::Q5_K => Some(G::Q5_1),
            G::Q6_K => Some(G::Q8_0),
            _ => None,
        },
        QuantFormat::Group(_) | QuantFormat::Channel(_) | QuantFormat::Fp8(_) => None,
    };
    match alt {
        Some(a) if row_len.is_multiple_of(a.block_size()) => QuantFormat::Ggml(a),
        _ => QuantFormat::Ggml(G::F16),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn use_more_bits_matches_llama_cpp_for_32_layers() {
        let picked: Vec<u32> = (0..32).filter(|&i| use_more_bits(i, 32)).collect();
        assert_eq!(picked, vec![0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31]);
    }

    #[test]
    fn incompatible_rows_fall_back_like_llama_cpp() {
        let q = |t| QuantFormat::Ggml(t);
        assert_eq!(fallback(q(GgmlType::Q4_K), 4096), q(GgmlType::Q4_K));
        assert_eq!(fallback(q(GgmlType::Q4_K), 4000), q(GgmlType::Q5_0));
        assert_eq!(fallback(q(GgmlType::Q6_K), 1408), q(GgmlType::Q8_0));
        assert_eq!(fallback(q(GgmlType::Q2_K), 1408), q(GgmlType::IQ4_NL));
        assert_eq!(fallback(q(GgmlType::Q4_K), 100), q(GgmlType::F16));
    }

    #[test]
    fn layer_selectors() {
        let s = LayerSelector("first:2,last:2,10-11,20".into());
        let hits: Vec<u32> = (0..32).filter(|&i| s.matches(Some(i), 32).unwrap()).collect();
        assert_eq!(hits, vec![0, 1, 10, 11, 20, 30, 31]);
        assert!(!s.matches(None, 32).unwrap());
        assert!(LayerSelector("first:x".into()).matches(Some(0), 4).is_err());
    }

    #[test]
    fn sensitive_layer_overrides_apply_after_the_mix_rules() {
        let model: ModelSpec = toml::from_str(
            "name = \"m\"\nn_layers = 8\nhidden = 512\nn_heads = 8\nn_kv_heads = 2\nffn = 1024\nvocab = 1000",
        )
        .unwrap();
        let mut w = WeightQuant::new(Mix::File(FileType::Q4_K_M));
        let before = w.assign(&model);
        w.overrides.push(Override {
            tensors: vec!["attn_output".into(), "output".into()],
            layers: LayerSelector("first:2,last:2".into()),
            format: QuantFormat::Ggml(GgmlType::Q8_0),
        });
        w.validate().unwrap();
        let after = w.assign(&model);
        let q8 = QuantFormat::Ggml(GgmlType::Q8_0);
        for (a0, a1) in before.iter().zip(&after) {
            let (t, f0, f1) = (a0.tensor, a0.format, a1.format);
            let hit = t.class == TensorClass::AttnOutput && matches!(t.layer, Some(0 | 1 | 6 | 7));
            if hit {
                assert_eq!(f1, q8, "{t:?}");
            } else {
                // Global `output` is not selected by a layer list; everything else is untouched.
                assert_eq!(f0, f1, "{t:?}");
            }
        }
        // The Q4_K_M rules themselves: attn_v and ffn_down of layer 0 get Q6_K.
        let q6 = QuantFormat::Ggml(GgmlType::Q6_K);
        assert!(
            before.iter().any(|a| a.tensor.class == TensorClass::AttnV && a.tensor.layer == Some(0) && a.format == q6)
        );
        assert!(before.iter().any(|a| a.tensor.class == TensorClass::Output && a.format == q6));
    }

    #[test]
    fn mix_names_parse() {
        assert_eq!("q4_k_m".parse::<Mix>().unwrap(), Mix::File(FileType::Q4_K_M));
        assert_eq!("pure-q4_0".parse::<Mix>().unwrap(), Mix::Pure(QuantFormat::Ggml(GgmlType::Q4_0)));
        assert!(matches!("int4-g64".parse::<Mix>().unwrap(), Mix::Pure(QuantFormat::Group(_))));
        let e = "Q4_K_X".parse::<Mix>().unwrap_err().to_string();
        assert!(e.contains("`Q4_K_X`"), "{e}");
    }
}
