//! Thermal network and governor of a device: a chain of RC nodes from the die outward
//! (die → package/board → skin → ambient), temperature-dependent leakage, and a governor
//! that steps CPU and memory frequency down at trip points and back up with hysteresis.

use serde::{Deserialize, Serialize};

use crate::Backend;
use crate::device::{Cooling, DeviceKind};
use crate::error::{Result, SpecError, fraction, non_negative, positive};

/// One node of the RC chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThermalNode {
    /// Name (`die`, `board`, `skin`).
    pub name: String,
    /// Heat capacity, J/K.
    pub capacitance_j_per_k: f64,
    /// Thermal resistance to the next node outward (the last node: to ambient), K/W.
    pub resistance_k_per_w: f64,
}

/// The governor: DVFS levels and when to move between them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GovernorSpec {
    /// CPU (or accelerator) frequency per level as a fraction of the maximum, level 0 first
    /// (`1.0`), non-increasing.
    pub freq_steps: Vec<f64>,
    /// Supply voltage per level as a fraction of the voltage at level 0 (dynamic power
    /// scales with `f × V²`); same length as `freq_steps`.
    pub volt_steps: Vec<f64>,
    /// Memory bandwidth per level as a fraction of the unthrottled one; same length as
    /// `freq_steps`, or empty to leave memory unthrottled.
    #[serde(default)]
    pub mem_steps: Vec<f64>,
    /// Whether `mem_steps` apply to the GPU and NPU only: a CPU's reach of memory already
    /// falls with its clock through its per-core bandwidth, and a GPU's DVFS level is what
    /// votes the bus's bandwidth (false: every unit, as the fitted phone networks have it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mem_steps_accelerators_only: bool,
    /// Die temperatures (°C), ascending: above `trip_c[i]` the governor goes to level
    /// `i + 1` or deeper. As many as `freq_steps` minus one.
    pub trip_c: Vec<f64>,
    /// A level is left upward only once the die is `hysteresis_c` below its trip point.
    pub hysteresis_c: f64,
    /// Skin temperature limit (°C) the skin controller holds (see `skin_integral_k_s`).
    pub skin_limit_c: f64,
    /// The skin controller's integral constant, K·s per level: with it, the skin is held by a
    /// proportional-integral controller on the skin sensor (as Linux's power allocator and
    /// Android's thermal-engine hold theirs): its integral term gains one level per
    /// `skin_integral_k_s` of accumulated excess `∫ (T_skin − skin_limit_c) dt` and gives one
    /// back for as much deficit. Absent: the skin acts like a trip point, one level deeper at
    /// every poll with the skin above the limit (what the fitted phone networks were fitted
    /// with), which on a skin of minutes' lag falls through the ladder in seconds.
    pub skin_integral_k_s: Option<f64>,
    /// The skin controller's proportional gain, levels per K above the limit (absent: 0; used
    /// only with `skin_integral_k_s`). It damps the integral term on a slow skin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skin_gain_levels_per_k: Option<f64>,
    /// Polling period, seconds.
    pub poll_s: f64,
    /// Die temperature (°C) above which, at the deepest level, the governor injects idle time
    /// (absent: the highest trip point + [`GovernorSpec::CRITICAL_MARGIN_C`]). Must lie above
    /// the highest trip point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critical_c: Option<f64>,
    /// Skin temperatures (°C, ascending) at which the operating system raises its thermal
    /// status ([`ThermalStatus`]) to LIGHT, MODERATE, SEVERE, CRITICAL, EMERGENCY and SHUTDOWN,
    /// as Android's thermal HAL does on its virtual skin sensor; `nan` leaves a status
    /// unreached (as the HAL's own files write it: `[nan, nan, nan, nan, nan, 55.0]` is a
    /// shutdown alone), fewer values leave the higher statuses unreached, none leaves the OS
    /// out. A status falls back once the skin is
    /// `hysteresis_c` below its threshold. From CRITICAL on ("platform has done everything to
    /// reduce power") the governor holds its deepest level, as the HAL's `LimitInfo` forces
    /// the GPU and CPU cooling states there; at SHUTDOWN the OS ends the app (the run stops
    /// there and the summary reports the kill). The SHUTDOWN threshold must lie above
    /// `skin_limit_c`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub status_skin_c: Vec<f64>,
    /// How much later each unit's own sensor trips than `trip_c` (and `critical_c`) say, °C:
    /// a network fitted on GPU runs states the GPU's trips, and a phone's CPU and NPU
    /// junctions trip later ([`crate::class::PHONE_UNIT_TRIP_OFFSET_C`]). Zero for every unit
    /// when absent.
    #[serde(default, skip_serializing_if = "UnitTripOffsets::is_zero")]
    pub unit_trip_offset_c: UnitTripOffsets,
    /// A power-budget controller beside the trip points and the skin controller (Linux's
    /// `power_allocator` governor, which Android's thermal HAL runs as its PID): it grants the
    /// unit a power budget from a temperature and holds the level whose power fits it.
    /// Absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_budget: Option<PowerBudgetSpec>,
    /// A package power limit beside the temperature controllers (Intel's running-average
    /// power limit, PL1 / PL2 / Tau; AMD's PPT): it holds the level whose package power fits
    /// the limit in force, whatever the temperatures. Absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_limit: Option<PowerLimitSpec>,
}

