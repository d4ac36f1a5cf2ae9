//! The device database: phones, tablets, laptops, desktops, boards and modules as their spec
//! sheets state them (`datasets/device_db/*.csv`, every number with its source), and the
//! names a user types for them (`Galaxy S24 Ultra`, `MacBook Air M2 16GB`, `Raspberry Pi 5
//! 8GB`).
//!
//! A chip row becomes a [`DeviceSpec`] for one RAM size ([`Chip::device`]): its memory bus,
//! CPU clusters (widths, pipes and power from the core's microarchitecture,
//! [`memwall_spec::cores`]), GPU vendor and published GPU/NPU figures. What a spec sheet does
//! not state (the CPU's and GPU's share of the peak bandwidth, a unit's power, storage speed)
//! is left to the family defaults ([`memwall_spec::class`]), which a device from the database
//! takes without `--assume-defaults`, each listed in the results' `assumed` column
//! ([`DeviceSpec::sheet`]). A chip without a published memory bandwidth, or without clocks,
//! is refused with the missing field named: the tool does not guess a memory bus.

use std::sync::OnceLock;

use memwall_spec::{
    BatterySpec, ClusterSpec, DeviceKind, DeviceSpec, GpuVendor, MemorySpec, Os, PowerSpec, SpecError, StorageSpec,
    cores,
};

use crate::presets::{DEVICE_DB_CHIPS, DEVICE_DB_NAMES};

/// The columns of a chip file (`datasets/device_db/{phones,pcs,boards}.csv`).
pub const CHIP_COLUMNS: &str = "id,soc,kind,os,year,ram_gb_options,mem_type,bus_width_bits,data_rate_mtps,peak_gbps,\
cpu_clusters,gpu_name,gpu_family,gpu_fp16_tflops,npu_name,npu_int8_tops,slc_mb,source";

/// The columns of a names file (`datasets/device_db/*_names.csv`).
pub const NAME_COLUMNS: &str = "name,id,ram_gb,kind,os,source";

/// One cluster of a chip row: cores, top clock (None: not published), core name.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ChipCluster {
    /// Cores.
    pub cores: u32,
    /// Top clock, GHz (None: not published).
    pub ghz: Option<f64>,
    /// Core microarchitecture (`cortex-x4`).
    pub core: String,
}

/// A chip (or a board or module with fixed memory) as its spec sheet states it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Chip {
    /// Database id (`snapdragon-8-gen3`).
    pub id: String,
    /// Marketing name.
    pub soc: String,
    /// Kind of device it ships in.
    pub kind: DeviceKind,
    /// Usual operating system.
    pub os: Os,
    /// Launch year.
    pub year: Option<u32>,
    /// RAM sizes shipped, GB.
    pub ram_gb_options: Vec<u32>,
    /// DRAM technology.
    pub mem_type: String,
    /// Total DRAM bus width, bits.
    pub bus_width_bits: Option<u32>,
    /// Transfers per second, MT/s.
    pub data_rate_mtps: Option<f64>,
    /// Peak DRAM bandwidth as published, GB/s.
    pub peak_gbps: Option<f64>,
    /// CPU clusters.
    pub clusters: Vec<ChipCluster>,
    /// GPU name.
    pub gpu_name: String,
    /// GPU family (`adreno`, `mali`, `apple`, ...).
    pub gpu_family: String,
    /// Vector fp16 TFLOP/s of the GPU, when published.
    pub gpu_fp16_tflops: Option<f64>,
    /// NPU name.
    pub npu_name: String,
    /// NPU int8 TOP/s, when published.
    pub npu_int8_tops: Option<f64>,
    /// Sources, per field.
    pub source: String,
}

/// A name a user types for a device: the chip and RAM it means.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct NameRow {
    /// What the user types (`Galaxy S24 Ultra`).
    pub name: String,
    /// Chip id.
    pub id: String,
    /// RAM, GB (None: the chip's largest RAM option, [`Chip::default_ram_gb`]).
    pub ram_gb: Option<u32>,
    /// Source.
    pub source: String,
}

fn bad(file: &str, row: usize, col: &str, v: &str, want: &str) -> String {
    format!("device database {file} row {row}: {col} = {v:?}: {want}")
}

fn opt_num<T: std::str::FromStr>(file: &str, row: usize, col: &str, v: &str) -> Result<Option<T>, String> {
    let v = v.trim();
    if v.is_empty() {
        return Ok(None);
    }
    v.parse::<T>().map(Some).map_err(|_| bad(file, row, col, v, "a number or empty"))
}

fn kind_of(s: &str) -> Option<DeviceKind> {
    Some(match s {
        "phone" => DeviceKind::Phone,
        "tablet" => DeviceKind::Tablet,
        "board" | "sbc" => DeviceKind::Sbc,
        "module" => DeviceKind::Module,
        "laptop" => DeviceKind::Laptop,
        "desktop" => DeviceKind::Desktop,
        _ => return None,
    })
}

