//! Long steps under the governor. A step longer than the poll interval (a 512-token prefill
//! of a dense 35B on a phone CPU lasts minutes) is re-timed whenever the governor changes the
//! clock, so it runs as slices at the clock of their own moment; once the deepest DVFS level
//! cannot hold the die below its critical temperature, idle injection takes over. The die
//! therefore stays within a stated bound of the critical temperature, and a long prefill on a
//! hot phone takes longer than at nominal clocks.

use memwall::lab::presets::DEVICES;
use memwall::lab::{load_device, load_model};
use memwall::sim::des::{Phase, TraceRow, VecSink, simulate};
use memwall::spec::{Backend, KvQuant, Scenario, SimConfig, ThermalSpec, ThermalStatus, WeightQuant, Workload};

/// How far above its critical temperature (the highest trip point + 20 °C unless the
/// governor states one) the die may go: the heat of one poll interval at full power before
/// the governor reacts (10 W for 0.1 s into a 2 J/K die is 0.5 °C), plus the polls of idle
/// injection it takes to bring a big cluster's power down.
const OVERSHOOT_C: f64 = 2.0;

fn scenario(model: &str, device: &str, mix: &str, prompt: u64, generated: u64, ubatch: u64) -> Scenario {
    let mut sim = SimConfig::effects_off();
    sim.thermal.enabled = true;
    Scenario {
        model: load_model(model).unwrap(),
        device: load_device(device).unwrap(),
        weights: WeightQuant::new(mix.parse().unwrap()),
        kv: KvQuant::default(),
        workload: Workload {
            prompt_tokens: prompt,
            gen_tokens: generated,
            context_tokens: 4096,
            ubatch,
            ..Workload::default()
        },
        cost: Default::default(),
        engine: Default::default(),
        assume_defaults: false,
        sim,
    }
}

/// The network a device is simulated on: its own, or its class's.
fn network(s: &Scenario) -> ThermalSpec {
    s.device.thermal.clone().unwrap_or_else(|| ThermalSpec::for_class(s.device.kind, s.device.cooling))
}

#[test]
fn the_die_never_passes_its_critical_temperature_by_more_than_the_stated_overshoot() {
    let workloads = [
        // (model, mix, prompt, generated, ubatch, backend)
        ("hypothetical-35b-dense", "F16", 512, 4, 512, Backend::Cpu),
        ("hypothetical-35b-dense", "Q4_K_M", 512, 4, 512, Backend::Cpu),
        ("llama-3.1-8b", "Q4_K_M", 2048, 200, 512, Backend::Cpu),
        ("llama-3.2-3b", "Q8_0", 4000, 4, 4096, Backend::Cpu),
        ("hypothetical-35b-moe", "Q3_K_M", 512, 400, 512, Backend::Cpu),
        ("llama-3.2-3b", "Q4_K_M", 2048, 1500, 512, Backend::Gpu),
    ];
    let (mut checked, mut refused, mut throttled, mut injected) = (0, 0, 0, 0);
    let mut worst = f64::NEG_INFINITY;
    for (device, _) in DEVICES {
        for &(model, mix, prompt, generated, ubatch, backend) in &workloads {
            let mut s = scenario(model, device, mix, prompt, generated, ubatch);
            if backend == Backend::Gpu && s.device.accelerators.gpu_fp16_tflops.is_none() {
                continue;
            }
            s.workload.backend = backend;
            // A GPU without a power figure runs on its class's (labelled) default.
            s.assume_defaults = backend == Backend::Gpu;
            // The trips of the unit that runs (a phone's CPU and NPU trip later than its GPU).
            let governor = network(&s).governor.for_unit(backend);
            let critical = governor.critical_c().unwrap();
            let mut sink = VecSink::default();
            let r = match simulate(&s, &mut sink) {
                Ok(r) => r,
                Err(e) => {
                    // Only a network that cannot hold even the idle die is refused.
                    let msg = e.to_string();
                    assert!(msg.contains("power.static_w") && msg.contains("no governor can hold it"), "{msg}");
                    refused += 1;
                    continue;
                }
            };
            assert!(
                r.max_die_c <= critical + OVERSHOOT_C,
                "{model} {mix} on {device}: die reached {:.1} °C, critical {critical} °C",
                r.max_die_c
            );
            let top = *governor.trip_c.last().unwrap();
            worst = worst.max(r.max_die_c - top);
            checked += 1;
            throttled += r.throttle_onset_s.is_some() as usize;
            injected += sink.rows.iter().any(|row| row.events.contains("idle injection")) as usize;
        }
    }
    println!(
        "{checked} runs, {throttled} throttled, {injected} with idle injection, {refused} refused; worst die above the highest trip: {worst:.1} °C"
    );
    assert!(checked >= 40, "{checked} runs checked");
    assert!(throttled >= 25, "most of these workloads throttle: {throttled}");
    assert!(injected >= 1, "some need idle injection beyond the deepest level: {injected}");
    // Every device runs on a network that holds its idle die: laptops, desktops, boards and
    // modules on their class networks, not a phone's.
    assert_eq!(refused, 0, "{refused} refused");
}

