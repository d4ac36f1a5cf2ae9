//! The discrete-event simulator as a user drives it: consistency with the analytic
//! estimator, and each effect (thermal, caches, storage, memory pressure, policies) doing
//! what its physics says.

use memwall::lab::presets::{DEVICES, MODELS};
use memwall::lab::{load_device, load_model};
use memwall::sim::des::{Phase, Simulator, TraceRow, VecSink, simulate};
use memwall::sim::estimate;
use memwall::spec::{
    Backend, BackgroundEvent, CacheMode, KvQuant, PolicySpec, Routing, Scenario, SimConfig, Turn, WeightQuant, Workload,
};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

fn scenario(model: &str, device: &str, mix: &str) -> Scenario {
    Scenario {
        model: load_model(model).unwrap(),
        device: load_device(device).unwrap(),
        weights: WeightQuant::new(mix.parse().unwrap()),
        kv: KvQuant::default(),
        workload: Workload { prompt_tokens: 128, gen_tokens: 64, context_tokens: 4096, ..Workload::default() },
        cost: Default::default(),
        engine: Default::default(),
        assume_defaults: false,
        sim: SimConfig::effects_off(),
    }
}

fn run(s: &Scenario) -> (memwall::sim::des::Summary, Vec<TraceRow>) {
    let mut sink = VecSink::default();
    let summary = simulate(s, &mut sink).unwrap();
    (summary, sink.rows)
}

#[test]
fn with_effects_off_the_simulator_reproduces_the_estimator() {
    let mixes = ["F16", "Q8_0", "Q4_K_M", "Q3_K_S", "Q2_K", "IQ4_XS", "TQ1_0"];
    let kvs = ["f16", "q8_0", "q4_0"];
    let mut rng = StdRng::seed_from_u64(42);
    let mut checked = 0;
    for _ in 0..80 {
        let model = MODELS[rng.random_range(0..MODELS.len())].0;
        let device = DEVICES[rng.random_range(0..DEVICES.len())].0;
        let mut s = scenario(model, device, mixes[rng.random_range(0..mixes.len())]);
        let kv: memwall::spec::QuantFormat = kvs[rng.random_range(0..kvs.len())].parse().unwrap();
        s.kv = KvQuant { k: kv, v: kv };
        s.workload.prompt_tokens = rng.random_range(1..2000);
        s.workload.gen_tokens = rng.random_range(1..300);
        // A conversation's earlier turns in the cache in a third of the designs, history that
        // fills the context (unset) in another, a fresh conversation in the rest.
        let history = match rng.random_range(0..3) {
            0 => Some(rng.random_range(1..6000)),
            1 => None,
            _ => Some(0),
        };
        s.workload.history_tokens = history;
        s.workload.context_tokens =
            history.unwrap_or(0) + s.workload.prompt_tokens + s.workload.gen_tokens + rng.random_range(0..4000);
        s.workload.batch = [1, 1, 2, 4][rng.random_range(0..4)];
        s.workload.ubatch = [64, 512][rng.random_range(0..2)];
        s.workload.routing_skew = [0.0, 0.8][rng.random_range(0..2)];
        if rng.random_range(0..4) == 0 && s.device.accelerators.gpu_fp16_tflops.is_some() {
            s.workload.backend = Backend::Gpu;
        }
        // Designs beyond memory page their weights from flash in both engines: the page cache
        // keeps what is left above the kernel's free-memory floor.
        s.sim.memory.pressure = true;
        if s.validate().is_err() {
            continue;
        }
        let a = estimate(&s).unwrap();
        let (d, rows) = run(&s);
        if d.killed_at_s.is_some() {
            // KV cache and buffers alone exceed the budget: the killer ends the run.
            assert!(!a.fits);
            continue;
        }
        let rel = (d.decode_tok_s.unwrap() - a.decode_tok_s).abs() / a.decode_tok_s;
        assert!(
            rel < 1e-9,
            "{model} on {device}: simulated {} vs estimated {} tok/s",
            d.decode_tok_s.unwrap(),
            a.decode_tok_s
        );
        let rel_j = (d.j_per_token.unwrap() - a.energy_j_per_token).abs() / a.energy_j_per_token;
        assert!(rel_j < 1e-9, "{model} on {device}: {} vs {} J/token", d.j_per_token.unwrap(), a.energy_j_per_token);
        let ttft = (d.ttft_s.unwrap() - a.prefill_s).abs() / a.prefill_s;
        assert!(ttft < 1e-9, "{model} on {device}: prefill {} vs {}", d.ttft_s.unwrap(), a.prefill_s);
        assert_eq!(d.decode_tokens, s.workload.gen_tokens * s.workload.batch as u64);
        assert_eq!(rows.iter().filter(|r| r.phase == Phase::Decode).count() as u64, s.workload.gen_tokens);
        checked += 1;
    }
    assert!(checked >= 60, "only {checked} random scenarios were valid");
}