fn os_of(s: &str) -> Option<Os> {
    Some(match s {
        "android" => Os::Android,
        "ios" | "ipados" => Os::Ios,
        "macos" => Os::Macos,
        "windows" => Os::Windows,
        "linux" => Os::Linux,
        _ => return None,
    })
}

/// Parse `COUNTxGHZ:core;...` (the clock may be empty: `2x:apple-a18-p`).
fn clusters_of(file: &str, row: usize, v: &str) -> Result<Vec<ChipCluster>, String> {
    let mut out = Vec::new();
    for part in v.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let err = || bad(file, row, "cpu_clusters", part, "COUNTxGHZ:core, e.g. 4x3.20:cortex-x4");
        let (count, rest) = part.split_once(['x', 'X']).ok_or_else(err)?;
        let (ghz, core) = rest.split_once(':').ok_or_else(err)?;
        let cores: u32 = count.trim().parse().map_err(|_| err())?;
        let ghz = match ghz.trim() {
            "" => None,
            g => Some(g.parse::<f64>().ok().filter(|g| g.is_finite() && *g > 0.0 && *g < 10.0).ok_or_else(err)?),
        };
        if cores == 0 || core.trim().is_empty() {
            return Err(err());
        }
        out.push(ChipCluster { cores, ghz, core: core.trim().to_ascii_lowercase() });
    }
    Ok(out)
}

/// Parse one chip file.
pub fn parse_chips(file: &str, text: &str) -> Result<Vec<Chip>, String> {
    let mut out = Vec::new();
    for (row, rec) in crate::tables::records(&format!("device database {file}"), text, CHIP_COLUMNS)? {
        let g = |c: usize| rec.get(c).unwrap_or("").trim();
        let kind = kind_of(g(2))
            .ok_or_else(|| bad(file, row, "kind", g(2), "phone, tablet, laptop, desktop, board or module"))?;
        let os = os_of(g(3)).ok_or_else(|| bad(file, row, "os", g(3), "android, ios, macos, windows or linux"))?;
        let ram_gb_options = g(5)
            .split(';')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.parse::<u32>()
                    .ok()
                    .filter(|v| *v > 0 && *v <= 4096)
                    .ok_or_else(|| bad(file, row, "ram_gb_options", s, "whole GB"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let positive = |c: usize, name: &str| -> Result<Option<f64>, String> {
            let v = opt_num::<f64>(file, row, name, g(c))?;
            match v {
                Some(x) if !(x.is_finite() && x > 0.0) => Err(bad(file, row, name, g(c), "a positive number or empty")),
                v => Ok(v),
            }
        };
        out.push(Chip {
            id: g(0).to_ascii_lowercase(),
            soc: g(1).to_string(),
            kind,
            os,
            year: opt_num(file, row, "year", g(4))?,
            ram_gb_options,
            mem_type: g(6).to_string(),
            bus_width_bits: opt_num(file, row, "bus_width_bits", g(7))?.filter(|b: &u32| *b > 0),
            data_rate_mtps: positive(8, "data_rate_mtps")?,
            peak_gbps: positive(9, "peak_gbps")?,
            clusters: clusters_of(file, row, g(10))?,
            gpu_name: g(11).to_string(),
            gpu_family: g(12).to_ascii_lowercase(),
            gpu_fp16_tflops: positive(13, "gpu_fp16_tflops")?,
            npu_name: g(14).to_string(),
            npu_int8_tops: positive(15, "npu_int8_tops")?,
            source: g(17).to_string(),
        });
        if out.last().is_some_and(|c| c.id.is_empty()) {
            return Err(bad(file, row, "id", "", "every chip has an id"));
        }
    }
    Ok(out)
}

/// Parse one names file.
pub fn parse_names(file: &str, text: &str) -> Result<Vec<NameRow>, String> {
    let mut out = Vec::new();
    for (row, rec) in crate::tables::records(&format!("device database {file}"), text, NAME_COLUMNS)? {
        let g = |c: usize| rec.get(c).unwrap_or("").trim();
        out.push(NameRow {
            name: g(0).to_string(),
            id: g(1).to_ascii_lowercase(),
            ram_gb: opt_num(file, row, "ram_gb", g(2))?,
            source: g(5).to_string(),
        });
    }
    Ok(out)
}

/// Every chip of the embedded database.
pub fn chips() -> &'static [Chip] {
    static CHIPS: OnceLock<Vec<Chip>> = OnceLock::new();
    CHIPS.get_or_init(|| {
        DEVICE_DB_CHIPS
            .iter()
            .flat_map(|(f, t)| parse_chips(f, t).unwrap_or_else(|e| panic!("the embedded {f} parses: {e}")))
            .collect()
    })
}

/// Every name of the embedded database.
pub fn names() -> &'static [NameRow] {
    static NAMES: OnceLock<Vec<NameRow>> = OnceLock::new();
    NAMES.get_or_init(|| {
        DEVICE_DB_NAMES
            .iter()
            .flat_map(|(f, t)| parse_names(f, t).unwrap_or_else(|e| panic!("the embedded {f} parses: {e}")))
            .collect()
    })
}