#[test]
fn a_long_prefill_on_a_throttling_phone_takes_longer_than_at_nominal_clocks() {
    let s = scenario("hypothetical-35b-dense", "snapdragon-8-gen3-16gb", "F16", 512, 1, 512);
    let mut nominal = s.clone();
    nominal.sim.thermal.enabled = false;
    let mut sink = VecSink::default();
    let hot = simulate(&s, &mut sink).unwrap();
    let cold = simulate(&nominal, &mut VecSink::default()).unwrap();
    let (hot_ttft, cold_ttft) = (hot.ttft_s.unwrap(), cold.ttft_s.unwrap());
    assert!(hot_ttft > 1.5 * cold_ttft, "TTFT {hot_ttft} s hot vs {cold_ttft} s nominal");
    // One prefill chunk, one row: its clock is the time mean over its slices, well below 1.
    let prefill: Vec<_> = sink.rows.iter().filter(|r| r.phase == Phase::Prefill).collect();
    assert_eq!(prefill.len(), 1);
    assert!(prefill[0].freq_scale < 0.8, "mean clock {}", prefill[0].freq_scale);
    assert!(prefill[0].latency_s > 100.0);
    let critical = network(&s).governor.critical_c().unwrap();
    assert!(hot.max_die_c <= critical + OVERSHOOT_C, "{}", hot.max_die_c);
}

/// A hand-checkable slice: the governor halves the clock at its first poll, 0.1 s into a
/// prefill chunk that takes `D₁` at full clock and `D½` at half clock. The
/// work done by the poll is `0.1 / D₁`; the rest takes `(1 − 0.1 / D₁) D½`.
#[test]
fn a_step_interrupted_by_the_governor_finishes_its_work_at_the_new_clock() {
    let base = scenario("llama-3.1-8b", "snapdragon-8-gen3-16gb", "Q4_K_M", 512, 1, 512);
    // Level 1 above 60 °C, left only below −40 °C; level 2 (and idle injection) out of reach.
    let ttft = |freq: [f64; 2], start_c: f64| {
        let mut s = base.clone();
        let mut net = network(&s);
        net.governor.freq_steps = vec![freq[0], freq[1], freq[1]];
        net.governor.volt_steps = vec![1.0; 3];
        net.governor.mem_steps = vec![1.0; 3];
        net.governor.trip_c = vec![60.0, 500.0];
        net.governor.critical_c = Some(600.0);
        net.governor.hysteresis_c = 100.0;
        net.governor.skin_limit_c = 1000.0;
        // No OS statuses, and the trips as written for the CPU.
        net.governor.status_skin_c.clear();
        net.governor.unit_trip_offset_c = Default::default();
        net.governor.poll_s = 0.1;
        s.sim.thermal.spec = Some(net);
        s.sim.thermal.start_c = Some(start_c);
        simulate(&s, &mut VecSink::default()).unwrap().ttft_s.expect("the prefill finished")
    };
    // Levels of equal clocks: full and half clock throughout.
    let d1 = ttft([1.0, 1.0], 30.0);
    let d_half = ttft([0.5, 0.5], 30.0);
    assert!(d_half > 1.1 * d1 && d1 > 1.0, "{d1} {d_half}");
    // Starting above the trip: full clock for 0.1 s, then half.
    let sliced = ttft([1.0, 0.5], 90.0);
    let want = 0.1 + (1.0 - 0.1 / d1) * d_half;
    assert!((sliced - want).abs() < 1e-9 * want, "{sliced} vs {want}");
}