fn long_phone_run(thermal: bool) -> (memwall::sim::des::Summary, Vec<TraceRow>) {
    let mut s = scenario("llama-3.1-8b", "snapdragon-8-gen3-16gb", "Q4_K_M");
    s.sim = SimConfig::default();
    s.sim.thermal.enabled = thermal;
    s.sim.storage.load = false;
    s.sim.duration_s = Some(600.0);
    s.sim.session.repeat = 0;
    s.sim.session.turns = vec![Turn { prompt_tokens: 128, gen_tokens: 256, think_s: 0.0 }];
    run(&s)
}

#[test]
fn sustained_decoding_heats_the_phone_and_the_governor_throttles() {
    let (hot, rows) = long_phone_run(true);
    let (cool, cool_rows) = long_phone_run(false);
    assert!(hot.throttle_onset_s.is_some(), "no throttling in 10 minutes: max die {:.1} °C", hot.max_die_c);
    assert!(hot.sustained_tok_s < 0.9 * hot.burst_tok_s, "burst {} sustained {}", hot.burst_tok_s, hot.sustained_tok_s);
    // Without the thermal model nothing slows down beyond the context's growth.
    assert!(cool.sustained_tok_s > 0.95 * cool.burst_tok_s);
    // Before anything heats up the physics is the same.
    let first = |rows: &[TraceRow]| rows.iter().find(|r| r.phase == Phase::Decode).unwrap().latency_s;
    assert!((first(&rows) - first(&cool_rows)).abs() < 1e-12);
    assert!(hot.burst_tok_s <= cool.burst_tok_s);
    // Temperatures rise monotonically at first and the trace records throttle events.
    assert!(rows.iter().any(|r| r.events.contains("throttle")));
    assert!(rows.last().unwrap().die_c > rows[0].die_c + 10.0);
    assert!(rows.iter().all(|r| r.skin_c <= r.die_c + 1e-9 || r.phase != Phase::Decode));
}

#[test]
fn same_seed_same_trace() {
    let mut s = scenario("qwen3-30b-a3b", "snapdragon-8-gen3-16gb", "Q4_K_M");
    s.sim = SimConfig { seed: 5, ..SimConfig::default() };
    s.sim.routing = Routing::Sampled { correlation: 0.5 };
    s.sim.storage.expert_cache_bytes = Some(4_000_000_000);
    let (_, a) = run(&s);
    let (_, b) = run(&s);
    assert_eq!(a, b);
    s.sim.seed = 6;
    let (_, c) = run(&s);
    assert_ne!(a, c);
}

