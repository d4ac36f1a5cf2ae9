//! Power modes: the clock caps a vendor ships as named modes, picked with `device@mode`.
//!
//! NVIDIA's Jetson modules boot in one of a few `nvpmodel` modes (`15W`, `25W`,
//! `MAXN_SUPER` on an Orin Nano Super); each caps the CPU clock, the CPU cores left online,
//! the GPU clock and the memory controller's clock, and `jetson_clocks` then pins the clocks at
//! those caps. A device file lists its modes under `[[power_modes]]`; its own figures are those
//! of its fastest mode. [`DeviceSpec::with_power_mode`] turns the device into the same device
//! under a mode: clocks and what follows from them (throughput, per-core bandwidth, the DRAM
//! peak, and the dynamic power `P f V²` with the voltage of [`crate::class::dvfs_volt`]).

use serde::{Deserialize, Serialize};

use crate::bounds;
use crate::class::dvfs_power_share;
use crate::device::DeviceSpec;
use crate::error::{Result, SpecError, fraction, nonzero, positive_at_most};

/// One named power mode (`[[power_modes]]` in a device file). A cap above the device's own
/// figure leaves that figure as it is; an absent cap leaves it uncapped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PowerModeSpec {
    /// The mode's name as the vendor's tool spells it (`25W`, `MAXN_SUPER`).
    pub name: String,
    /// Highest CPU clock of every cluster, GHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_max_ghz: Option<f64>,
    /// CPU cores left online, counted from the first (fastest) cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_cores_online: Option<u32>,
    /// The GPU's highest clock as a share of the clock the device's GPU figures are stated at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_clock_fraction: Option<f64>,
    /// Highest DRAM data rate, MT/s (the memory controller's clock cap × 2 on LPDDR).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_data_rate_mtps: Option<f64>,
}

impl PowerModeSpec {
    /// Every cap a number a mode can set on a device of `cores` CPU cores, the name one a
    /// `device@mode` reference can spell.
    pub fn validate(&self, cores: u32) -> Result<()> {
        let n = &self.name;
        if n.is_empty() || n.contains(['@', '/', '\\']) || n.ends_with(".toml") || n.chars().any(char::is_whitespace) {
            return Err(SpecError::invalid(
                "name",
                n,
                "must be a non-empty name without `@`, `/`, `\\`, spaces or a `.toml` ending (`device@mode` spells it)",
            ));
        }
        if let Some(g) = self.cpu_max_ghz {
            positive_at_most("cpu_max_ghz", g, bounds::MAX_GHZ)?;
        }
        if let Some(n) = self.cpu_cores_online {
            nonzero("cpu_cores_online", n as u64)?;
            if n > cores {
                return Err(SpecError::invalid(
                    "cpu_cores_online",
                    n,
                    format!("the device has {cores} CPU cores in its clusters"),
                ));
            }
        }
        if let Some(f) = self.gpu_clock_fraction {
            fraction("gpu_clock_fraction", f)?;
        }
        if let Some(r) = self.memory_data_rate_mtps {
            positive_at_most("memory_data_rate_mtps", r, bounds::MAX_DATA_RATE_MTPS)?;
        }
        Ok(())
    }
}

impl DeviceSpec {
    /// The names of the device's power modes, in file order.
    pub fn power_mode_names(&self) -> Vec<&str> {
        self.power_modes.iter().map(|m| m.name.as_str()).collect()
    }

