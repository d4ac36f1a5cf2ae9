//! SIMD dot products chosen at run time by CPU feature detection (never by compiling for
//! the local CPU). Each path is property-tested against [`crate::dot::scalar`].

#[cfg(target_arch = "x86_64")]
pub mod avx2;

#[cfg(target_arch = "aarch64")]
pub mod neon;
