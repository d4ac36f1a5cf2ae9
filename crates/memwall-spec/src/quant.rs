//! The quantization format catalog: every ggml/GGUF tensor type with ggml's exact block size
//! and bytes per block, plus generic group-wise `intN` formats for "group 64 vs 128" studies.
//!
//! Block sizes and bytes per block follow ggml's `type_traits` table and the block structs of
//! `ggml-common.h` (ggml-org/llama.cpp). A ggml row of `n` elements of type `t` occupies
//! `n / block_size(t) × type_size(t)` bytes and `n` must be a multiple of the block size.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{Result, SpecError};

macro_rules! ggml_types {
    ($( $variant:ident => $name:literal, $block:literal, $bytes:literal, $doc:literal; )*) => {
        /// A ggml tensor type (the formats a GGUF file can hold).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[allow(non_camel_case_types)]
        pub enum GgmlType {
            $( #[doc = $doc] $variant, )*
        }

        impl GgmlType {
            /// Every type of the catalog, in ggml's order.
            pub const ALL: &'static [GgmlType] = &[$(GgmlType::$variant),*];

            /// ggml's name of the type (`"q4_K"`, `"f16"`, ...).
            pub fn name(self) -> &'static str {
                match self { $(GgmlType::$variant => $name,)* }
            }

            /// Elements per block (`ggml_blck_size`).
            pub fn block_size(self) -> u64 {
                match self { $(GgmlType::$variant => $block,)* }
            }

            /// Bytes per block (`ggml_type_size`).
            pub fn type_size(self) -> u64 {
                match self { $(GgmlType::$variant => $bytes,)* }
            }
        }
    };
}

ggml_types! {
    F32 => "f32", 1, 4, "IEEE binary32.";
    F16 => "f16", 1, 2, "IEEE binary16.";
    BF16 => "bf16", 1, 2, "bfloat16.";
    Q4_0 => "q4_0", 32, 18, "32 × 4-bit + f16 scale (`block_q4_0`, 18 B).";
    Q4_1 => "q4_1", 32, 20, "32 × 4-bit + f16 scale and min (`block_q4_1`, 20 B).";
    Q5_0 => "q5_0", 32, 22, "32 × 5-bit (4 low bits + 32 high bits) + f16 scale (22 B).";
    Q5_1 => "q5_1", 32, 24, "32 × 5-bit + f16 scale and min (24 B).";
    Q8_0 => "q8_0", 32, 34, "32 × int8 + f16 scale (34 B).";
    Q8_1 => "q8_1", 32, 36, "32 × int8 + f16 scale and f16 sum (36 B; activations).";
    Q2_K => "q2_K", 256, 84, "Super-block of 16 × 16 2-bit weights, 4-bit scales/mins, f16 d/dmin (84 B).";
    Q3_K => "q3_K", 256, 110, "Super-block of 16 × 16 3-bit weights, 6-bit scales, f16 d (110 B).";
    Q4_K => "q4_K", 256, 144, "Super-block of 8 × 32 4-bit weights, 6-bit scales/mins, f16 d/dmin (144 B).";
    Q5_K => "q5_K", 256, 176, "Super-block of 8 × 32 5-bit weights, 6-bit scales/mins (176 B).";
    Q6_K => "q6_K", 256, 210, "Super-block of 16 × 16 6-bit weights, int8 scales, f16 d (210 B).";
    Q8_K => "q8_K", 256, 292, "256 × int8 + f32 scale + 16 × i16 block sums (292 B; activations).";
    IQ2_XXS => "iq2_xxs", 256, 66, "2.0625 bpw lattice (E8) codebook quant (66 B).";
    IQ2_XS => "iq2_xs", 256, 74, "2.3125 bpw codebook quant (74 B).";
    IQ3_XXS => "iq3_xxs", 256, 98, "3.0625 bpw codebook quant (98 B).";
    IQ1_S => "iq1_s", 256, 50, "1.5625 bpw codebook quant (50 B).";
    IQ4_NL => "iq4_nl", 32, 18, "32 × 4-bit non-linear (lookup) + f16 scale (18 B).";
    IQ3_S => "iq3_s", 256, 110, "3.4375 bpw codebook quant (110 B).";
    IQ2_S => "iq2_s", 256, 82, "2.5625 bpw codebook quant (82 B).";
    IQ4_XS => "iq4_xs", 256, 136, "4.25 bpw non-linear with 6-bit sub-block scales (136 B).";
    I8 => "i8", 1, 1, "int8.";
    I16 => "i16", 1, 2, "int16.";
    I32 => "i32", 1, 4, "int32.";
    I64 => "i64", 1, 8, "int64.";
    F64 => "f64", 1, 8, "IEEE binary64.";
    IQ1_M => "iq1_m", 256, 56, "1.75 bpw codebook quant (56 B).";
    TQ1_0 => "tq1_0", 256, 54, "Ternary, 5 trits per byte base-3 packing + f16 scale, 1.6875 bpw (54 B).";
    TQ2_0 => "tq2_0", 256, 66, "Ternary, 2 bits per trit + f16 scale, 2.0625 bpw (66 B).";
    MXFP4 => "mxfp4", 32, 17, "OCP MX FP4 (E2M1) × 32 + E8M0 shared scale (17 B).";
}

