//! Devices: RAM and what the OS leaves, LPDDR configuration, caches, CPU clusters,
//! accelerators, storage and power. Every preset number carries a source.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Result, SpecError, fraction, non_negative, nonzero, positive};
use crate::thermal::ThermalSpec;
use crate::units::peak_bandwidth_gbps;

/// DRAM configuration and the memory the app can use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemorySpec {
    /// Installed RAM, bytes.
    pub ram_bytes: u64,
    /// What this device keeps from the model's app, bytes, where it was measured on the device
    /// itself (a host's `MemTotal − MemAvailable`). Absent: the published limit of its class
    /// ([`DeviceSpec::app_limit`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os_reserved_bytes: Option<u64>,
    /// Other apps the user keeps resident beside the model, bytes (0 by default: the published
    /// app limits are measured with the other apps evicted).
    #[serde(default)]
    pub other_apps_bytes: u64,
    /// Memory technology (`"LPDDR5X"`).
    pub lpddr: String,
    /// Channels.
    pub channels: u32,
    /// Bits per channel.
    pub channel_width_bits: u32,
    /// Transfers per second per pin, in MT/s.
    pub data_rate_mtps: f64,
    /// Share of the peak a CPU streaming read reaches (absent: the default of the device's CPU
    /// family, [`crate::class::cpu_defaults`], taken with `assume_defaults` and listed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub achievable_fraction: Option<f64>,
    /// Share of the peak the GPU and NPU reach, for devices that state one figure for both
    /// (`accelerators.gpu_bandwidth_fraction` / `npu_bandwidth_fraction` take precedence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accel_achievable_fraction: Option<f64>,
    /// Read bandwidth one big core can pull, GB/s (absent: the CPU family's default, as
    /// `achievable_fraction`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_core_gbps: Option<f64>,
    /// DRAM + PHY energy per bit moved, pJ.
    pub dram_pj_per_bit: f64,
    /// Where the bus is assumed, not published (a device from a sheet that gives the memory
    /// type only): the 10th and 90th percentiles of `published peak ÷ assumed peak` over the
    /// sheets that do publish theirs, by which a prediction's 80 % band widens. Absent: the
    /// bus is published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_range: Option<[f64; 2]>,
}

impl MemorySpec {
    /// Peak bandwidth in GB/s: `channels × channel_width_bits / 8 × data_rate_mtps / 1000`.
    pub fn peak_gbps(&self) -> f64 {
        peak_bandwidth_gbps(self.channels, self.channel_width_bits, self.data_rate_mtps)
    }
}

/// A cache level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheSpec {
    /// Name (`"L2-prime"`, `"SLC"`).
    pub name: String,
    /// Level (1, 2, 3; a system-level cache counts as 4).
    pub level: u32,
    /// Capacity, bytes.
    pub size_bytes: u64,
    /// Read bandwidth, GB/s.
    pub bandwidth_gbps: f64,
    /// A cluster name, or `"all"`.
    #[serde(default = "all")]
    pub shared_by: String,
}

fn all() -> String {
    "all".into()
}

fn two() -> u32 {
    2
}

/// A cluster of identical CPU cores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSpec {
    /// Name (`"prime"`, `"performance"`, `"efficiency"`).
    pub name: String,
    /// Cores.
    pub cores: u32,
    /// Highest clock, GHz.
    pub max_ghz: f64,
    /// SIMD register width, bits (128 for NEON, 256 AVX2, 512 AVX-512).
    pub simd_bits: u32,
    /// SIMD issue ports per core.
    #[serde(default = "two")]
    pub simd_pipes: u32,
    /// Int8 dot-product instructions (SDOT/UDOT, AVX-VNNI).
    #[serde(default)]
    pub int8_dot: bool,
    /// Dynamic power of one fully loaded core at `max_ghz`, W.
    pub power_w_per_core: f64,
}

impl ClusterSpec {
    /// Int8 multiply-accumulates per cycle per core: `pipes × simd_bits / 8`, a quarter of
    /// that without dot-product instructions (widening multiplies and adds instead).
    pub fn int8_macs_per_cycle(&self) -> f64 {
        self.int8_macs_per_cycle_at(self.simd_bits)
    }