#[test]
fn a_model_beyond_memory_pages_weights_from_flash_every_token() {
    // A 32B model at Q4_K_M (~19.9 GB) on a 16 GB phone: the swap cliff.
    let mut s = scenario("qwen2.5-32b", "snapdragon-8-gen3-16gb", "Q4_K_M");
    s.sim = SimConfig {
        thermal: memwall::spec::ThermalSim { enabled: false, ..Default::default() },
        ..SimConfig::default()
    };
    s.sim.storage.load = false;
    let (_, rows) = run(&s);
    let a = estimate(&s).unwrap();
    let decode: Vec<_> = rows.iter().filter(|r| r.phase == Phase::Decode).collect();
    assert!(decode.iter().all(|r| r.flash_bytes > 1e9), "every token reads GBs from flash");
    // Time per token ≥ flash bytes / storage bandwidth.
    let r = decode[10];
    assert!(r.latency_s >= r.flash_bytes / (s.device.storage.read_gbps * 1e9));
    // The estimator applies the same residency rule: storage binds, and reading from flash
    // takes several times what the in-memory part of the token does.
    assert!(!a.fits);
    assert_eq!(a.binding, memwall::sim::Binding::Storage);
    let t = a.decode_terms;
    assert!(t.t_storage > 3.0 * (t.total - t.t_storage), "{t:?}");
    assert!(a.flash_bytes_per_token > 1e9 && a.resident_weight_bytes < a.weight_bytes);
}

#[test]
fn beyond_memory_the_estimator_equals_the_simulator() {
    // Memory pressure on (the page cache keeps what is left above the low-memory killer's
    // threshold), every other effect off: decode, J/token and prefill agree to 1e-9 for
    // designs beyond memory, and the flash bytes per token too.
    let cases = [
        ("qwen2.5-32b", "snapdragon-8-gen3-16gb", "Q4_K_M"),
        ("hypothetical-35b-dense", "snapdragon-8-gen3-16gb", "Q3_K_M"),
        ("llama-3.1-8b", "raspberry-pi-5-8gb", "Q8_0"),
        ("qwen2.5-7b", "midrange-8gb-lpddr4x", "F16"),
        ("mixtral-8x7b", "dimensity-9300-16gb", "Q4_K_M"),
    ];
    for (model, device, mix) in cases {
        let mut s = scenario(model, device, mix);
        s.sim.memory.pressure = true;
        let a = estimate(&s).unwrap();
        assert!(!a.fits && a.flash_bytes_per_token > 0.0, "{model} on {device} should not fit");
        let (d, rows) = run(&s);
        assert!(d.killed_at_s.is_none(), "{model} on {device}: killed");
        let rel = |x: f64, y: f64| (x - y).abs() / y.abs();
        assert!(
            rel(d.decode_tok_s.unwrap(), a.decode_tok_s) < 1e-9,
            "{model}: {} vs {}",
            d.decode_tok_s.unwrap(),
            a.decode_tok_s
        );
        assert!(
            rel(d.j_per_token.unwrap(), a.energy_j_per_token) < 1e-9,
            "{model}: {} vs {}",
            d.j_per_token.unwrap(),
            a.energy_j_per_token
        );
        assert!(
            rel(d.ttft_s.unwrap(), a.prefill_s) < 1e-9,
            "{model}: prefill {} vs {}",
            d.ttft_s.unwrap(),
            a.prefill_s
        );
        let flash: Vec<f64> = rows.iter().filter(|r| r.phase == Phase::Decode).map(|r| r.flash_bytes).collect();
        let mean = flash.iter().sum::<f64>() / flash.len() as f64;
        assert!(rel(mean, a.flash_bytes_per_token) < 1e-9, "{model}: flash {mean} vs {}", a.flash_bytes_per_token);
    }
}

