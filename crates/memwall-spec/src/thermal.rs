//! Thermal network and governor of a device: a chain of RC nodes from the die outward
//! (die → package/board → skin → ambient), temperature-dependent leakage, and a governor
//! that steps CPU and memory frequency down at trip points and back up with hysteresis.

use serde::{Deserialize, Serialize};

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
    /// Skin temperature (°C) at which the operating system ends the app for heat (Android's
    /// `THERMAL_STATUS_SHUTDOWN`, iOS's critical thermal state); the run stops there and the
    /// summary reports the kill. Absent: never. Must lie above `skin_limit_c`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shutdown_skin_c: Option<f64>,
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

/// The class networks' skin controller integral constant, K·s per level
/// ([`GovernorSpec::skin_integral_k_s`]), from a phone's own skin controller: the Pixel 8 Pro
/// thermal HAL holds its virtual skin sensor at 45 °C with a PID whose integral gain is 5 mW
/// per K per 7 s poll (`K_I`, `PassiveDelay` 7000 ms; GrapheneOS/device_google_shusky
/// `thermal/thermal_info_config_husky.json`, VIRTUAL-SKIN-SOC), i.e. 0.71 mW/(K·s); at
/// ~0.6 W a level (a 5 W phone GPU from 1.0 to 0.24 of its clock at `V ∝ 0.6 + 0.4 f` over
/// eight steps) that is 600 / 0.71 ≈ 840 K·s per level.
pub const SKIN_INTEGRAL_K_S: f64 = 840.0;

/// The class networks' skin controller proportional gain, levels per K
/// ([`GovernorSpec::skin_gain_levels_per_k`]): the same controller's `K_Pu` of 300 mW/K at
/// ~0.6 W a level (see [`SKIN_INTEGRAL_K_S`]). With these gains a skin that binds declines
/// over minutes, overshooting its limit by a few kelvin before the integral settles it
/// (`tests/thermal_slices.rs`, the skin controller).
pub const SKIN_GAIN_LEVELS_PER_K: f64 = 0.5;

/// The deepest level of the phone ladders, as a fraction of the maximum clock: the median of
/// the lowest steps of four flagship phone GPUs' DVFS tables — Adreno 740 220 of 719 MHz
/// (0.31; moto-sm8550/android_kernel_motorola_sm8550-devicetrees
/// `gpu/kalama-v2-gpu-pwrlevels.dtsi`), Adreno 750 310 of 903 MHz (0.34;
/// stuffbykoko/kernel_oneplus_sm8650-devicetrees `gpu/pineapple-gpu-pwrlevels.dtsi`), Adreno
/// 830 125 of 1050 MHz (0.12; xiaomi-smxxx0-devs/kernel_xiaomi_sm8750-devicetrees
/// `gpu/sun-gpu-pwrlevels.dtsi`), Mali-G715 150 of 890 MHz (0.17;
/// kerneltoast/android_kernel_google_zuma `dts/zuma-gpu.dtsi`) — where a sustained load on a
/// hot phone can end.
pub const PHONE_GPU_FLOOR: f64 = 0.24;

/// The deepest memory-bandwidth level of the generic phone ladder, as a fraction of the
/// unthrottled bandwidth: the fits follow the clock down to 0.55, and the ladder's old floor
/// (0.35) is kept for memory; no source was found for DRAM throttled further, so the two
/// levels below it slow the unit's clock only.
pub const PHONE_MEM_FLOOR: f64 = 0.35;

/// A governor with levels `freq` (voltage `0.6 + 0.4 f`, memory unthrottled), trip points
/// from `first_trip_c` every `step_c`, 2 °C hysteresis, a skin limit and a 0.1 s poll.
fn ladder(freq: &[f64], first_trip_c: f64, step_c: f64, skin_limit_c: f64) -> GovernorSpec {
    GovernorSpec {
        volt_steps: freq.iter().map(|f| 0.6 + 0.4 * f).collect(),
        mem_steps: Vec::new(),
        freq_steps: freq.to_vec(),
        trip_c: (0..freq.len() - 1).map(|i| first_trip_c + step_c * i as f64).collect(),
        hysteresis_c: 2.0,
        skin_limit_c,
        skin_integral_k_s: Some(SKIN_INTEGRAL_K_S),
        skin_gain_levels_per_k: Some(SKIN_GAIN_LEVELS_PER_K),
        poll_s: 0.1,
        critical_c: None,
        shutdown_skin_c: None,
    }
}