/// A package power limit (`governor.power_limit`), as Intel's running-average power limit
/// enforces one (Intel 64 and IA-32 SDM vol. 3B §15.10, "Platform Specific Power Management
/// Support": `MSR_PKG_POWER_LIMIT`'s Power Limit #1 over its time window, Power Limit #2 over a
/// short one). The package's power `P` (its units' dynamic and static power, not the DRAM's)
/// is averaged with time constant `tau_s`: `dP̄/dt = (P − P̄) / tau_s`. While `P̄ <
/// sustained_w` the package may draw `burst_w`; from then on `sustained_w`. The governor
/// holds the shallowest level whose `P_unit f V² + P_static` fits the limit in force (the
/// deepest when none does: the limit is then exceeded, idle injection answering the die
/// alone). The average starts at the package's static power `P_0` (it idled before the run);
/// at a draw `P` it reaches `sustained_w` after `−tau_s ln((P − sustained_w) / (P − P_0))`:
/// 21.5 s at 28 W against 15 W from 0 W with a Tau of 28 s. A level the limit held is handed
/// back one step per poll. A limit at or under the static power is refused.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PowerLimitSpec {
    /// The limit on the average, W (Intel's PL1, "long duration").
    pub sustained_w: f64,
    /// The limit while the average is under `sustained_w`, W (PL2, "short duration"); at
    /// least `sustained_w`.
    pub burst_w: f64,
    /// The average's time constant, s (PL1's time window, "Tau").
    pub tau_s: f64,
}

impl PowerLimitSpec {
    /// The limit in force with the average at `avg_w`, W.
    pub fn limit_w(&self, avg_w: f64) -> f64 {
        if avg_w < self.sustained_w { self.burst_w } else { self.sustained_w }
    }

    /// The average after `dt_s` seconds at a constant `p_w`, from `avg_w`, W: `p + (avg − p)
    /// e^{−dt/tau}` (the exact solution of `dP̄/dt = (P − P̄) / tau`).
    pub fn average_after(&self, avg_w: f64, p_w: f64, dt_s: f64) -> f64 {
        p_w + (avg_w - p_w) * (-dt_s / self.tau_s).exp()
    }
}

/// Which node a controller reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sensor {
    /// The first node of the chain (the SoC's junction sensors).
    Die,
    /// The last node (a skin or virtual-skin sensor).
    Skin,
}

