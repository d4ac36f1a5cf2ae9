//! The compute unit a design runs on, resolved once: the device's figures for that unit
//! (its share of DRAM bandwidth, its throughput, its power), the engine's costs there
//! ([`memwall_spec::UnitCosts`]) with the cost model's overrides applied, and the class
//! defaults a design may assume explicitly (`assume_defaults`), each listed in
//! [`UnitModel::assumed`]. No unit borrows another unit's numbers: a GPU without a bandwidth
//! figure is refused (or assumed), never given the CPU's.

use memwall_spec::{Backend, DeviceKind, Scenario, SpecError, UnitCosts};

use crate::SimError;

/// The class defaults of a unit's figures ([`memwall_spec::class`]), under their old path.
pub use memwall_spec::class as defaults;

/// Everything the cost plan needs about the unit a design runs on.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitModel {
    /// The unit.
    pub backend: Backend,
    /// DRAM bandwidth the design streams at, GB/s: `peak × min(unit fraction × engine share,
    /// 1)` (before the CPU's per-core bound).
    pub dram_gbps: f64,
    /// CPU: read bandwidth one core pulls for the engine, GB/s (`per_core_gbps × engine
    /// share`, so the share scales both sides of the per-core bound); `None` on accelerators.
    pub per_core_gbps: Option<f64>,
    /// Accelerators: peak multiply-adds per second (`TFLOP/s × 1e12 / 2`).
    pub peak_macs_per_s: Option<f64>,
    /// Accelerators: power at full load, W: the device's figure, or the class default when
    /// assumed; `None` on the CPU (whose power comes from its clusters) and on a unit whose
    /// device states none.
    pub power_w: Option<f64>,
    /// The engine's costs on the unit, with the cost model's overrides applied.
    pub costs: UnitCosts,
    /// Device figures taken from class defaults (`accelerators.gpu_bandwidth_fraction`, …).
    pub assumed: Vec<&'static str>,
    /// The device's `memory.peak_range` (its bus assumed), by which the band widens.
    pub peak_range: Option<[f64; 2]>,
}

impl UnitModel {
    /// The engine's 80 % band of measured ÷ predicted that fits this device: the band of
    /// devices from their spec sheets (`error_ratio`) when a figure the unit's speed rests on
    /// is assumed (a bandwidth share, the per-core bandwidth, the unit's peak arithmetic),
    /// else the narrower band of devices that state their figures (`error_ratio_stated`,
    /// where the engine has one). A power figure assumed moves energy, not speed.
    pub fn error_ratio(&self) -> Option<[f64; 2]> {
        let speed_assumed = self.assumed.iter().any(|f| !f.ends_with("_power_w") && *f != "memory.ram_bytes");
        let band = if speed_assumed {
            self.costs.error_ratio
        } else {
            self.costs.error_ratio_stated.or(self.costs.error_ratio)
        };
        // An assumed bus: the band widens by how far the published buses spread.
        match (band, self.peak_range) {
            (Some([lo, hi]), Some([plo, phi])) => Some([lo * plo, hi * phi]),
            _ => band,
        }
    }

    /// The engine's 80 % band of measured ÷ predicted prompt rates
    /// (`UnitCosts::prefill_error_ratio`), or `None` when the unit's peak arithmetic (what a
    /// prompt is bound by) is a class default: those are orders of magnitude only, so no
    /// checked band applies.
    pub fn prefill_error_ratio(&self) -> Option<[f64; 2]> {
        let peak_assumed = self.assumed.iter().any(|f| f.ends_with("_tflops") || f.ends_with("_tops"));
        if peak_assumed { None } else { self.costs.prefill_error_ratio }
    }
}

fn missing(field: &str, device: &str, unit: &str) -> SimError {
    SimError::Spec(SpecError::invalid(
        format!("device.{field}"),
        "missing",
        format!(
            "device `{device}` states no {field} for its {unit}; add it (with its source) or pass --assume-defaults \
             (`assume_defaults = true`) to use the class default, labelled as such in the results"
        ),
    ))
}

