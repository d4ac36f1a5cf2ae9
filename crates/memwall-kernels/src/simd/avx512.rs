//! AVX-512 paths (F, BW, VL, with VNNI's `vpdpbusd` for integer dot products).
#![allow(unsafe_code)]

/// Whether this CPU has AVX-512 F/BW/VL and VNNI, and the AVX2/FMA/F16C the paths also use.
pub fn available() -> bool {
    super::avx2::available()
        && is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vl")
        && is_x86_feature_detected!("avx512vnni")
}
