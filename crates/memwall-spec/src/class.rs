//! Every device-class default in one place: what memwall assumes for a device that does not
//! state a figure, by its `kind` (phone, tablet, sbc, module, laptop, desktop) and `cooling`.
//! Each value says where it comes from; a prediction that used one labels it as assumed.
//!
//! - the thermal network of a class ([`thermal_network`]; phones [`generic_phone_network`]),
//!   with the governor ladders and the skin controller's gains;
//! - the compute units' figures: GPU and NPU bandwidth shares, throughput and power.

use crate::device::{Cooling, DeviceKind, GpuVendor, Os};
use crate::thermal::{GovernorSpec, ThermalNode, ThermalSpec, UnitTripOffsets};
use crate::units::GIB;

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

/// The skin temperatures (°C) at which a phone's OS raises its thermal status to LIGHT,
/// MODERATE, SEVERE, CRITICAL, EMERGENCY and SHUTDOWN
/// ([`GovernorSpec::status_skin_c`]): the Pixel 6's thermal HAL on its VIRTUAL-SKIN sensor,
/// `HotThreshold` 39, 43, 45, 47, 52, 55 °C with 1.9 °C hysteresis
/// (GrapheneOS/device_google_raviole `thermal_info_config_oriole.json`; the Pixel 8 Pro's
/// keeps EMERGENCY 52 and SHUTDOWN 55). Its `LimitInfo` forces the GPU and little-CPU
/// cooling states near their floors from CRITICAL on; iPhones publish no thresholds, so the
/// generic phone uses these for every phone.
pub const PHONE_STATUS_SKIN_C: [f64; 6] = [39.0, 43.0, 45.0, 47.0, 52.0, 55.0];

/// How much later a phone's CPU and NPU trip than its GPU, °C
/// ([`GovernorSpec::unit_trip_offset_c`]): the Snapdragon 8 Gen 2's thermal zones throttle the
/// GPU from 85 °C (`gpuss-N` trip0, passive), the CPUs from 90 °C (`cpuN` alert0, passive) and
/// the Hexagon DSP/NPU from 95 °C (`cdspN` junction-config, passive) (torvalds/linux
/// `arch/arm64/boot/dts/qcom/sm8550.dtsi`). The phone networks' trips are fitted on GPU runs,
/// so the CPU's lie 5 °C and the NPU's 10 °C above them.
pub const PHONE_UNIT_TRIP_OFFSET_C: UnitTripOffsets = UnitTripOffsets { cpu: 5.0, gpu: 0.0, npu: 10.0 };

/// How steeply supply voltage falls with clock on a DVFS ladder, as a fraction of the top
/// voltage per fraction of the top clock: 0.52, the median of eight published tables' end
/// points (`(1 − V_min/V_max) / (1 − f_min/f_max)`; `datasets/power_sources.md` §1.1): Apple
/// M1 GPU 396–1278 MHz at 603–931 mV (0.51), M2 GPU 444–1398 MHz at 603–950 mV (0.54), RK3588
/// A76 1.2–2.4 GHz at 675–1000 mV (0.65) and A55 1.008–1.8 GHz at 675–950 mV (0.66), RK3588
/// Mali-G610 300–1000 MHz at 675–850 mV (0.29), MT8195 Mali-G57 390–880 MHz at 625–750 mV
/// (0.30), Dimensity 9300 GPU 260–1612 MHz at 500–1000 mV (0.60), Exynos 2200 Xclipse 920
/// 202–1306 MHz at 500–800 mV (0.44).
pub const DVFS_VOLT_SLOPE: f64 = 0.52;

/// Supply voltage at a clock `f` (fraction of the top clock), as a fraction of the top
/// voltage, on a ladder of no published table: `1 − DVFS_VOLT_SLOPE × (1 − f)`
/// ([`DVFS_VOLT_SLOPE`]); at the phone floor (0.24) 0.605, so the unit's dynamic power
/// `f V²` there is 0.088 of its top power.
pub fn dvfs_volt(f: f64) -> f64 {
    1.0 - DVFS_VOLT_SLOPE * (1.0 - f)
}

/// Dynamic power of a unit at a DVFS level: `P = p_max_w × f × V²`, watts, with `f` and `V`
/// fractions of their top-level values.
pub fn dynamic_power_w(p_max_w: f64, freq_scale: f64, volt_scale: f64) -> f64 {
    p_max_w * freq_scale * volt_scale * volt_scale
}

/// A unit's dynamic power at clock `f` (a fraction of its top clock) on a ladder of no
/// published table, as a share of its power at the top: `f × dvfs_volt(f)²`
/// ([`dynamic_power_w`], [`dvfs_volt`]); at 0.6 of the clock 0.6 × 0.792² = 0.376.
pub fn dvfs_power_share(f: f64) -> f64 {
    dynamic_power_w(1.0, f, dvfs_volt(f))
}