    /// [`ClusterSpec::int8_macs_per_cycle`] of kernels that use registers of `bits`
    /// ([`ClusterSpec::width_at_most`]): `pipes × bits / 8`, a quarter without dot-product
    /// instructions.
    pub fn int8_macs_per_cycle_at(&self, bits: u32) -> f64 {
        let lanes = self.simd_pipes as f64 * bits as f64 / 8.0;
        if self.int8_dot { lanes } else { lanes / 4.0 }
    }

    /// The register width, bits, that kernels written for at most `cap` bits run at on this
    /// core: `min(simd_bits, cap)`, the core's own without a cap.
    pub fn width_at_most(&self, cap: Option<u32>) -> u32 {
        cap.map_or(self.simd_bits, |c| c.min(self.simd_bits))
    }

    /// f32 fused multiply-adds per cycle per core: `pipes × simd_bits / 32`.
    pub fn f32_fmas_per_cycle(&self) -> f64 {
        self.simd_pipes as f64 * self.simd_bits as f64 / 32.0
    }
}

/// GPU / NPU throughput.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcceleratorSpec {
    /// Who designed the GPU (absent: not stated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_vendor: Option<GpuVendor>,
    /// GPU dense fp16 throughput, TFLOP/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_fp16_tflops: Option<f64>,
    /// NPU int8 throughput, TOP/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub npu_int8_tops: Option<f64>,
    /// GPU power at full load, W.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_power_w: Option<f64>,
    /// NPU power at full load, W.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub npu_power_w: Option<f64>,
    /// Share of the peak DRAM bandwidth the GPU's streaming reads reach.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_bandwidth_fraction: Option<f64>,
    /// Share of the peak DRAM bandwidth the NPU's streaming reads reach.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub npu_bandwidth_fraction: Option<f64>,
    /// The GPU's top clock as a share of the clock `gpu_fp16_tflops` and `gpu_power_w` are
    /// stated at (a power mode's cap, [`crate::power_mode`]); absent: 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_clock_fraction: Option<f64>,
}

/// Storage the model is loaded (or paged) from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageSpec {
    /// Technology (`"UFS 4.0"`).
    pub kind: String,
    /// Sequential read, GB/s.
    pub read_gbps: f64,
}

/// Static power.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PowerSpec {
    /// SoC leakage and uncore power under load, W.
    pub static_w: f64,
    /// Whole-device idle power, W.
    #[serde(default)]
    pub idle_w: f64,
}

/// The battery (`[battery]` in a device file).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatterySpec {
    /// Rated capacity, mAh.
    pub capacity_mah: f64,
    /// Nominal cell voltage, V.
    pub voltage_v: f64,
}

impl BatterySpec {
    /// Energy it stores, J: `capacity_mah × voltage_v × 3.6` (1 mAh at 1 V is 3.6 J).
    pub fn energy_j(&self) -> f64 {
        self.capacity_mah * self.voltage_v * 3.6
    }

    /// Charge an energy `joules` draws from it, mAh: `joules / (voltage_v × 3.6)`.
    pub fn mah_for(&self, joules: f64) -> f64 {
        joules / (self.voltage_v * 3.6)
    }
}

/// How a device sheds heat (`cooling` in a device file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cooling {
    /// No heatsink or fan: the case (or a bare board) sheds the heat by convection.
    Passive,
    /// A passive heatsink.
    Heatsink,
    /// A fan.
    Fan,
}

impl Cooling {
    /// Lower-case name as written in a device file.
    pub fn name(self) -> &'static str {
        match self {
            Cooling::Passive => "passive",
            Cooling::Heatsink => "heatsink",
            Cooling::Fan => "fan",
        }
    }
}