/// The SoC a device name stands for: the name without its RAM suffixes (`-16gb`), then
/// without a GPU-bin suffix (`-38c`). A preset (`apple-m2-max-32gb`), the database's chip at
/// another RAM size (`apple-m2-max-64gb`) and its other GPU bin (`apple-m2-max-38c-32gb`) are
/// one SoC, which leave-one-SoC-out leaves out together; so is a device under a power mode
/// (`jetson-orin-nano-super-8gb@25W`).
pub fn soc_of(name: &str) -> &str {
    let name = name.split_once('@').map_or(name, |(base, _)| base);
    let strip = |s: &'static str, n: &str| -> Option<usize> {
        let head = n.strip_suffix(s)?;
        let cut = head.rfind('-')?;
        let digits = &head[cut + 1..];
        (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then_some(cut)
    };
    // A device built from a chip whose id already ends in its RAM (`jetson-agx-orin-64gb`)
    // is named `<id>-<N>gb`: every RAM suffix goes.
    let mut n = name;
    while let Some(cut) = strip("gb", n) {
        n = &n[..cut];
    }
    strip("c", n).map_or(n, |cut| &n[..cut])
}

/// Lower case, letters and digits only: how names are compared (`Galaxy S24 Ultra` and
/// `galaxy-s24-ultra` are one name).
pub fn normalized(s: &str) -> String {
    s.chars().filter(|c| c.is_ascii_alphanumeric()).map(|c| c.to_ascii_lowercase()).collect()
}

/// The chip and RAM a user's device name means: a chip id with its RAM (`snapdragon-8-gen3-12gb`),
/// a chip id alone (a preset of the chip where one exists, else its largest RAM option), or a name of the names files (`Galaxy S24 Ultra`).
pub fn lookup(name: &str) -> Option<(&'static Chip, Option<u32>)> {
    let n = normalized(name);
    let chip = |id: &str| chips().iter().find(|c| c.id == id);
    if let Some(c) = chips().iter().find(|c| normalized(&c.id) == n) {
        return Some((c, None));
    }
    for c in chips() {
        if let Some(gb) =
            n.strip_prefix(&normalized(&c.id)).and_then(|r| r.strip_suffix("gb")).and_then(|r| r.parse().ok())
        {
            return Some((c, Some(gb)));
        }
    }
    let row = names().iter().find(|r| normalized(&r.name) == n)?;
    Some((chip(&row.id)?, row.ram_gb))
}

/// The GPU vendor of a database GPU family.
fn vendor_of(family: &str) -> Option<GpuVendor> {
    Some(match family {
        "apple" => GpuVendor::Apple,
        "adreno" => GpuVendor::Qualcomm,
        "mali" | "immortalis" => GpuVendor::Arm,
        "nvidia" => GpuVendor::Nvidia,
        "videocore" => GpuVendor::Broadcom,
        "powervr" => GpuVendor::Imagination,
        "amd-rdna" | "xclipse" => GpuVendor::Amd,
        "intel-xe" => GpuVendor::Intel,
        _ => return None,
    })
}

/// Storage read speed by device kind, GB/s, for a device that states none: phones and
/// tablets UFS 3.1–4.0 (~2 GB/s sequential), boards a microSD card (~0.09), modules NVMe
/// (~2), laptops and desktops NVMe (~3). Orders of magnitude: it only sets how fast a model
/// loads or pages.
fn storage_of(kind: DeviceKind) -> StorageSpec {
    let (kind, read_gbps) = match kind {
        DeviceKind::Phone | DeviceKind::Tablet => ("UFS (assumed)", 2.0),
        DeviceKind::Sbc => ("microSD (assumed)", 0.09),
        DeviceKind::Module => ("NVMe (assumed)", 2.0),
        DeviceKind::Laptop | DeviceKind::Desktop => ("NVMe (assumed)", 3.0),
    };
    StorageSpec { kind: kind.into(), read_gbps }
}

/// The RAM a device of `kind` is taken to have when neither the user nor the sheet names
/// one, GB: what flagship phones (12 GB: Galaxy S24/S25 Ultra, Pixel 9 Pro), laptops
/// (16 GB: the base MacBook Air M4 and most Copilot+ PCs), desktops (32 GB), tablets and
/// boards and modules (8 GB: Raspberry Pi 5 and Jetson Orin Nano's common size) ship with
/// in 2024-2025. Listed as assumed wherever used.
pub fn assumed_ram_gb(kind: DeviceKind) -> u32 {
    match kind {
        DeviceKind::Phone => 12,
        DeviceKind::Laptop => 16,
        DeviceKind::Desktop => 32,
        DeviceKind::Tablet | DeviceKind::Sbc | DeviceKind::Module => 8,
    }
}