/// Whether a class ladder's memory bandwidth follows its clock levels ([`ladder`]).
#[derive(Clone, Copy, PartialEq)]
enum Memory {
    /// The GPU's and NPU's reach of DRAM falls with their clock level (`mem_steps =
    /// freq_steps`, down to [`PHONE_MEM_FLOOR`]; a CPU's already falls with its clock through
    /// its per-core bandwidth: `mem_steps_accelerators_only`), as a
    /// GPU's does where its DVFS level votes the memory bus's bandwidth: the Snapdragon 8
    /// Gen 2's Adreno 740 votes 16.5 GB/s at 680 MHz, 10.7 at 550 and 6.07 at 475 MHz and
    /// below (`opp-peak-kBps`, torvalds/linux `arch/arm64/boot/dts/qcom/sm8550.dtsi`), and the
    /// fitted Galaxy S25 decodes at the rate of its GPU's clock level. Used for the
    /// integrated-GPU classes (tablets, laptops, desktops), where a throttled GPU is what
    /// runs the model; Apple publishes no such table, so this is assumed for its GPUs.
    FollowsClock,
    /// Memory keeps its clock when the CPU is throttled: the Raspberry Pi firmware steps the
    /// Arm clock (`arm_freq`) alone, and Jetson's thermal throttling caps CPU and GPU clocks,
    /// not the EMC's (its power modes cap the EMC separately).
    Unthrottled,
}

/// A governor with levels `freq` (voltage [`dvfs_volt`], memory per [`Memory`]), trip points
/// from `first_trip_c` every `step_c`, 2 °C hysteresis, a skin limit and a 0.1 s poll.
fn ladder(freq: &[f64], first_trip_c: f64, step_c: f64, skin_limit_c: f64, memory: Memory) -> GovernorSpec {
    GovernorSpec {
        volt_steps: freq.iter().map(|&f| dvfs_volt(f)).collect(),
        mem_steps: match memory {
            Memory::FollowsClock => freq.iter().map(|f| f.max(PHONE_MEM_FLOOR)).collect(),
            Memory::Unthrottled => Vec::new(),
        },
        freq_steps: freq.to_vec(),
        trip_c: (0..freq.len() - 1).map(|i| first_trip_c + step_c * i as f64).collect(),
        hysteresis_c: 2.0,
        skin_limit_c,
        skin_integral_k_s: Some(SKIN_INTEGRAL_K_S),
        skin_gain_levels_per_k: Some(SKIN_GAIN_LEVELS_PER_K),
        poll_s: 0.1,
        critical_c: None,
        status_skin_c: Vec::new(),
        unit_trip_offset_c: UnitTripOffsets::default(),
        power_budget: None,
        power_limit: None,
        mem_steps_accelerators_only: memory == Memory::FollowsClock,
    }
}

