//! Every device-class default in one place: what memwall assumes for a device that does not
//! state a figure, by its `kind` (phone, tablet, sbc, module, laptop, desktop) and `cooling`.
//! Each value says where it comes from; a prediction that used one labels it as assumed.
//!
//! - the thermal network of a class ([`thermal_network`]; phones [`generic_phone_network`]),
//!   with the governor ladders and the skin controller's gains;
//! - the compute units' figures: GPU and NPU bandwidth shares, throughput and power.

use crate::device::{Cooling, DeviceKind};
use crate::thermal::{GovernorSpec, ThermalNode, ThermalSpec};

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

/// A generic passively cooled phone for devices without a fitted network: the mean of
/// the two fitted presets (A18 Pro and Snapdragon 8 Elite; `tests/thermal_fit.rs`):
/// die 2 J/K, board 9.1 J/K, skin 135 J/K; 6.1 + 9.4 + 4.1 K/W; seven DVFS levels from
/// 70 °C in 2 °C steps (voltage `0.6 + 0.4 f`). The fits reach 0.55 of the clock; the
/// deeper levels (0.45 … 0.24) let a unit drawing 10 W or more settle, as phone CPUs do,
/// down to the floor Android reaches on a phone GPU ([`PHONE_GPU_FLOOR`]). The skin is held
/// at 45 °C by an integral controller ([`SKIN_INTEGRAL_K_S`]), so the decline it imposes
/// takes minutes.
pub fn generic_phone_network() -> ThermalSpec {
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
        source: "generic phone: mean of the fitted A18 Pro and Snapdragon 8 Elite networks (not fitted to this device)"
            .into(),
    }
}

/// The network of a device class, for a device without a `[thermal]` table of its own:
/// `kind` and `cooling` (absent: the class's usual cooling, [`Cooling`]). Phones and
/// devices of no stated kind get [`generic_phone_network`]; the others a three-node
/// chain (die → spreader or heatsink → case or board → ambient) whose resistances set the
/// steady die rise `P × ΣR` and whose outer capacitance the minutes-long approach to it,
/// with their vendors' trip points. Each network's `source` says how its numbers were
/// chosen: class estimates from published sustained-load behaviour, not fits.
pub fn thermal_network(kind: Option<DeviceKind>, cooling: Option<Cooling>) -> ThermalSpec {
    use Cooling::{Fan, Heatsink, Passive};
    use DeviceKind::{Desktop, Laptop, Module, Phone, Sbc, Tablet};
    let cooling = cooling.unwrap_or(match kind {
        Some(Laptop | Desktop | Module) => Fan,
        _ => Passive,
    });
    let node =
        |name: &str, c: f64, r: f64| ThermalNode { name: name.into(), capacitance_j_per_k: c, resistance_k_per_w: r };
    let spec = |nodes: Vec<ThermalNode>, governor: GovernorSpec, source: &str| ThermalSpec {
        ambient_c: 25.0,
        nodes,
        leakage_per_c: 0.01,
        dram_heat_in_die: 0.5,
        governor,
        source: source.into(),
    };
    match (kind, cooling) {
        (None | Some(Phone), _) => generic_phone_network(),
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

// Unit figures a device does not state, used only with `assume_defaults` (and then named in
// the results).

/// Share of peak DRAM bandwidth an integrated GPU's streaming reads reach: 0.7, the
/// middle of the 0.55–0.78 that llama.cpp's Metal decode reaches on Apple M-series GPUs
/// (F16 and Q8_0 7B rows of llama.cpp discussion #4167) and of Adreno/Mali streaming
/// benchmarks (0.6–0.8).
pub const GPU_BANDWIDTH_FRACTION: f64 = 0.7;
/// Share of peak DRAM bandwidth an NPU reaches: 0.5 (Hexagon HTP sessions reach ~0.45
/// of an 8 Elite's peak on Llama 3.2 1B in llama.cpp's Hexagon backend).
pub const NPU_BANDWIDTH_FRACTION: f64 = 0.5;

/// Dense fp16 TFLOP/s of an integrated GPU by device class: phones and tablets 2,
/// single-board computers 0.1, modules 2.5, laptops and desktops 5 (orders of magnitude
/// only: decode rarely binds on it).
pub fn gpu_fp16_tflops(kind: Option<DeviceKind>) -> f64 {
    match kind {
        Some(DeviceKind::Sbc) => 0.1,
        Some(DeviceKind::Module) => 2.5,
        Some(DeviceKind::Laptop | DeviceKind::Desktop) => 5.0,
        _ => 2.0,
    }
}

/// NPU int8 TOP/s by device class: 10 (phones and everything else), 40 on laptops and
/// desktops (Copilot+ class).
pub fn npu_int8_tops(kind: Option<DeviceKind>) -> f64 {
    match kind {
        Some(DeviceKind::Laptop | DeviceKind::Desktop) => 40.0,
        _ => 10.0,
    }
}

/// Power of an integrated GPU at full clock, W, by device class: phones 5 (the presets'
/// Adreno 830 at 5 W and A18 Pro GPU at 6 W), tablets 8, single-board computers 2,
/// modules 8 (a Jetson Orin Nano's GPU within its 15–25 W module budget), laptops 15 (the
/// M2 GPU's 15 W limit), desktops 40.
pub fn gpu_power_w(kind: Option<DeviceKind>) -> f64 {
    match kind {
        Some(DeviceKind::Tablet) => 8.0,
        Some(DeviceKind::Sbc) => 2.0,
        Some(DeviceKind::Module) => 8.0,
        Some(DeviceKind::Laptop) => 15.0,
        Some(DeviceKind::Desktop) => 40.0,
        _ => 5.0,
    }
}

/// Power of an NPU at full load, W, by device class: 2 on phones and tablets (Hexagon-class
/// NPUs run LLM decode at about 1–3 W), 3 on boards and modules (the Hailo-10H's "under
/// 5 W"), 5 on laptops and desktops (Copilot+ NPUs).
pub fn npu_power_w(kind: Option<DeviceKind>) -> f64 {
    match kind {
        Some(DeviceKind::Laptop | DeviceKind::Desktop) => 5.0,
        Some(DeviceKind::Sbc | DeviceKind::Module) => 3.0,
        _ => 2.0,
    }
}