#[test]
fn a_laptop_runs_on_its_class_network_which_a_phone_network_could_not_hold() {
    // The M2 Max laptop (3 W static) on the fan-cooled laptop network: a small model decodes at
    // full clock.
    let s = scenario("llama-3.2-1b", "apple-m2-max-32gb", "Q4_K_M", 16, 400, 512);
    let r = simulate(&s, &mut VecSink::default()).unwrap();
    assert_eq!(r.throttle_onset_s, None, "die {:.1} °C", r.max_die_c);
    // Called a phone, it would get the phone network, whose ΣR its static power runs away on:
    // refused, naming the network and the figure.
    let mut phone = s.clone();
    phone.device.kind = Some(memwall::spec::DeviceKind::Phone);
    let msg = simulate(&phone, &mut VecSink::default()).unwrap_err().to_string();
    assert!(msg.contains("`power.static_w` = 3"), "{msg}");
    assert!(msg.contains("class network"), "{msg}");
    // With thermal off (or a network of its own) it runs.
    let mut off = phone.clone();
    off.sim.thermal.enabled = false;
    simulate(&off, &mut VecSink::default()).unwrap();
}

#[test]
fn a_gpu_without_a_power_figure_is_refused_or_given_its_labelled_class_default() {
    // The Snapdragon 8 Gen 3 preset states no GPU power: heated with 0 W it would never
    // throttle, so a thermal simulation refuses it and names the field.
    let mut s = scenario("llama-3.2-3b", "snapdragon-8-gen3-16gb", "Q4_K_M", 64, 64, 512);
    s.workload.backend = Backend::Gpu;
    assert!(s.device.accelerators.gpu_power_w.is_none());
    let msg = simulate(&s, &mut VecSink::default()).unwrap_err().to_string();
    assert!(msg.contains("device.accelerators.gpu_power_w") && msg.contains("0 W"), "{msg}");
    // With --assume-defaults it draws the phone class's 5 W, and the estimate says so.
    s.assume_defaults = true;
    let r = simulate(&s, &mut VecSink::default()).unwrap();
    let e = memwall::sim::estimate(&s).unwrap();
    assert!(e.assumed.contains("gpu_power_w"), "{}", e.assumed);
    // The unit's 5 W (at full clock) heats the die: energy per token exceeds what static and
    // DRAM power alone would give.
    let mut cold = s.clone();
    cold.device.accelerators.gpu_power_w = Some(1e-9);
    let r0 = simulate(&cold, &mut VecSink::default()).unwrap();
    let (j, j0) = (r.j_per_token.unwrap(), r0.j_per_token.unwrap());
    assert!(j > j0 + 0.01, "{j} vs {j0}");
}