#[test]
fn experts_on_flash_behind_a_dram_cache() {
    let mut s = scenario("qwen3-30b-a3b", "snapdragon-8-gen3-16gb", "Q4_K_M");
    s.sim = SimConfig {
        thermal: memwall::spec::ThermalSim { enabled: false, ..Default::default() },
        ..SimConfig::default()
    };
    s.sim.storage.load = false;
    s.workload.gen_tokens = 200;
    let flash = |cache: u64, skew: f64, corr: f64| {
        let mut s = s.clone();
        s.sim.storage.expert_cache_bytes = Some(cache);
        s.workload.routing_skew = skew;
        s.sim.routing = Routing::Sampled { correlation: corr };
        run(&s).0
    };
    // One token touches 48 layers × 8 experts ≈ 1.1 GB: a cache below that thrashes
    // whatever the routing (LRU's cyclic pathology); above it, routing decides.
    let thrash = flash(1_000_000_000, 1.2, 0.8);
    let small = flash(3_000_000_000, 0.0, 0.0);
    let big = flash(8_000_000_000, 0.0, 0.0);
    let skewed = flash(3_000_000_000, 1.2, 0.0);
    let sticky = flash(3_000_000_000, 0.0, 0.8);
    assert!(thrash.flash_bytes > small.flash_bytes);
    eprintln!(
        "expert flash GB/token: 1 GB cache {:.3}, 3 GB {:.3}, 8 GB {:.3}, skewed {:.3}, correlated {:.3}",
        thrash.flash_bytes / 2e11,
        small.flash_bytes / 2e11,
        big.flash_bytes / 2e11,
        skewed.flash_bytes / 2e11,
        sticky.flash_bytes / 2e11
    );
    assert!(big.flash_bytes < small.flash_bytes, "a bigger cache misses less");
    assert!(skewed.flash_bytes < small.flash_bytes, "skewed routing hits hot experts");
    assert!(sticky.flash_bytes < small.flash_bytes, "correlated routing reuses experts");
    assert!(small.decode_tok_s < big.decode_tok_s);
}

#[test]
fn lru_caches_serve_a_small_model_but_not_a_big_one() {
    let cached = |s: Scenario| {
        let mut s = s;
        s.sim.cache = CacheMode::Lru;
        let (_, rows) = run(&s);
        let d: Vec<_> = rows.iter().filter(|r| r.phase == Phase::Decode).collect();
        d[5..].iter().map(|r| r.cache_bytes / (r.cache_bytes + r.dram_bytes)).sum::<f64>() / (d.len() - 5) as f64
    };
    // A one-layer, 1K-vocabulary model (~17 MB at TQ1_0) fits the M2 Max's 48 MB system
    // cache; an 8B model sweeps every level and gets no reuse.
    let mut tiny = scenario("llama-3.2-1b", "apple-m2-max-32gb", "TQ1_0");
    tiny.model.n_layers = 1;
    tiny.model.vocab = 1024;
    let tiny = cached(tiny);
    let big = cached(scenario("llama-3.1-8b", "apple-m2-max-32gb", "Q4_K_M"));
    assert!(big < 0.02, "an 8B model sweeps the caches: {big}");
    assert!(tiny > 0.8, "a tiny model stays on chip: {tiny}");
}

#[test]
fn an_app_allocation_kills_the_model_unless_a_policy_degrades() {
    // 11.2 GB left for apps; the model holds 4.9 GB of weights and a 4.3 GB KV cache (32K).
    let mut s = scenario("llama-3.1-8b", "snapdragon-8-gen3-16gb", "Q4_K_M");
    s.sim = SimConfig {
        thermal: memwall::spec::ThermalSim { enabled: false, ..Default::default() },
        ..SimConfig::default()
    };
    s.sim.storage.load = false;
    s.workload.context_tokens = 32768;
    s.workload.gen_tokens = 400;
    // A fresh conversation (the cache holds only its own tokens).
    s.workload.history_tokens = Some(0);
    // The camera opens at 5 s and takes 7 GB.
    s.sim.background = vec![BackgroundEvent::Alloc { at_s: 5.0, bytes: 7_000_000_000, duration_s: None }];
    let (killed, rows) = run(&s);
    assert!(killed.killed_at_s.is_some(), "{:?}", killed.actions);
    assert!(killed.decode_tokens < 400);
    assert!(rows.last().unwrap().events.contains("kill"));

    // Dropping the context to 2K frees the KV cache; mapped weights then page partly.
    let mut t = s.clone();
    t.sim.policies = vec![PolicySpec::TruncateContext { keep_tokens: 2048 }];
    let (trunc, rows) = run(&t);
    assert_eq!(trunc.killed_at_s, None, "{:?}", trunc.actions);
    assert_eq!(trunc.decode_tokens, 400);
    assert!(rows.iter().any(|r| r.events.contains("truncate_context")));
    assert!(rows.iter().rev().find(|r| r.phase == Phase::Decode).unwrap().flash_bytes > 0.0);

    // Weights in anonymous memory (a mobile runtime): Q8_0 plus 4K context, then a 2 GB
    // allocation; switching to Q3_K_S avoids the kill at the price of a reload.
    let mut q = s.clone();
    q.weights = WeightQuant::new("Q8_0".parse().unwrap());
    q.workload.context_tokens = 4096;
    q.sim.memory.mmap_weights = false;
    q.sim.background = vec![BackgroundEvent::Alloc { at_s: 5.0, bytes: 2_000_000_000, duration_s: None }];
    let (dead, _) = run(&q);
    assert!(dead.killed_at_s.is_some(), "{:?}", dead.actions);
    q.sim.policies = vec![PolicySpec::SwitchQuant { to: WeightQuant::new("Q3_K_S".parse().unwrap()) }];
    let (switched, rows) = run(&q);
    assert_eq!(switched.killed_at_s, None, "{:?}", switched.actions);
    assert!(rows.iter().any(|r| r.phase == Phase::Reload && r.latency_s > 0.5));
    let before = rows.iter().find(|r| r.phase == Phase::Decode).unwrap().latency_s;
    let after = rows.iter().rev().find(|r| r.phase == Phase::Decode).unwrap().latency_s;
    assert!(after < before, "smaller weights decode faster: {after} vs {before}");
}