/// The clock a cluster of `core` is taken to run at when its sheet gives none, GHz: the
/// median of the clocks the other sheets publish for that core (`None`: no sheet does).
pub fn assumed_clock_ghz(core: &str) -> Option<f64> {
    upper_median(
        chips()
            .iter()
            .flat_map(|c| &c.clusters)
            .filter(|c| c.core.eq_ignore_ascii_case(core))
            .filter_map(|c| c.ghz)
            .collect(),
    )
}

/// The median of `v`, the upper of the two middle values for an even count (a value some
/// sheet publishes); `None` when empty.
fn upper_median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    (!v.is_empty()).then(|| v[v.len() / 2])
}

/// The clock of a chip's small cores relative to its fastest: the median over the sheets that
/// clock two clusters or more of `slowest ÷ fastest` published clock (≈ 0.6: a phone's 2.0 GHz
/// little cores beside a 3.3 GHz prime core). What a cluster whose core no sheet clocks runs at,
/// times the chip's fastest clock.
pub fn small_core_clock_ratio() -> f64 {
    // A figure of the whole database, formed once.
    static RATIO: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *RATIO.get_or_init(|| {
        let ratios = chips()
            .iter()
            .filter_map(|c| {
                let ghz: Vec<f64> = c.clusters.iter().filter_map(|k| k.ghz).collect();
                let (lo, hi) = ghz.iter().fold((f64::INFINITY, 0.0_f64), |(lo, hi), &g| (lo.min(g), hi.max(g)));
                (ghz.len() >= 2 && lo < hi).then(|| lo / hi)
            })
            .collect();
        upper_median(ratios).unwrap_or(1.0)
    })
}

/// A memory bus assumed for a sheet that publishes only its memory type.
#[derive(Debug, Clone, PartialEq)]
pub struct AssumedBus {
    /// Bus width, bits: the median of the published widths of chips of the same kind.
    pub width_bits: u32,
    /// Data rate, MT/s: the median of the published rates of chips with the same memory
    /// type (of the same kind where any; any type where the sheet gives none).
    pub rate_mtps: f64,
    /// The 10th and 90th percentiles of `published peak ÷ assumed peak` over the chips of the
    /// same kind and memory type that publish their bus (the band's widening).
    pub range: [f64; 2],
    /// How it was formed, for the device's sources.
    pub why: String,
}

/// The bus a chip of `kind` with memory `mem_type` is taken to have when its sheet gives
/// neither width nor rate ([`AssumedBus`]); `None` when no sheet of the kind publishes one.
pub fn assumed_bus_of(kind: DeviceKind, mem_type: &str) -> Option<AssumedBus> {
    let same_kind: Vec<&Chip> = chips().iter().filter(|c| c.kind == kind).collect();
    let widths: Vec<f64> = same_kind.iter().filter_map(|c| c.bus_width_bits).map(f64::from).collect();
    let width_bits = upper_median(widths)? as u32;
    // A sheet may list several types (`LPDDR4X;LPDDR5`): a chip sharing any of them counts.
    let types =
        |t: &str| t.split(';').map(|x| x.trim().to_ascii_uppercase()).filter(|x| !x.is_empty()).collect::<Vec<_>>();
    let wanted = types(mem_type);
    let typed = |c: &Chip| wanted.is_empty() || types(&c.mem_type).iter().any(|t| wanted.contains(t));
    let rates_kind: Vec<f64> = same_kind.iter().filter(|c| typed(c)).filter_map(|c| c.data_rate_mtps).collect();
    let rates_any: Vec<f64> = chips().iter().filter(|c| typed(c)).filter_map(|c| c.data_rate_mtps).collect();
    let rates = if rates_kind.is_empty() { rates_any } else { rates_kind };
    let rate_mtps = upper_median(rates.clone())?;
    let assumed = f64::from(width_bits) * rate_mtps;
    let mut ratios: Vec<f64> = same_kind
        .iter()
        .filter(|c| typed(c))
        .filter_map(|c| Some(f64::from(c.bus_width_bits?) * c.data_rate_mtps? / assumed))
        .collect();
    ratios.sort_by(f64::total_cmp);
    let q = |p: f64| ratios[((ratios.len() - 1) as f64 * p).round() as usize];
    let range = if ratios.len() >= 3 { [q(0.1).min(1.0), q(0.9).max(1.0)] } else { [0.5, 1.5] };
    Some(AssumedBus {
        width_bits,
        rate_mtps,
        range,
        why: format!(
            "the median of the {} sheets that publish it ({} of {} chips' rates); their peaks spread {:.2}x to {:.2}x \
             of the assumed one, by which the 80% band widens",
            kind.name(),
            rates.len(),
            if mem_type.is_empty() { "any memory type" } else { mem_type },
            range[0],
            range[1]
        ),
    })
}