impl ThermalSpec {
    /// A generic passively cooled phone for devices without a fitted network: the mean of
    /// the two fitted presets (A18 Pro and Snapdragon 8 Elite; `tests/thermal_fit.rs`):
    /// die 2 J/K, board 9.1 J/K, skin 135 J/K; 6.1 + 9.4 + 4.1 K/W; seven DVFS levels from
    /// 70 °C in 2 °C steps (voltage `0.6 + 0.4 f`). The fits reach 0.55 of the clock; the
    /// deeper levels (0.45 … 0.24) let a unit drawing 10 W or more settle, as phone CPUs do,
    /// down to the floor Android reaches on a phone GPU ([`PHONE_GPU_FLOOR`]). The skin is held
    /// at 45 °C by an integral controller ([`SKIN_INTEGRAL_K_S`]), so the decline it imposes
    /// takes minutes.
    pub fn generic_phone() -> Self {
        let freq = vec![1.0, 0.85, 0.72, 0.62, 0.55, 0.45, 0.35, 0.28, PHONE_GPU_FLOOR];
        ThermalSpec {
            ambient_c: 25.0,
            nodes: vec![
                ThermalNode { name: "die".into(), capacitance_j_per_k: 2.0, resistance_k_per_w: 6.1 },
                ThermalNode { name: "board".into(), capacitance_j_per_k: 9.1, resistance_k_per_w: 9.4 },
                ThermalNode { name: "skin".into(), capacitance_j_per_k: 135.0, resistance_k_per_w: 4.1 },
            ],
            leakage_per_c: 0.01,
            dram_heat_in_die: 0.5,
            governor: GovernorSpec {
                volt_steps: freq.iter().map(|f| 0.6 + 0.4 * f).collect(),
                mem_steps: freq.iter().map(|f| f.max(PHONE_MEM_FLOOR)).collect(),
                freq_steps: freq,
                trip_c: vec![70.0, 72.0, 74.0, 76.0, 78.0, 80.0, 82.0, 84.0],
                hysteresis_c: 2.0,
                skin_limit_c: 45.0,
                skin_integral_k_s: Some(SKIN_INTEGRAL_K_S),
                skin_gain_levels_per_k: Some(SKIN_GAIN_LEVELS_PER_K),
                poll_s: 0.1,
                critical_c: None,
                shutdown_skin_c: None,
            },
            source:
                "generic phone: mean of the fitted A18 Pro and Snapdragon 8 Elite networks (not fitted to this device)"
                    .into(),
        }
    }