/// A generic passively cooled phone for devices without a fitted network: the mean of
/// the two fitted presets (A18 Pro and Snapdragon 8 Elite; `tests/thermal_fit.rs`):
/// die 2 J/K, board 7.4 J/K, skin 135 J/K; 8.6 + 10.7 + 4.1 K/W; DVFS levels from 66.5 °C
/// (the mean of the fits' first trips, 67.4 and 65.5 °C) in 2 °C steps (voltage
/// [`dvfs_volt`]). The fits reach 0.55 of the clock; the deeper levels (0.45 … 0.24) let a
/// unit drawing 10 W or more settle, as phone CPUs do, down to the floor Android reaches on a
/// phone GPU ([`PHONE_GPU_FLOOR`]). The skin is held at 45 °C by an integral controller
/// ([`SKIN_INTEGRAL_K_S`]), so the decline it imposes takes minutes; the OS reports its
/// thermal status from the skin ([`PHONE_STATUS_SKIN_C`]), holds the floor from CRITICAL on
/// and ends the app at SHUTDOWN.
pub fn generic_phone_network() -> ThermalSpec {
    let freq = vec![1.0, 0.85, 0.72, 0.62, 0.55, 0.45, 0.35, 0.28, PHONE_GPU_FLOOR];
    ThermalSpec {
        ambient_c: 25.0,
        nodes: vec![
            ThermalNode { name: "die".into(), capacitance_j_per_k: 2.0, resistance_k_per_w: 8.6 },
            ThermalNode { name: "board".into(), capacitance_j_per_k: 7.4, resistance_k_per_w: 10.7 },
            ThermalNode { name: "skin".into(), capacitance_j_per_k: 135.0, resistance_k_per_w: 4.1 },
        ],
        leakage_per_c: 0.01,
        dram_heat_in_die: 0.5,
        governor: GovernorSpec {
            volt_steps: freq.iter().map(|&f| dvfs_volt(f)).collect(),
            mem_steps: freq.iter().map(|f| f.max(PHONE_MEM_FLOOR)).collect(),
            freq_steps: freq,
            trip_c: vec![66.5, 68.5, 70.5, 72.5, 74.5, 76.5, 78.5, 80.5],
            hysteresis_c: 2.0,
            skin_limit_c: 45.0,
            skin_integral_k_s: Some(SKIN_INTEGRAL_K_S),
            skin_gain_levels_per_k: Some(SKIN_GAIN_LEVELS_PER_K),
            poll_s: 0.1,
            critical_c: None,
            status_skin_c: PHONE_STATUS_SKIN_C.to_vec(),
            unit_trip_offset_c: PHONE_UNIT_TRIP_OFFSET_C,
            power_budget: None,
            power_limit: None,
            mem_steps_accelerators_only: false,
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
            ladder(
                &[1.0, 0.85, 0.72, 0.62, 0.55, 0.45, 0.35, 0.28, PHONE_GPU_FLOOR],
                85.0,
                2.0,
                44.0,
                Memory::FollowsClock,
            ),
            "class estimate (tablet, passive): a 550 J/K body shedding 1.5 K/W to the air and \
             ΣR = 6 K/W, so 10 W settles the die near 85 °C and the skin at 40 °C over ~14 min; an \
             iPad Pro (M2) keeps 68.5 % of its first loop over 20 loops of 3DMark Wild Life Extreme \
             (https://applech2.com/archives/20240515-ipad-pro-m4-thermal-performance.html); not fitted",
        ),
        (Some(Laptop), Passive | Heatsink) => spec(
            vec![node("die", 3.0, 1.0), node("spreader", 40.0, 3.5), node("chassis", 1100.0, 1.9)],
            ladder(&[1.0, 0.9, 0.8, 0.7, 0.62, 0.55, 0.45], 100.0, 2.0, 50.0, Memory::FollowsClock),
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
            ladder(&[1.0, 0.9, 0.8, 0.7, 0.62, 0.55, 0.45], 100.0, 2.0, 60.0, Memory::FollowsClock),
            "class estimate (fan-cooled laptop, MacBook Pro class): ΣR = 2.1 K/W with the fan at \
             speed, so 30 W settles 88 °C, under the 100 °C limit: M3-generation MacBook Pros hold \
             their clocks for over an hour at full CPU load \
             (https://mac4ever.com/mac/180016-test-des-macbook-pro-m3-m3-pro-et-m3-max-temperatures-frequences-et-consommation); \
             not fitted",
        ),
        (Some(Desktop), Passive | Heatsink) => {
            // A desktop without a fan is a board-class SoC in a case: a keyboard computer (the
            // Raspberry Pi 500 is a Pi 5 board under an aluminium plate) or a fanless mini PC.
            let mut t = thermal_network(Some(Sbc), Some(Heatsink));
            t.source = format!("fanless desktop (keyboard computer, fanless mini PC), as {}", t.source);
            t
        }
        (Some(Desktop), Fan) => spec(
            vec![node("die", 8.0, 0.3), node("heatsink", 200.0, 0.3), node("case", 2000.0, 0.2)],
            ladder(&[1.0, 0.9, 0.8, 0.7, 0.6], 95.0, 3.0, 80.0, Memory::FollowsClock),
            "class estimate (desktop): ΣR = 0.8 K/W, so 60 W settles 73 °C; not fitted",
        ),
        (Some(Sbc), Passive) => spec(
            vec![node("die", 2.0, 3.0), node("board", 25.0, 7.0), node("air", 5.0, 3.0)],
            ladder(&[1.0, 0.92, 0.83, 0.75, 0.67, 0.62, 0.42], 80.0, 1.0, 100.0, Memory::Unthrottled),
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
            ladder(&[1.0, 0.92, 0.83, 0.75, 0.67, 0.62, 0.42], 80.0, 1.0, 100.0, Memory::Unthrottled),
            "class estimate (single-board computer in a passive aluminium case): ΣR = 6.5 K/W, so 6 W \
             settles 64 °C over ~10 min, as a Pi 5 in such a case reaches 60–63 °C under stressberry \
             (https://github.com/nschloe/stressberry/issues/138); not fitted",
        ),
        (Some(Sbc), Fan) => spec(
            vec![node("die", 2.0, 3.0), node("heatsink", 20.0, 1.5), node("air", 20.0, 1.0)],
            ladder(&[1.0, 0.92, 0.83, 0.75, 0.67, 0.62, 0.42], 80.0, 1.0, 100.0, Memory::Unthrottled),
            "class estimate (single-board computer with a fan, the Pi 5 Active Cooler class): ΣR = \
             5.5 K/W, so 6 W settles 58 °C within minutes; a Pi 5 with the Active Cooler averages \
             56 °C over a benchmark suite at a steady 2.4 GHz \
             (https://www.phoronix.com/review/raspberry-pi-5-benchmarks/2) and sits near 61 °C under \
             stressberry (https://github.com/nschloe/stressberry/issues/139); not fitted",
        ),
        (Some(Module), Passive | Heatsink) => spec(
            vec![node("die", 5.0, 0.5), node("module", 30.0, 0.3), node("heatsink", 90.0, 5.0)],
            ladder(&[1.0, 0.9, 0.8, 0.7, 0.6, 0.5], 99.0, 2.0, 100.0, Memory::Unthrottled),
            "class estimate (compute module on its heatsink with the fan stopped): ΣR = 5.8 K/W, so \
             15 W settles far above the 99 °C software throttle point (NVIDIA's, as recalled, not \
             verified); not fitted",
        ),
        (Some(Module), Fan) => spec(
            vec![node("die", 5.0, 0.5), node("module", 30.0, 0.3), node("heatsink", 90.0, 1.5)],
            ladder(&[1.0, 0.9, 0.8, 0.7, 0.6, 0.5], 99.0, 2.0, 100.0, Memory::Unthrottled),
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

/// Share of peak DRAM bandwidth an integrated GPU's streaming reads reach where its vendor
/// has no default of its own ([`gpu_bandwidth_fraction`]): 0.7, the middle of the 0.55–0.78
/// that llama.cpp's Metal decode reaches on Apple M-series GPUs (F16 and Q8_0 7B rows of
/// llama.cpp discussion #4167) and of Adreno/Mali streaming benchmarks (0.6–0.8).
pub const GPU_BANDWIDTH_FRACTION: f64 = 0.7;

/// The GPU bandwidth share a device of `vendor` takes when it states none: Apple 0.776, the
/// median of the ten Apple presets' figures (M2/M3 base to Ultra from llama.cpp Metal rows,
/// A17 Pro and A18 Pro); every other vendor [`GPU_BANDWIDTH_FRACTION`] (no preset of theirs
/// states a measured share). `memwall-catalog`'s tests recompute the medians from the presets.
pub fn gpu_bandwidth_fraction(vendor: Option<GpuVendor>) -> f64 {
    match vendor {
        Some(GpuVendor::Apple) => 0.776,
        _ => GPU_BANDWIDTH_FRACTION,
    }
}

/// The CPU families whose bandwidth figures a device may leave out, each with defaults from
/// the presets of that family ([`cpu_defaults`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CpuFamily {
    /// iPhones and iPads (Apple A-series big cores).
    ApplePhone,
    /// Macs (Apple M-series).
    AppleMac,
    /// Android phones and tablets (Arm Cortex-X/A7xx and Oryon big cores).
    AndroidPhone,
    /// Single-board computers and modules (Cortex-A7x boards, Jetson).
    Board,
    /// Laptops and desktops that are not Macs (x86, Snapdragon X): no preset of theirs yet.
    Other,
}

impl CpuFamily {
    /// Every family, in table order.
    pub const ALL: [CpuFamily; 5] =
        [CpuFamily::ApplePhone, CpuFamily::AppleMac, CpuFamily::AndroidPhone, CpuFamily::Board, CpuFamily::Other];

    /// The family of a device of `kind` running `os`.
    pub fn of(kind: Option<DeviceKind>, os: Os) -> CpuFamily {
        match (os.is_apple(), kind) {
            (true, Some(DeviceKind::Phone | DeviceKind::Tablet)) => CpuFamily::ApplePhone,
            (true, _) => CpuFamily::AppleMac,
            (false, None | Some(DeviceKind::Phone | DeviceKind::Tablet)) => CpuFamily::AndroidPhone,
            (false, Some(DeviceKind::Sbc | DeviceKind::Module)) => CpuFamily::Board,
            (false, Some(DeviceKind::Laptop | DeviceKind::Desktop)) => CpuFamily::Other,
        }
    }

    /// `apple-phone`, `apple-mac`, `android-phone`, `board`, `other`.
    pub fn name(self) -> &'static str {
        match self {
            CpuFamily::ApplePhone => "apple-phone",
            CpuFamily::AppleMac => "apple-mac",
            CpuFamily::AndroidPhone => "android-phone",
            CpuFamily::Board => "board",
            CpuFamily::Other => "other",
        }
    }
}

/// A CPU family's bandwidth figures for a device that states none.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuDefaults {
    /// Share of the peak a CPU streaming read reaches.
    pub achievable_fraction: f64,
    /// Read bandwidth of one big core, GB/s.
    pub per_core_gbps: f64,
    /// Where they come from.
    pub source: &'static str,
}