/// A device figure for the unit: stated, or the class default when `assume` allows it.
fn figure(
    stated: Option<f64>,
    default: f64,
    field: &'static str,
    (s, unit): (&Scenario, Backend),
    assumed: &mut Vec<&'static str>,
) -> Result<f64, SimError> {
    match stated {
        Some(v) => Ok(v),
        None if s.takes_defaults() => {
            assumed.push(field);
            Ok(default)
        }
        None => Err(missing(field, &s.device.name, unit.name())),
    }
}

/// A device figure the unit may lack without refusing every design: stated, the class
/// default when `assume_defaults` allows it (listed), else `None` (for a unit's power: the
/// estimate leaves its dynamic power out, and the thermal simulator refuses the design,
/// [`require_power`]).
fn optional(
    stated: Option<f64>,
    default: f64,
    field: &'static str,
    s: &Scenario,
    assumed: &mut Vec<&'static str>,
) -> Option<f64> {
    stated.or_else(|| {
        s.takes_defaults().then(|| {
            assumed.push(field);
            default
        })
    })
}

/// The GPU power a device that states none is assumed to draw, at the clock it runs: the
/// default at its stated clock ([`defaults::gpu_power_w`]: by its GPU's size on Apple GPUs, by
/// class otherwise) times its power mode's share ([`memwall_spec::DeviceSpec::gpu_power_share`]).
fn gpu_power_default(d: &memwall_spec::DeviceSpec) -> f64 {
    defaults::gpu_power_w(d.kind, d.accelerators.gpu_vendor, d.accelerators.gpu_fp16_tflops) * d.gpu_power_share()
}

/// Refuse a unit without a power figure where power drives the result (a thermal
/// simulation): heated at 0 W it would never throttle. The error names the field and the
/// class default `--assume-defaults` would use.
pub fn require_power(s: &Scenario, unit: &UnitModel) -> Result<(), SimError> {
    let (field, default) = match unit.backend {
        Backend::Cpu => return Ok(()),
        Backend::Gpu => ("accelerators.gpu_power_w", gpu_power_default(&s.device)),
        Backend::Npu => ("accelerators.npu_power_w", defaults::npu_power_w(s.device.kind)),
    };
    if unit.power_w.is_some() {
        return Ok(());
    }
    Err(SimError::Spec(SpecError::invalid(
        format!("device.{field}"),
        "missing",
        format!(
            "device `{}` states no power for its {}, so a thermal simulation would heat it with 0 W and never \
             throttle; add the figure (with its source), pass --assume-defaults (`assume_defaults = true`) to use the \
             class default of {default} W, labelled in the results, or disable sim.thermal",
            s.device.name,
            unit.backend.name()
        ),
    )))
}

/// Resolve the unit `s` runs on (the scenario must be valid).
pub fn resolve(s: &Scenario) -> Result<UnitModel, SimError> {
    resolve_on(s, s.workload.backend)
}