/// A power-budget controller (`governor.power_budget`), as Linux's `power_allocator`
/// (Documentation/driver-api/thermal/power_allocator.rst) runs it: above `switch_on_c` the
/// budget is `P = sustainable_w + k_p × e + k_i × ∫e dt` with `e = control_c − T` (`k_p` is
/// `k_pu` below the control temperature, `k_po` above it; the integral accumulates only above
/// it), never below 0; the governor then holds the shallowest level whose unit power
/// `P_unit × f × V²` fits the budget. Below `switch_on_c` it grants everything and forgets its
/// integral.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PowerBudgetSpec {
    /// The node it reads.
    pub sensor: Sensor,
    /// Temperature above which it acts (the kernel's "switch on" trip), °C.
    pub switch_on_c: f64,
    /// Temperature it holds (the kernel's "desired temperature"), °C; above `switch_on_c`.
    pub control_c: f64,
    /// Power the device sustains at the control temperature, W.
    pub sustainable_w: f64,
    /// Proportional gain below the control temperature, W/K (absent: the kernel's default
    /// `2 × sustainable_w / (control_c − switch_on_c)`, which takes the budget from three
    /// times the sustainable power at switch-on down to it at the control temperature).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k_pu_w_per_k: Option<f64>,
    /// Proportional gain above the control temperature, W/K (absent: the kernel's default
    /// `sustainable_w / (control_c − switch_on_c)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k_po_w_per_k: Option<f64>,
    /// Integral gain, W per K·s (absent: 0; the kernel's own estimate when unset is 10 mW/K
    /// per sample). The integral accumulates only above the control temperature and only
    /// while `k_i × ∫e dt` stays within the unit's full power (the kernel's anti-windup).
    #[serde(default)]
    pub k_i_w_per_k_s: f64,
}

impl PowerBudgetSpec {
    /// The proportional gains `(k_pu, k_po)`, W/K: the stated ones or the kernel's defaults.
    pub fn gains(&self) -> (f64, f64) {
        let span = self.control_c - self.switch_on_c;
        (
            self.k_pu_w_per_k.unwrap_or(2.0 * self.sustainable_w / span),
            self.k_po_w_per_k.unwrap_or(self.sustainable_w / span),
        )
    }
}

/// Per compute unit, °C ([`GovernorSpec::unit_trip_offset_c`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnitTripOffsets {
    /// The CPU's.
    #[serde(default)]
    pub cpu: f64,
    /// The GPU's.
    #[serde(default)]
    pub gpu: f64,
    /// The NPU's.
    #[serde(default)]
    pub npu: f64,
}

impl UnitTripOffsets {
    /// The offset of `unit`, °C.
    pub fn of(&self, unit: Backend) -> f64 {
        match unit {
            Backend::Cpu => self.cpu,
            Backend::Gpu => self.gpu,
            Backend::Npu => self.npu,
        }
    }

    /// Whether every offset is 0.
    pub fn is_zero(&self) -> bool {
        *self == UnitTripOffsets::default()
    }
}

/// The operating system's thermal status, mildest first: Android's `THERMAL_STATUS_*`
/// (`PowerManager`; iOS's four `ProcessInfo.ThermalState`s are coarser and publish no
/// temperatures).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThermalStatus {
    /// "Not under throttling."
    #[default]
    None,
    /// "Light throttling where UX is not impacted."
    Light,
    /// "Moderate throttling where UX is not largely impacted."
    Moderate,
    /// "Severe throttling where UX is largely impacted."
    Severe,
    /// "Platform has done everything to reduce power."
    Critical,
    /// "Key components in platform are shutting down due to thermal condition."
    Emergency,
    /// "Need shutdown immediately."
    Shutdown,
}

impl ThermalStatus {
    /// Every status, mildest first (index = Android's constant).
    pub const ALL: [ThermalStatus; 7] = [
        ThermalStatus::None,
        ThermalStatus::Light,
        ThermalStatus::Moderate,
        ThermalStatus::Severe,
        ThermalStatus::Critical,
        ThermalStatus::Emergency,
        ThermalStatus::Shutdown,
    ];

    /// The status with Android's constant `i` (0 = NONE … 6 = SHUTDOWN); beyond 6, SHUTDOWN.
    pub fn from_index(i: usize) -> ThermalStatus {
        Self::ALL[i.min(6)]
    }

    /// Android's constant (0 = NONE … 6 = SHUTDOWN).
    pub fn index(self) -> usize {
        self as usize
    }

    /// Lower-case name, as in files and columns (`severe`).
    pub fn name(self) -> &'static str {
        match self {
            ThermalStatus::None => "none",
            ThermalStatus::Light => "light",
            ThermalStatus::Moderate => "moderate",
            ThermalStatus::Severe => "severe",
            ThermalStatus::Critical => "critical",
            ThermalStatus::Emergency => "emergency",
            ThermalStatus::Shutdown => "shutdown",
        }
    }
}

impl std::fmt::Display for ThermalStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl GovernorSpec {
    /// Default distance of the critical temperature above the highest trip point, °C: phone
    /// SoCs trip DVFS at about 75–95 °C and reach their junction limit at about 105–115 °C.
    pub const CRITICAL_MARGIN_C: f64 = 20.0;