impl GgmlType {
    /// Whether the type is a block-quantized format (not a plain float or integer).
    pub fn is_quantized(self) -> bool {
        self.block_size() > 1
    }

    /// Bits per weight, `8 × type_size / block_size`.
    pub fn bits_per_weight(self) -> f64 {
        8.0 * self.type_size() as f64 / self.block_size() as f64
    }

    /// ggml's numeric id of the type (`enum ggml_type` in `ggml.h`, as GGUF tensor infos
    /// store it; ids 4, 5, 31–33 and 36–38 belong to removed types).
    pub fn id(self) -> u32 {
        use GgmlType::*;
        match self {
            F32 => 0,
            F16 => 1,
            Q4_0 => 2,
            Q4_1 => 3,
            Q5_0 => 6,
            Q5_1 => 7,
            Q8_0 => 8,
            Q8_1 => 9,
            Q2_K => 10,
            Q3_K => 11,
            Q4_K => 12,
            Q5_K => 13,
            Q6_K => 14,
            Q8_K => 15,
            IQ2_XXS => 16,
            IQ2_XS => 17,
            IQ3_XXS => 18,
            IQ1_S => 19,
            IQ4_NL => 20,
            IQ3_S => 21,
            IQ2_S => 22,
            IQ4_XS => 23,
            I8 => 24,
            I16 => 25,
            I32 => 26,
            I64 => 27,
            F64 => 28,
            IQ1_M => 29,
            BF16 => 30,
            TQ1_0 => 34,
            TQ2_0 => 35,
            MXFP4 => 39,
        }
    }

    /// The type with ggml's numeric id `id`, if the catalog has it.
    pub fn from_id(id: u32) -> Option<GgmlType> {
        GgmlType::ALL.iter().copied().find(|t| t.id() == id)
    }

