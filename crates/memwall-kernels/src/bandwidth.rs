//! A STREAM-like read of a buffer, the reference the kernel benchmarks divide by.

/// Read every byte of `buf` (SIMD loads with prefetch where the CPU has AVX2) and return a
/// checksum.
#[allow(unsafe_code)]
pub fn read_checksum(buf: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if crate::simd::avx2::available() {
        // SAFETY: AVX2, FMA and F16C were detected just above.
        return unsafe { crate::simd::avx2::stream_read(buf) };
    }
    buf.chunks(8).fold(0u64, |a, c| a.wrapping_add(c.iter().fold(0u64, |x, &b| (x << 8) | b as u64)))
}