/// The bandwidth figures of a CPU family: the medians of its presets' sourced figures
/// (`memory.achievable_fraction`, `memory.per_core_gbps`; `memwall-catalog`'s tests recompute
/// them from the presets), and for a family without presets the median over every preset.
pub fn cpu_defaults(f: CpuFamily) -> CpuDefaults {
    let (achievable_fraction, per_core_gbps, source) = match f {
        CpuFamily::ApplePhone => (0.6, 37.5, "median of the 2 Apple phone presets (A17 Pro, A18 Pro)"),
        CpuFamily::AppleMac => (0.44, 60.0, "median of the 8 Mac presets (M2/M3, base to Ultra)"),
        CpuFamily::AndroidPhone => (
            0.6,
            20.0,
            "median of the 9 Android phone presets (Snapdragon 8 Gen 1 to 8 Elite Gen 5, Dimensity 9300, Tensor G3, a midrange LPDDR4X phone)",
        ),
        CpuFamily::Board => (
            0.55,
            10.0,
            "median of the 7 board and module presets (Raspberry Pi 4/5, Orange Pi 5, QCS6490, Jetson Orin Nano)",
        ),
        CpuFamily::Other => {
            (0.57, 25.0, "median over every preset: no laptop or desktop preset outside Apple states its CPU bandwidth")
        }
    };
    CpuDefaults { achievable_fraction, per_core_gbps, source }
}
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