    /// Parse a ggml type name, case-insensitively (`"Q4_K"`, `"q4_k"`, `"F16"`).
    pub fn parse(name: &str) -> Option<GgmlType> {
        GgmlType::ALL.iter().copied().find(|t| t.name().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for GgmlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Data type of the per-group scale (and min) of a generic group-wise format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScaleDtype {
    /// binary16 scale (2 B).
    F16,
    /// bfloat16 scale (2 B).
    Bf16,
    /// binary32 scale (4 B).
    F32,
    /// power-of-two exponent as in OCP MX (1 B).
    E8m0,
}

impl ScaleDtype {
    /// Bytes of one scale value.
    pub fn bytes(self) -> u64 {
        match self {
            ScaleDtype::F16 | ScaleDtype::Bf16 => 2,
            ScaleDtype::F32 => 4,
            ScaleDtype::E8m0 => 1,
        }
    }

    fn name(self) -> &'static str {
        match self {
            ScaleDtype::F16 => "f16",
            ScaleDtype::Bf16 => "bf16",
            ScaleDtype::F32 => "f32",
            ScaleDtype::E8m0 => "e8m0",
        }
    }
}

/// A generic group-wise integer format: groups of `group` weights share one scale (and, when
/// `asym`, one minimum of the same dtype); each weight takes `bits` bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupQuant {
    /// Bits per weight, 2 to 8.
    pub bits: u8,
    /// Weights per group (a multiple of 8 so groups end on a byte).
    pub group: u32,
    /// Asymmetric (scale and min) instead of symmetric (scale only).
    pub asym: bool,
    /// Dtype of the scale and min.
    pub scale: ScaleDtype,
}

impl GroupQuant {
    /// Bytes per group: `bits × group / 8 + scale_bytes × (1 + asym)`.
    pub fn group_bytes(&self) -> u64 {
        self.bits as u64 * self.group as u64 / 8 + self.scale.bytes() * if self.asym { 2 } else { 1 }
    }
}

/// A per-channel integer format (`intN-pc`): every row (output channel) has one scale (and,
/// when `asym`, one minimum), as LiteRT, ExecuTorch and many NPU toolchains store weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChannelQuant {
    /// Bits per weight, 2 to 8.
    pub bits: u8,
    /// Asymmetric (scale and min) instead of symmetric (scale only).
    pub asym: bool,
    /// Dtype of the scale and min.
    pub scale: ScaleDtype,
}

impl ChannelQuant {
    /// Bytes of a row of `n` weights: `ceil(bits × n / 8) + scale_bytes × (1 + asym)`.
    ///
    /// Example: int4-pc over a 2048-wide row = 1024 B + one f16 scale = 1026 B.
    pub fn row_bytes(&self, n: u64) -> u64 {
        (self.bits as u64 * n).div_ceil(8) + self.scale.bytes() * if self.asym { 2 } else { 1 }
    }
}

/// An 8-bit float encoding (OCP OFP8 rev. 1.0, Table 1,
/// <https://www.opencompute.org/documents/ocp-8-bit-floating-point-specification-ofp8-revision-1-0-2023-12-01-pdf-1>).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Fp8Kind {
    /// E4M3 (`float8_e4m3fn`): bias 7, largest finite 448, no infinity, NaN S.1111.111.
    E4m3,
    /// E5M2 (`float8_e5m2`): bias 15, largest finite 57344, IEEE-style infinities and NaNs.
    E5m2,
}

impl Fp8Kind {
    /// The largest finite value: E4M3 `2^(15 − 7) × 1.75 = 448`, E5M2 `2^(30 − 15) × 1.75 =
    /// 57344` (OFP8 Table 1).
    pub fn max_finite(self) -> f32 {
        match self {
            Fp8Kind::E4m3 => 448.0,
            Fp8Kind::E5m2 => 57344.0,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Fp8Kind::E4m3 => "fp8_e4m3",
            Fp8Kind::E5m2 => "fp8_e5m2",
        }
    }
}

/// What one scale of an FP8 format covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Fp8Scale {
    /// One scale for the whole tensor (compressed-tensors `strategy: "tensor"`, vLLM's
    /// `k_scale`/`v_scale` for an FP8 KV cache): no bytes in any row.
    Tensor,
    /// One scale per row (output channel; compressed-tensors `strategy: "channel"`); in a KV
    /// cache, one per token and layer.
    Channel,
    /// One scale per `b × b` tile (`weight_block_size: [b, b]`, DeepSeek-V3's `[128, 128]`,
    /// stored as `weight_scale_inv` of shape `[ceil(rows / b), ceil(row_len / b)]`).
    Block(u32),
}