    /// The die temperature above which idle injection acts, °C (`critical_c`, or the highest
    /// trip point + [`Self::CRITICAL_MARGIN_C`]; `None` for a governor without trip points).
    pub fn critical_c(&self) -> Option<f64> {
        self.critical_c.or_else(|| self.trip_c.last().map(|t| t + Self::CRITICAL_MARGIN_C))
    }

    /// The governor as `unit`'s sensor runs it: the trip points, the critical temperature and
    /// a die budget's temperatures moved up by the unit's offset
    /// ([`GovernorSpec::unit_trip_offset_c`]), offsets cleared; a CPU's memory steps dropped
    /// where they apply to accelerators only ([`GovernorSpec::mem_steps_accelerators_only`]).
    pub fn for_unit(&self, unit: Backend) -> GovernorSpec {
        let dt = self.unit_trip_offset_c.of(unit);
        // A budget on the die reads the unit's own junction too; one on the skin does not move.
        let power_budget = self.power_budget.map(|b| match b.sensor {
            Sensor::Die => PowerBudgetSpec { switch_on_c: b.switch_on_c + dt, control_c: b.control_c + dt, ..b },
            Sensor::Skin => b,
        });
        GovernorSpec {
            trip_c: self.trip_c.iter().map(|t| t + dt).collect(),
            // A derived critical temperature follows the shifted trips by itself.
            critical_c: self.critical_c.map(|c| c + dt),
            unit_trip_offset_c: UnitTripOffsets::default(),
            mem_steps: if unit == Backend::Cpu && self.mem_steps_accelerators_only {
                Vec::new()
            } else {
                self.mem_steps.clone()
            },
            mem_steps_accelerators_only: false,
            power_budget,
            ..self.clone()
        }
    }

    /// The skin temperature at which the OS ends the app (`status_skin_c[5]`, SHUTDOWN), °C.
    pub fn shutdown_skin_c(&self) -> Option<f64> {
        self.status_skin_c.get(5).copied().filter(|c| !c.is_nan())
    }

    /// The status the OS reports at skin temperature `skin_c`, °C, coming from status `was`:
    /// the highest status whose threshold the skin has reached (`skin_c ≥ status_skin_c[i]`),
    /// or, below `was`, `was` kept while the skin is within `hysteresis_c` of its threshold.
    pub fn status_at(&self, skin_c: f64, was: ThermalStatus) -> ThermalStatus {
        let c = &self.status_skin_c;
        // The highest status whose threshold the skin has reached (NaN: never).
        let reached = c.iter().rposition(|&t| skin_c >= t).map_or(0, |i| i + 1);
        let mut i = reached.max(was.index().min(c.len()));
        // A status is kept while the skin is within the hysteresis of its threshold; one never
        // reached (NaN) is not.
        let keeps = |t: f64| t.is_finite() && skin_c >= t - self.hysteresis_c;
        while i > reached && !keeps(c[i - 1]) {
            i -= 1;
        }
        ThermalStatus::from_index(i)
    }
}

/// Thermal parameters of a device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThermalSpec {
    /// Ambient temperature, °C.
    pub ambient_c: f64,
    /// RC chain from the die (first) to the skin (last).
    pub nodes: Vec<ThermalNode>,
    /// Leakage slope: static power is `static_w × (1 + leakage_per_c × (T_die − 25 °C))`.
    pub leakage_per_c: f64,
    /// Share of DRAM power dissipated in the die node (the rest goes to the next node,
    /// where the LPDDR package sits).
    #[serde(default = "half")]
    pub dram_heat_in_die: f64,
    /// Governor.
    pub governor: GovernorSpec,
    /// How the numbers were obtained (a fit, a datasheet).
    #[serde(default)]
    pub source: String,
}

fn half() -> f64 {
    0.5
}

impl ThermalSpec {
    /// The generic phone network ([`crate::class::generic_phone_network`]).
    pub fn generic_phone() -> Self {
        crate::class::generic_phone_network()
    }

    /// The network of a device class ([`crate::class::thermal_network`]), for a device
    /// without a `[thermal]` table of its own.
    pub fn for_class(kind: Option<DeviceKind>, cooling: Option<Cooling>) -> Self {
        crate::class::thermal_network(kind, cooling)
    }