/// Power of an Apple GPU at full clock per FP16 TFLOP/s (the FP32 rate on Apple GPUs), W:
/// 3.4, the median of five measured GPU draws at full load divided by their GPU's peak:
/// M1 Pro 16-core 20.9 W / 5.31 TFLOPS = 3.9 and M1 Max 32-core 42 W / 10.6 = 4.0 (ResNet50
/// training, powermetrics GPU power; github.com/tlkh/tf-metal-experiments README), M2 Max
/// 38-core "maximal 45 Watt" in 3DMark Wild Life Extreme / 13.6 = 3.3 (golem.de, M2 Pro und
/// M2 Max im Vergleich, p. 4), M4 Pro 20-core "about 20 W" at 1578 MHz and 100 % active
/// residency / 8.08 = 2.5 (The Eclectic Light Company's test, relayed at
/// macmegasite.com/?p=118175), M4 Max 40-core "~58–60W" in llama.cpp prefill / 17.2 = 3.4
/// (ggml-org/llama.cpp#22745, Stats.app). The peaks are 128 FP32 ALUs × 2 FLOP × clock per
/// core (github.com/philipturner/metal-benchmarks). A GPU's power grows with its size: a
/// flat class constant (15 W for every laptop) leaves a 40-core Max at a third of its draw.
pub const APPLE_GPU_W_PER_TFLOP: f64 = 3.4;

/// Power of an integrated GPU at full clock, W, for a device that states none: an Apple GPU
/// whose FP16 TFLOP/s the device states draws `tflops ×` [`APPLE_GPU_W_PER_TFLOP`]; any
/// other, by device class: phones 5 (the presets' Adreno 830 at 5 W), tablets 8,
/// single-board computers 2, modules 8 (a Jetson Orin Nano's GPU within its 15–25 W module
/// budget), laptops 15 (the M2 GPU's 15 W limit), desktops 40. No other vendor's GPU
/// publishes both figures often enough for a per-TFLOP figure (phone GPUs draw 7.5–11.5 W
/// of SoC power in GPU benchmarks, but their TFLOP/s are not published).
pub fn gpu_power_w(kind: Option<DeviceKind>, vendor: Option<GpuVendor>, fp16_tflops: Option<f64>) -> f64 {
    if let (Some(GpuVendor::Apple), Some(t)) = (vendor, fp16_tflops) {
        return t * APPLE_GPU_W_PER_TFLOP;
    }
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

/// One row of the published per-class app limits ([`APP_LIMITS`]): on devices running `os`
/// (and of `kind`, where the row names one) with at least `min_ram_gib` GiB of RAM, one app
/// may hold `share` of the RAM.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AppLimitRow {
    /// The operating system.
    pub os: Os,
    /// The device kind the row is for; `None`: every kind the OS has no row of its own for.
    pub kind: Option<DeviceKind>,
    /// The least RAM the row applies to, GiB.
    pub min_ram_gib: u64,
    /// Share of the RAM one app may hold, 0–1.
    pub share: f64,
    /// Where the share comes from.
    pub source: &'static str,
}