#[test]
fn a_phone_too_hot_to_hold_ends_the_app_and_the_summary_says_when() {
    // The generic phone network under a governor with no lower level to go to, and the OS
    // reaching SHUTDOWN at 46 °C skin: the skin climbs over minutes, the run stops there,
    // killed, and says why.
    let mut s = scenario("llama-3.1-8b", "snapdragon-8-gen3-16gb", "Q4_K_M", 64, 1000, 512);
    s.sim.duration_s = Some(3600.0);
    // Chat until the hour is up, each turn in a fresh context.
    s.sim.session.repeat = 0;
    s.sim.session.fresh_context = true;
    let mut net = ThermalSpec::generic_phone();
    net.governor.freq_steps = vec![1.0];
    net.governor.volt_steps = vec![1.0];
    net.governor.mem_steps = vec![1.0];
    net.governor.trip_c = vec![];
    net.governor.skin_limit_c = 45.0;
    net.governor.status_skin_c = vec![40.0, 42.0, 43.0, 44.0, 45.5, 46.0];
    s.sim.thermal.spec = Some(net.clone());
    let mut sink = VecSink::default();
    let r = simulate(&s, &mut sink).unwrap();
    let killed = r.killed_at_s.expect("ended for heat");
    assert!(r.max_skin_c >= 46.0 && killed < 3600.0, "skin {} at {killed} s", r.max_skin_c);
    assert!(r.actions.iter().any(|a| a.to_string().contains("thermal shutdown")), "{:?}", r.actions);
    assert!(sink.rows.last().unwrap().events.contains("thermal shutdown"));
    assert!((r.duration_s - killed).abs() < 1.0);
    assert_eq!(r.max_thermal_status, ThermalStatus::Shutdown);
    let statuses: Vec<String> = sink
        .rows
        .iter()
        .flat_map(|row| {
            row.events.iter().filter(|e| e.to_string().starts_with("thermal status")).map(|e| e.to_string())
        })
        .collect();
    assert_eq!(
        statuses,
        [
            "none→light",
            "light→moderate",
            "moderate→severe",
            "severe→critical",
            "critical→emergency",
            "emergency→shutdown"
        ]
        .map(|t| format!("thermal status {t}")),
        "the skin climbs through every status once"
    );
    // An app that stops its own work at SEVERE ends earlier, and says so.
    s.sim.thermal.stop_at_status = Some(ThermalStatus::Severe);
    let r = simulate(&s, &mut VecSink::default()).unwrap();
    let stopped = r.killed_at_s.expect("stopped for heat");
    assert!(stopped < killed && (43.0..44.0).contains(&r.max_skin_c), "{stopped} {killed} {}", r.max_skin_c);
    assert!(r.actions.iter().any(|a| a.to_string().contains("stop: thermal status severe")), "{:?}", r.actions);
    // Without a SHUTDOWN threshold the same run goes on to the end.
    s.sim.thermal.stop_at_status = None;
    net.governor.status_skin_c.truncate(5);
    s.sim.thermal.spec = Some(net);
    let r = simulate(&s, &mut VecSink::default()).unwrap();
    assert_eq!(r.killed_at_s, None);
    // A threshold at or below the skin limit is refused, naming it.
    let mut bad = ThermalSpec::generic_phone();
    bad.governor.status_skin_c = vec![39.0, 40.0, 41.0, 42.0, 43.0, 44.0];
    assert!(bad.validate().unwrap_err().to_string().contains("governor.status_skin_c[5]"));
    bad.governor.status_skin_c = vec![39.0, 38.0];
    assert!(bad.validate().unwrap_err().to_string().contains("governor.status_skin_c"));
    // A stop without a thermal simulation is refused, naming the field.
    let mut cold = s.clone();
    cold.sim.thermal.enabled = false;
    cold.sim.thermal.stop_at_status = Some(ThermalStatus::Severe);
    assert!(simulate(&cold, &mut VecSink::default()).unwrap_err().to_string().contains("thermal.stop_at_status"));
    // A stop the network can never reach is refused, naming the field.
    s.sim.thermal.stop_at_status = Some(ThermalStatus::Shutdown);
    let err = simulate(&s, &mut VecSink::default()).unwrap_err().to_string();
    assert!(err.contains("sim.thermal.stop_at_status") && err.contains("up to emergency"), "{err}");
}

#[test]
fn the_trace_and_summary_carry_the_units_power_and_the_engine_scales_it() {
    // At full clock (no thermal model) a decode step's unit power is the CPU clusters' power,
    // 4 threads × the Pi 5's per-core figure, times the step's activity (0.6 waiting on
    // memory to 1 when its arithmetic is busy throughout; near the estimator's, which does
    // not walk the caches); an engine drawing half (`power_scale = 0.5`) halves it, and the
    // summary's decode mean agrees.
    let mut s = scenario("llama-3.2-1b", "raspberry-pi-5-8gb", "Q4_K_M", 16, 32, 512);
    s.sim.thermal.enabled = false;
    s.workload.threads = Some(4);
    let per_core = s.device.clusters[0].power_w_per_core;
    let run = |s: &Scenario| {
        let mut sink = VecSink::default();
        let r = simulate(s, &mut sink).unwrap();
        let decode: Vec<f64> = sink.rows.iter().filter(|x| x.phase == Phase::Decode).map(|x| x.unit_power_w).collect();
        (r, decode)
    };
    let (r, decode) = run(&s);
    assert!(!decode.is_empty());
    // The first decoded token attends over the 16-token prompt.
    let plan = memwall::sim::cost::plan::CostPlan::new(&s).unwrap();
    let first = plan.decode_step(16).1.activity();
    for p in &decode {
        let share = p / (4.0 * per_core);
        assert!((0.6..=1.0).contains(&share) && (share / first - 1.0).abs() < 0.05, "{share} vs {first}");
    }
    let (lo, hi) = decode.iter().fold((f64::MAX, f64::MIN), |a, p| (a.0.min(*p), a.1.max(*p)));
    assert!((lo - 1e-9..=hi + 1e-9).contains(&r.unit_decode_power_w), "{} outside {lo}..{hi}", r.unit_decode_power_w);
    assert_eq!(r.max_level, 0);
    assert!(r.mean_power_w > 0.0 && (r.mean_power_w - r.energy_j / r.duration_s).abs() < 1e-12);
    let mut half = s.clone();
    half.engine.cpu.as_mut().unwrap().power_scale = Some(0.5);
    let full = decode[0];
    let (h, decode) = run(&half);
    assert!((decode[0] - full / 2.0).abs() < 1e-9, "{} vs {full} / 2", decode[0]);
    assert!(h.j_per_token.unwrap() < r.j_per_token.unwrap());
    // Under throttling the level reached is reported.
    let hot = scenario("hypothetical-35b-dense", "snapdragon-8-gen3-16gb", "Q4_K_M", 512, 4, 512);
    let r = simulate(&hot, &mut VecSink::default()).unwrap();
    assert!(r.max_level > 0 && r.throttle_onset_s.is_some());
}