impl Chip {
    /// Every RAM size the chip ships with, GB, largest first: its options, and those of the
    /// devices the names files list for it.
    pub fn ram_sizes_gb(&self) -> Vec<u32> {
        let mut all: Vec<u32> = self.ram_gb_options.clone();
        all.extend(names().iter().filter(|n| n.id == self.id).filter_map(|n| n.ram_gb));
        all.sort_unstable_by(|a, b| b.cmp(a));
        all.dedup();
        all
    }

    /// The RAM a device of this chip has when the user names none, GB: the largest it ships
    /// with. A published run of a model on "a phone with this chip" ran where the model fit,
    /// so the smallest variant would page a model the measured device held; the output names
    /// the RAM taken, and `<id>-<N>gb` picks another.
    pub fn default_ram_gb(&self) -> Option<u32> {
        self.ram_sizes_gb().first().copied()
    }

    /// The device of this chip with `ram_gb` of RAM (None: [`Chip::default_ram_gb`]): its
    /// memory bus and clusters from the sheet, every figure the sheet lacks left to the
    /// family defaults and listed. Refused, naming the field, when the sheet lacks what a
    /// prediction needs (the memory bandwidth, the clocks, a RAM size).
    pub fn device(&self, ram_gb: Option<u32>) -> Result<DeviceSpec, SpecError> {
        let field = |f: &str| format!("device database `{}`.{f}", self.id);
        let stated_ram = ram_gb.or(self.default_ram_gb());
        let ram = stated_ram.unwrap_or_else(|| assumed_ram_gb(self.kind));
        // The bus: width and rate where published, else the published peak on a 64-bit bus,
        // else what the sheets of its kind and memory type publish (assumed, listed, and the
        // band widened by how far those sheets spread).
        let mut assumed_bus = None;
        let (channels, width, rate) = match (self.bus_width_bits, self.data_rate_mtps, self.peak_gbps) {
            (Some(b), Some(r), _) => (b.div_ceil(16).max(1), 16, r),
            (_, _, Some(p)) => (4, 16, p * 1000.0 / 8.0),
            (b, r, None) => {
                let bus = assumed_bus_of(self.kind, &self.mem_type).ok_or_else(|| {
                    SpecError::invalid(
                        field("peak_gbps"),
                        "empty",
                        "no memory bandwidth is published for this chip (bus_width_bits and data_rate_mtps, or \
                         peak_gbps), nor does any sheet of its kind and memory type publish one to assume from; \
                         give the device as a file",
                    )
                })?;
                let (width, rate) = (b.unwrap_or(bus.width_bits), r.unwrap_or(bus.rate_mtps));
                assumed_bus = Some((bus, b.is_none(), r.is_none()));
                (width.div_ceil(16).max(1), 16, rate)
            }
        };
        let mut clusters = Vec::new();
        let mut assumed_clocks = Vec::new();
        // Each cluster's clock: published; else the median its core runs at on the sheets
        // that publish one; else, a cluster a sheet leaves unclocked being its small one, the
        // chip's fastest clock times the small-core ratio of the sheets
        // ([`small_core_clock_ratio`]), kept below its other clusters' so that they stay its
        // big cores.
        let known: Vec<Option<f64>> =
            self.clusters.iter().map(|c| c.ghz.or_else(|| assumed_clock_ghz(&c.core))).collect();
        let ratio = small_core_clock_ratio();
        let small = known.iter().flatten().copied().max_by(f64::total_cmp).map(|fastest| {
            let slowest = known.iter().flatten().copied().fold(f64::INFINITY, f64::min);
            let g = if fastest * ratio < slowest { fastest * ratio } else { slowest * ratio };
            (g * 100.0).round() / 100.0
        });
        for (i, c) in self.clusters.iter().enumerate() {
            let ghz = match (c.ghz, known[i], small) {
                (Some(g), _, _) => g,
                (None, Some(g), _) => {
                    assumed_clocks.push(format!(
                        "{} {} at {g} GHz (the median clock of this core on the sheets that publish one)",
                        c.cores, c.core
                    ));
                    g
                }
                (None, None, Some(g)) => {
                    assumed_clocks.push(format!(
                        "{} {} at {g} GHz (no sheet publishes this core's clock: the chip's fastest clock times \
                         {ratio:.2}, the median ratio of a chip's slowest to fastest published clock)",
                        c.cores, c.core
                    ));
                    g
                }
                (None, None, None) => {
                    return Err(SpecError::invalid(
                        field(&format!("cpu_clusters[{i}]")),
                        &c.core,
                        "no clock is published for this chip's cores, nor by any other sheet with these cores",
                    ));
                }
            };
            let fig = cores::core_figures(&c.core).unwrap_or(cores::UNKNOWN_CORE);
            clusters.push(ClusterSpec {
                name: format!("{}x {}", c.cores, c.core),
                cores: c.cores,
                max_ghz: ghz,
                simd_bits: fig.simd_bits,
                simd_pipes: fig.simd_pipes,
                int8_dot: fig.int8_dot,
                power_w_per_core: fig.power_w,
            });
        }
        if clusters.is_empty() {
            return Err(SpecError::invalid(field("cpu_clusters"), "empty", "no CPU cluster is published"));
        }
        // Fastest first, as device files list them.
        clusters.sort_by(|a, b| b.max_ghz.total_cmp(&a.max_ghz));
        let mut sources = std::collections::BTreeMap::new();
        sources.insert("memory".to_string(), self.source.clone());
        sources.insert(
            "clusters".to_string(),
            "cores and clocks from the sheet; SIMD width, pipes, dot products and power per core from the core's \
             microarchitecture (memwall_spec::cores)"
                .to_string(),
        );
        sources.insert("storage".to_string(), "assumed by device kind (memwall_catalog::device_db)".to_string());
        if !assumed_clocks.is_empty() {
            sources.insert(
                "clusters.max_ghz".into(),
                format!("{}{}", memwall_spec::device::ASSUMED, assumed_clocks.join(", ")),
            );
        }
        let mut peak_range = None;
        if let Some((bus, width_assumed, rate_assumed)) = &assumed_bus {
            if *width_assumed {
                sources.insert(
                    "memory.channels".into(),
                    format!("{}{} bits, {}", memwall_spec::device::ASSUMED, bus.width_bits, bus.why),
                );
            }
            if *rate_assumed {
                sources.insert(
                    "memory.data_rate_mtps".into(),
                    format!("{}{} MT/s, {}", memwall_spec::device::ASSUMED, bus.rate_mtps, bus.why),
                );
            }
            peak_range = Some(bus.range);
        }
        if stated_ram.is_none() {
            sources.insert(
                "memory.ram_bytes".to_string(),
                format!(
                    "{}{ram} GB, a usual {} of its years: the sheet publishes no RAM size (name one: `{}-<N>gb`); \
                     it moves what fits, not how fast",
                    memwall_spec::device::ASSUMED,
                    self.kind.name(),
                    self.id
                ),
            );
        }
        sources
            .insert("power".to_string(), "assumed: 0.5 W static, 0.2 W idle (phone-class orders of magnitude)".into());
        let kind = self.kind;
        let accelerators = memwall_spec::AcceleratorSpec {
            gpu_vendor: vendor_of(&self.gpu_family),
            gpu_fp16_tflops: self.gpu_fp16_tflops,
            npu_int8_tops: self.npu_int8_tops,
            ..Default::default()
        };
        Ok(DeviceSpec {
            name: format!("{}-{ram}gb", self.id),
            description: format!("{} with {ram} GB ({}), from the device database", self.soc, self.mem_type),
            kind: Some(kind),
            os: Some(self.os),
            source: self.source.clone(),
            memory: MemorySpec {
                ram_bytes: u64::from(ram) << 30,
                os_reserved_bytes: None,
                other_apps_bytes: 0,
                lpddr: self.mem_type.clone(),
                channels,
                channel_width_bits: width,
                data_rate_mtps: rate,
                achievable_fraction: None,
                accel_achievable_fraction: None,
                per_core_gbps: None,
                dram_pj_per_bit: 4.0,
                peak_range,
            },
            caches: Vec::new(),
            clusters,
            accelerators,
            storage: storage_of(kind),
            power: PowerSpec { static_w: 0.5, idle_w: 0.2 },
            cooling: None,
            thermal: None,
            battery: None::<BatterySpec>,
            sources,
            sheet: Some(self.id.clone()),
            power_modes: Vec::new(),
        })
    }
}

