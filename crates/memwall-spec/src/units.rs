//! Units. Sizes are bytes (`u64`), bandwidths GB/s (`f64`, 1 GB = 1e9 B), times seconds.

/// One kilobyte-power-of-two, 1024 bytes.
pub const KIB: u64 = 1 << 10;
/// 1024² bytes.
pub const MIB: u64 = 1 << 20;
/// 1024³ bytes.
pub const GIB: u64 = 1 << 30;
/// 10⁹ bytes (the unit of GB/s and of "16 GB" marketing sizes of storage).
pub const GB: u64 = 1_000_000_000;

/// Bytes to GiB.
pub fn to_gib(bytes: u64) -> f64 {
    bytes as f64 / GIB as f64
}

/// Bytes to GB (10⁹).
pub fn to_gb(bytes: u64) -> f64 {
    bytes as f64 / GB as f64
}

/// Peak DRAM bandwidth in GB/s: `channels × width_bits / 8 × MT/s / 1000`.
///
/// Example: LPDDR5X-9600 on 4 × 16-bit channels = 4 × 2 B × 9600e6 /s = 76.8 GB/s.
pub fn peak_bandwidth_gbps(channels: u32, channel_width_bits: u32, data_rate_mtps: f64) -> f64 {
    channels as f64 * channel_width_bits as f64 / 8.0 * data_rate_mtps / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lpddr5x_9600_on_64_bits_is_76_8_gbps() {
        assert!((peak_bandwidth_gbps(4, 16, 9600.0) - 76.8).abs() < 1e-12);
    }

    #[test]
    fn m2_max_512_bit_lpddr5_6400_is_409_6_gbps() {
        assert!((peak_bandwidth_gbps(32, 16, 6400.0) - 409.6).abs() < 1e-9);
    }
}