/// An FP8 format: one byte per weight in `kind`, times scales of dtype `dtype`
/// (`fp8_e4m3`, `fp8_e4m3-pc`, `fp8_e4m3-b128`, `fp8_e5m2-pc-bf16`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fp8Quant {
    /// Encoding of each weight.
    pub kind: Fp8Kind,
    /// What one scale covers.
    pub scale: Fp8Scale,
    /// Dtype of the scales (f32 unless named: checkpoints store `weight_scale` in f32).
    pub dtype: ScaleDtype,
}

impl Fp8Quant {
    /// Bytes of a `rows × row_len` matrix: one byte per weight plus the scales,
    /// `rows × row_len + s × (1 | rows | ceil(rows / b) × ceil(row_len / b))` for a scale of
    /// `s` bytes per tensor, row or `b × b` tile.
    ///
    /// Example: a DeepSeek-V3 expert's `gate_proj` in `fp8_e4m3-b128`, 2048 rows of 7168:
    /// 14,680,064 B + 16 × 56 tiles × 4 B of scales = 14,683,648 B.
    pub fn matrix_bytes(&self, row_len: u64, rows: u64) -> u64 {
        let scales = match self.scale {
            Fp8Scale::Tensor => 1,
            Fp8Scale::Channel => rows,
            Fp8Scale::Block(b) => rows.div_ceil(b as u64) * row_len.div_ceil(b as u64),
        };
        rows * row_len + scales * self.dtype.bytes()
    }
}

/// A weight or KV-cache storage format: a ggml type, a generic group-wise format, a
/// per-channel format or an FP8 format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QuantFormat {
    /// A ggml/GGUF type.
    Ggml(GgmlType),
    /// A generic group-wise `intN-gG` format.
    Group(GroupQuant),
    /// A per-channel `intN-pc` format (one scale per row).
    Channel(ChannelQuant),
    /// An 8-bit float format (`fp8_e4m3`, `fp8_e5m2`) with per-tensor, per-row or per-tile
    /// scales.
    Fp8(Fp8Quant),
}

impl QuantFormat {
    /// Elements per block (ggml block size, or group size); 0 for a per-channel format, whose
    /// block is the whole row (use [`QuantFormat::row_bytes`]); for FP8, 1 with a per-tensor
    /// scale, 0 per row, `b²` per `b × b` tile.
    pub fn block_elems(&self) -> u64 {
        match self {
            QuantFormat::Ggml(t) => t.block_size(),
            QuantFormat::Group(g) => g.group as u64,
            QuantFormat::Channel(_) => 0,
            QuantFormat::Fp8(q) => match q.scale {
                Fp8Scale::Tensor => 1,
                Fp8Scale::Channel => 0,
                Fp8Scale::Block(b) => b as u64 * b as u64,
            },
        }
    }

    /// Bytes per block; for a per-channel format, the bytes of one row's scales; for FP8, 1
    /// with a per-tensor scale, a row's scale, or a tile with its scale.
    pub fn block_bytes(&self) -> u64 {
        match self {
            QuantFormat::Ggml(t) => t.type_size(),
            QuantFormat::Group(g) => g.group_bytes(),
            QuantFormat::Channel(c) => c.row_bytes(0),
            QuantFormat::Fp8(q) => match q.scale {
                Fp8Scale::Tensor => 1,
                Fp8Scale::Channel => q.dtype.bytes(),
                Fp8Scale::Block(b) => b as u64 * b as u64 + q.dtype.bytes(),
            },
        }
    }

    /// Bits per weight, `8 × block_bytes / block_elems`; for a per-channel format (integer
    /// or FP8) the bits of a weight alone (its row's scale adds `8 × scale bytes / row
    /// length`); 8 for FP8 with one scale per tensor.
    pub fn bits_per_weight(&self) -> f64 {
        match self {
            QuantFormat::Channel(c) => c.bits as f64,
            QuantFormat::Fp8(Fp8Quant { scale: Fp8Scale::Channel, .. }) => 8.0,
            _ => 8.0 * self.block_bytes() as f64 / self.block_elems() as f64,
        }
    }