    /// The device under its power mode `mode`, named `name@mode`:
    ///
    /// - each cluster's clock capped at `cpu_max_ghz`, its per-core power times `f V(f)²`
    ///   ([`dvfs_power_share`], `f` the new clock over the old) and the caches it alone shares
    ///   times `f`; `per_core_gbps` times the first cluster's `f` (one core's reach follows its
    ///   clock; a mode that caps the CPU needs the device to state it, as a family default is a
    ///   full-clock figure);
    /// - the cores past `cpu_cores_online` off line (a cluster left empty goes, with the
    ///   caches only it shared);
    /// - the GPU's clock share capped at `gpu_clock_fraction` (its throughput and power follow:
    ///   [`DeviceSpec::gpu_fp16_tflops_at_clock`], [`DeviceSpec::gpu_power_share`]);
    /// - the DRAM data rate capped at `memory_data_rate_mtps`.
    ///
    /// The result carries no modes: a mode is applied once. A thermal governor's ladder then
    /// steps down from the mode's clocks, its voltages multiplying the mode's (`V(f_mode)²
    /// V_level²` where one DVFS line would give `V(f_mode f_level)²`: at 0.6 and 0.6, 0.627
    /// against 0.667, a level's power about 6 % low).
    pub fn with_power_mode(&self, mode: &str) -> Result<DeviceSpec> {
        let Some((i, m)) = self.power_modes.iter().enumerate().find(|(_, m)| m.name == mode) else {
            let hint = if self.power_modes.is_empty() {
                format!("; device `{}` lists no [[power_modes]]", self.name)
            } else {
                format!("; device `{}` has {}", self.name, self.power_mode_names().join(", "))
            };
            return Err(SpecError::unknown("power_mode", "power mode", mode, self.power_mode_names(), hint));
        };
        let mut d = self.clone();
        d.name = format!("{}@{}", self.name, m.name);
        d.description = format!("{} (under power mode {}: its caps, not the clocks above)", self.description, m.name);
        d.power_modes.clear();
        if let Some(cap) = m.cpu_max_ghz {
            let first = d.clusters.first().map(|c| (cap / c.max_ghz).min(1.0));
            for c in &mut d.clusters {
                let f = (cap / c.max_ghz).min(1.0);
                c.max_ghz *= f;
                c.power_w_per_core *= dvfs_power_share(f);
                // A cluster's own caches run at its clock.
                for k in d.caches.iter_mut().filter(|k| k.shared_by == c.name) {
                    k.bandwidth_gbps *= f;
                }
            }
            if let (Some(f), Some(g)) = (first, d.memory.per_core_gbps.as_mut()) {
                *g *= f;
            }
        }
        if let Some(online) = m.cpu_cores_online {
            let mut left = online;
            for c in &mut d.clusters {
                c.cores = c.cores.min(left);
                left -= c.cores;
            }
            let gone: Vec<String> = d.clusters.iter().filter(|c| c.cores == 0).map(|c| c.name.clone()).collect();
            d.clusters.retain(|c| c.cores > 0);
            d.caches.retain(|c| !gone.contains(&c.shared_by));
        }
        if let Some(f) = m.gpu_clock_fraction {
            let a = &mut d.accelerators;
            a.gpu_clock_fraction = Some(a.gpu_clock_fraction.unwrap_or(1.0).min(f));
        }
        if let Some(r) = m.memory_data_rate_mtps {
            d.memory.data_rate_mtps = d.memory.data_rate_mtps.min(r);
        }
        d.sources
            .insert("power_mode".into(), format!("power mode {} of `{}`: {}", m.name, self.name, self.mode_source()));
        d.validate().map_err(|e| e.within(&format!("power_modes[{i}]")))?;
        Ok(d)
    }

    /// Where the device's power modes come from (`sources."power_modes"`), or a note that the
    /// file gives none.
    fn mode_source(&self) -> &str {
        self.sources.get("power_modes").map_or("no source stated", String::as_str)
    }

    /// GPU dense fp16 throughput at the clock it runs, TFLOP/s: the stated figure times
    /// `accelerators.gpu_clock_fraction` (1 when absent); `None` where none is stated.
    pub fn gpu_fp16_tflops_at_clock(&self) -> Option<f64> {
        let a = &self.accelerators;
        a.gpu_fp16_tflops.map(|t| t * a.gpu_clock_fraction.unwrap_or(1.0))
    }