/// The skin controller on a slow skin: a phone whose vapor chamber spreads the die's heat
/// (the generic phone with die→board 0.3 K/W and board→skin 1.5 K/W), so its skin limit binds
/// before the die's trip points, decodes for 30 min. As a trip point (one level per poll
/// above the limit) the skin's minutes-long lag sends the governor through the ladder to its
/// floor in seconds and it keeps hunting; the proportional-integral controller settles at the
/// level that holds the skin at its limit.
#[test]
fn the_skin_controller_holds_the_limit_where_a_skin_trip_point_falls_to_the_floor() {
    let run = |pi: Option<(f64, f64)>| {
        let mut s = scenario("llama-3.1-8b", "snapdragon-8-gen3-16gb", "Q4_K_M", 64, 1000, 512);
        s.sim.duration_s = Some(1800.0);
        s.sim.session.repeat = 0;
        s.sim.session.fresh_context = true;
        let mut net = ThermalSpec::generic_phone();
        net.nodes[0].resistance_k_per_w = 0.3;
        net.nodes[1].resistance_k_per_w = 1.5;
        net.governor.skin_integral_k_s = pi.map(|p| p.0);
        net.governor.skin_gain_levels_per_k = pi.map(|p| p.1);
        // The skin controller alone: the OS's CRITICAL floor would cut the overshoot short
        // (tested on its own, `a_phone_too_hot_to_hold_ends_the_app_and_the_summary_says_when`).
        net.governor.status_skin_c.clear();
        s.sim.thermal.spec = Some(net);
        let mut sink = VecSink::default();
        simulate(&s, &mut sink).unwrap();
        sink.rows
    };
    // (seconds from the first step to the deepest level, the deepest level, level changes,
    // hottest skin, mean skin over the last 5 min, hottest die)
    let shape = |rows: &[memwall::sim::des::TraceRow]| {
        let first = rows.iter().find(|r| r.level > 0).expect("throttled").time_s;
        let deepest = rows.iter().map(|r| r.level).max().unwrap();
        let at_deepest = rows.iter().find(|r| r.level == deepest).unwrap().time_s;
        let changes = rows.windows(2).filter(|w| w[0].level != w[1].level).count();
        let hottest = rows.iter().map(|r| r.skin_c).fold(f64::MIN, f64::max);
        let tail: Vec<f64> = rows.iter().filter(|r| r.time_s > 1500.0).map(|r| r.skin_c).collect();
        let die = rows.iter().map(|r| r.die_c).fold(f64::MIN, f64::max);
        (at_deepest - first, deepest, changes, hottest, tail.iter().sum::<f64>() / tail.len() as f64, die)
    };
    let floor = ThermalSpec::generic_phone().levels() as u32 - 1;
    let pi = (memwall::spec::SKIN_INTEGRAL_K_S, memwall::spec::SKIN_GAIN_LEVELS_PER_K);
    let (decline_s, deepest, changes, hottest, skin, die) = shape(&run(Some(pi)));
    assert!(die < 70.0, "the skin must bind, not the die's first trip point: die {die} °C");
    assert!(decline_s > 120.0, "PI: the decline takes minutes, not {decline_s} s");
    assert!(deepest < floor - 1, "PI: settles above the floor, reached level {deepest} of {floor}");
    assert!(hottest < 51.0 && (skin - 45.0).abs() < 1.0, "PI: skin at most {hottest} °C, {skin} °C at the end");
    let (decline_l, deepest_l, changes_l, _, _, _) = shape(&run(None));
    assert!(deepest_l == floor && decline_l < 5.0, "as a trip point: the floor {decline_l} s after the first step");
    assert!(changes_l > 3 * changes, "hunting: {changes_l} level changes against {changes}");
}