    /// Bytes of one row of `n` elements, or `None` when a ggml type cannot store it (`n` is
    /// not a multiple of its block size; llama.cpp then falls back to another type). Generic
    /// group formats pad the last group, as GPTQ, AWQ and MLC do, and the padding is counted;
    /// per-channel and FP8 formats store any row.
    pub fn row_bytes(&self, n: u64) -> Option<u64> {
        match self {
            QuantFormat::Ggml(_) => {
                let b = self.block_elems();
                n.is_multiple_of(b).then(|| n / b * self.block_bytes())
            }
            QuantFormat::Group(_) | QuantFormat::Channel(_) | QuantFormat::Fp8(_) => Some(self.padded_bytes(n)),
        }
    }

    /// Bytes of `n` elements when the row may end mid-block (the last block is padded, as a
    /// KV cache or a generic format would store it): `ceil(n / block) × block_bytes`. An FP8
    /// row takes `n` bytes plus its own scale (per row) or its row of tile scales (a lone
    /// row of a `b × b` format); a per-tensor scale lies outside every row (see
    /// [`QuantFormat::matrix_bytes`]).
    pub fn padded_bytes(&self, n: u64) -> u64 {
        match self {
            QuantFormat::Channel(c) => c.row_bytes(n),
            QuantFormat::Fp8(q) => match q.scale {
                Fp8Scale::Tensor => n,
                _ => q.matrix_bytes(n, 1),
            },
            _ => n.div_ceil(self.block_elems()) * self.block_bytes(),
        }
    }

    /// Bytes of a `rows × row_len` matrix: `rows × row_bytes(row_len)` (padded where a ggml
    /// row ends mid-block), except FP8, whose per-tensor scale is counted once and whose
    /// `b × b` tiles share a scale across `b` rows ([`Fp8Quant::matrix_bytes`]).
    pub fn matrix_bytes(&self, row_len: u64, rows: u64) -> u64 {
        match self {
            QuantFormat::Fp8(q) => q.matrix_bytes(row_len, rows),
            _ => rows * self.row_bytes(row_len).unwrap_or_else(|| self.padded_bytes(row_len)),
        }
    }

    /// Bytes a whole tensor holds beside its rows (a per-tensor FP8 scale; 0 otherwise): a
    /// KV cache layer in `fp8_e4m3` keeps one such scale for K and one for V.
    pub fn tensor_scale_bytes(&self) -> u64 {
        match self {
            QuantFormat::Fp8(Fp8Quant { scale: Fp8Scale::Tensor, dtype, .. }) => dtype.bytes(),
            _ => 0,
        }
    }

    /// Whether weights dot against integer-quantized activations (Q8_0/Q8_K) rather than
    /// floats: true for every block-quantized format; false for FP8, which a CPU converts to
    /// floats (no integer dot product reads it).
    pub fn is_quantized(&self) -> bool {
        match self {
            QuantFormat::Ggml(t) => t.is_quantized(),
            QuantFormat::Group(_) | QuantFormat::Channel(_) => true,
            QuantFormat::Fp8(_) => false,
        }
    }

    /// The canonical name (`"q4_K"`, `"int4-g128"`, `"int3-g64-asym-bf16"`).
    pub fn name(&self) -> String {
        self.to_string()
    }

    /// Shorthand for a ggml type.
    pub const fn ggml(t: GgmlType) -> Self {
        QuantFormat::Ggml(t)
    }
}

impl fmt::Display for QuantFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QuantFormat::Ggml(t) => f.write_str(t.name()),
            QuantFormat::Group(g) => {
                write!(f, "int{}-g{}", g.bits, g.group)?;
                write_suffix(f, g.asym, g.scale)
            }
            QuantFormat::Channel(c) => {
                write!(f, "int{}-pc", c.bits)?;
                write_suffix(f, c.asym, c.scale)
            }
            QuantFormat::Fp8(q) => {
                f.write_str(q.kind.name())?;
                match q.scale {
                    Fp8Scale::Tensor => {}
                    Fp8Scale::Channel => f.write_str("-pc")?,
                    Fp8Scale::Block(b) => write!(f, "-b{b}")?,
                }
                if q.dtype != ScaleDtype::F32 {
                    write!(f, "-{}", q.dtype.name())?;
                }
                Ok(())
            }
        }
    }
}