    /// The network of a device class, for a device without a `[thermal]` table of its own:
    /// `kind` and `cooling` (absent: the class's usual cooling, [`Cooling`]). Phones and
    /// devices of no stated kind get [`ThermalSpec::generic_phone`]; the others a three-node
    /// chain (die → spreader or heatsink → case or board → ambient) whose resistances set the
    /// steady die rise `P × ΣR` and whose outer capacitance the minutes-long approach to it,
    /// with their vendors' trip points. Each network's `source` says how its numbers were
    /// chosen: class estimates from published sustained-load behaviour, not fits.
    pub fn for_class(kind: Option<DeviceKind>, cooling: Option<Cooling>) -> Self {
        use Cooling::{Fan, Heatsink, Passive};
        use DeviceKind::{Desktop, Laptop, Module, Phone, Sbc, Tablet};
        let cooling = cooling.unwrap_or(match kind {
            Some(Laptop | Desktop | Module) => Fan,
            _ => Passive,
        });
        let node = |name: &str, c: f64, r: f64| ThermalNode {
            name: name.into(),
            capacitance_j_per_k: c,
            resistance_k_per_w: r,
        };
        let spec = |nodes: Vec<ThermalNode>, governor: GovernorSpec, source: &str| ThermalSpec {
            ambient_c: 25.0,
            nodes,
            leakage_per_c: 0.01,
            dram_heat_in_die: 0.5,
            governor,
            source: source.into(),
        };
        match (kind, cooling) {
            (None | Some(Phone), _) => Self::generic_phone(),
            (Some(Tablet), _) => spec(
                vec![node("die", 3.0, 2.5), node("board", 20.0, 2.0), node("skin", 550.0, 1.5)],
                ladder(&[1.0, 0.85, 0.72, 0.62, 0.55, 0.45, 0.35, 0.28, PHONE_GPU_FLOOR], 85.0, 2.0, 44.0),
                "class estimate (tablet, passive): a 550 J/K body shedding 1.5 K/W to the air and \
                 ΣR = 6 K/W, so 10 W settles the die near 85 °C and the skin at 40 °C over ~14 min; an \
                 iPad Pro (M2) keeps 68.5 % of its first loop over 20 loops of 3DMark Wild Life Extreme \
                 (https://applech2.com/archives/20240515-ipad-pro-m4-thermal-performance.html); not fitted",
            ),
            (Some(Laptop), Passive | Heatsink) => spec(
                vec![node("die", 3.0, 1.0), node("spreader", 40.0, 3.5), node("chassis", 1100.0, 1.9)],
                ladder(&[1.0, 0.9, 0.8, 0.7, 0.62, 0.55, 0.45], 100.0, 2.0, 50.0),
                "class estimate (fanless laptop, MacBook Air class): a 1.1 kg aluminium chassis (1100 J/K) \
                 shedding 1.9 K/W, so 12 W holds it at 46 °C as measured on an M3 Air \
                 (https://technosports.co.in/m3-macbook-air-peaks-at-114c-in-stress-test), ΣR = 6.4 K/W, \
                 trips from 100 °C; a sustained load throttles after minutes and keeps sinking over the \
                 chassis' ~35 min (an M2 Air lost 12 % over 30 min of Cinebench loops, \
                 https://mactechnews.de/news/article/Test-Throttling-des-MacBook-Air-M2-Vergleich-mit-MacBook-Pro-M2-und-Air-M1-180601.html ); \
                 not fitted",
            ),
            (Some(Laptop), Fan) => spec(
                vec![node("die", 5.0, 0.7), node("heatsink", 40.0, 0.8), node("chassis", 1400.0, 0.6)],
                ladder(&[1.0, 0.9, 0.8, 0.7, 0.62, 0.55, 0.45], 100.0, 2.0, 60.0),
                "class estimate (fan-cooled laptop, MacBook Pro class): ΣR = 2.1 K/W with the fan at \
                 speed, so 30 W settles 88 °C, under the 100 °C limit: M3-generation MacBook Pros hold \
                 their clocks for over an hour at full CPU load \
                 (https://mac4ever.com/mac/180016-test-des-macbook-pro-m3-m3-pro-et-m3-max-temperatures-frequences-et-consommation); \
                 not fitted",
            ),
            (Some(Desktop), _) => spec(
                vec![node("die", 8.0, 0.3), node("heatsink", 200.0, 0.3), node("case", 2000.0, 0.2)],
                ladder(&[1.0, 0.9, 0.8, 0.7, 0.6], 95.0, 3.0, 80.0),
                "class estimate (desktop): ΣR = 0.8 K/W, so 60 W settles 73 °C; not fitted",
            ),
            (Some(Sbc), Passive) => spec(
                vec![node("die", 2.0, 3.0), node("board", 25.0, 7.0), node("air", 5.0, 3.0)],
                ladder(&[1.0, 0.92, 0.83, 0.75, 0.67, 0.62, 0.42], 80.0, 1.0, 100.0),
                "class estimate (bare single-board computer, Raspberry Pi 5 class): ΣR = 13 K/W, so 6 W \
                 of SoC load would settle 103 °C and crosses the firmware's 80 °C soft limit after about \
                 4–5 min (a bare Pi 5 averages 81 °C and peaks at 89 °C over a benchmark suite, \
                 https://www.phoronix.com/review/raspberry-pi-5-benchmarks/2); the ladder steps the 2.4 GHz \
                 clock down to 1.5 GHz between 80 and 85 °C as the firmware does \
                 (https://github.com/raspberrypi/documentation, frequency-management.adoc; floor 1.5 GHz \
                 measured in https://github.com/raspberrypi/rpi-eeprom/issues/518), and to 1.0 GHz beyond \
                 (assumed); not fitted",
            ),
            (Some(Sbc), Heatsink) => spec(
                vec![node("die", 2.0, 3.0), node("board", 25.0, 0.5), node("case", 150.0, 3.0)],
                ladder(&[1.0, 0.92, 0.83, 0.75, 0.67, 0.62, 0.42], 80.0, 1.0, 100.0),
                "class estimate (single-board computer in a passive aluminium case): ΣR = 6.5 K/W, so 6 W \
                 settles 64 °C over ~10 min, as a Pi 5 in such a case reaches 60–63 °C under stressberry \
                 (https://github.com/nschloe/stressberry/issues/138); not fitted",
            ),
            (Some(Sbc), Fan) => spec(
                vec![node("die", 2.0, 3.0), node("heatsink", 20.0, 1.5), node("air", 20.0, 1.0)],
                ladder(&[1.0, 0.92, 0.83, 0.75, 0.67, 0.62, 0.42], 80.0, 1.0, 100.0),
                "class estimate (single-board computer with a fan, the Pi 5 Active Cooler class): ΣR = \
                 5.5 K/W, so 6 W settles 58 °C within minutes; a Pi 5 with the Active Cooler averages \
                 56 °C over a benchmark suite at a steady 2.4 GHz \
                 (https://www.phoronix.com/review/raspberry-pi-5-benchmarks/2) and sits near 61 °C under \
                 stressberry (https://github.com/nschloe/stressberry/issues/139); not fitted",
            ),
            (Some(Module), Passive | Heatsink) => spec(
                vec![node("die", 5.0, 0.5), node("module", 30.0, 0.3), node("heatsink", 90.0, 5.0)],
                ladder(&[1.0, 0.9, 0.8, 0.7, 0.6, 0.5], 99.0, 2.0, 100.0),
                "class estimate (compute module on its heatsink with the fan stopped): ΣR = 5.8 K/W, so \
                 15 W settles far above the 99 °C software throttle point (NVIDIA's, as recalled, not \
                 verified); not fitted",
            ),
            (Some(Module), Fan) => spec(
                vec![node("die", 5.0, 0.5), node("module", 30.0, 0.3), node("heatsink", 90.0, 1.5)],
                ladder(&[1.0, 0.9, 0.8, 0.7, 0.6, 0.5], 99.0, 2.0, 100.0),
                "class estimate (compute module with its fan heatsink, Jetson dev-kit class): ΣR = \
                 2.3 K/W, as an Orin Nano Super at 19 W settles 67–68 °C \
                 (https://picocluster-claw.com/reference/benchmarks/) and an Orin NX at 29 W 92 °C \
                 (https://github.com/ARK-Electronics/ark_jetson_kernel/blob/main/docs/power.md), neither \
                 throttling; trips from 99 °C (NVIDIA's software throttle point as recalled, not \
                 verified); not fitted",
            ),
        }
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
        if let Some(c) = g.shutdown_skin_c {
            finite("governor.shutdown_skin_c", c)?;
            if c <= g.skin_limit_c {
                return Err(SpecError::invalid(
                    "governor.shutdown_skin_c",
                    c,
                    format!(
                        "must lie above the skin limit ({} °C): the governor acts before the OS ends the app",
                        g.skin_limit_c
                    ),
                ));
            }
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