/// The device a user's name means, from the database (None: not in it).
pub fn device(name: &str) -> Option<Result<DeviceSpec, SpecError>> {
    let (chip, ram) = lookup(name)?;
    Some(chip.device(ram))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_soc_is_the_name_without_its_ram_and_gpu_bin() {
        assert_eq!(soc_of("apple-m2-max-32gb"), "apple-m2-max");
        assert_eq!(soc_of("apple-m2-max-38c-32gb"), "apple-m2-max");
        assert_eq!(soc_of("apple-m3-max-30c"), "apple-m3-max");
        assert_eq!(soc_of("snapdragon-8-gen3"), "snapdragon-8-gen3");
        assert_eq!(soc_of("snapdragon-8-gen3-16gb"), "snapdragon-8-gen3");
        // Only whole `-<digits>gb` / `-<digits>c` parts go: a name ending in other letters stays.
        assert_eq!(soc_of("midrange-8gb-lpddr4x"), "midrange-8gb-lpddr4x");
        assert_eq!(soc_of("rk3588"), "rk3588");
        assert_eq!(soc_of("x-gb"), "x-gb");
        assert_eq!(soc_of("jetson-agx-orin-64gb-64gb"), soc_of("jetson-agx-orin-64gb"));
    }

    #[test]
    fn a_chip_without_a_published_ram_size_gets_its_kind_s_usual_one_listed_as_assumed() {
        let Some(chip) = chips().iter().find(|c| c.default_ram_gb().is_none() && c.device(Some(8)).is_ok()) else {
            return; // every predictable chip states its RAM
        };
        let d = chip.device(None).unwrap();
        assert_eq!(d.memory.ram_bytes, u64::from(assumed_ram_gb(chip.kind)) << 30);
        let why = &d.sources["memory.ram_bytes"];
        assert!(why.starts_with(memwall_spec::device::ASSUMED) && why.contains(&chip.id), "{why}");
        // A RAM size the user names is not assumed.
        assert!(!chip.device(Some(8)).unwrap().sources.contains_key("memory.ram_bytes"));
    }

    #[test]
    fn the_database_parses_and_names_point_at_chips() {
        assert!(chips().len() >= 80, "{} chips", chips().len());
        for n in names() {
            assert!(chips().iter().any(|c| c.id == n.id), "{} -> {} is not a chip", n.name, n.id);
        }
        let mut ids: Vec<&str> = chips().iter().map(|c| c.id.as_str()).collect();
        ids.sort();
        let before = ids.len();
        ids.dedup();
        assert_eq!(before, ids.len(), "duplicate chip ids");
    }

    #[test]
    fn a_chip_with_its_bus_becomes_a_device_and_one_without_is_refused() {
        let c = Chip {
            id: "test-chip".into(),
            soc: "Test".into(),
            kind: DeviceKind::Phone,
            os: Os::Android,
            year: None,
            ram_gb_options: vec![12, 16],
            mem_type: "LPDDR5X".into(),
            bus_width_bits: Some(64),
            data_rate_mtps: Some(8533.0),
            peak_gbps: None,
            clusters: clusters_of("t", 2, "1x3.30:cortex-x4;5x3.15:cortex-a720;2x2.27:cortex-a520").unwrap(),
            gpu_name: "Adreno".into(),
            gpu_family: "adreno".into(),
            gpu_fp16_tflops: None,
            npu_name: String::new(),
            npu_int8_tops: None,
            source: "s".into(),
        };
        let d = c.device(None).unwrap();
        d.validate().unwrap();
        // 64-bit LPDDR5X-8533: 64 / 8 × 8533 / 1000 = 68.26 GB/s.
        assert!((d.memory.peak_gbps() - 68.264).abs() < 1e-3, "{}", d.memory.peak_gbps());
        // No RAM named: the largest the chip ships with.
        assert_eq!((d.name.as_str(), d.memory.ram_bytes), ("test-chip-16gb", 16 << 30));
        assert_eq!(d.clusters[0].simd_pipes, 4);
        assert_eq!(d.total_cores(), 8);
        assert_eq!(d.accelerators.gpu_vendor, Some(GpuVendor::Qualcomm));
        assert!(d.memory.achievable_fraction.is_none() && d.sheet.is_some());
        // A sheet that gives the memory type only: the bus its kind's sheets publish, listed
        // as assumed, the band widened by their spread.
        let none = Chip { bus_width_bits: None, data_rate_mtps: None, ..c.clone() };
        let d = none.device(Some(8)).unwrap();
        let bus = assumed_bus_of(DeviceKind::Phone, "LPDDR5X").unwrap();
        assert_eq!(bus.width_bits, 64, "phone sheets publish 64-bit buses");
        assert!((d.memory.peak_gbps() - 64.0 / 8.0 * bus.rate_mtps / 1000.0).abs() < 1e-9);
        assert!(d.sources["memory.data_rate_mtps"].starts_with(memwall_spec::device::ASSUMED));
        let [lo, hi] = d.memory.peak_range.unwrap();
        assert!(lo <= 1.0 && hi >= 1.0 && lo > 0.3 && hi < 3.0, "[{lo}, {hi}]");
        assert!(c.device(Some(8)).unwrap().memory.peak_range.is_none());
        let untyped = Chip { mem_type: "HBM9".into(), kind: DeviceKind::Phone, ..none };
        assert!(untyped.device(Some(8)).is_err() || untyped.device(Some(8)).unwrap().memory.peak_range.is_some());
        // A cluster without a clock: the median its core runs at on the other sheets, listed;
        // a core no sheet clocks, the chip's fastest clock times the sheets' small-core ratio,
        // below its other clusters (which stay its big cores), listed; a chip that clocks none
        // of its cores is refused.
        let no_clock = Chip { clusters: clusters_of("t", 2, "2x:cortex-a520").unwrap(), ..c.clone() };
        let d = no_clock.device(Some(8)).unwrap();
        assert_eq!(Some(d.clusters[0].max_ghz), assumed_clock_ghz("cortex-a520"));
        assert!(d.sources["clusters.max_ghz"].starts_with(memwall_spec::device::ASSUMED));
        let unclocked = Chip {
            clusters: clusters_of("t", 2, "2x3.1:cortex-x4;4x2.4:cortex-a720;4x:no-such-core").unwrap(),
            ..c.clone()
        };
        let d = unclocked.device(Some(8)).unwrap();
        let r = small_core_clock_ratio();
        assert!(r > 0.4 && r < 0.8, "{r}");
        let g = d.clusters.iter().find(|k| k.name.contains("no-such-core")).unwrap().max_ghz;
        assert_eq!(g, (3.1 * r * 100.0).round() / 100.0);
        assert!(g < 2.4 && d.big_cores() == 6, "{g} GHz, {} big cores", d.big_cores());
        let listed = format!("4 no-such-core at {g} GHz (no sheet publishes");
        assert!(d.sources["clusters.max_ghz"].contains(&listed), "{:?}", d.sources);
        let unknown = Chip { clusters: clusters_of("t", 2, "2x:no-such-core").unwrap(), ..c };
        assert!(unknown.device(Some(8)).unwrap_err().to_string().contains("cpu_clusters[0]"));
    }

    #[test]
    fn names_resolve_case_and_punctuation_blind() {
        let (c, ram) = lookup("raspberry-pi-5-8gb").or_else(|| lookup("Raspberry Pi 5 8GB")).unwrap();
        assert!(c.id.starts_with("raspberry-pi-5"), "{}", c.id);
        assert_eq!(ram, Some(8));
        assert!(lookup("no such phone 3000").is_none());
    }

    #[test]
    fn a_bad_cell_is_refused_naming_file_row_column_and_value() {
        let row = |cells: &str| format!("{CHIP_COLUMNS}\n{cells}\n");
        let ok = "x,X,phone,android,2024,8,LPDDR5,64,6400,,1x3.0:cortex-x4,g,adreno,,,,,src";
        assert!(parse_chips("t.csv", &row(ok)).is_ok());
        let e = parse_chips("t.csv", &row(&ok.replace("phone", "toaster"))).unwrap_err();
        assert!(e.contains("t.csv row 2") && e.contains("kind") && e.contains("toaster"), "{e}");
        let e = parse_chips("t.csv", &row(&ok.replace(",6400,", ",fast,"))).unwrap_err();
        assert!(e.contains("data_rate_mtps") && e.contains("fast"), "{e}");
        let e = parse_chips("t.csv", &row(&ok.replace("1x3.0:cortex-x4", "3.0:cortex-x4"))).unwrap_err();
        assert!(e.contains("cpu_clusters"), "{e}");
        let e = parse_chips("t.csv", &row(&ok.replace(",6400,", ",-5,"))).unwrap_err();
        assert!(e.contains("positive"), "{e}");
    }
}