/// Who designed the GPU (`accelerators.gpu_vendor`): it decides which of an engine's GPU
/// backends runs it (llama.cpp: Metal on Apple, OpenCL on Adreno, CUDA on NVIDIA, Vulkan
/// elsewhere).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuVendor {
    /// Apple GPUs (M- and A-series).
    Apple,
    /// Qualcomm Adreno.
    Qualcomm,
    /// Arm Mali and Immortalis.
    Arm,
    /// NVIDIA (Jetson, GeForce).
    Nvidia,
    /// Broadcom VideoCore (Raspberry Pi).
    Broadcom,
    /// Imagination PowerVR.
    Imagination,
    /// AMD Radeon.
    Amd,
    /// Intel Arc / Xe / UHD.
    Intel,
}

/// The documented kinds of device (`kind` in a device file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceKind {
    /// A smartphone (passively cooled, skin-temperature limited).
    Phone,
    /// A tablet.
    Tablet,
    /// A single-board computer (Raspberry Pi class).
    Sbc,
    /// A compute module (Jetson class).
    Module,
    /// A laptop.
    Laptop,
    /// A desktop or workstation.
    Desktop,
}

impl DeviceKind {
    /// Lower-case name as written in a device file.
    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::Phone => "phone",
            DeviceKind::Tablet => "tablet",
            DeviceKind::Sbc => "sbc",
            DeviceKind::Module => "module",
            DeviceKind::Laptop => "laptop",
            DeviceKind::Desktop => "desktop",
        }
    }
}

/// The operating system a device runs (`os` in a device file): it sets how much of the RAM
/// one app may hold ([`crate::class::APP_LIMITS`]) and what an engine does by default
/// (llama.cpp's thread count, [`crate::ThreadRule`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Os {
    /// Android (lmkd evicts cached apps before the foreground one).
    Android,
    /// iOS or iPadOS (jetsam's per-app limit).
    Ios,
    /// macOS (Metal's GPU working-set limit on unified memory).
    Macos,
    /// Linux (no per-app limit: what the kernel, carve-outs and services leave).
    Linux,
    /// Windows.
    Windows,
}

impl Os {
    /// Whether it is one of Apple's (macOS, iOS), whose `hw.perflevel0` sysctl names the
    /// performance cores.
    pub fn is_apple(self) -> bool {
        matches!(self, Os::Ios | Os::Macos)
    }

    /// Lower-case name as written in a device file.
    pub fn name(self) -> &'static str {
        match self {
            Os::Android => "android",
            Os::Ios => "ios",
            Os::Macos => "macos",
            Os::Linux => "linux",
            Os::Windows => "windows",
        }
    }
}

/// What one app may hold on a device ([`DeviceSpec::app_limit`]).
#[derive(Debug, Clone, PartialEq)]
pub struct AppLimit {
    /// Bytes one app may hold.
    pub bytes: u64,
    /// The rule and source that gave it.
    pub source: String,
}

/// How a device's `[sources]` entry starts when the figure was assumed, not published (a
/// device from its spec sheet whose RAM no source gives); the results list such figures.
pub const ASSUMED: &str = "assumed: ";

/// A device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceSpec {
    /// Preset name.
    pub name: String,
    /// One line for people.
    #[serde(default)]
    pub description: String,
    /// What kind of device it is (`phone`, `tablet`, `sbc`, `module`, `laptop`, `desktop`);
    /// absent: unspecified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<DeviceKind>,
    /// The operating system (`android`, `ios`, `macos`, `linux`, `windows`); absent: the
    /// usual one of its kind ([`DeviceSpec::os`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os: Option<Os>,
    /// Default source of every number.
    #[serde(default)]
    pub source: String,
    /// DRAM.
    pub memory: MemorySpec,
    /// Caches.
    #[serde(default)]
    pub caches: Vec<CacheSpec>,
    /// CPU clusters, fastest first.
    pub clusters: Vec<ClusterSpec>,
    /// GPU/NPU.
    #[serde(default)]
    pub accelerators: AcceleratorSpec,
    /// Storage.
    pub storage: StorageSpec,
    /// Static power.
    pub power: PowerSpec,
    /// How the device sheds heat (`passive`, `heatsink`, `fan`); with `kind` it picks the
    /// class network ([`ThermalSpec::for_class`]) of a device without its own `[thermal]`.
    /// Absent: the class's usual cooling (phones, tablets and boards passive, laptops,
    /// desktops and modules a fan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooling: Option<Cooling>,
    /// Thermal network and governor (absent: the class network of `kind` and `cooling`).
    #[serde(default)]
    pub thermal: Option<ThermalSpec>,
    /// The battery (absent: mains-powered, or not stated; no battery figures then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub battery: Option<BatterySpec>,
    /// Per-field provenance (a field path or section name → source).
    #[serde(default)]
    pub sources: BTreeMap<String, String>,
    /// The device-database chip it was built from (`memwall_catalog::device_db`): a device
    /// from its spec sheet takes the family default of every unit figure it lacks without
    /// `assume_defaults`, each listed in the results' `assumed` column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sheet: Option<String>,
    /// The clock caps the vendor ships as named modes (`[[power_modes]]`; Jetson's nvpmodel
    /// modes), the device's own figures being its fastest mode's; `device@mode` picks one
    /// ([`DeviceSpec::with_power_mode`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub power_modes: Vec<crate::power_mode::PowerModeSpec>,
}