    /// Number of governor levels.
    pub fn levels(&self) -> usize {
        self.governor.freq_steps.len()
    }

    /// Check the network and governor; errors name the field (`nodes[1].resistance_k_per_w`).
    pub fn validate(&self) -> Result<()> {
        finite("ambient_c", self.ambient_c)?;
        crate::bounds::at_most("ambient_c", self.ambient_c, crate::bounds::MAX_CELSIUS, "°C")?;
        if self.nodes.is_empty() {
            return Err(SpecError::invalid("nodes", "[]", "the RC chain needs at least one node"));
        }
        for (i, n) in self.nodes.iter().enumerate() {
            positive(&format!("nodes[{i}].capacitance_j_per_k"), n.capacitance_j_per_k)?;
            positive(&format!("nodes[{i}].resistance_k_per_w"), n.resistance_k_per_w)?;
        }
        non_negative("leakage_per_c", self.leakage_per_c)?;
        if !(0.0..=1.0).contains(&self.dram_heat_in_die) {
            return Err(SpecError::invalid("dram_heat_in_die", self.dram_heat_in_die, "must lie in [0, 1]"));
        }
        let g = &self.governor;
        let n = g.freq_steps.len();
        if n == 0 {
            return Err(SpecError::invalid("governor.freq_steps", "[]", "needs at least one level"));
        }
        for (name, steps) in [("freq_steps", &g.freq_steps), ("volt_steps", &g.volt_steps), ("mem_steps", &g.mem_steps)]
        {
            if name == "mem_steps" && steps.is_empty() {
                continue;
            }
            if steps.len() != n {
                return Err(SpecError::invalid(
                    format!("governor.{name}"),
                    format!("{} values", steps.len()),
                    format!("needs one value per level ({n})"),
                ));
            }
            for (i, v) in steps.iter().enumerate() {
                fraction(&format!("governor.{name}[{i}]"), *v)?;
            }
        }
        if g.freq_steps.windows(2).any(|w| w[1] > w[0]) {
            return Err(SpecError::invalid(
                "governor.freq_steps",
                format!("{:?}", g.freq_steps),
                "levels must not speed up as they deepen",
            ));
        }
        if g.trip_c.len() + 1 != n {
            return Err(SpecError::invalid(
                "governor.trip_c",
                format!("{} values", g.trip_c.len()),
                format!("needs one trip point per level below the first ({})", n - 1),
            ));
        }
        for (i, t) in g.trip_c.iter().enumerate() {
            finite(&format!("governor.trip_c[{i}]"), *t)?;
        }
        if g.trip_c.windows(2).any(|w| w[1] <= w[0]) {
            return Err(SpecError::invalid("governor.trip_c", format!("{:?}", g.trip_c), "must be strictly ascending"));
        }
        non_negative("governor.hysteresis_c", g.hysteresis_c)?;
        finite("governor.skin_limit_c", g.skin_limit_c)?;
        positive("governor.poll_s", g.poll_s)?;
        if let Some(k) = g.skin_integral_k_s {
            positive("governor.skin_integral_k_s", k)?;
        }
        if let Some(kp) = g.skin_gain_levels_per_k {
            non_negative("governor.skin_gain_levels_per_k", kp)?;
            if g.skin_integral_k_s.is_none() {
                return Err(SpecError::invalid(
                    "governor.skin_gain_levels_per_k",
                    kp,
                    "needs governor.skin_integral_k_s: without it the skin acts as a trip point",
                ));
            }
        }
        for (i, c) in g.status_skin_c.iter().enumerate() {
            if c.is_infinite() {
                return Err(SpecError::invalid(
                    format!("governor.status_skin_c[{i}]"),
                    c,
                    "must be a temperature, or nan for a status never reached",
                ));
            }
        }
        if g.status_skin_c.len() > 6 {
            return Err(SpecError::invalid(
                "governor.status_skin_c",
                format!("{} values", g.status_skin_c.len()),
                "has one threshold per status from LIGHT to SHUTDOWN: at most 6",
            ));
        }
        let stated: Vec<f64> = g.status_skin_c.iter().copied().filter(|c| !c.is_nan()).collect();
        if stated.windows(2).any(|w| w[1] <= w[0]) {
            return Err(SpecError::invalid(
                "governor.status_skin_c",
                format!("{:?}", g.status_skin_c),
                "must be strictly ascending (LIGHT first)",
            ));
        }
        if let Some(c) = g.shutdown_skin_c()
            && c <= g.skin_limit_c
        {
            return Err(SpecError::invalid(
                "governor.status_skin_c[5]",
                c,
                format!(
                    "the SHUTDOWN threshold must lie above the skin limit ({} °C): the governor acts before the OS \
                     ends the app",
                    g.skin_limit_c
                ),
            ));
        }
        for (name, v) in
            [("cpu", g.unit_trip_offset_c.cpu), ("gpu", g.unit_trip_offset_c.gpu), ("npu", g.unit_trip_offset_c.npu)]
        {
            finite(&format!("governor.unit_trip_offset_c.{name}"), v)?;
            if v.abs() > 50.0 {
                return Err(SpecError::invalid(
                    format!("governor.unit_trip_offset_c.{name}"),
                    v,
                    "a unit's trips lie within 50 °C of the network's",
                ));
            }
        }
        if let Some(b) = &g.power_budget {
            finite("governor.power_budget.switch_on_c", b.switch_on_c)?;
            finite("governor.power_budget.control_c", b.control_c)?;
            if b.control_c <= b.switch_on_c {
                return Err(SpecError::invalid(
                    "governor.power_budget.control_c",
                    b.control_c,
                    format!("must lie above switch_on_c ({} °C)", b.switch_on_c),
                ));
            }
            positive("governor.power_budget.sustainable_w", b.sustainable_w)?;
            for (name, v) in [("k_pu_w_per_k", b.k_pu_w_per_k), ("k_po_w_per_k", b.k_po_w_per_k)] {
                if let Some(v) = v {
                    non_negative(&format!("governor.power_budget.{name}"), v)?;
                }
            }
            non_negative("governor.power_budget.k_i_w_per_k_s", b.k_i_w_per_k_s)?;
        }
        if let Some(l) = &g.power_limit {
            positive("governor.power_limit.sustained_w", l.sustained_w)?;
            positive("governor.power_limit.burst_w", l.burst_w)?;
            crate::bounds::at_most("governor.power_limit.burst_w", l.burst_w, crate::bounds::MAX_WATTS, "W")?;
            if l.burst_w < l.sustained_w {
                return Err(SpecError::invalid(
                    "governor.power_limit.burst_w",
                    l.burst_w,
                    format!("must be at least sustained_w ({} W)", l.sustained_w),
                ));
            }
            positive("governor.power_limit.tau_s", l.tau_s)?;
            crate::bounds::at_most("governor.power_limit.tau_s", l.tau_s, crate::bounds::MAX_SECONDS, "s")?;
        }
        if let Some(c) = g.critical_c {
            finite("governor.critical_c", c)?;
            if let Some(&top) = g.trip_c.last()
                && c <= top
            {
                return Err(SpecError::invalid(
                    "governor.critical_c",
                    c,
                    format!("must lie above the highest trip point ({top} °C)"),
                ));
            }
        }
        Ok(())
    }
}

fn finite(field: &str, v: f64) -> Result<()> {
    if v.is_finite() { Ok(()) } else { Err(SpecError::invalid(field, v, "must be a finite number")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_phone_is_valid() {
        ThermalSpec::generic_phone().validate().unwrap();
    }

    #[test]
    fn bad_values_name_their_field() {
        let mut t = ThermalSpec::generic_phone();
        t.nodes[1].resistance_k_per_w = 0.0;
        assert!(t.validate().unwrap_err().to_string().contains("nodes[1].resistance_k_per_w"));
        let mut t = ThermalSpec::generic_phone();
        t.governor.trip_c = vec![80.0, 70.0, 90.0];
        assert!(t.validate().unwrap_err().to_string().contains("governor.trip_c"));
        let mut t = ThermalSpec::generic_phone();
        t.governor.volt_steps.pop();
        assert!(t.validate().unwrap_err().to_string().contains("governor.volt_steps"));
        let mut t = ThermalSpec::generic_phone();
        t.ambient_c = f64::NAN;
        assert!(t.validate().unwrap_err().to_string().contains("ambient_c"));
    }
}