/// What one app may hold, by operating system, device kind and RAM: the published limits
/// ([`app_limit_bytes`] applies them). Each is measured with the other apps evicted (the
/// low-memory killer or jetsam removes cached apps before the foreground one), so it is the
/// whole of what the OS, its services and the other apps leave the model's app; stacking an
/// "other apps" figure or a margin on it counts them twice.
pub const APP_LIMITS: &[AppLimitRow] = &[
    AppLimitRow {
        os: Os::Android,
        kind: None,
        min_ram_gib: 0,
        share: 0.6,
        source: "Android: no per-app limit on native memory before Android 17 (getMemoryClass and largeHeap \
                 bound the Java heap only); lmkd kills cached and background apps first, so a foreground app \
                 holds what the kernel, carve-outs and persistent system services leave. Published runs bound \
                 it from below: Llama 3 8B 4-bit on an 8 GB Galaxy S22 in ExecuTorch (7.85 tok/s, \
                 https://github.com/pytorch/executorch/blob/main/examples/models/llama/README.md; 4.7 GB by \
                 memwall's count, 0.55 of the RAM), Llama 3.2 3B BF16 at 7419 MiB RSS on a 16 GB OnePlus 12 \
                 (same README, 0.45); a 12 GB phone shows 6-7 GB available to an LLM app before cached apps \
                 are killed (https://github.com/alibaba/MNN/issues/4435, 0.5-0.58). 0.6: the largest measured \
                 run rounded up; an estimate, not a measured ceiling",
    },
    AppLimitRow {
        os: Os::Ios,
        kind: None,
        min_ram_gib: 0,
        share: 0.75,
        source: "iOS/iPadOS jetsam limit with the com.apple.developer.kernel.increased-memory-limit entitlement \
                 (which LLM apps use): 6 GB of 8 GB on an iPhone 15 Pro (os_proc_available_memory, \
                 https://github.com/introlab/rtabmap/pull/1446, 3 GB without it), ~6 GB (75 %) of 8 GB on \
                 iPadOS 26.0-26.3 (https://developer.apple.com/forums/thread/826325, which also reports 3 GB, \
                 37.5 %, from iPadOS 26.4)",
    },
    AppLimitRow {
        os: Os::Macos,
        kind: None,
        min_ram_gib: 0,
        share: 2.0 / 3.0,
        source: "macOS: Metal's recommendedMaxWorkingSetSize (the iogpu.wired_limit_mb default), 2/3 of the RAM \
                 below 64 GiB: 21845.34 MB on a 32 GB M2 Max (https://github.com/ollama/ollama/issues/434), \
                 ~10.67 GB on a 16 GB M4 (https://github.com/exo-explore/exo/pull/1672); an app on the CPU alone \
                 may hold more (the GPU's limit is taken for both)",
    },
    AppLimitRow {
        os: Os::Macos,
        kind: None,
        min_ram_gib: 64,
        share: 0.75,
        source: "macOS: Metal's recommendedMaxWorkingSetSize, 3/4 of the RAM from 64 GiB (51539.61 MB on a 64 GB \
                 M2 Max in llama.cpp/whisper.cpp logs; '75% of total RAM', \
                 https://github.com/gpustack/gpustack/issues/1375)",
    },
    AppLimitRow {
        os: Os::Macos,
        kind: None,
        min_ram_gib: 128,
        share: 0.84,
        source: "macOS: Metal's recommendedMaxWorkingSetSize on 128 GiB machines, 107.52 GiB (0.84) measured on \
                 two M-series Max machines (https://github.com/antirez/ds4/pull/893)",
    },
    AppLimitRow {
        os: Os::Linux,
        kind: None,
        min_ram_gib: 0,
        share: 0.88,
        source: "Linux boards: no per-app limit; an app holds MemTotal less what the kernel, firmware carve-outs \
                 and the desktop keep: a Pi 500+ (16 GB) reports 16215 MiB and 785 MiB in use two minutes after \
                 boot with the Debian desktop (https://github.com/geerlingguy/sbc-reviews/issues/81), i.e. \
                 ~1.0 GiB; 0.88 leaves that 1 GiB on an 8 GiB board (and more on larger ones)",
    },
    AppLimitRow {
        os: Os::Linux,
        kind: Some(DeviceKind::Module),
        min_ram_gib: 0,
        share: 0.65,
        source: "Linux compute modules (Jetson): JetPack carve-outs, CMA and NvMap reservations leave \
                 'approximately 5.2GB after OS overhead' of an 8 GB Orin Nano \
                 (https://ericxliu.me/posts/benchmarking-llms-on-jetson-orin-nano), 0.61; published runs of \
                 5.1 GB models on it (datasets/device_decode_measurements.csv) put it at 0.6 or more",
    },
    AppLimitRow {
        os: Os::Windows,
        kind: None,
        min_ram_gib: 0,
        share: 0.6,
        source: "Windows: no per-app limit on physical memory; Windows 11 and its services keep 2-4 GB of an \
                 8 GB machine resident (https://windowsforum.com/threads/maximize-performance-understanding-ram-usage-in-windows-11.339807/latest), \
                 leaving 0.5-0.75; 0.6, an estimate",
    },
    // What Windows keeps is an amount, not a share: the same 2-4 GB leaves a larger share of a
    // larger machine. 1 - 4 GiB / RAM at each size, the upper end of that source's range.
    AppLimitRow {
        os: Os::Windows,
        kind: None,
        min_ram_gib: 16,
        share: 0.75,
        source: "Windows: its services keep 2-4 GB resident (https://windowsforum.com/threads/maximize-performance-understanding-ram-usage-in-windows-11.339807/latest), \
                 an amount that does not grow with the RAM: 1 - 4/16 = 0.75 from 16 GiB",
    },
    AppLimitRow {
        os: Os::Windows,
        kind: None,
        min_ram_gib: 32,
        share: 0.875,
        source: "Windows: its services keep 2-4 GB resident (https://windowsforum.com/threads/maximize-performance-understanding-ram-usage-in-windows-11.339807/latest): \
                 1 - 4/32 = 0.875 from 32 GiB",
    },
    AppLimitRow {
        os: Os::Windows,
        kind: None,
        min_ram_gib: 64,
        share: 0.9375,
        source: "Windows: its services keep 2-4 GB resident (https://windowsforum.com/threads/maximize-performance-understanding-ram-usage-in-windows-11.339807/latest): \
                 1 - 4/64 = 0.9375 from 64 GiB",
    },
];