impl DeviceSpec {
    /// The share of the peak DRAM bandwidth `unit`'s streaming reads reach: the figure the
    /// device states (the GPU's and NPU's own, else `memory.accel_achievable_fraction`), the
    /// default it takes when it states none (its CPU family's, its GPU vendor's, the NPU
    /// class default; [`crate::class`]), and the field's path.
    pub fn bandwidth_fraction(&self, unit: crate::Backend) -> (Option<f64>, f64, &'static str) {
        use crate::class;
        let (m, a) = (&self.memory, &self.accelerators);
        match unit {
            crate::Backend::Cpu => (
                m.achievable_fraction,
                class::cpu_defaults(class::CpuFamily::of(self.kind, self.os())).achievable_fraction,
                "memory.achievable_fraction",
            ),
            crate::Backend::Gpu => (
                a.gpu_bandwidth_fraction.or(m.accel_achievable_fraction),
                class::gpu_bandwidth_fraction(a.gpu_vendor),
                "accelerators.gpu_bandwidth_fraction",
            ),
            crate::Backend::Npu => (
                a.npu_bandwidth_fraction.or(m.accel_achievable_fraction),
                class::NPU_BANDWIDTH_FRACTION,
                "accelerators.npu_bandwidth_fraction",
            ),
        }
    }

    /// The operating system: the stated one, else the usual one of its kind (phones, tablets
    /// and devices of no stated kind Android, boards and modules Linux, laptops and desktops
    /// Windows).
    pub fn os(&self) -> Os {
        self.os.unwrap_or(match self.kind {
            None | Some(DeviceKind::Phone | DeviceKind::Tablet) => Os::Android,
            Some(DeviceKind::Sbc | DeviceKind::Module) => Os::Linux,
            Some(DeviceKind::Laptop | DeviceKind::Desktop) => Os::Windows,
        })
    }

    /// What one app may hold, bytes, by one rule: `ram − os_reserved` where the device states
    /// a reserve measured on it, else the published limit of its class,
    /// `⌊share(os, kind, ram) × ram⌋` ([`crate::class::app_limit_bytes`]).
    pub fn app_limit_bytes(&self) -> u64 {
        let m = &self.memory;
        match m.os_reserved_bytes {
            Some(r) => m.ram_bytes.saturating_sub(r),
            None => crate::class::app_limit_bytes(self.os(), self.kind, m.ram_bytes),
        }
    }

    /// [`DeviceSpec::app_limit_bytes`] with the rule and source that gave it.
    pub fn app_limit(&self) -> AppLimit {
        let source = match self.memory.os_reserved_bytes {
            Some(_) => self.sources.get("memory.os_reserved_bytes").map_or_else(
                || "RAM less memory.os_reserved_bytes as stated".to_string(),
                |s| format!("RAM less memory.os_reserved_bytes: {s}"),
            ),
            None => {
                let row = crate::class::app_limit(self.os(), self.kind, self.memory.ram_bytes);
                format!(
                    "{:.3} of the RAM, the published limit of {} devices: {}",
                    row.share,
                    self.os().name(),
                    row.source
                )
            }
        };
        AppLimit { bytes: self.app_limit_bytes(), source }
    }