fn write_suffix(f: &mut fmt::Formatter<'_>, asym: bool, scale: ScaleDtype) -> fmt::Result {
    if asym {
        f.write_str("-asym")?;
    }
    if scale != ScaleDtype::F16 {
        write!(f, "-{}", scale.name())?;
    }
    Ok(())
}

const FORMAT_HINT: &str = "; expected a ggml type (f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, \
q2_K..q6_K, q8_K, iq1_s, iq1_m, iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s, iq4_nl, iq4_xs, tq1_0, \
tq2_0, mxfp4), int<N>-g<G>[-asym][-f16|-bf16|-f32|-e8m0] (groups of G weights, e.g. int4-g128), \
int<N>-pc[-asym][-...] (one scale per row, e.g. int8-pc) or fp8_e4m3|fp8_e5m2[-pc|-b<B>][-f32|-bf16|-f16|-e8m0] \
(8-bit floats with one f32 scale per tensor, per row or per B × B tile, e.g. fp8_e4m3-b128)";

/// Largest FP8 scale tile edge accepted (DeepSeek-V3 uses 128).
const MAX_FP8_TILE: u32 = 65_536;

/// Parse `fp8_e4m3[-pc|-bB][-dtype]` (lower-cased); `None` when `s` does not name an FP8 format.
fn parse_fp8(s: &str, lower: &str) -> Option<Result<QuantFormat>> {
    let kind = [Fp8Kind::E4m3, Fp8Kind::E5m2].into_iter().find(|k| lower.starts_with(k.name()))?;
    let rest = &lower[kind.name().len()..];
    let mut q = Fp8Quant { kind, scale: Fp8Scale::Tensor, dtype: ScaleDtype::F32 };
    let mut scales = 0;
    if rest.is_empty() {
        return Some(Ok(QuantFormat::Fp8(q)));
    }
    let rest = rest.strip_prefix('-')?;
    for p in rest.split('-') {
        match p {
            "pc" => {
                q.scale = Fp8Scale::Channel;
                scales += 1;
            }
            "f16" => q.dtype = ScaleDtype::F16,
            "bf16" => q.dtype = ScaleDtype::Bf16,
            "f32" => q.dtype = ScaleDtype::F32,
            "e8m0" => q.dtype = ScaleDtype::E8m0,
            _ => {
                let b: u32 = p.strip_prefix('b')?.parse().ok()?;
                if b == 0 || b > MAX_FP8_TILE {
                    return Some(Err(SpecError::invalid(
                        "",
                        s,
                        format!("FP8 tile edge must lie in 1..={MAX_FP8_TILE}"),
                    )));
                }
                q.scale = Fp8Scale::Block(b);
                scales += 1;
            }
        }
    }
    if scales > 1 {
        return Some(Err(SpecError::invalid("", s, "name one scale layout: per tensor (none), -pc or -b<B>")));
    }
    Some(Ok(QuantFormat::Fp8(q)))
}