/// Each device class on its class network under the same 30-minute chat (Llama 3.2 3B
/// Q4_K_M, 64-token prompts and 1000-token replies, CPU): burst and sustained decode rate,
/// retained fraction, times to −10 % and −25 %, the deepest level and the mean power, printed
/// as a table (`cargo test --release --test thermal_slices class -- --nocapture`). Asserted:
/// what each class's sources publish about sustained load — a bare Raspberry Pi 5 throttles
/// within minutes and one with the Active Cooler never does; a fan-cooled MacBook Pro and a
/// Jetson on its fan heatsink hold their clocks; a fanless MacBook Air throttles only after
/// minutes and keeps most of its rate. These networks were set from those sources, so this
/// checks the implementation against them; it is not a held-out validation.
#[test]
fn class_networks_behave_as_their_sources_publish() {
    use memwall::spec::{Cooling, DeviceKind};
    let cases: [(&str, &str, Option<DeviceKind>, Option<Cooling>); 10] = [
        ("phone (generic)", "snapdragon-8-gen3-16gb", None, None),
        ("tablet", "apple-m2-16gb", Some(DeviceKind::Tablet), Some(Cooling::Passive)),
        ("fanless laptop", "apple-m2-16gb", None, None),
        ("fan-cooled laptop", "apple-m3-16gb", None, Some(Cooling::Fan)),
        ("desktop", "apple-m2-ultra-192gb", None, None),
        ("SBC, bare", "raspberry-pi-5-8gb", None, Some(Cooling::Passive)),
        ("SBC, aluminium case", "raspberry-pi-5-8gb", None, Some(Cooling::Heatsink)),
        ("SBC, fan", "raspberry-pi-5-16gb", None, None),
        ("module, fan", "jetson-orin-nano-8gb", None, Some(Cooling::Fan)),
        ("module, fan stopped", "jetson-orin-nano-8gb", None, Some(Cooling::Passive)),
    ];
    println!(
        "class | device | burst tok/s | last 60 s tok/s | retained | -10 % / -25 % at, s | deepest level | mean W"
    );
    let mut got = std::collections::HashMap::new();
    for (class, device, kind, cooling) in cases {
        let mut s = scenario("llama-3.2-3b", device, "Q4_K_M", 64, 1000, 512);
        s.device.thermal = None;
        if kind.is_some() {
            s.device.kind = kind;
        }
        if cooling.is_some() {
            s.device.cooling = cooling;
        }
        s.sim.duration_s = Some(1800.0);
        s.sim.session.repeat = 0;
        s.sim.session.fresh_context = true;
        let r = simulate(&s, &mut memwall::sim::des::NullSink).unwrap();
        let retained = r.sustained_tok_s / r.burst_tok_s;
        let t = |x: Option<f64>| x.map_or("never".to_string(), |v| format!("{v:.0}"));
        println!(
            "{class} | {device} | {:.1} | {:.1} | {retained:.2} | {} / {} | {} | {:.1}",
            r.burst_tok_s,
            r.sustained_tok_s,
            t(r.time_to_minus_10pct_s),
            t(r.time_to_minus_25pct_s),
            r.max_level,
            r.mean_power_w
        );
        got.insert(class, r);
    }
    let bare = &got["SBC, bare"];
    assert!(
        bare.throttle_onset_s.is_some_and(|t| (60.0..600.0).contains(&t)),
        "bare Pi 5: {:?}",
        bare.throttle_onset_s
    );
    for class in ["SBC, fan", "fan-cooled laptop", "module, fan", "desktop"] {
        assert_eq!(got[class].throttle_onset_s, None, "{class} holds its clock");
    }
    let air = &got["fanless laptop"];
    assert!(air.throttle_onset_s.is_some_and(|t| t > 120.0), "Air: {:?}", air.throttle_onset_s);
    assert!(air.sustained_tok_s > 0.75 * air.burst_tok_s, "Air keeps most of its rate");
}

