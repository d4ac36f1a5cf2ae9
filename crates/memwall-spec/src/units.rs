//! Units. Sizes are bytes (`u64`), bandwidths GB/s (`f64`, 1 GB = 1e9 B), times seconds.
//! [`Seconds`] and [`ByteSize`] read them as people write them (`10m`, `2GB`).

use std::str::FromStr;

use crate::bounds::{MAX_BYTES, MAX_SECONDS, at_most};
use crate::error::SpecError;

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

/// A duration: a number of seconds, or a number with a unit `ms`, `s`, `m`, `h` (`90`,
/// `10m`, `1.5h`); more than 0 and at most [`MAX_SECONDS`]. Errors name no field: callers
/// place them with [`SpecError::within`].
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Seconds(pub f64);

impl Seconds {
    /// A number of seconds, refused unless finite, above 0 and at most [`MAX_SECONDS`].
    pub fn new(seconds: f64) -> Result<Self, SpecError> {
        Self::checked(seconds, &seconds)
    }

    /// `seconds`, checked, with `written` (the value as the user wrote it) in errors.
    fn checked(seconds: f64, written: &dyn std::fmt::Display) -> Result<Self, SpecError> {
        if !(seconds.is_finite() && seconds > 0.0) {
            return Err(SpecError::invalid("", written, "must be > 0"));
        }
        at_most("", seconds, MAX_SECONDS, "seconds")?;
        Ok(Seconds(seconds))
    }
}

impl FromStr for Seconds {
    type Err = SpecError;

    fn from_str(text: &str) -> Result<Self, SpecError> {
        let t = text.trim();
        let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
            (n, 1e-3)
        } else if let Some(n) = t.strip_suffix('s') {
            (n, 1.0)
        } else if let Some(n) = t.strip_suffix('m') {
            (n, 60.0)
        } else if let Some(n) = t.strip_suffix('h') {
            (n, 3600.0)
        } else {
            (t, 1.0)
        };
        let v: f64 =
            num.trim().parse().map_err(|_| SpecError::invalid("", text, "expected a number with s, m or h (`10m`)"))?;
        if !(v.is_finite() && v > 0.0) {
            return Err(SpecError::invalid("", text, "must be > 0"));
        }
        Self::checked(v * scale, &text)
    }
}

/// A size in bytes: a number with an optional decimal unit `B`, `kB`/`KB`, `MB`, `GB`, `TB`
/// (`500MB`, `2GB`, `1.5 TB`, `4096`); more than 0 and at most [`MAX_BYTES`]. Errors name no
/// field: callers place them with [`SpecError::within`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteSize(pub u64);

impl FromStr for ByteSize {
    type Err = SpecError;

    fn from_str(text: &str) -> Result<Self, SpecError> {
        let t = text.trim();
        let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let bad = || SpecError::invalid("", text, "expected a size such as `500MB` or `2GB`");
        let scale = match unit.trim().to_ascii_uppercase().as_str() {
            "" | "B" => 1.0,
            "KB" => 1e3,
            "MB" => 1e6,
            "GB" => 1e9,
            "TB" => 1e12,
            _ => return Err(bad()),
        };
        let v: f64 = num.trim().parse().map_err(|_| bad())?;
        let bytes = v * scale;
        if !(bytes.is_finite() && bytes > 0.0) {
            return Err(SpecError::invalid("", text, "must be > 0"));
        }
        at_most("", bytes, MAX_BYTES as f64, "bytes")?;
        Ok(ByteSize(bytes as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_sizes_read_as_written() {
        let secs = |t: &str| t.parse::<Seconds>().map(|s| s.0);
        assert_eq!(secs("90").unwrap(), 90.0);
        assert_eq!(secs("10m").unwrap(), 600.0);
        assert_eq!(secs(" 1.5h ").unwrap(), 5400.0);
        assert_eq!(secs("250ms").unwrap(), 0.25);
        for bad in ["-5m", "0", "soon", "nan", "1e9h", ""] {
            let e = secs(bad).unwrap_err().within("duration").to_string();
            assert!(e.contains("`duration`"), "{bad}: {e}");
        }
        let size = |t: &str| t.parse::<ByteSize>().map(|s| s.0);
        assert_eq!(size("4096").unwrap(), 4096);
        assert_eq!(size("500MB").unwrap(), 500_000_000);
        assert_eq!(size("1.5 TB").unwrap(), 1_500_000_000_000);
        assert_eq!(size("2gb").unwrap(), 2_000_000_000);
        for bad in ["-1GB", "2 GiB", "lots", "0", "2e9TB"] {
            assert!(size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn lpddr5x_9600_on_64_bits_is_76_8_gbps() {
        assert!((peak_bandwidth_gbps(4, 16, 9600.0) - 76.8).abs() < 1e-12);
    }

    #[test]
    fn m2_max_512_bit_lpddr5_6400_is_409_6_gbps() {
        assert!((peak_bandwidth_gbps(32, 16, 6400.0) - 409.6).abs() < 1e-9);
    }
}
