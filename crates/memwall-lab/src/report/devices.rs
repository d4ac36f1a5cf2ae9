//! The device database as a table (`memwall devices`, `memwall.devices()`): each chip with
//! what its spec sheet states, whether memwall can predict it from that sheet (and why not),
//! and the names users type for it ([`memwall_catalog::device_db`]).

use memwall_catalog::device_db::{self, Chip, normalized};
use serde::Serialize;

/// One chip of the database.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceRow {
    /// Chip id (`snapdragon-8-gen3`); a device is `<id>-<N>gb`.
    pub id: String,
    /// Marketing name.
    pub soc: String,
    /// Kind of device.
    pub kind: &'static str,
    /// Usual operating system.
    pub os: &'static str,
    /// Launch year.
    pub year: Option<u32>,
    /// RAM sizes shipped, GB (`8;12;16`).
    pub ram_gb: String,
    /// DRAM technology.
    pub mem_type: String,
    /// Peak DRAM bandwidth, GB/s (published, or from bus width and rate).
    pub peak_gbps: Option<f64>,
    /// CPU cores.
    pub cores: u32,
    /// CPU clusters as the sheet states them (`1x3.30:cortex-x4;...`).
    pub cpu: String,
    /// GPU.
    pub gpu: String,
    /// NPU int8 TOP/s, when published.
    pub npu_int8_tops: Option<f64>,
    /// Whether memwall predicts it from the sheet (false: `why_not` says what is missing).
    pub predictable: bool,
    /// What the sheet lacks for a prediction.
    pub why_not: String,
    /// Names users type for it (`;`-separated).
    pub names: String,
    /// Sources per field.
    pub source: String,
}

impl DeviceRow {
    fn of(c: &Chip) -> DeviceRow {
        let names: Vec<&str> = device_db::names().iter().filter(|n| n.id == c.id).map(|n| n.name.as_str()).collect();
        let built = c.device(None);
        DeviceRow {
            id: c.id.clone(),
            soc: c.soc.clone(),
            kind: c.kind.name(),
            os: c.os.name(),
            year: c.year,
            ram_gb: c.ram_gb_options.iter().map(u32::to_string).collect::<Vec<_>>().join(";"),
            mem_type: c.mem_type.clone(),
            peak_gbps: built.as_ref().ok().map(|d| d.memory.peak_gbps()).or(c.peak_gbps),
            cores: c.clusters.iter().map(|k| k.cores).sum(),
            cpu: c
                .clusters
                .iter()
                .map(|k| format!("{}x{}:{}", k.cores, k.ghz.map_or(String::new(), |g| format!("{g:.2}")), k.core))
                .collect::<Vec<_>>()
                .join(";"),
            gpu: c.gpu_name.clone(),
            npu_int8_tops: c.npu_int8_tops,
            predictable: built.is_ok(),
            why_not: built.err().map_or(String::new(), |e| e.to_string()),
            names: names.join(";"),
            source: c.source.clone(),
        }
    }
}

/// The chips whose id, name or user names contain `query` (letters and digits only, case
/// blind); every chip without one.
pub fn device_database(query: Option<&str>) -> Vec<DeviceRow> {
    let q = query.map(normalized).unwrap_or_default();
    device_db::chips()
        .iter()
        .filter(|c| {
            q.is_empty()
                || normalized(&c.id).contains(&q)
                || normalized(&c.soc).contains(&q)
                || device_db::names().iter().any(|n| n.id == c.id && normalized(&n.name).contains(&q))
        })
        .map(DeviceRow::of)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_finds_chips_by_any_of_their_names() {
        let all = device_database(None);
        assert!(all.len() >= 80);
        assert!(all.iter().filter(|r| r.predictable).count() >= 40, "at least 40 chips predict from their sheet");
        for r in all.iter().filter(|r| !r.predictable) {
            assert!(!r.why_not.is_empty(), "{}", r.id);
        }
        let pi = device_database(Some("raspberry pi 5"));
        assert!(!pi.is_empty() && pi.iter().all(|r| r.id.contains("raspberry-pi-5") || r.names.contains("Pi 5")));
        assert!(device_database(Some("no such device 9000")).is_empty());
    }
}
