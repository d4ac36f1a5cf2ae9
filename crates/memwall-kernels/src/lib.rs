//! # memwall-kernels
//!
//! Real reference kernels whose measured costs calibrate memwall's simulator:
//! GGUF-compatible block quantization ([`formats`]). Every kernel has a scalar reference
//! that is always compiled and serves as the test oracle.

pub mod acts;
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
    /// A numerical step failed (a matrix that should be positive definite is not).
    #[error("numerical failure: {what}")]
    Numerical {
        /// Which step.
        what: &'static str,
    },
    /// The format has no kernel here.
    #[error("format {format} is not supported by memwall-kernels")]
    Unsupported {
        /// Format name.
        format: &'static str,
    },
}