    /// The least RAM on which one app may hold `app_bytes` on this device, bytes: `app_bytes +
    /// os_reserved` where a reserve is stated, else the class rule solved for the RAM
    /// ([`crate::class::min_ram_for_app`]).
    pub fn min_ram_for_app(&self, app_bytes: u64) -> u64 {
        match self.memory.os_reserved_bytes {
            Some(r) => app_bytes.saturating_add(r),
            None => crate::class::min_ram_for_app(self.os(), self.kind, app_bytes),
        }
    }

    /// What the OS keeps from the model's app, bytes: `ram − app_limit`.
    pub fn reserve_bytes(&self) -> u64 {
        self.memory.ram_bytes - self.app_limit_bytes()
    }

    /// Bytes the model may use before the margin: `app_limit − other_apps`.
    pub fn available_bytes(&self) -> u64 {
        self.app_limit_bytes().saturating_sub(self.memory.other_apps_bytes)
    }

    /// All CPU cores.
    pub fn total_cores(&self) -> u32 {
        self.clusters.iter().map(|c| c.cores).sum()
    }

    /// Cores of every cluster but the slowest one (the "big" cores llama.cpp should use);
    /// all cores when every cluster runs at the same clock.
    pub fn big_cores(&self) -> u32 {
        let slowest = self.clusters.iter().map(|c| c.max_ghz).fold(f64::INFINITY, f64::min);
        let big: u32 = self.clusters.iter().filter(|c| c.max_ghz > slowest).map(|c| c.cores).sum();
        if big == 0 { self.total_cores() } else { big }
    }

    /// The clusters that `threads` threads run on, fastest cores first, as
    /// `(cluster, threads on it)`.
    pub fn placement(&self, threads: u32) -> Vec<(&ClusterSpec, u32)> {
        let mut order: Vec<&ClusterSpec> = self.clusters.iter().collect();
        order.sort_by(|a, b| b.max_ghz.total_cmp(&a.max_ghz));
        let mut left = threads;
        let mut out = Vec::new();
        for c in order {
            if left == 0 {
                break;
            }
            let n = left.min(c.cores);
            out.push((c, n));
            left -= n;
        }
        out
    }

    /// The cluster with the highest clock (the first of equals), where threads go first.
    pub fn fastest_cluster(&self) -> &ClusterSpec {
        self.clusters.iter().fold(&self.clusters[0], |best, c| if c.max_ghz > best.max_ghz { c } else { best })
    }

    /// The largest cache shared by all cores (SLC or L3), if any.
    pub fn last_level_cache(&self) -> Option<&CacheSpec> {
        self.caches.iter().filter(|c| c.shared_by == "all").max_by_key(|c| c.size_bytes)
    }