#[test]
fn thermal_policies_trade_speed_for_temperature() {
    let base = {
        let mut s = scenario("llama-3.1-8b", "snapdragon-8-gen3-16gb", "Q4_K_M");
        s.sim = SimConfig::default();
        s.sim.storage.load = false;
        s.sim.duration_s = Some(300.0);
        s.sim.session.repeat = 0;
        s.sim.session.turns = vec![Turn { prompt_tokens: 64, gen_tokens: 256, think_s: 0.0 }];
        s
    };
    let (free, _) = run(&base);
    let mut capped = base.clone();
    capped.sim.policies = vec![PolicySpec::CapRate { tok_s: 4.0 }];
    let (cap, rows) = run(&capped);
    let mut paused = base.clone();
    paused.sim.policies = vec![PolicySpec::PauseWhenHot { above_c: 60.0, resume_c: 55.0 }];
    let (pause, prow) = run(&paused);
    // Both draw less power on average, so the skin (the slow node) stays cooler.
    let watts = |s: &memwall::sim::des::Summary| s.energy_j / s.duration_s;
    for (name, p) in [("cap_rate", &cap), ("pause_when_hot", &pause)] {
        assert!(watts(p) < watts(&free), "{name}: {} W vs {} W", watts(p), watts(&free));
        assert!(p.max_skin_c < free.max_skin_c, "{name}: skin {} vs {}", p.max_skin_c, free.max_skin_c);
        assert!(p.decode_tokens < free.decode_tokens);
    }
    assert!(rows.iter().any(|r| r.phase == Phase::Pause));
    assert!(prow.iter().any(|r| r.phase == Phase::Pause));
    // The pause policy starts no token with the die at 60 °C or more (one token then heats
    // it by well under 3 K).
    let hottest = prow.iter().filter(|r| r.phase == Phase::Decode).map(|r| r.die_c).fold(0.0, f64::max);
    assert!(hottest < 63.0, "{hottest}");
    // Over the run the capped decode never beats its cap.
    let decode_time: f64 = rows.iter().filter(|r| r.phase != Phase::Think).map(|r| r.latency_s).sum();
    assert!(cap.decode_tokens as f64 / decode_time <= 4.0 + 1e-6);
}