/// [`resolve`] with `backend` in place of the workload's.
pub fn resolve_on(s: &Scenario, backend: Backend) -> Result<UnitModel, SimError> {
    let d = &s.device;
    let c = &s.cost;
    let mut costs = s
        .engine
        .unit(backend)
        .ok_or_else(|| {
            SpecError::invalid(
                "workload.backend",
                backend.name(),
                format!("engine `{}` does not run on the {}", s.engine.name, backend.name()),
            )
        })?
        .clone();
    // The cost model's overrides win over the engine's figures.
    let accel = backend != Backend::Cpu;
    let over = |o: Option<f64>, v: &mut f64| {
        if let Some(o) = o {
            *v = o;
        }
    };
    over(if accel { c.accel_efficiency } else { c.arith_efficiency_decode }, &mut costs.compute_efficiency);
    over(if accel { c.accel_efficiency } else { c.arith_efficiency_prefill }, &mut costs.prefill_efficiency);
    over(c.per_op_overhead_s, &mut costs.per_op_s);
    over(c.per_thread_sync_s, &mut costs.per_thread_sync_s);
    over(c.per_token_overhead_s, &mut costs.per_token_s);
    over(c.attention_kv_reads, &mut costs.attention_kv_reads);

    let mem = &d.memory;
    let a = &d.accelerators;
    let kind: Option<DeviceKind> = d.kind;
    let mut assumed = Vec::new();
    for field in ["memory.ram_bytes", "memory.channels", "memory.data_rate_mtps", "clusters.max_ghz"] {
        if d.sources.get(field).is_some_and(|v| v.starts_with(memwall_spec::device::ASSUMED)) {
            assumed.push(field);
        }
    }
    let (stated, default, field) = d.bandwidth_fraction(backend);
    let f = figure(stated, default, field, (s, backend), &mut assumed)?;
    let (per_core_gbps, peak_macs_per_s, power_w) = match backend {
        Backend::Cpu => {
            let family = defaults::cpu_defaults(defaults::CpuFamily::of(kind, d.os()));
            let g =
                figure(mem.per_core_gbps, family.per_core_gbps, "memory.per_core_gbps", (s, backend), &mut assumed)?;
            (Some(g), None, None)
        }
        Backend::Gpu => {
            let t = figure(
                d.gpu_fp16_tflops_at_clock(),
                defaults::gpu_fp16_tflops(kind) * a.gpu_clock_fraction.unwrap_or(1.0),
                "accelerators.gpu_fp16_tflops",
                (s, backend),
                &mut assumed,
            )?;
            let p = optional(
                a.gpu_power_w.map(|w| w * d.gpu_power_share()),
                gpu_power_default(d),
                "accelerators.gpu_power_w",
                s,
                &mut assumed,
            );
            (None, Some(t * 1e12 / 2.0), p)
        }
        Backend::Npu => {
            let t = figure(
                a.npu_int8_tops,
                defaults::npu_int8_tops(kind),
                "accelerators.npu_int8_tops",
                (s, backend),
                &mut assumed,
            )?;
            let p = optional(a.npu_power_w, defaults::npu_power_w(kind), "accelerators.npu_power_w", s, &mut assumed);
            (None, Some(t * 1e12 / 2.0), p)
        }
    };
    let fraction = c.bandwidth_fraction.unwrap_or(f);
    let share = costs.bandwidth_share;
    Ok(UnitModel {
        backend,
        // An engine may stream faster than the device's (copy-measured) figure, never past
        // the peak.
        dram_gbps: mem.peak_gbps() * (fraction * share).min(1.0),
        per_core_gbps: per_core_gbps.map(|g| g * share),
        peak_macs_per_s,
        power_w,
        costs,
        assumed,
        peak_range: mem.peak_range,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(assumed: Vec<&'static str>) -> UnitModel {
        let mut costs = memwall_spec::EngineSpec::generic().cpu.unwrap();
        costs.error_ratio = Some([0.6, 1.5]);
        costs.error_ratio_stated = Some([0.8, 1.2]);
        UnitModel {
            backend: Backend::Cpu,
            dram_gbps: 50.0,
            per_core_gbps: Some(10.0),
            peak_macs_per_s: None,
            power_w: None,
            costs,
            assumed,
            peak_range: None,
        }
    }

    #[test]
    fn the_band_widens_when_a_figure_the_speed_rests_on_is_assumed() {
        // Every figure stated: the band of devices that state theirs.
        assert_eq!(model(vec![]).error_ratio(), Some([0.8, 1.2]));
        // Power and RAM move energy and fit, not speed: still the narrow band.
        assert_eq!(model(vec!["accelerators.gpu_power_w", "memory.ram_bytes"]).error_ratio(), Some([0.8, 1.2]));
        // A bandwidth figure assumed: the band of devices from their sheets.
        assert_eq!(model(vec!["memory.achievable_fraction"]).error_ratio(), Some([0.6, 1.5]));
        assert_eq!(model(vec!["accelerators.npu_int8_tops"]).error_ratio(), Some([0.6, 1.5]));
        // An engine without a stated band keeps its one band.
        let mut m = model(vec![]);
        m.costs.error_ratio_stated = None;
        assert_eq!(m.error_ratio(), Some([0.6, 1.5]));
        // An assumed bus widens the band by the published buses' spread: 0.6 × 0.8, 1.5 × 1.25.
        let mut m = model(vec!["memory.data_rate_mtps"]);
        m.peak_range = Some([0.8, 1.25]);
        let [lo, hi] = m.error_ratio().unwrap();
        assert!((lo - 0.48).abs() < 1e-12 && (hi - 1.875).abs() < 1e-12, "[{lo}, {hi}]");
    }
}