    /// The GPU's power at the clock it runs as a share of its power at the stated clock:
    /// `f V(f)²` of `accelerators.gpu_clock_fraction` ([`dvfs_power_share`]); 1 when absent.
    pub fn gpu_power_share(&self) -> f64 {
        self.accelerators.gpu_clock_fraction.map_or(1.0, dvfs_power_share)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jetson() -> DeviceSpec {
        toml::from_str(
            "name = \"j\"\n[memory]\nram_bytes = 8589934592\nlpddr = \"LPDDR5\"\nchannels = 8\n\
             channel_width_bits = 16\ndata_rate_mtps = 6400\nper_core_gbps = 10.0\ndram_pj_per_bit = 4.5\n\
             [[caches]]\nname = \"L3-dual\"\nlevel = 3\nsize_bytes = 2097152\nbandwidth_gbps = 50.0\n\
             shared_by = \"dual\"\n\
             [[clusters]]\nname = \"quad\"\ncores = 4\nmax_ghz = 1.7\nsimd_bits = 128\npower_w_per_core = 1.0\n\
             [[clusters]]\nname = \"dual\"\ncores = 2\nmax_ghz = 1.7\nsimd_bits = 128\npower_w_per_core = 1.0\n\
             [accelerators]\ngpu_fp16_tflops = 16.7\ngpu_power_w = 10.0\n\
             [storage]\nkind = \"x\"\nread_gbps = 3.0\n[power]\nstatic_w = 3.0\n\
             [[power_modes]]\nname = \"15W\"\ncpu_max_ghz = 1.4976\ngpu_clock_fraction = 0.6\n\
             memory_data_rate_mtps = 4266\n\
             [[power_modes]]\nname = \"small\"\ncpu_cores_online = 4\n\
             [[power_modes]]\nname = \"MAXN_SUPER\"\n",
        )
        .unwrap()
    }

    #[test]
    fn a_mode_caps_clocks_and_what_follows_from_them() {
        let d = jetson().with_power_mode("15W").unwrap();
        assert_eq!(d.name, "j@15W");
        // CPU: f = 1.4976 / 1.7 = 0.88094; V = 1 − 0.52 × 0.11906 = 0.93809;
        // f V² = 0.88094 × 0.88001 = 0.77524 of 1.0 W per core.
        let f = 1.4976 / 1.7;
        assert!((d.clusters[0].max_ghz - 1.4976).abs() < 1e-12);
        assert!((d.clusters[1].power_w_per_core - 0.77524).abs() < 1e-4);
        assert!((d.memory.per_core_gbps.unwrap() - 10.0 * f).abs() < 1e-12);
        // GPU: 0.6 of the clock: 16.7 × 0.6 = 10.02 TFLOP/s; V = 1 − 0.52 × 0.4 = 0.792,
        // f V² = 0.6 × 0.627264 = 0.376358 of its power.
        assert!((d.gpu_fp16_tflops_at_clock().unwrap() - 10.02).abs() < 1e-12);
        assert!((d.gpu_power_share() - 0.376358).abs() < 1e-6);
        // DRAM: EMC 2133 MHz = 4266 MT/s on 128 bits = 68.256 GB/s (102.4 at 6400).
        assert!((d.memory.peak_gbps() - 68.256).abs() < 1e-9);
        // The dual cluster's own L3 runs at its clock: 50 GB/s × f.
        assert!((d.caches[0].bandwidth_gbps - 50.0 * f).abs() < 1e-12);
        assert!(d.power_modes.is_empty(), "a mode is applied once");
    }

    #[test]
    fn cores_go_off_line_from_the_last_cluster_with_the_caches_only_it_shared() {
        let d = jetson().with_power_mode("small").unwrap();
        assert_eq!(d.clusters.iter().map(|c| (c.name.as_str(), c.cores)).collect::<Vec<_>>(), [("quad", 4)]);
        assert!(d.caches.is_empty());
        assert!(d.validate().is_ok());
    }

    #[test]
    fn a_gpu_cap_is_a_cap_not_a_product() {
        let mut d = jetson();
        d.accelerators.gpu_clock_fraction = Some(0.5);
        assert_eq!(d.with_power_mode("15W").unwrap().accelerators.gpu_clock_fraction, Some(0.5));
        d.accelerators.gpu_clock_fraction = Some(0.9);
        assert_eq!(d.with_power_mode("15W").unwrap().accelerators.gpu_clock_fraction, Some(0.6));
    }

    #[test]
    fn an_uncapped_mode_changes_nothing_but_the_name() {
        let base = jetson();
        let d = base.with_power_mode("MAXN_SUPER").unwrap();
        assert_eq!(
            (d.clusters.clone(), d.memory.clone(), d.accelerators.clone()),
            (base.clusters, base.memory, base.accelerators)
        );
        assert_eq!(d.gpu_power_share(), 1.0);
    }

    #[test]
    fn an_unknown_mode_names_the_field_and_the_modes_there_are() {
        let e = jetson().with_power_mode("25w").unwrap_err().to_string();
        assert!(e.contains("power_mode") && e.contains("25w") && e.contains("15W"), "{e}");
        let mut d = jetson();
        d.power_modes.clear();
        let e = d.with_power_mode("15W").unwrap_err().to_string();
        assert!(e.contains("lists no [[power_modes]]"), "{e}");
    }

    #[test]
    fn a_mode_that_asks_the_impossible_is_refused_by_field() {
        let mut d = jetson();
        d.power_modes[1].cpu_cores_online = Some(7);
        let e = d.validate().unwrap_err().to_string();
        assert!(e.contains("power_modes[1].cpu_cores_online") && e.contains('7'), "{e}");
        d.power_modes[1].cpu_cores_online = None;
        d.power_modes[0].gpu_clock_fraction = Some(f64::NAN);
        let e = d.validate().unwrap_err().to_string();
        assert!(e.contains("power_modes[0].gpu_clock_fraction"), "{e}");
        d.power_modes[0].gpu_clock_fraction = Some(0.5);
        d.power_modes[0].name = "a@b".into();
        assert!(d.validate().unwrap_err().to_string().contains("power_modes[0].name"));
        for bad in ["a/b", "x.toml", ""] {
            d.power_modes[0].name = bad.into();
            assert!(d.validate().unwrap_err().to_string().contains("power_modes[0].name"), "{bad}");
        }
        d.power_modes[0].name = "small".into();
        assert!(d.validate().unwrap_err().to_string().contains("appears twice"));
        // A mode that caps the CPU clock needs a stated per-core reach to scale.
        d.power_modes[0].name = "15W".into();
        d.memory.per_core_gbps = None;
        let e = d.validate().unwrap_err().to_string();
        assert!(e.contains("power_modes[0].cpu_max_ghz") && e.contains("per_core_gbps"), "{e}");
    }
}