#[test]
fn bus_masters_take_bandwidth_while_they_run() {
    let mut s = scenario("llama-3.1-8b", "snapdragon-8-gen3-16gb", "Q4_K_M");
    s.workload.gen_tokens = 300;
    s.sim.background = vec![BackgroundEvent::Bandwidth { at_s: 5.0, duration_s: 5.0, share: 0.5 }];
    let (_, rows) = run(&s);
    let d: Vec<_> = rows.iter().filter(|r| r.phase == Phase::Decode).collect();
    let during = d.iter().find(|r| r.time_s > 6.0 && r.time_s < 9.0).unwrap();
    let after = d.iter().find(|r| r.time_s > 11.0).unwrap();
    assert_eq!(during.bandwidth_scale, 0.5);
    assert!(during.latency_s > 1.5 * after.latency_s);
}

#[test]
fn load_time_is_weights_over_storage_bandwidth() {
    let mut s = scenario("llama-3.1-8b", "snapdragon-8-gen3-16gb", "Q4_K_M");
    s.sim.storage.load = true;
    let (d, rows) = run(&s);
    let weights = estimate(&s).unwrap().weight_bytes as f64;
    let expect = weights / (s.device.storage.read_gbps * 1e9);
    assert!((d.load_s - expect).abs() < 1e-9 * expect);
    assert_eq!(rows[0].phase, Phase::Load);
}

#[test]
fn custom_policies_plug_in() {
    /// Rests a quarter second every 10 tokens of context.
    struct Breather {
        last: u64,
    }
    impl memwall::sim::des::Policy for Breather {
        fn name(&self) -> &str {
            "breather"
        }
        fn before_token(&mut self, v: &memwall::sim::des::View) -> Option<f64> {
            let due = v.context.is_multiple_of(10) && v.context != self.last;
            self.last = v.context;
            due.then_some(0.25)
        }
    }
    let s = scenario("llama-3.2-1b", "snapdragon-8-gen3-16gb", "Q4_K_M");
    let mut sim = Simulator::new(&s).unwrap().with_policy(Box::new(Breather { last: 0 }));
    let mut sink = VecSink::default();
    sim.run(&mut sink, &mut |_| {}).unwrap();
    let pauses = sink.rows.iter().filter(|r| r.phase == Phase::Pause).count();
    assert!(pauses >= 5, "{pauses}");
}