impl FromStr for QuantFormat {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<Self> {
        let unknown = || {
            SpecError::unknown(
                String::new(),
                "quantization format",
                s,
                GgmlType::ALL.iter().map(|t| t.name()),
                FORMAT_HINT,
            )
        };
        if let Some(t) = GgmlType::parse(s.trim()) {
            return Ok(QuantFormat::Ggml(t));
        }
        let lower = s.trim().to_ascii_lowercase();
        if lower.starts_with("fp8") {
            return parse_fp8(s, &lower).unwrap_or_else(|| Err(unknown()));
        }
        let Some(rest) = lower.strip_prefix("int") else { return Err(unknown()) };
        let mut parts = rest.split('-');
        let bits: u8 = parts.next().and_then(|p| p.parse().ok()).ok_or_else(unknown)?;
        // `pc`: per channel; `gG`: groups of G.
        let group: Option<u32> = match parts.next() {
            Some("pc") => None,
            p => Some(p.and_then(|p| p.strip_prefix('g')).and_then(|p| p.parse().ok()).ok_or_else(unknown)?),
        };
        let mut asym = false;
        let mut scale = ScaleDtype::F16;
        for p in parts {
            match p {
                "asym" => asym = true,
                "sym" => asym = false,
                "f16" => scale = ScaleDtype::F16,
                "bf16" => scale = ScaleDtype::Bf16,
                "f32" => scale = ScaleDtype::F32,
                "e8m0" => scale = ScaleDtype::E8m0,
                _ => return Err(unknown()),
            }
        }
        if !(2..=8).contains(&bits) {
            return Err(SpecError::invalid("", s, "group-wise formats take 2 to 8 bits per weight"));
        }
        let Some(group) = group else { return Ok(QuantFormat::Channel(ChannelQuant { bits, asym, scale })) };
        if group == 0 || !group.is_multiple_of(8) {
            return Err(SpecError::invalid("", s, "group size must be a positive multiple of 8"));
        }
        Ok(QuantFormat::Group(GroupQuant { bits, group, asym, scale }))
    }
}

impl Serialize for QuantFormat {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for QuantFormat {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k_quant_bits_per_weight_match_ggml() {
        assert_eq!(GgmlType::Q4_K.bits_per_weight(), 4.5);
        assert_eq!(GgmlType::Q6_K.bits_per_weight(), 6.5625);
        assert_eq!(GgmlType::Q2_K.bits_per_weight(), 2.625);
        assert_eq!(GgmlType::Q8_0.bits_per_weight(), 8.5);
        assert_eq!(GgmlType::TQ1_0.bits_per_weight(), 1.6875);
        assert_eq!(GgmlType::IQ4_XS.bits_per_weight(), 4.25);
        assert_eq!(GgmlType::MXFP4.bits_per_weight(), 4.25);
    }

    #[test]
    fn names_round_trip_case_insensitively() {
        for &t in GgmlType::ALL {
            let f: QuantFormat = t.name().to_uppercase().parse().unwrap();
            assert_eq!(f, QuantFormat::Ggml(t));
            assert_eq!(f.to_string().parse::<QuantFormat>().unwrap(), f);
        }
    }

    #[test]
    fn group_formats_parse_and_count_scale_bytes() {
        let f: QuantFormat = "int4-g128".parse().unwrap();
        // 128 × 4 bits = 64 B + one f16 scale = 66 B per 128 weights.
        assert_eq!(f.block_bytes(), 66);
        assert_eq!(f.row_bytes(4096), Some(32 * 66));
        let a: QuantFormat = "INT3-g64-asym-bf16".parse().unwrap();
        // 64 × 3 bits = 24 B + bf16 scale + bf16 min = 28 B.
        assert_eq!(a.block_bytes(), 28);
        assert_eq!(a.to_string(), "int3-g64-asym-bf16");
        assert_eq!(a.to_string().parse::<QuantFormat>().unwrap(), a);
    }

    #[test]
    fn per_channel_formats_hold_one_scale_per_row() {
        let f: QuantFormat = "int4-pc".parse().unwrap();
        assert_eq!(f.to_string(), "int4-pc");
        // 2048 × 4 bits = 1024 B + one f16 scale.
        assert_eq!(f.row_bytes(2048), Some(1026));
        // Odd rows round up to a whole byte: 3 × 1000 bits = 375 B + bf16 scale + bf16 min.
        let a: QuantFormat = "int3-pc-asym-bf16".parse().unwrap();
        assert_eq!(a.row_bytes(1000), Some(375 + 4));
        assert_eq!(a.to_string().parse::<QuantFormat>().unwrap(), a);
        assert_eq!("int8-pc".parse::<QuantFormat>().unwrap().row_bytes(4096), Some(4098));
    }

    #[test]
    fn group_formats_pad_the_last_group() {
        // int4-g48 over 2048: 43 groups (the last holds 32 weights and 16 of padding) × 26 B.
        let f: QuantFormat = "int4-g48".parse().unwrap();
        assert_eq!(f.row_bytes(2048), Some(43 * 26));
    }