/// The rows of [`APP_LIMITS`] that apply to a device: those of `os` for `kind`, or those of
/// `os` naming no kind when none names it.
fn app_limit_rows(os: Os, kind: Option<DeviceKind>) -> impl Iterator<Item = &'static AppLimitRow> {
    let own = APP_LIMITS.iter().any(|r| r.os == os && kind.is_some() && r.kind == kind);
    APP_LIMITS.iter().filter(move |r| r.os == os && if own { r.kind == kind } else { r.kind.is_none() })
}

/// The row of [`APP_LIMITS`] for a device: of the rows that apply to its OS and kind, the one
/// with the largest `min_ram_gib` not above its RAM.
pub fn app_limit(os: Os, kind: Option<DeviceKind>, ram_bytes: u64) -> &'static AppLimitRow {
    app_limit_rows(os, kind)
        .filter(|r| r.min_ram_gib.saturating_mul(GIB) <= ram_bytes)
        .max_by_key(|r| r.min_ram_gib)
        .expect("every OS has a row from 0 GiB")
}

/// What one app may hold on a device of `ram_bytes`, bytes: `⌊share × ram⌋` with the share of
/// its [`app_limit`] row (an 8 GiB Android phone: ⌊0.6 × 8 589 934 592⌋ = 5 153 960 755 B).
pub fn app_limit_bytes(os: Os, kind: Option<DeviceKind>, ram_bytes: u64) -> u64 {
    (app_limit(os, kind, ram_bytes).share * ram_bytes as f64) as u64
}