#[test]
fn random_scenarios_with_every_effect_on_stay_consistent() {
    // No panics, finite numbers, a trace whose clock never runs backwards, and token counts
    // that agree between the trace and the summary, over random designs and configurations.
    let mixes = ["Q8_0", "Q4_K_M", "Q3_K_S", "Q2_K", "TQ1_0"];
    // Devices the thermal model can describe today: phones, tablets, boards and modules, and
    // any with a network of its own (laptops and desktops wait for their thermal classes).
    let devices: Vec<&str> = DEVICES
        .iter()
        .map(|d| d.0)
        .filter(|name| {
            let d = load_device(name).unwrap();
            d.thermal.is_some()
                || !matches!(d.kind, Some(memwall::spec::DeviceKind::Laptop | memwall::spec::DeviceKind::Desktop))
        })
        .collect();
    let mut rng = StdRng::seed_from_u64(7);
    let mut ran = 0;
    for i in 0..40 {
        let model = MODELS[rng.random_range(0..MODELS.len())].0;
        let device = devices[rng.random_range(0..devices.len())];
        let mut s = scenario(model, device, mixes[rng.random_range(0..mixes.len())]);
        s.workload.context_tokens = [1024, 4096, 16384][rng.random_range(0..3)];
        s.workload.batch = [1, 1, 2][rng.random_range(0..3)];
        s.workload.routing_skew = rng.random_range(0.0..1.5);
        let mut c = SimConfig { seed: i, duration_s: Some(rng.random_range(5.0..90.0)), ..SimConfig::default() };
        c.session.repeat = 0;
        c.session.fresh_context = rng.random_range(0..2) == 0;
        c.session.turns = vec![
            Turn { prompt_tokens: rng.random_range(1..600), gen_tokens: rng.random_range(1..200), think_s: 1.0 },
            Turn { prompt_tokens: rng.random_range(1..100), gen_tokens: rng.random_range(1..100), think_s: 0.0 },
        ];
        c.storage.load = rng.random_range(0..2) == 0;
        c.memory.mmap_weights = rng.random_range(0..2) == 0;
        c.routing = Routing::Sampled { correlation: rng.random_range(0.0..1.0) };
        if s.model.moe.is_some() && rng.random_range(0..2) == 0 {
            c.storage.expert_cache_bytes = Some(rng.random_range(500_000_000..8_000_000_000));
        }
        c.background = vec![
            BackgroundEvent::Alloc {
                at_s: rng.random_range(0.0..30.0),
                bytes: rng.random_range(100_000_000..6_000_000_000),
                duration_s: Some(rng.random_range(1.0..20.0)),
            },
            BackgroundEvent::Bandwidth {
                at_s: rng.random_range(0.0..30.0),
                duration_s: rng.random_range(1.0..20.0),
                share: rng.random_range(0.05..0.9),
            },
        ];
        c.policies = match rng.random_range(0..5) {
            0 => vec![],
            1 => vec![PolicySpec::TruncateContext { keep_tokens: 512 }],
            2 => vec![PolicySpec::SwitchQuant { to: WeightQuant::new("Q2_K".parse().unwrap()) }],
            3 => vec![PolicySpec::PauseWhenHot { above_c: 70.0, resume_c: 60.0 }],
            _ => vec![PolicySpec::CapRate { tok_s: 3.0 }, PolicySpec::TruncateContext { keep_tokens: 1024 }],
        };
        s.sim = c;
        if s.validate().is_err() {
            continue;
        }
        let mut sink = VecSink::default();
        let sum = match simulate(&s, &mut sink) {
            // A device whose class network cannot hold its idle die (tests/thermal_slices.rs), or a
            // unit with no power figure.
            Err(e)
                if e.to_string().contains("no governor can hold it")
                    || e.to_string().contains("thermal runaway")
                    || e.to_string().contains("states no power") =>
            {
                continue;
            }
            r => r.unwrap(),
        };
        let rows = sink.rows;
        ran += 1;
        let what = format!("{model} on {device} ({:?})", s.sim.policies);
        assert!(sum.energy_j.is_finite() && sum.energy_j >= 0.0, "{what}: energy {}", sum.energy_j);
        assert!(sum.max_die_c.is_finite() && sum.max_die_c < 200.0, "{what}: die {}", sum.max_die_c);
        assert!(sum.duration_s <= s.sim.duration_s.unwrap() + 1e-9, "{what}: ran past the end");
        let mut t = 0.0;
        for r in &rows {
            assert!(r.time_s + 1e-9 >= t, "{what}: time went backwards at {r:?}");
            assert!(r.latency_s >= 0.0 && r.energy_j.is_finite() && r.power_w.is_finite(), "{what}: {r:?}");
            assert!(r.dram_bytes >= 0.0 && r.cache_bytes >= 0.0 && r.flash_bytes >= 0.0, "{what}: {r:?}");
            t = r.time_s;
        }
        let decoded: u64 = rows.iter().filter(|r| r.phase == Phase::Decode).map(|r| r.tokens).sum();
        assert_eq!(decoded * s.workload.batch as u64, sum.decode_tokens, "{what}");
        assert_eq!(rows.last().map_or(0, |r| r.token), sum.decode_tokens, "{what}");
    }
    assert!(ran >= 30, "only {ran} valid random scenarios");
}