    /// Check every number; errors name the field and value.
    pub fn validate(&self) -> Result<()> {
        self.validate_bounds()?;
        let m = &self.memory;
        nonzero("memory.ram_bytes", m.ram_bytes)?;
        if let Some(r) = m.os_reserved_bytes
            && r >= m.ram_bytes
        {
            return Err(SpecError::invalid(
                "memory.os_reserved_bytes",
                r,
                format!("the OS reserve leaves nothing of ram_bytes = {}", m.ram_bytes),
            ));
        }
        if m.other_apps_bytes >= self.app_limit_bytes() {
            return Err(SpecError::invalid(
                "memory.other_apps_bytes",
                m.other_apps_bytes,
                format!("other apps leave nothing of the {} B one app may hold", self.app_limit_bytes()),
            ));
        }
        if let Some(b) = &self.battery {
            positive("battery.capacity_mah", b.capacity_mah)?;
            crate::bounds::at_most("battery.capacity_mah", b.capacity_mah, 1e7, "mAh")?;
            positive("battery.voltage_v", b.voltage_v)?;
            crate::bounds::at_most("battery.voltage_v", b.voltage_v, 1e3, "V")?;
        }
        nonzero("memory.channels", m.channels as u64)?;
        nonzero("memory.channel_width_bits", m.channel_width_bits as u64)?;
        positive("memory.data_rate_mtps", m.data_rate_mtps)?;
        if let Some(f) = m.achievable_fraction {
            fraction("memory.achievable_fraction", f)?;
        }
        if let Some(f) = m.accel_achievable_fraction {
            fraction("memory.accel_achievable_fraction", f)?;
        }
        if let Some(g) = m.per_core_gbps {
            positive("memory.per_core_gbps", g)?;
        }
        non_negative("memory.dram_pj_per_bit", m.dram_pj_per_bit)?;
        for (i, c) in self.caches.iter().enumerate() {
            let f = |n: &str| format!("caches[{i}].{n}");
            nonzero(&f("size_bytes"), c.size_bytes)?;
            positive(&f("bandwidth_gbps"), c.bandwidth_gbps)?;
            if c.shared_by != "all" && !self.clusters.iter().any(|k| k.name == c.shared_by) {
                return Err(SpecError::unknown(
                    f("shared_by"),
                    "cluster",
                    c.shared_by.clone(),
                    self.clusters.iter().map(|k| k.name.as_str()).chain(["all"]),
                    "; use a cluster name or \"all\"",
                ));
            }
        }
        if self.clusters.is_empty() {
            return Err(SpecError::invalid("clusters", "[]", "a device needs at least one CPU cluster"));
        }
        for (i, c) in self.clusters.iter().enumerate() {
            let f = |n: &str| format!("clusters[{i}].{n}");
            nonzero(&f("cores"), c.cores as u64)?;
            positive(&f("max_ghz"), c.max_ghz)?;
            if c.simd_bits == 0 || c.simd_bits % 64 != 0 {
                return Err(SpecError::invalid(f("simd_bits"), c.simd_bits, "must be a positive multiple of 64"));
            }
            nonzero(&f("simd_pipes"), c.simd_pipes as u64)?;
            non_negative(&f("power_w_per_core"), c.power_w_per_core)?;
        }
        let a = &self.accelerators;
        for (name, v) in
            [("accelerators.gpu_fp16_tflops", a.gpu_fp16_tflops), ("accelerators.npu_int8_tops", a.npu_int8_tops)]
        {
            if let Some(v) = v {
                positive(name, v)?;
            }
        }
        for (name, v) in [("accelerators.gpu_power_w", a.gpu_power_w), ("accelerators.npu_power_w", a.npu_power_w)] {
            if let Some(v) = v {
                non_negative(name, v)?;
            }
        }
        for (name, v) in [
            ("accelerators.gpu_bandwidth_fraction", a.gpu_bandwidth_fraction),
            ("accelerators.npu_bandwidth_fraction", a.npu_bandwidth_fraction),
            ("accelerators.gpu_clock_fraction", a.gpu_clock_fraction),
        ] {
            if let Some(v) = v {
                fraction(name, v)?;
            }
        }
        positive("storage.read_gbps", self.storage.read_gbps)?;
        non_negative("power.static_w", self.power.static_w)?;
        non_negative("power.idle_w", self.power.idle_w)?;
        if let Some(t) = &self.thermal {
            t.validate().map_err(|e| e.within("thermal"))?;
        }
        for (i, m) in self.power_modes.iter().enumerate() {
            m.validate(self.total_cores()).map_err(|e| e.within(&format!("power_modes[{i}]")))?;
            if self.power_modes[..i].iter().any(|o| o.name == m.name) {
                return Err(SpecError::invalid(format!("power_modes[{i}].name"), &m.name, "appears twice"));
            }
            if let Some(cap) = m.cpu_max_ghz
                && self.memory.per_core_gbps.is_none()
            {
                return Err(SpecError::invalid(
                    format!("power_modes[{i}].cpu_max_ghz"),
                    cap,
                    "a mode that caps the CPU clock needs the device's memory.per_core_gbps (the family default \
                     is a full-clock figure)",
                ));
            }
        }
        Ok(())
    }

