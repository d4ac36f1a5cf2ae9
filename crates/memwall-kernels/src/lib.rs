//! # memwall-kernels
//!
//! Real reference kernels whose measured costs calibrate memwall's simulator. Every kernel has
//! a scalar reference that is always compiled and is the oracle of its SIMD paths.
//!
//! - [`formats`]: ggml/GGUF block formats, byte for byte (each module documents its layouts
//!   with their byte counts): F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL
//!   ([`formats::legacy`]), Q2_K…Q6_K and Q8_K ([`formats::kquants`]), TQ1_0 and TQ2_0
//!   ([`formats::ternary`]), MXFP4 ([`formats::mxfp4`]), plus generic `intN-gG` group
//!   formats ([`formats::group`]) and scaled FP8 E4M3/E5M2 tensors ([`formats::fp8`]).
//!   Quantization follows ggml's reference; our blocks dequantized by the `gguf` Python
//!   package equal ours bit for bit (tests/python/test_gguf_compat.py).
//! - [`quantizers`]: round-to-nearest, AWQ-style activation-aware scaling and GPTQ.
//! - [`acts`]: the activations a format dots against ([`acts::ActKind`], [`acts::Acts`]),
//!   quantized to Q8_0/Q8_K blocks as ggml does ([`acts::Q8Acts`]).
//! - [`simd`]: the instruction-set paths ([`simd::Isa`]) and their kernels (AVX2 on x86-64,
//!   NEON on AArch64), chosen at run time by CPU feature detection.
//! - [`dot`]: the dot product of every format: the scalar reference ([`dot::scalar`]), the
//!   oracle of every SIMD path, and [`dot::Kernel`], which picks the path at run time.
//! - [`gemv`]: quantized GEMV/GEMM, multi-threaded on a persistent spin pool ([`pool`]).
//! - [`kv`]: a KV cache in F16/Q8_0/Q4_0 and decode attention for MHA/GQA/MQA and sliding
//!   windows.
//! - [`moe`]: router, dispatch with hit counters, routing generators.
//! - [`ssm`]: Mamba-1 and gated delta-rule state updates.
//! - [`bandwidth`]: a STREAM-like read of a buffer, the reference the kernel benchmarks divide
//!   by.
//!
//! Error budgets (relative RMSE on N(0, 1) weights, enforced by tests/roundtrip.rs):
//!
//! | format | budget | format | budget |
//! | --- | --- | --- | --- |
//! | f16 | 3e-4 | q4_0, q4_1, q4_K, iq4_nl | 0.10 |
//! | bf16 | 2e-3 | q3_K | 0.175 |
//! | q8_0 | 0.0065 | q2_K | 0.345 |
//! | q8_K | 0.0085 | tq1_0, tq2_0 (on ternary weights) | 5e-4 |
//! | q6_K | 0.021 | q5_0, q5_1, q5_K | 0.05 |
//! | mxfp4 | 0.13 | | |
//!
//! ```
//! use memwall_kernels::dot::Kernel;
//! use memwall_kernels::gemv::{QMatrix, gemv};
//! use memwall_spec::GgmlType;
//!
//! // A 2 × 256 matrix in Q4_K, times a vector.
//! let w: Vec<f32> = (0..512).map(|i| ((i % 13) as f32 - 6.0) / 6.0).collect();
//! let q = memwall_kernels::quantize(GgmlType::Q4_K, &w).unwrap();
//! let m = QMatrix::new(GgmlType::Q4_K, 2, 256, &q).unwrap();
//! let k = Kernel::new(GgmlType::Q4_K).unwrap();
//! let x = &w[..256];
//! let mut y = vec![0.0f32; 2];
//! gemv(&k, &m, x, &mut y).unwrap();
//! // Row 0 dotted with itself: Σ w², within the 4-bit quantization error.
//! let exact: f32 = x.iter().map(|v| v * v).sum();
//! assert!((y[0] - exact).abs() < 0.02 * exact);
//! ```

pub mod acts;
pub mod attention;
pub mod bandwidth;
pub mod dot;
pub mod formats;
pub mod gemv;
pub mod kv;
pub mod moe;
pub mod pool;
pub mod quantizers;
pub mod simd;
pub mod ssm;

pub use formats::{dequantize, quantize};

/// Errors of the kernels (bad shapes and values, unsupported formats).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KernelError {
    /// A row length is not a multiple of the format's block.
    #[error("row length {len} is not a multiple of the {format} block of {block} weights")]
    RowLength {
        /// Format name.
        format: &'static str,
        /// The length given.
        len: usize,
        /// Block size.
        block: usize,
    },
    /// A byte buffer has the wrong size for the weights it should hold.
    #[error("{format} data of {len} bytes; expected {expected}")]
    ByteLength {
        /// Format name.
        format: &'static str,
        /// Bytes given.
        len: usize,
        /// Bytes expected.
        expected: usize,
    },
    /// Input holds NaN or infinity.
    #[error("input value at index {index} is {value}; quantization needs finite numbers")]
    NonFinite {
        /// Position.
        index: usize,
        /// The value.
        value: f32,
    },
    /// A vector has the wrong length for the matrix.
    #[error("{what} has length {len}; the matrix needs {expected}")]
    Shape {
        /// Which argument.
        what: &'static str,
        /// Its length.
        len: usize,
        /// The length needed.
        expected: usize,
    },
    /// A parameter is outside its range.
    #[error("invalid {what} = {value}: {reason}")]
    Invalid {
        /// Which parameter.
        what: &'static str,
        /// Its value.
        value: f64,
        /// The allowed range.
        reason: &'static str,
    },
    /// A numerical step failed (a matrix that should be positive definite is not).
    #[error("numerical failure: {what}")]
    Numerical {
        /// Which step.
        what: &'static str,
    },
    /// Activations of the wrong kind for a weight format.
    #[error("{format} rows dot against {expected:?} activations; these are {got:?}")]
    Activations {
        /// Format name.
        format: &'static str,
        /// The kind the format needs.
        expected: crate::acts::ActKind,
        /// The kind given.
        got: crate::acts::ActKind,
    },
    /// The format has no kernel here.
    #[error("format {format} is not supported by memwall-kernels")]
    Unsupported {
        /// Format name.
        format: &'static str,
    },
}