/// The layer stacks of today's on-device models — per-layer heads, KV heads and head
/// dimensions, per-layer FFN widths, short convolutions, caches shared by the last layers,
/// per-layer embeddings (on flash or not) — cost the same in the simulator as in the estimator.
#[test]
fn todays_layer_stacks_agree_in_both_engines() {
    let base = "name = \"t\"\nn_layers = 6\nhidden = 1024\nn_heads = 8\nn_kv_heads = 2\nhead_dim = 128\nffn = 4096\nvocab = 32000\n";
    let variants = [
        "layer_pattern = [\"sliding\", \"full\"]\nsliding_window = 512\nn_heads_per_layer = [8, 16, 8, 16, 8, 16]\n\
         n_kv_heads_per_layer = [2, 4, 2, 4, 1, 4]\nhead_dim_per_layer = [128, 256, 128, 256, 64, 256]\n",
        "ffn_per_layer = [4096, 2048, 0, 8192, 4096, 1024]\n",
        "layer_kinds = [\"short_conv\", \"short_conv\", \"full\", \"short_conv\", \"full\", \"short_conv\"]\n[short_conv]\nl_cache = 3\n",
        "layer_pattern = [\"sliding\", \"sliding\", \"full\"]\nsliding_window = 256\nkv_shared_layers = 3\n",
        "tied_embeddings = true\n[per_layer_embedding]\nwidth = 64\nvocab = 16000\n",
        "tied_embeddings = true\n[per_layer_embedding]\nwidth = 64\non_flash = true\n",
    ];
    for (i, v) in variants.iter().enumerate() {
        let model: memwall::spec::ModelSpec = toml::from_str(&format!("{base}{v}")).unwrap();
        model.validate().unwrap_or_else(|e| panic!("variant {i}: {e}"));
        let mut s = scenario("llama-3.2-1b", "snapdragon-8-gen3-16gb", "Q4_K_M");
        s.model = model;
        for kv in ["f16", "q8_0"] {
            let kv: memwall::spec::QuantFormat = kv.parse().unwrap();
            s.kv = KvQuant { k: kv, v: kv };
            s.validate().unwrap();
            let a = estimate(&s).unwrap();
            let (d, _) = run(&s);
            let rel = (d.decode_tok_s.unwrap() - a.decode_tok_s).abs() / a.decode_tok_s;
            assert!(
                rel < 1e-9,
                "variant {i}: simulated {} vs estimated {} tok/s",
                d.decode_tok_s.unwrap(),
                a.decode_tok_s
            );
            assert!((d.ttft_s.unwrap() - a.prefill_s).abs() / a.prefill_s < 1e-9, "variant {i}: prefill");
        }
    }
}

#[test]
fn a_power_mode_slows_the_units_and_cuts_their_power_by_its_clocks() {
    use memwall::sim::cost::unit::resolve;
    let on = |device: &str| {
        let mut s = scenario("llama-3.2-1b", device, "Q4_K_M");
        s.workload.backend = Backend::Gpu;
        s.assume_defaults = true;
        resolve(&s).unwrap()
    };
    let (maxn, m15) = (on("jetson-orin-nano-super-8gb"), on("jetson-orin-nano-super-8gb@15W"));
    // nvpmodel's 15W: GPU at 612 of 1020 MHz = 0.6 of its arithmetic and, with V = 1 − 0.52 × 0.4
    // = 0.792, 0.6 × 0.792² = 0.376358 of its power; EMC at 2133 MHz: 4266 of 6400 MT/s of
    // DRAM bandwidth.
    let ratio = |a: Option<f64>, b: Option<f64>| a.unwrap() / b.unwrap();
    assert!((ratio(m15.peak_macs_per_s, maxn.peak_macs_per_s) - 0.6).abs() < 1e-12);
    assert!((ratio(m15.power_w, maxn.power_w) - 0.376358).abs() < 1e-6);
    assert!((m15.dram_gbps / maxn.dram_gbps - 4266.0 / 6400.0).abs() < 1e-12);
    // The class default power (the preset states none) is the one scaled, and still labelled.
    assert!(m15.assumed.contains(&"accelerators.gpu_power_w"));
    // A stated power is scaled alike.
    let stated = |device: &str| {
        let mut s = scenario("llama-3.2-1b", device, "Q4_K_M");
        s.workload.backend = Backend::Gpu;
        s.device.accelerators.gpu_power_w = Some(10.0);
        resolve(&s).unwrap().power_w.unwrap()
    };
    assert_eq!(stated("jetson-orin-nano-super-8gb"), 10.0);
    assert!((stated("jetson-orin-nano-super-8gb@15W") - 3.76358).abs() < 1e-5);
}