/// The least RAM on which one app may hold `need_bytes` under [`app_limit_bytes`], bytes:
/// the smallest over the rows that apply of `max(⌈need / share⌉, min_ram)`. The share grows
/// with the RAM, so a candidate beyond its row's range is matched or beaten by a later row's.
pub fn min_ram_for_app(os: Os, kind: Option<DeviceKind>, need_bytes: u64) -> u64 {
    let mut best = app_limit_rows(os, kind)
        .map(|r| ((need_bytes as f64 / r.share).ceil() as u64).max(r.min_ram_gib.saturating_mul(GIB)))
        .min()
        .expect("every OS has a row");
    // ⌊share × ram⌋ may fall a byte or so short of the need at the candidate: step up.
    while app_limit_bytes(os, kind, best) < need_bytes {
        best += 1;
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An Apple GPU's assumed power follows its size (3.4 W per FP16 TFLOP/s: a 14.13-TFLOP
    /// 40-core M3 Max draws 48.0 W, a 3.58-TFLOP M2 12.2 W); other GPUs, and an Apple GPU of
    /// unstated size, keep their class's figure.
    #[test]
    fn gpu_power_grows_with_an_apple_gpus_size() {
        use crate::device::{DeviceKind::Laptop, GpuVendor};
        let apple = |t| gpu_power_w(Some(Laptop), Some(GpuVendor::Apple), t);
        assert!((apple(Some(14.13)) - 48.042).abs() < 1e-9);
        assert!((apple(Some(3.58)) - 12.172).abs() < 1e-9);
        assert_eq!(apple(None), 15.0);
        assert_eq!(gpu_power_w(Some(Laptop), Some(GpuVendor::Nvidia), Some(14.0)), 15.0);
        assert_eq!(gpu_power_w(None, None, None), 5.0);
    }

    const GIB8: u64 = 8 * GIB;

    /// The limits by hand: an 8 GiB Android phone ⌊0.6 × 8 589 934 592⌋ = 5 153 960 755 B;
    /// a 16 GiB Mac 2/3 of 17 179 869 184 = 11 453 246 122 B (Metal's 11453.25 MB); a 64 GiB
    /// Mac 3/4 of 68 719 476 736 = 51 539 607 552 B (Metal's 51539.61 MB); a 128 GiB Mac
    /// ⌊0.84 × 137 438 953 472⌋ = 115 448 720 916 B.
    #[test]
    fn app_limits_by_hand() {
        assert_eq!(app_limit_bytes(Os::Android, Some(DeviceKind::Phone), GIB8), 5_153_960_755);
        assert_eq!(app_limit_bytes(Os::Macos, Some(DeviceKind::Laptop), 16 * GIB), 11_453_246_122);
        assert_eq!(app_limit_bytes(Os::Macos, Some(DeviceKind::Laptop), 64 * GIB), 51_539_607_552);
        assert_eq!(app_limit_bytes(Os::Macos, None, 128 * GIB), 115_448_720_916);
        // One byte below a row's least RAM the row before applies.
        assert_eq!(app_limit(Os::Macos, None, 64 * GIB - 1).min_ram_gib, 0);
        // A kind with a row of its own takes it; others of the OS take the rows naming none.
        assert_eq!(app_limit(Os::Linux, Some(DeviceKind::Module), GIB8).share, 0.65);
        assert_eq!(app_limit(Os::Linux, Some(DeviceKind::Sbc), GIB8).share, 0.88);
        assert_eq!(app_limit(Os::Linux, None, GIB8).share, 0.88);
        // Windows keeps an amount (4 GiB, the top of its range), not a share: 0.6 of an 8 GiB
        // machine; on 128 GiB the 64 GiB row's 1 - 4/64: 0.9375 × 137 438 953 472 =
        // 128 849 018 880 B (120 GiB).
        assert_eq!(app_limit_bytes(Os::Windows, Some(DeviceKind::Laptop), GIB8), 5_153_960_755);
        assert_eq!(app_limit_bytes(Os::Windows, Some(DeviceKind::Desktop), 128 * GIB), 128_849_018_880);
        assert_eq!(app_limit(Os::Windows, None, 32 * GIB).share, 0.875);
    }

    /// Every OS has a row from 0 GiB, every share is a fraction, every row cites a source,
    /// and within an OS and kind the share does not fall as the RAM grows (which
    /// [`min_ram_for_app`] relies on).
    #[test]
    fn the_table_is_complete_and_sourced() {
        for os in [Os::Android, Os::Ios, Os::Macos, Os::Linux, Os::Windows] {
            assert!(APP_LIMITS.iter().any(|r| r.os == os && r.min_ram_gib == 0 && r.kind.is_none()), "{os:?}");
        }
        for r in APP_LIMITS {
            assert!(r.share > 0.0 && r.share < 1.0 && r.source.contains("http"), "{r:?}");
            for q in APP_LIMITS.iter().filter(|q| q.os == r.os && q.kind == r.kind && q.min_ram_gib > r.min_ram_gib) {
                assert!(q.share >= r.share, "{q:?} after {r:?}");
            }
        }
    }

    /// The least RAM: an Android app needing 6 GB needs ⌈6e9 / 0.6⌉ = 10 GB; a Mac app needing
    /// 45 GB needs 67.5 GB at 2/3, below 64 GiB (68.72 GB), so 67.5 GB; one needing 46 GB would
    /// need 69 GB at 2/3, past 64 GiB, where 3/4 holds it (61.3 GB < 64 GiB): 64 GiB exactly.
    /// At the answer the limit holds the need and one byte less does not.
    #[test]
    fn min_ram_for_app_by_hand() {
        let r = min_ram_for_app(Os::Android, None, 6_000_000_000);
        assert!(r.abs_diff(10_000_000_000) <= 2, "{r}");
        assert!(min_ram_for_app(Os::Macos, None, 45_000_000_000).abs_diff(67_500_000_000) <= 2);
        assert_eq!(min_ram_for_app(Os::Macos, None, 46_000_000_000), 64 * GIB);
        for (os, need) in [(Os::Android, 6_000_000_000), (Os::Macos, 45_000_000_000), (Os::Macos, 100_000_000_000)] {
            let r = min_ram_for_app(os, None, need);
            assert!(app_limit_bytes(os, None, r) >= need && app_limit_bytes(os, None, r - 1) < need, "{os:?} {need}");
        }
    }
}