#[cfg(test)]
mod loading {
    use crate::load_device;

    #[test]
    fn a_name_loads_the_preset_that_describes_it_or_the_sheet_device() {
        // Galaxy S23: Snapdragon 8 Gen 2 with 8 GB, which a preset describes.
        let d = load_device("Galaxy S23").unwrap();
        assert_eq!((d.name.as_str(), d.sheet.as_deref()), ("snapdragon-8-gen2-8gb", None));
        // A Framework Desktop is no preset: its chip's sheet with the name's RAM.
        let d = load_device("framework desktop 128gb").unwrap();
        assert_eq!(d.name, "amd-ryzen-ai-max-plus-395-128gb");
        assert_eq!(d.sheet.as_deref(), Some("amd-ryzen-ai-max-plus-395"));
        assert_eq!(d.memory.ram_bytes, 128 << 30);
        // 256-bit LPDDR5X-8000: 256 / 8 × 8000 / 1000 = 256 GB/s.
        assert!((d.memory.peak_gbps() - 256.0).abs() < 1e-9, "{}", d.memory.peak_gbps());
        // The chip id with a RAM size works too; an unknown name lists the presets.
        assert_eq!(load_device("amd-ryzen-ai-max-plus-395-64gb").unwrap().memory.ram_bytes, 64 << 30);
        assert!(load_device("no-such-phone-9000").is_err());
    }
}