/// Where a chat's energy goes: the summary splits it into prefill, decode and the rest (think
/// time here), per reply, and against the battery (5400 mAh at 3.88 V = 75,427 J); each trace
/// row's DRAM power, integrated with the temperatures, is its DRAM bytes × 8 × the preset's
/// pJ/bit over its time.
#[test]
fn the_summary_splits_energy_by_phase_and_the_battery_pays_it() {
    let mut s = scenario("llama-3.2-3b", "snapdragon-8-gen3-16gb", "Q4_K_M", 128, 64, 512);
    s.sim.session.turns = vec![memwall::spec::Turn { prompt_tokens: 128, gen_tokens: 64, think_s: 5.0 }];
    s.sim.session.repeat = 3;
    let mut sink = VecSink::default();
    let r = simulate(&s, &mut sink).unwrap();
    let phase = |p: Phase| sink.rows.iter().filter(|x| x.phase == p).map(|x| x.energy_j).sum::<f64>();
    let (prefill, decode, think) = (phase(Phase::Prefill), phase(Phase::Decode), phase(Phase::Think));
    assert!(prefill > 0.0 && decode > 0.0 && think > 0.0);
    assert!((r.prefill_energy_j - prefill).abs() < 1e-9 * prefill);
    assert!((r.decode_energy_j - decode).abs() < 1e-9 * decode);
    // The rest: the think steps and the gaps between steps (none here, steps chain), so the
    // idle energy is the think rows' energy.
    // (Event times are whole nanoseconds: the chain's rounding leaves gaps of a few ns.)
    assert!((r.idle_energy_j - think).abs() < 1e-6 * think, "{} vs {think}", r.idle_energy_j);
    assert_eq!(r.turns, 3);
    assert!((r.reply_energy_j.unwrap() - (prefill + decode) / 3.0).abs() < 1e-9 * prefill);
    let battery_j = 5400.0 * 3.88 * 3.6;
    assert!((r.battery_pct.unwrap() - 100.0 * r.energy_j / battery_j).abs() < 1e-12);
    let pj = s.device.memory.dram_pj_per_bit;
    for row in sink.rows.iter().filter(|x| x.latency_s > 0.0) {
        let want = row.dram_bytes * 8.0 * pj * 1e-12 / row.latency_s;
        // Integrated over the step's slices (whole-nanosecond event times): to 1e-6.
        assert!((row.dram_power_w - want).abs() <= 1e-6 * want.max(1e-9), "{} vs {want}", row.dram_power_w);
    }
    // A device without a battery reports none.
    let mut board = scenario("llama-3.2-1b", "raspberry-pi-5-8gb", "Q4_K_M", 16, 8, 512);
    board.sim.thermal.enabled = false;
    assert_eq!(simulate(&board, &mut VecSink::default()).unwrap().battery_pct, None);
}

/// A power budget on the die (sustainable 3 W from 40 °C, held at 60 °C) throttles a phone CPU
/// before any trip point would: its steps say so, and once the die passes the control
/// temperature the unit draws no more than the sustainable power.
#[test]
fn a_power_budget_holds_the_unit_near_its_sustainable_power() {
    let mut s = scenario("llama-3.2-3b", "snapdragon-8-gen3-16gb", "Q4_K_M", 64, 1500, 512);
    let mut net = network(&s);
    // The budget's temperatures as written (the phone's CPU would trip 5 °C later).
    net.governor.unit_trip_offset_c = Default::default();
    net.governor.power_budget = Some(memwall::spec::PowerBudgetSpec {
        sensor: memwall::spec::Sensor::Die,
        switch_on_c: 40.0,
        control_c: 60.0,
        sustainable_w: 3.0,
        k_pu_w_per_k: None,
        k_po_w_per_k: None,
        k_i_w_per_k_s: 0.0,
    });
    s.sim.thermal.spec = Some(net);
    let mut sink = VecSink::default();
    let r = simulate(&s, &mut sink).unwrap();
    assert!(sink.rows.iter().any(|x| x.events.contains("(power_budget)")), "the budget acted");
    assert!(r.throttle_onset_s.is_some());
    // Rows decoded with the die above the control temperature: at most the sustainable power
    // (the level is chosen for the work's activity, so within a percent).
    let hot: Vec<f64> =
        sink.rows.iter().filter(|x| x.phase == Phase::Decode && x.die_c > 60.5).map(|x| x.unit_power_w).collect();
    assert!(!hot.is_empty());
    assert!(hot.iter().all(|&p| p <= 3.0 * 1.01), "{:?}", hot.iter().fold(0.0f64, |a, &b| a.max(b)));
}

