//! # memwall-kernels
//!
//! Real reference kernels whose measured costs calibrate memwall's simulator:
//! GGUF-compatible block quantization ([`formats`]). Every kernel has a scalar reference
//! that is always compiled and serves as the test oracle.

pub mod formats;

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
    /// The format has no kernel here.
    #[error("format {format} is not supported by memwall-kernels")]
    Unsupported {
        /// Format name.
        format: &'static str,
    },
}