    /// Every number within its plausibility bound ([`crate::bounds`]): sizes, clocks,
    /// bandwidths, throughputs and powers no device reaches are refused, naming the bound.
    fn validate_bounds(&self) -> Result<()> {
        use crate::bounds::{self as b, at_most};
        let m = &self.memory;
        for (f, v) in [
            ("memory.ram_bytes", m.ram_bytes),
            ("memory.os_reserved_bytes", m.os_reserved_bytes.unwrap_or(0)),
            ("memory.other_apps_bytes", m.other_apps_bytes),
        ] {
            b::bytes(f, v)?;
        }
        at_most("memory.channels", m.channels, b::MAX_CHANNELS, "memory channels")?;
        at_most("memory.channel_width_bits", m.channel_width_bits, b::MAX_CHANNEL_BITS, "bits per channel")?;
        let gbps = |f: &str, v: f64| at_most(f, v, b::MAX_GBPS, "GB/s");
        if m.data_rate_mtps.is_finite() {
            at_most("memory.data_rate_mtps", m.data_rate_mtps, b::MAX_DATA_RATE_MTPS, "MT/s")?;
        }
        if let Some(g) = m.per_core_gbps.filter(|g| g.is_finite()) {
            gbps("memory.per_core_gbps", g)?;
        }
        if m.dram_pj_per_bit.is_finite() {
            at_most("memory.dram_pj_per_bit", m.dram_pj_per_bit, b::MAX_PJ_PER_BIT, "pJ/bit")?;
        }
        for (i, c) in self.caches.iter().enumerate() {
            b::bytes(&format!("caches[{i}].size_bytes"), c.size_bytes)?;
            if c.bandwidth_gbps.is_finite() {
                gbps(&format!("caches[{i}].bandwidth_gbps"), c.bandwidth_gbps)?;
            }
        }
        at_most("clusters", self.clusters.len(), b::MAX_CORES as usize, "CPU clusters")?;
        let mut cores = 0u64;
        for (i, c) in self.clusters.iter().enumerate() {
            let f = |n: &str| format!("clusters[{i}].{n}");
            at_most(&f("cores"), c.cores, b::MAX_CORES, "cores")?;
            cores += c.cores as u64;
            if c.max_ghz.is_finite() {
                at_most(&f("max_ghz"), c.max_ghz, b::MAX_GHZ, "GHz")?;
            }
            at_most(&f("simd_bits"), c.simd_bits, b::MAX_SIMD_BITS, "bits, SVE's maximum")?;
            at_most(&f("simd_pipes"), c.simd_pipes, b::MAX_SIMD_PIPES, "SIMD pipes per core")?;
            if c.power_w_per_core.is_finite() {
                at_most(&f("power_w_per_core"), c.power_w_per_core, b::MAX_WATTS, "W")?;
            }
        }
        at_most("clusters[*].cores", cores, b::MAX_CORES as u64, "cores in all clusters")?;
        let a = &self.accelerators;
        for (f, v) in
            [("accelerators.gpu_fp16_tflops", a.gpu_fp16_tflops), ("accelerators.npu_int8_tops", a.npu_int8_tops)]
        {
            if let Some(v) = v.filter(|v| v.is_finite()) {
                at_most(f, v, b::MAX_TERA_OPS, "tera-operations/s")?;
            }
        }
        for (f, v) in [
            ("accelerators.gpu_power_w", a.gpu_power_w),
            ("accelerators.npu_power_w", a.npu_power_w),
            ("power.static_w", Some(self.power.static_w)),
            ("power.idle_w", Some(self.power.idle_w)),
        ] {
            if let Some(v) = v.filter(|v| v.is_finite()) {
                at_most(f, v, b::MAX_WATTS, "W")?;
            }
        }
        if self.storage.read_gbps.is_finite() {
            gbps("storage.read_gbps", self.storage.read_gbps)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(name: &str, cores: u32, ghz: f64) -> ClusterSpec {
        ClusterSpec {
            name: name.into(),
            cores,
            max_ghz: ghz,
            simd_bits: 128,
            simd_pipes: 2,
            int8_dot: true,
            power_w_per_core: 1.0,
        }
    }

    #[test]
    fn big_cores_skip_the_slowest_cluster_unless_all_are_equal() {
        let mut d: DeviceSpec = toml::from_str(
            "name = \"d\"\nclusters = []\n[memory]\nram_bytes = 8\nos_reserved_bytes = 1\nlpddr = \"x\"\n\
             channels = 1\nchannel_width_bits = 16\ndata_rate_mtps = 1.0\nachievable_fraction = 0.5\n\
             per_core_gbps = 1.0\ndram_pj_per_bit = 1.0\n[storage]\nkind = \"x\"\nread_gbps = 1.0\n\
             [power]\nstatic_w = 0.0",
        )
        .unwrap();
        d.clusters = vec![cluster("big", 2, 3.0), cluster("little", 4, 2.0)];
        assert_eq!(d.big_cores(), 2);
        assert_eq!(
            d.placement(3).iter().map(|(c, n)| (c.name.as_str(), *n)).collect::<Vec<_>>(),
            vec![("big", 2), ("little", 1)]
        );
        d.clusters = vec![cluster("a", 4, 1.7), cluster("b", 2, 1.7)];
        assert_eq!(d.big_cores(), 6);
    }

    /// One rule for what one app may hold: a reserve measured on the device (`ram − 1 GiB` of
    /// 8 GiB = 7 GiB), else the published share of its class (an Android phone 0.6 of 8 GiB,
    /// ⌊5 153 960 755.2⌋ B; the same board run as Linux 0.88), less other apps; a reserve or
    /// other apps that leave nothing are refused naming the field and value.
    #[test]
    fn the_app_limit_is_a_stated_reserve_or_the_class_share() {
        let mut d: DeviceSpec = toml::from_str(
            "name = \"d\"\nkind = \"phone\"\n[[clusters]]\nname = \"big\"\ncores = 4\nmax_ghz = 2.0\nsimd_bits = 128\n\
             power_w_per_core = 1.0\n[memory]\nram_bytes = 8589934592\nos_reserved_bytes = 1073741824\nlpddr = \"x\"\n\
             channels = 1\nchannel_width_bits = 16\ndata_rate_mtps = 1.0\nachievable_fraction = 0.5\n\
             per_core_gbps = 1.0\ndram_pj_per_bit = 1.0\n[storage]\nkind = \"x\"\nread_gbps = 1.0\n\
             [power]\nstatic_w = 0.0",
        )
        .unwrap();
        assert_eq!((d.app_limit_bytes(), d.reserve_bytes()), (7 << 30, 1 << 30));
        assert!(d.app_limit().source.contains("os_reserved_bytes"));
        d.memory.os_reserved_bytes = None;
        assert_eq!(d.os(), Os::Android);
        assert_eq!(d.app_limit_bytes(), 5_153_960_755);
        assert!(d.app_limit().source.contains("android"), "{}", d.app_limit().source);
        d.memory.other_apps_bytes = 1_000_000_000;
        assert_eq!(d.available_bytes(), 4_153_960_755);
        d.os = Some(Os::Linux);
        assert_eq!(d.app_limit_bytes(), 7_559_142_440);
        // 0.88 × 8 GiB = 7 559 142 440.96: one byte less of RAM still rounds down to the limit
        // (… 440.08), two bytes less do not.
        assert_eq!(d.min_ram_for_app(d.app_limit_bytes()), (8 << 30) - 1);
        d.validate().unwrap();
        d.memory.other_apps_bytes = 7_559_142_440;
        let e = d.validate().unwrap_err().to_string();
        assert!(e.contains("memory.other_apps_bytes") && e.contains("7559142440"), "{e}");
        d.memory.other_apps_bytes = 0;
        d.memory.os_reserved_bytes = Some(8 << 30);
        let e = d.validate().unwrap_err().to_string();
        assert!(e.contains("memory.os_reserved_bytes") && e.contains("8589934592"), "{e}");
    }
}