/// A package power limit (sustained 4 W, burst 12 W, tau 5 s; Intel's PL1 / PL2 / Tau) on a
/// phone CPU whose trip points are out of reach: the run starts unthrottled, the limit acts no
/// sooner than the average could reach 4 W, and from then on the package's mean power (units
/// and static, not DRAM) stays at the sustained limit.
#[test]
fn a_package_power_limit_holds_the_average_at_its_sustained_figure() {
    let mut s = scenario("llama-3.2-3b", "snapdragon-8-gen3-16gb", "Q4_K_M", 64, 1500, 512);
    let mut net = network(&s);
    net.governor.trip_c = (0..net.governor.trip_c.len()).map(|i| 200.0 + i as f64).collect();
    net.governor.critical_c = None;
    net.governor.skin_limit_c = 200.0;
    net.governor.status_skin_c.clear();
    let limit = memwall::spec::PowerLimitSpec { sustained_w: 4.0, burst_w: 12.0, tau_s: 5.0 };
    net.governor.power_limit = Some(limit);
    s.sim.thermal.spec = Some(net);
    let mut sink = VecSink::default();
    let r = simulate(&s, &mut sink).unwrap();
    let first = sink.rows.iter().find(|x| x.events.contains("(power_limit)")).expect("the limit acted");
    // Every step down is the limit's (the die's rule only hands levels back, one per poll).
    for e in sink.rows.iter().flat_map(|x| x.events.iter()) {
        if let memwall::sim::des::SimEvent::Throttle { from, to, by } = e {
            assert!(to < from || *by == memwall::sim::des::ThrottleCause::PowerLimit, "{e}");
        }
    }
    // The package at full clock draws at most `p_max`; from 0, its average reaches 4 W no
    // sooner than −tau ln(1 − 4 / p_max).
    let package = |x: &TraceRow| x.energy_j / x.latency_s - x.dram_power_w;
    let busy: Vec<&TraceRow> = sink.rows.iter().filter(|x| x.latency_s > 0.0).collect();
    let p_max = busy.iter().map(|x| package(x)).fold(0.0f64, f64::max);
    assert!(p_max > 4.0, "the CPU draws more than the sustained limit ({p_max} W)");
    // The average starts at the static power the package idled at (ambient 25 °C).
    let p0 = s.device.power.static_w;
    let earliest = -5.0 * ((p_max - 4.0) / (p_max - p0)).ln();
    assert!(
        first.time_s >= earliest - 0.2,
        "acted at {} s, the average cannot reach 4 W before {earliest} s",
        first.time_s
    );
    assert_eq!(r.throttle_onset_s.map(|t| t >= earliest - 0.2), Some(true));
    // After ten time constants the package's mean power sits at the sustained limit.
    let late: Vec<&&TraceRow> = busy.iter().filter(|x| x.time_s > first.time_s + 50.0).collect();
    assert!(late.len() > 100, "a long run ({} late rows)", late.len());
    let (e, d, t) = late.iter().fold((0.0, 0.0, 0.0), |(e, d, t), x| {
        (e + package(x) * x.latency_s, d + x.dram_power_w * x.latency_s, t + x.latency_s)
    });
    // Within a tenth of the DRAM's power, so the limit leaves the DRAM out.
    let (package_w, dram_w) = (e / t, d / t);
    assert!(dram_w > 0.3, "the DRAM draws {dram_w} W");
    assert!((package_w - 4.0).abs() < 0.1 * dram_w, "mean package power {package_w} W against 4 W");
}