    #[test]
    fn rows_that_end_mid_block_are_not_storable() {
        let q4k = QuantFormat::Ggml(GgmlType::Q4_K);
        assert_eq!(q4k.row_bytes(4096), Some(16 * 144));
        assert_eq!(q4k.row_bytes(4000), None);
        assert_eq!(q4k.padded_bytes(300), 2 * 144);
    }

    #[test]
    fn fp8_formats_parse_display_and_size_byte_exactly() {
        let f: QuantFormat = "FP8_E4M3".parse().unwrap();
        assert_eq!(
            f,
            QuantFormat::Fp8(Fp8Quant { kind: Fp8Kind::E4m3, scale: Fp8Scale::Tensor, dtype: ScaleDtype::F32 })
        );
        assert_eq!(f.to_string(), "fp8_e4m3");
        // One byte per weight; the tensor's one f32 scale lies outside the rows.
        assert_eq!(f.row_bytes(4096), Some(4096));
        assert_eq!(f.bits_per_weight(), 8.0);
        assert_eq!(f.matrix_bytes(4096, 1024), 4096 * 1024 + 4);
        assert_eq!(f.tensor_scale_bytes(), 4);
        assert!(!f.is_quantized());
        // Per row: 4096 B + one f32 scale.
        let pc: QuantFormat = "fp8_e5m2-pc".parse().unwrap();
        assert_eq!(pc.row_bytes(4096), Some(4100));
        assert_eq!(pc.matrix_bytes(4096, 3), 3 * 4100);
        assert_eq!(pc.tensor_scale_bytes(), 0);
        // 128 × 128 tiles over 300 rows of 200: 3 × 2 tiles, 6 f32 scales.
        let b: QuantFormat = "fp8_e4m3-b128".parse().unwrap();
        assert_eq!(b.matrix_bytes(200, 300), 60_000 + 6 * 4);
        // DeepSeek-V3 expert gate_proj: 2048 × 7168 + 16 × 56 × 4.
        assert_eq!(b.matrix_bytes(7168, 2048), 14_683_648);
        assert_eq!(b.bits_per_weight(), 8.0 + 32.0 / 16384.0);
        let bf: QuantFormat = "fp8_e5m2-pc-bf16".parse().unwrap();
        assert_eq!(bf.row_bytes(10), Some(12));
        for name in ["fp8_e4m3", "fp8_e5m2", "fp8_e4m3-pc", "fp8_e4m3-b128", "fp8_e5m2-b64-bf16", "fp8_e4m3-pc-e8m0"] {
            let f: QuantFormat = name.parse().unwrap();
            assert_eq!(f.to_string(), name);
        }
        // An explicit f32 suffix is the default and is not displayed.
        assert_eq!("fp8_e4m3-pc-f32".parse::<QuantFormat>().unwrap().to_string(), "fp8_e4m3-pc");
    }

    #[test]
    fn fp8_largest_finite_values() {
        assert_eq!(Fp8Kind::E4m3.max_finite(), 2f32.powi(8) * 1.75);
        assert_eq!(Fp8Kind::E5m2.max_finite(), 2f32.powi(15) * 1.75);
    }

    #[test]
    fn bad_names_are_errors_that_quote_the_value() {
        for bad in [
            "q4_z",
            "int9-g32",
            "int4-g0",
            "int4-g12",
            "int4",
            "int4-g32-foo",
            "",
            "fp8",
            "fp8_e3m4",
            "fp8_e4m3-b0",
            "fp8_e4m3-x",
            "fp8_e4m3pc",
            "fp8_e4m3-b99999999",
            "fp8_e4m3-pc-b128",
        ] {
            let e = bad.parse::<QuantFormat>().unwrap_err().to_string();
            assert!(e.contains(&format!("`{bad}`")) || e.contains(&format!("= {bad}")), "{e}");
        }
    }
}
