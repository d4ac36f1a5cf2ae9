//! The analytic estimator against the physics it must reproduce.

use memwall_sim::cost::formulas::overlap_time;
use memwall_sim::{Binding, CostPlan, Footprint, estimate, expected_distinct_experts};
use memwall_spec::{KvQuant, LayerKind, Scenario, WeightQuant};

const DEVICE: &str = include_str!("data/test-phone.toml");

const MODEL: &str = r#"
name = "llama-like-8b"
n_layers = 32
hidden = 4096
n_heads = 32
n_kv_heads = 8
head_dim = 128
ffn = 14336
vocab = 128256
sliding_window = 1024
"#;

fn scenario(mix: &str) -> Scenario {
    Scenario {
        model: toml::from_str(MODEL).unwrap(),
        device: toml::from_str(DEVICE).unwrap(),
        weights: WeightQuant::new(mix.parse().unwrap()),
        kv: KvQuant::default(),
        // A fresh conversation: the reply decodes after the prompt, at the depths the hand
        // calculations below take.
        workload: toml::from_str("prompt_tokens = 256\ngen_tokens = 64\nhistory_tokens = 0\ncontext_tokens = 4096")
            .unwrap(),
        cost: Default::default(),
        engine: Default::default(),
        assume_defaults: false,
        sim: Default::default(),
    }
}

#[test]
fn distinct_experts_follow_the_uniform_formula() {
    // E(1 − (1 − k/E)^T) for E = 128, k = 8.
    assert!((expected_distinct_experts(128, 8, 1, 0.0) - 8.0).abs() < 1e-9);
    let t4 = 128.0 * (1.0 - (1.0f64 - 8.0 / 128.0).powi(4));
    assert!((expected_distinct_experts(128, 8, 4, 0.0) - t4).abs() < 1e-9);
    // Skewed routing concentrates on fewer experts.
    assert!(expected_distinct_experts(128, 8, 16, 1.0) < expected_distinct_experts(128, 8, 16, 0.0));
}

#[test]
fn overlap_time_by_hand() {
    // max(2, 1) + (1 − 0.75) × 1 = 2.25
    assert!((overlap_time(2.0, 1.0, 0.75) - 2.25).abs() < 1e-12);
    assert_eq!(overlap_time(2.0, 1.0, 1.0), 2.0);
    assert_eq!(overlap_time(2.0, 1.0, 0.0), 3.0);
}

#[test]
fn bandwidth_bound_decode_scales_with_bandwidth() {
    // The seed's observation: 50 → 80 GB/s gave about +40 % decode speed.
    let slow = scenario("Q4_K_M");
    let mut fast = scenario("Q4_K_M");
    fast.device.memory.data_rate_mtps = 10_000.0;
    fast.device.memory.per_core_gbps = Some(40.0);
    assert!((slow.device.memory.peak_gbps() - 50.0).abs() < 1e-9);
    assert!((fast.device.memory.peak_gbps() - 80.0).abs() < 1e-9);
    let (a, b) = (estimate(&slow).unwrap(), estimate(&fast).unwrap());
    assert_eq!(a.binding, Binding::Memory);
    let gain = b.decode_tok_s / a.decode_tok_s;
    assert!(gain > 1.3 && gain <= 1.6, "gain {gain}");
}

#[test]
fn an_engine_may_stream_past_the_device_figure_but_not_past_the_peak() {
    // test-phone: 4 × 16-bit channels at 6250 MT/s = 50 GB/s peak.
    let at = |fraction: f64, share: f64| {
        let mut s = scenario("Q4_K_M");
        s.device.memory.achievable_fraction = Some(fraction);
        s.engine.cpu.as_mut().unwrap().bandwidth_share = share;
        memwall_sim::cost::unit::resolve(&s).unwrap().dram_gbps
    };
    // 50 × 0.6 × 1.5 = 45 GB/s: faster than the device's figure (30), below the peak.
    assert!((at(0.6, 1.5) - 45.0).abs() < 1e-9);
    assert!((at(0.6, 1.0) - 30.0).abs() < 1e-9);
    // 50 × min(0.8 × 1.5, 1) = 50 GB/s: the peak.
    assert!((at(0.8, 1.5) - 50.0).abs() < 1e-9);
    // A share past MAX_BANDWIDTH_SHARE is refused, naming the field.
    let mut s = scenario("Q4_K_M");
    s.engine.cpu.as_mut().unwrap().bandwidth_share = memwall_spec::engine::MAX_BANDWIDTH_SHARE * 1.01;
    let e = s.engine.validate().unwrap_err().to_string();
    assert!(e.contains("bandwidth_share"), "{e}");
}

#[test]
fn more_cores_do_not_speed_a_bandwidth_bound_decode() {
    let mut four = scenario("Q4_K_M");
    four.workload.threads = Some(4);
    let mut eight = scenario("Q4_K_M");
    eight.workload.threads = Some(8);
    let (a, b) = (estimate(&four).unwrap(), estimate(&eight).unwrap());
    assert_eq!(a.binding, Binding::Memory);
    assert!(b.decode_tok_s <= a.decode_tok_s * 1.01, "{} vs {}", b.decode_tok_s, a.decode_tok_s);
}

#[test]
fn three_bit_is_slower_than_four_bit_when_dequantization_binds() {
    // Q3_K merges a separate high-bit plane: its measured unpacking (the table's 0.062 cycles
    // per weight against Q4_K's 0.039) outweighs its 24 % fewer bytes once memory is fast.
    let mut q2 = scenario("pure-q3_K");
    let mut q4 = scenario("pure-q4_K");
    for s in [&mut q2, &mut q4] {
        s.workload.threads = Some(1);
        s.device.memory.per_core_gbps = Some(60.0);
        s.device.clusters[0].max_ghz = 1.0;
        s.device.clusters[0].simd_pipes = 2;
    }
    let (a, b) = (estimate(&q2).unwrap(), estimate(&q4).unwrap());
    assert_eq!(a.binding, Binding::Dequant);
    assert!(a.weight_bytes < b.weight_bytes);
    assert!(a.decode_tok_s < b.decode_tok_s, "q3_K {} vs q4_K {}", a.decode_tok_s, b.decode_tok_s);
}

#[test]
fn sliding_window_caps_kv_growth() {
    let at = |ctx: u64, kind: LayerKind| {
        let mut s = scenario("Q4_K_M");
        s.model.layer_pattern = vec![kind];
        s.workload.context_tokens = ctx;
        s.workload.prompt_tokens = ctx - 64;
        estimate(&s).unwrap()
    };
    let (w8, w32) = (at(8192, LayerKind::Sliding), at(32768, LayerKind::Sliding));
    assert_eq!(w8.kv_bytes, w32.kv_bytes);
    assert!((w8.decode_tok_s - w32.decode_tok_s).abs() / w8.decode_tok_s < 1e-9);
    let (f8, f32k) = (at(8192, LayerKind::Full), at(32768, LayerKind::Full));
    assert_eq!(f32k.kv_bytes, 4 * f8.kv_bytes);
    assert!(f32k.decode_tok_s < 0.8 * f8.decode_tok_s);
}

#[test]
fn mqa_is_cheaper_than_gqa_is_cheaper_than_mha() {
    let at = |kv_heads: u64| {
        let mut s = scenario("Q4_K_M");
        s.model.n_kv_heads = kv_heads;
        s.workload.context_tokens = 16384;
        s.workload.prompt_tokens = 16000;
        estimate(&s).unwrap()
    };
    let (mqa, gqa, mha) = (at(1), at(8), at(32));
    assert!(mqa.kv_bytes < gqa.kv_bytes && gqa.kv_bytes < mha.kv_bytes);
    assert!(mqa.decode_tok_s > gqa.decode_tok_s && gqa.decode_tok_s > mha.decode_tok_s);
}

#[test]
fn small_working_sets_are_served_from_cache() {
    let mut s = scenario("Q4_K_M");
    s.model = toml::from_str(
        "name = \"tiny\"\nn_layers = 2\nhidden = 256\nn_heads = 4\nn_kv_heads = 4\nffn = 512\nvocab = 1024",
    )
    .unwrap();
    s.device
        .caches
        .push(toml::from_str("name = \"SLC\"\nlevel = 4\nsize_bytes = 8388608\nbandwidth_gbps = 200.0").unwrap());
    let e = estimate(&s).unwrap();
    assert!(e.decode_terms.from_cache);
    assert_eq!(e.dram_bytes_per_token, 0.0);
}

#[test]
fn energy_counts_dram_and_core_power() {
    let e = estimate(&scenario("Q4_K_M")).unwrap();
    // Hand bound: DRAM energy alone is bytes × 8 × 4 pJ.
    let dram_j = e.dram_bytes_per_token * 8.0 * 4e-12;
    assert!(e.energy_j_per_token > dram_j);
    // Six big cores at 1.5 W plus 0.5 W static over one token time bounds the rest.
    let upper = dram_j * 1.2 + (6.0 * 1.5 + 0.5) * e.decode_s_per_token * 1.2;
    assert!(e.energy_j_per_token < upper, "{} vs {upper}", e.energy_j_per_token);
}

/// The unit's power over a step follows its arithmetic's share of the step's time:
/// `a + (1 − a) × busy` of the full-load power with `a` = 0.6, by hand at three shares, and
/// a step's energy is DRAM bytes × 8 × pJ/bit plus (compute × activity + static) × time.
#[test]
fn a_unit_waiting_on_memory_draws_a_share_of_its_full_power() {
    use memwall_sim::cost::formulas::{MEMORY_WAIT_POWER_SHARE, activity_share, energy_per_token_j};
    assert_eq!(MEMORY_WAIT_POWER_SHARE, 0.6);
    assert_eq!(activity_share(0.0), 0.6);
    assert!((activity_share(0.25) - 0.7).abs() < 1e-12, "0.6 + 0.4 × 0.25");
    assert_eq!(activity_share(1.0), 1.0);
    assert_eq!(activity_share(3.0), 1.0, "clamped");
    // 1 GB at 4 pJ/bit = 0.032 J; 10 W × 0.7 + 0.5 W static over 20 ms = 0.15 J.
    let j = energy_per_token_j(1e9, 4.0, 10.0, 0.7, 0.5, 0.02);
    assert!((j - (0.032 + 0.15)).abs() < 1e-12, "{j}");
    // A memory-bound decode on the CPU: the estimate's energy is that formula at its step's
    // own activity, between the waiting share and full power.
    let s = scenario("Q4_K_M");
    let plan = CostPlan::new(&s).unwrap();
    let (_, st) = plan.decode_step(511);
    let busy = (st.t_arith + st.t_dequant) / st.total;
    assert!((st.activity() - (0.6 + 0.4 * busy.min(1.0))).abs() < 1e-12);
    assert!((0.6..1.0).contains(&st.activity()), "a decode waits on memory part of the time: {}", st.activity());
}

#[test]
fn repeated_kv_reads_add_the_attended_kv_once_more() {
    // F16 KV of the 8B model: (8 KV heads × 128) × 2 bytes for K and as much for V = 4096 B
    // per token and layer, × 32 layers = 131,072 B per cached token.
    let per_token = 32.0 * 2.0 * 8.0 * 128.0 * 2.0;
    let work = |reads: f64| {
        let mut s = scenario("Q4_K_M");
        s.cost.attention_kv_reads = Some(reads);
        let plan = CostPlan::new(&s).unwrap();
        (plan.decode_work(999), plan.prefill_work(0, 256))
    };
    let ((d1, p1), (d2, p2), (d4, p4)) = (work(1.0), work(2.0), work(4.0));
    // Decoding at context 999 attends over 1000 tokens and writes 1: 1001 tokens once ...
    assert_eq!(d1.kv_bytes, 1001.0 * per_token);
    // ... and each further read adds the 1000 attended tokens (not the write) once more.
    assert_eq!(d2.kv_bytes - d1.kv_bytes, 1000.0 * per_token);
    assert_eq!(d4.kv_bytes, (4.0 * 1000.0 + 1.0) * per_token);
    // Weights, arithmetic and prefill are untouched.
    assert_eq!(d4.weight_bytes, d1.weight_bytes);
    assert_eq!(d4.attn_macs, d1.attn_macs);
    assert_eq!((p2, p4), (p1, p1));
    // A memory-bound decode slows down accordingly.
    let tok_s = |reads: f64| {
        let mut s = scenario("Q4_K_M");
        s.cost.attention_kv_reads = Some(reads);
        s.workload.prompt_tokens = 3000;
        estimate(&s).unwrap().decode_tok_s
    };
    assert!(tok_s(4.0) < tok_s(1.0));
}

#[test]
fn closed_form_decode_sums_equal_the_token_by_token_sum() {
    // Dense, sliding-window and tiny (cache-resident, crossing from cache to DRAM) models.
    let mut cases = vec![scenario("Q4_K_M"), scenario("Q2_K")];
    let mut sw = scenario("Q4_K_M");
    sw.model.layer_pattern = vec![LayerKind::Sliding, LayerKind::Full];
    sw.model.sliding_window = Some(300);
    cases.push(sw);
    let mut tiny = scenario("Q8_0");
    tiny.model = toml::from_str(
        "name = \"tiny\"\nn_layers = 2\nhidden = 256\nn_heads = 4\nn_kv_heads = 4\nffn = 512\nvocab = 1024",
    )
    .unwrap();
    tiny.workload.context_tokens = 200_000;
    cases.push(tiny);
    for s in &cases {
        let plan = CostPlan::new(s).unwrap();
        for (p, g) in [(0, 17), (100, 900), (250, 128), (5, 60_000)] {
            let (t, e) = plan.decode_sums(p, g);
            let (mut t1, mut e1) = (0.0, 0.0);
            for j in 0..g {
                let (w, st) = plan.decode_step(p + j);
                t1 += st.total;
                e1 += plan.step_energy(&w, &st);
            }
            assert!((t - t1).abs() <= 1e-11 * t1, "{}: p {p} g {g}: {t} vs {t1}", s.model.name);
            assert!((e - e1).abs() <= 1e-11 * e1, "{}: p {p} g {g}: {e} vs {e1}", s.model.name);
        }
    }
}

#[test]
fn prefill_attention_sums_by_hand() {
    use memwall_sim::cost::formulas::attended_sum;
    assert_eq!(attended_sum(LayerKind::Full, 0, 4, u64::MAX), 10.0);
    assert_eq!(attended_sum(LayerKind::Sliding, 0, 4, 2), 7.0);
    // Positions 3..=6 with window 4: 3 + 4 + 4 + 4.
    assert_eq!(attended_sum(LayerKind::Sliding, 2, 4, 4), 15.0);
    assert_eq!(attended_sum(LayerKind::Sliding, 10, 3, 4), 12.0);
    assert_eq!(attended_sum(LayerKind::Ssm, 0, 100, 4), 0.0);
}

#[test]
fn the_caching_estimator_gives_the_estimate_of_every_point() {
    use memwall_sim::Estimator;
    let mut est = Estimator::new();
    let mut points = Vec::new();
    for mix in ["Q4_K_M", "Q8_0"] {
        for ctx in [1024, 4096, 16384] {
            for batch in [1, 4] {
                let mut s = scenario(mix);
                s.workload.context_tokens = ctx;
                s.workload.batch = batch;
                s.kv = KvQuant::both(if batch == 1 { "f16" } else { "q8_0" }.parse().unwrap());
                points.push(s);
            }
        }
    }
    // An invalid point between valid ones is refused, and the next still comes out right.
    let mut bad = scenario("Q8_0");
    bad.workload.threads = Some(99);
    points.insert(5, bad);
    for s in &points {
        match (est.estimate(s), estimate(s)) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.decode_tok_s.to_bits(), b.decode_tok_s.to_bits());
                assert_eq!(a.total_bytes, b.total_bytes);
                assert_eq!(a.energy_j_per_token.to_bits(), b.energy_j_per_token.to_bits());
                assert_eq!(a.prefill_s.to_bits(), b.prefill_s.to_bits());
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
            (a, b) => panic!("cached {a:?} vs fresh {b:?}"),
        }
    }
}

/// A step's two phases by hand on the test phone (one cluster of 6 big cores at 3 GHz, 4
/// NEON pipes with int8 dot = 64 int8 MACs a cycle; 4 × 16-bit LPDDR5X at 6250 MT/s = 50 GB/s,
/// all of it reachable, 20 GB/s per core): with 4 threads, DRAM gives
/// `min(50, 4 × 20) = 50 GB/s`; weights stream alone in the first phase, attention's KV with its
/// f32 arithmetic (4 × 1/64 cycles per multiply-add) in the second, and the phases add.
#[test]
fn the_weight_and_attention_phases_add() {
    use memwall_sim::StepWork;
    let mut s = scenario("pure-q4_0");
    s.workload.threads = Some(4);
    let plan = CostPlan::new(&s).unwrap();
    let eff = 0.6;
    let bw = 50e9;
    let rate = 4.0 * 3.0e9; // cycles per second of 4 threads
    let weights = StepWork { weight_bytes: 4e9, ..Default::default() };
    let t = plan.step_time(&weights, eff, false);
    assert!((t.total - 4e9 / bw).abs() < 1e-12, "{t:?}");
    // Attention alone: 1 GB of KV and 6e9 multiply-adds at f32 (4/64 cycle each).
    let attention = StepWork { kv_bytes: 1e9, attn_macs: 6e9, ..Default::default() };
    let t_a = plan.step_time(&attention, eff, false);
    let comp_a = 6e9 * 4.0 / 64.0 / (eff * rate);
    let mem_a = 1e9 / bw;
    assert!((t_a.total - overlap_time(mem_a, comp_a, 0.9)).abs() < 1e-12, "{t_a:?} vs {comp_a} {mem_a}");
    assert_eq!(t_a.memory_bound, (true, mem_a >= comp_a));
    // Together: the phases add (each overlapping its own memory and arithmetic), which is
    // more than one overlap of all the memory with all the arithmetic.
    let both = StepWork { weight_bytes: 4e9, kv_bytes: 1e9, attn_macs: 6e9, ..Default::default() };
    let t_b = plan.step_time(&both, eff, false);
    let by_hand = 4e9 / bw + overlap_time(mem_a, comp_a, 0.9);
    assert!((t_b.total - by_hand).abs() < 1e-12 * by_hand, "{} vs {by_hand}", t_b.total);
    assert!(t_b.total > overlap_time(5e9 / bw, comp_a, 0.9));
    assert!((t_b.t_attention - overlap_time(mem_a, comp_a, 0.9)).abs() < 1e-12);
}

/// A GPU dequantizes on its own ALUs: `dequant_ops_per_weight / 2` multiply-add equivalents
/// per Q4_0-equivalent weight, at the unit's rate (peak × the step's efficiency: decode's
/// `compute_efficiency`, prefill's `prefill_efficiency`), beside the multiply-adds.
#[test]
fn gpu_dequantization_by_hand() {
    use memwall_sim::StepWork;
    let mut s = scenario("pure-q4_0");
    s.device.accelerators.gpu_fp16_tflops = Some(2.0);
    s.device.accelerators.gpu_bandwidth_fraction = Some(1.0);
    s.workload.backend = memwall_spec::Backend::Gpu;
    let mut e = memwall_spec::EngineSpec::generic();
    let gpu = e.gpu.as_mut().unwrap();
    gpu.compute_efficiency = 0.5;
    gpu.prefill_efficiency = 0.25;
    gpu.dequant_ops_per_weight = 4.0;
    s.engine = e;
    let plan = CostPlan::new(&s).unwrap();
    // 1e9 Q4_0 weights: the big cluster's Q4_0 dequantization is 0.04 × (128/128) × (2/4) =
    // 0.02 cycles a weight, so StepWork counts 2e7 dequantization cycles; the GPU turns each
    // into (4 / 2) / 0.02 = 100 multiply-adds: 2e9, beside the 1e9 of the dot products.
    let w = StepWork { weight_macs: 1e9, dequant_cycles: 0.02 * 1e9, ..Default::default() };
    let t = plan.decode_step_at(&w, &memwall_sim::Conditions::NOMINAL);
    let rate = 2.0e12 / 2.0 * 0.5;
    assert!((t.t_arith - 1e9 / rate).abs() < 1e-15, "{t:?}");
    assert!((t.t_dequant - 2e9 / rate).abs() < 1e-12 * 2e9 / rate, "{t:?}");
    // A prefill chunk runs the same work at its own efficiency, 0.25 of the 1e12 MAC/s peak:
    // twice the time.
    let p = plan.prefill_step_at(&w, &memwall_sim::Conditions::NOMINAL);
    let rate = 2.0e12 / 2.0 * 0.25;
    assert!((p.t_arith - 1e9 / rate).abs() < 1e-15, "{p:?}");
    assert!((p.t_dequant - 2e9 / rate).abs() < 1e-12 * 2e9 / rate, "{p:?}");
}

/// `chunk_dequant_cycles` by hand: 1000 cycles of unpacking for one token, 400 of them in
/// formats without a matrix kernel, over a 256-token chunk sharing every 4:
/// `64 × 600 + 256 × 400 = 140 800`; one token costs its 1000 either way.
#[test]
fn chunk_unpacking_by_hand() {
    use memwall_sim::cost::plan::chunk_dequant_cycles;
    assert_eq!(chunk_dequant_cycles(1000.0, 400.0, 256.0, 4.0), 140_800.0);
    assert_eq!(chunk_dequant_cycles(1000.0, 400.0, 1.0, 4.0), 1000.0);
    assert_eq!(chunk_dequant_cycles(1000.0, 0.0, 256.0, 4.0), 64_000.0);
}

/// Expert unpacking passes by hand: a 512-token chunk of a top-4 MoE over 32 experts, a tile
/// sharing one unpacking among 4 of an expert's tokens: 2048 token-expert pairs in tiles of 4
/// are 512 passes; one decoded token (4 pairs on 4 experts) unpacks each of its 4 experts once.
#[test]
fn expert_unpacking_by_hand() {
    use memwall_sim::cost::plan::expert_dequant_units;
    assert_eq!(expert_dequant_units(512.0 * 4.0, 32.0, 4.0), 512.0);
    assert_eq!(expert_dequant_units(4.0, 4.0, 4.0), 4.0);
    assert_eq!(expert_dequant_units(16.0, 14.0, 4.0), 14.0);
}

/// An engine whose CPU prefill has matrix kernels for some formats only (ggml: q4_0, q8_0,
/// not the k-quants) unpacks the others once per token: a 256-token chunk of pure q4_K costs
/// 256 tokens' unpacking, of pure q4_0 256 / 4 (the cost model's `prefill_dequant_reuse`).
/// A core without int8 dot products has no such kernels; a GPU design is not affected.
#[test]
fn formats_without_a_matrix_kernel_are_unpacked_per_prefill_token() {
    let with_kernels = |mix: &str| {
        let mut s = scenario(mix);
        s.engine.cpu.as_mut().unwrap().gemm_formats = vec!["q4_0".into()];
        s
    };
    for (mix, tokens_per_unpack) in [("pure-q4_K", 1.0), ("pure-q4_0", 4.0)] {
        let plan = CostPlan::new(&with_kernels(mix)).unwrap();
        let one = plan.decode_work(0).dequant_cycles;
        let chunk = plan.prefill_work(0, 256).dequant_cycles;
        assert!(one > 0.0);
        assert!((chunk / one - 256.0 / tokens_per_unpack).abs() < 1e-9, "{mix}: {chunk} vs {one}");
    }
    // Prefill of q4_K is slower with per-token unpacking than with a shared one.
    let shared = estimate(&scenario("pure-q4_K")).unwrap();
    let per_token = estimate(&with_kernels("pure-q4_K")).unwrap();
    assert!(per_token.prefill_tok_s < shared.prefill_tok_s, "{per_token:?}");
    assert_eq!(per_token.decode_tok_s, shared.decode_tok_s, "one token unpacks once either way");
    // Without dot products q4_0 is unpacked per token too.
    let mut no_dot = with_kernels("pure-q4_0");
    for c in &mut no_dot.device.clusters {
        c.int8_dot = false;
    }
    let plan = CostPlan::new(&no_dot).unwrap();
    let ratio = plan.prefill_work(0, 256).dequant_cycles / plan.decode_work(0).dequant_cycles;
    assert!((ratio - 256.0).abs() < 1e-9, "{ratio}");
    // On the GPU the CPU's kernels say nothing.
    let gpu = |mut s: Scenario| {
        s.device.accelerators.gpu_fp16_tflops = Some(2.0);
        s.device.accelerators.gpu_bandwidth_fraction = Some(1.0);
        s.workload.backend = memwall_spec::Backend::Gpu;
        CostPlan::new(&s).unwrap().prefill_work(0, 256).dequant_cycles
    };
    assert_eq!(gpu(with_kernels("pure-q4_K")), gpu(scenario("pure-q4_K")));
}

/// The prompt-rate band is the prefill rate times the engine's `prefill_error_ratio`; none
/// where the unit's peak arithmetic is a class default (orders of magnitude only).
#[test]
fn the_prompt_band_scales_the_prefill_rate_unless_the_peak_is_assumed() {
    let mut s = scenario("pure-q4_0");
    assert_eq!(estimate(&s).unwrap().prefill_tok_s_interval, None, "the generic engine has none");
    s.engine.cpu.as_mut().unwrap().prefill_error_ratio = Some([0.5, 2.0]);
    let e = estimate(&s).unwrap();
    assert_eq!(e.prefill_tok_s_interval, Some([0.5 * e.prefill_tok_s, 2.0 * e.prefill_tok_s]));
    let mut gpu = s.clone();
    gpu.workload.backend = memwall_spec::Backend::Gpu;
    gpu.engine.gpu.as_mut().unwrap().prefill_error_ratio = Some([0.5, 2.0]);
    gpu.device.accelerators.gpu_bandwidth_fraction = Some(1.0);
    gpu.device.accelerators.gpu_fp16_tflops = Some(2.0);
    assert!(estimate(&gpu).unwrap().prefill_tok_s_interval.is_some());
    gpu.device.accelerators.gpu_fp16_tflops = None;
    gpu.assume_defaults = true;
    let e = estimate(&gpu).unwrap();
    assert!(e.prefill_tok_s > 0.0 && e.prefill_tok_s_interval.is_none(), "{e:?}");
}

#[test]
fn an_engines_measured_cycles_replace_the_table_for_that_engine_only() {
    // Q8_0 everywhere but the (Q6_K) output: dequantization time is proportional to the
    // measured cycles per weight, taken as they are (no 128-bit scaling).
    let base = scenario("Q8_0");
    let mut measured = base.clone();
    let u = measured.engine.cpu.as_mut().unwrap();
    u.dequant_cycles.insert("q8_0".into(), 0.5);
    u.dequant_cycles.insert("q6_K".into(), 0.5);
    let (a, b) = (estimate(&base).unwrap(), estimate(&measured).unwrap());
    let mut doubled = measured.clone();
    for v in doubled.engine.cpu.as_mut().unwrap().dequant_cycles.values_mut() {
        *v *= 2.0;
    }
    let d = estimate(&doubled).unwrap();
    assert!((d.decode_terms.t_dequant / b.decode_terms.t_dequant - 2.0).abs() < 1e-9);
    assert!(b.decode_terms.t_dequant > a.decode_terms.t_dequant);
    // One estimator serving both engines in turn keeps them apart.
    let mut est = memwall_sim::Estimator::new();
    assert_eq!(est.estimate(&base).unwrap().decode_tok_s, a.decode_tok_s);
    assert_eq!(est.estimate(&measured).unwrap().decode_tok_s, b.decode_tok_s);
    // A scenario's own cost-model figure still wins over the engine's measurement.
    let mut overridden = doubled.clone();
    overridden.cost.dequant_cycles.insert("q8_0".into(), 0.02);
    overridden.cost.dequant_cycles.insert("q6_K".into(), 0.02);
    assert!(estimate(&overridden).unwrap().decode_terms.t_dequant < b.decode_terms.t_dequant / 5.0);
    // Attention cycles by KV format: [per MAC, per KV byte].
    let dense = 0.03;
    let mut u = base.engine.cpu.clone().unwrap();
    assert_eq!(memwall_sim::cost::formulas::attention_cycles(&u, "f16".parse().unwrap(), dense), [0.12, 0.0]);
    u.attention_cycles.insert("f16".into(), [0.3, 1.5]);
    assert_eq!(memwall_sim::cost::formulas::attention_cycles(&u, "f16".parse().unwrap(), dense), [0.3, 1.5]);
    assert_eq!(memwall_sim::cost::formulas::attention_cycles(&u, "q8_0".parse().unwrap(), dense), [0.12, 0.0]);
}

/// Battery figures by hand: 5000 mAh at 3.85 V stores 5000 × 3.85 × 3.6 = 69 300 J, so 2 W
/// for an hour takes 100 × 2 × 3600 / 69 300 = 10.39 % of it; a reply's charge is its
/// energy (its prompt's prefill plus its tokens) over 3.85 V × 3.6 J/mAh; a device without
/// a battery has no figures.
#[test]
fn battery_figures_by_hand() {
    use memwall_sim::cost::formulas::battery_pct_per_hour;
    use memwall_spec::BatterySpec;
    let bat = BatterySpec { capacity_mah: 5000.0, voltage_v: 3.85 };
    assert!((bat.energy_j() - 69_300.0).abs() < 1e-9);
    assert!((battery_pct_per_hour(2.0, bat.energy_j()) - 10.389_610_389_6).abs() < 1e-9);
    assert!((bat.mah_for(13.86) - 1.0).abs() < 1e-12);
    let mut s = scenario("Q4_K_M");
    assert_eq!(estimate(&s).unwrap().battery_mah_per_reply, None);
    s.device.battery = Some(bat);
    let e = estimate(&s).unwrap();
    let plan = CostPlan::new(&s).unwrap();
    let (prefill_s, prefill_j, _) = plan.prefill(0, 256, s.workload.ubatch);
    let decode_j = e.energy_j_per_token * 64.0;
    assert!((e.reply_energy_j - (prefill_j + decode_j)).abs() < 1e-9 * e.reply_energy_j);
    assert!((e.battery_mah_per_reply.unwrap() - e.reply_energy_j / (3.85 * 3.6)).abs() < 1e-12);
    let power = e.reply_energy_j / (prefill_s + 64.0 * e.decode_s_per_token);
    assert!((e.battery_pct_per_hour.unwrap() - 100.0 * power * 3600.0 / 69_300.0).abs() < 1e-9);
    // A bad battery names its field.
    s.device.battery = Some(BatterySpec { capacity_mah: -1.0, voltage_v: 3.85 });
    assert!(s.device.validate().unwrap_err().to_string().contains("battery.capacity_mah"));
}

/// History in the cache moves the reply as a longer prompt does, and only the prompt is
/// prefilled: decode with `h` tokens of history and a `p`-token prompt equals decode after an
/// `h + p`-token prompt; the prompt's prefill attends to the history, so it costs more than
/// the same prompt alone and less than prefilling `h + p` tokens.
#[test]
fn history_sets_the_depth_and_only_the_prompt_is_prefilled() {
    let mut s = scenario("Q4_K_M");
    s.workload.context_tokens = 32768;
    s.workload.prompt_tokens = 512;
    s.workload.history_tokens = Some(16000);
    let with_history = memwall_sim::estimate(&s).unwrap();
    let mut long_prompt = s.clone();
    (long_prompt.workload.history_tokens, long_prompt.workload.prompt_tokens) = (Some(0), 16512);
    let long = memwall_sim::estimate(&long_prompt).unwrap();
    let mut short = s.clone();
    short.workload.history_tokens = Some(0);
    let short = memwall_sim::estimate(&short).unwrap();
    assert_eq!(with_history.decode_tok_s, long.decode_tok_s);
    let g = s.workload.gen_tokens;
    assert_eq!(with_history.decode_depth_tokens, 16000 + 512 + g.max(1) / 2);
    assert!(with_history.decode_tok_s < short.decode_tok_s, "deeper decodes slower");
    assert!(short.prefill_s < with_history.prefill_s && with_history.prefill_s < long.prefill_s);
    assert_eq!(s.workload.kv_tokens(), 32768);
    s.workload.context_policy = memwall_spec::ContextPolicy::Grow;
    assert_eq!(s.workload.kv_tokens(), 16000 + 512 + g, "a growing cache holds the history too");
}

#[test]
fn fp8_kv_and_weights_flow_through_footprint_and_estimate() {
    let f16 = scenario("Q4_K_M");
    let mut fp8 = scenario("Q4_K_M");
    fp8.kv = KvQuant::both("fp8_e4m3".parse().unwrap());
    fp8.validate().unwrap();
    let (a, b) = (Footprint::of(&f16).unwrap(), Footprint::of(&fp8).unwrap());
    // 32 layers × 8 KV heads × 128 × 4096 tokens × (K + V): 2 B per element in f16, 1 in fp8.
    assert_eq!(a.kv, 32 * 8 * 128 * 4096 * 2 * 2);
    assert_eq!(b.kv, a.kv / 2);
    assert_eq!(b.weights, a.weights);
    // Half the KV bytes to read: decode is no slower.
    assert!(estimate(&fp8).unwrap().decode_tok_s >= estimate(&f16).unwrap().decode_tok_s);
    // FP8 weights with 128 × 128 tiles: a little over 1 B per weight, and an estimate.
    let w = scenario("fp8_e4m3-b128");
    w.validate().unwrap();
    let fw = Footprint::of(&w).unwrap();
    let q8 = Footprint::of(&scenario("pure-q8_0")).unwrap();
    assert!(fw.weights < q8.weights, "{} vs {}", fw.weights, q8.weights);
    assert!(estimate(&w).unwrap().decode_tok_s > 0.0);
}

#[test]
fn a_cpu_without_its_bandwidth_figures_takes_its_familys_listed() {
    use memwall_spec::class::{CpuFamily, cpu_defaults};
    // The test phone (an Android phone) with its CPU share and per-core bandwidth removed.
    let mut bare = scenario("Q4_K_M");
    bare.device.memory.achievable_fraction = None;
    bare.device.memory.per_core_gbps = None;
    // Refused without --assume-defaults, naming the field.
    let e = estimate(&bare).unwrap_err().to_string();
    assert!(e.contains("memory.achievable_fraction"), "{e}");
    // With it: the Android phones' medians, listed as assumed, and the same answer as the
    // device stating them.
    bare.assume_defaults = true;
    let d = cpu_defaults(CpuFamily::AndroidPhone);
    let got = estimate(&bare).unwrap();
    assert!(got.assumed.contains("memory.achievable_fraction") && got.assumed.contains("memory.per_core_gbps"));
    let mut stated = scenario("Q4_K_M");
    stated.device.memory.achievable_fraction = Some(d.achievable_fraction);
    stated.device.memory.per_core_gbps = Some(d.per_core_gbps);
    assert_eq!(got.decode_tok_s, estimate(&stated).unwrap().decode_tok_s);
}

/// An NPU engine that multiplies q4_0 only and hands other formats to the CPU
/// (`cpu_fallback`), on the test phone.
fn npu_with_fallback(mix: &str) -> Scenario {
    let mut s = scenario(mix);
    s.device.accelerators.npu_int8_tops = Some(40.0);
    s.device.accelerators.npu_bandwidth_fraction = Some(0.8);
    s.workload.backend = memwall_spec::Backend::Npu;
    let mut e = memwall_spec::EngineSpec::generic();
    let npu = e.npu.as_mut().unwrap();
    npu.formats = vec!["q4_0".into()];
    npu.cpu_fallback = true;
    s.engine = e;
    s
}

#[test]
fn weights_the_unit_does_not_multiply_run_at_the_cpus_rate() {
    use memwall_spec::{Backend, QuantFormat};
    // Without the fallback a k-quant design is refused on the unit.
    let mut refused = npu_with_fallback("Q4_K_M");
    refused.engine.npu.as_mut().unwrap().cpu_fallback = false;
    assert!(estimate(&refused).unwrap_err().to_string().contains("does not run q4_K"));
    // Every matrix of Q4_K_M is a k-quant: the whole step runs on the CPU, as the same design
    // there does.
    let all = npu_with_fallback("Q4_K_M");
    let mut cpu = all.clone();
    cpu.workload.backend = Backend::Cpu;
    let (e, c) = (estimate(&all).unwrap(), estimate(&cpu).unwrap());
    assert_eq!(e.cpu_share, 1.0);
    assert!((e.decode_tok_s / c.decode_tok_s - 1.0).abs() < 1e-12, "{} vs {}", e.decode_tok_s, c.decode_tok_s);
    assert!((e.prefill_tok_s / c.prefill_tok_s - 1.0).abs() < 1e-12);
    // Q4_0 keeps its output matrix in q6_K (llama.cpp's rule): that matrix's share of a
    // token's bytes (the untied embedding table is read one row a token) runs on the CPU, the
    // rest on the NPU: the step is `(1 − share) × NPU + share × CPU`.
    let part = npu_with_fallback("Q4_0");
    let plan = CostPlan::new(&part).unwrap();
    let tensors = &plan.weights.tensors;
    let q6 = QuantFormat::Ggml(memwall_spec::GgmlType::Q6_K);
    let per_token = |t: &memwall_spec::Tensor, b: u64| match t.class {
        memwall_spec::TensorClass::TokenEmbd => b as f64 / t.rows as f64,
        _ => b as f64,
    };
    let matrices = tensors.iter().filter(|(t, _, _)| !t.is_vector());
    let head: f64 = matrices.clone().filter(|(_, f, _)| *f == q6).map(|(t, _, b)| per_token(t, *b)).sum();
    let all_bytes: f64 = matrices.map(|(t, _, b)| per_token(t, *b)).sum();
    let share = head / all_bytes;
    assert!(share > 0.05 && share < 0.2, "{share}");
    let host = plan.host.as_ref().unwrap();
    assert!((host.bytes_share - share).abs() < 1e-12);
    let w = plan.decode_work(300);
    let on_npu = {
        let mut p = part.clone();
        p.engine.npu.as_mut().unwrap().formats.clear();
        CostPlan::new(&p).unwrap().decode_step_at(&w, &memwall_sim::Conditions::NOMINAL).total
    };
    let on_cpu = host.plan.decode_step_at(&host.plan.decode_work(300), &memwall_sim::Conditions::NOMINAL).total;
    let t = plan.decode_step_at(&w, &memwall_sim::Conditions::NOMINAL).total;
    assert!((t - ((1.0 - share) * on_npu + share * on_cpu)).abs() < 1e-12 * t, "{t} {on_npu} {on_cpu}");
    assert!(t > on_npu.min(on_cpu) && t < on_npu.max(on_cpu), "{t} {on_npu} {on_cpu}");
}

#[test]
fn a_token_mixers_fixed_time_adds_once_per_layer_of_its_kind() {
    // 12 of the 32 layers made linear-attention layers; 2 ms each on the unit.
    let mut s = scenario("Q4_K_M");
    s.model.linear = Some(toml::from_str("n_heads = 16\nkey_dim = 128\nvalue_dim = 128").unwrap());
    s.model.layer_kinds = Some((0..32).map(|i| if i % 8 < 3 { LayerKind::Linear } else { LayerKind::Full }).collect());
    s.validate().unwrap();
    let base = estimate(&s).unwrap();
    s.engine.cpu.as_mut().unwrap().mixer_s.insert("linear".into(), 2e-3);
    s.engine.cpu.as_mut().unwrap().mixer_s.insert("ssm".into(), 1.0);
    let slow = estimate(&s).unwrap();
    // 12 × 2 ms per decoded token; the model has no SSM layer, whose entry adds nothing.
    assert!((slow.decode_s_per_token - base.decode_s_per_token - 12.0 * 2e-3).abs() < 1e-12);
    // A prompt pays it once per chunk of `ubatch` tokens.
    let chunks = s.workload.prompt_tokens.div_ceil(s.workload.ubatch) as f64;
    assert!((slow.prefill_s - base.prefill_s - chunks * 12.0 * 2e-3).abs() < 1e-9);
}

#[test]
fn a_matrix_product_past_the_units_row_limit_runs_on_the_cpu() {
    // Every matrix q4_0, which the unit multiplies; the output head has a row per word of
    // the vocabulary, more than the limit allows (llama.cpp's Hexagon backend: 16384, VTCM).
    let mut s = npu_with_fallback("pure-q4_0");
    let vocab = s.model.vocab;
    let plan = CostPlan::new(&s).unwrap();
    assert!(plan.host.is_none(), "no limit, no hand-off");
    let widest = plan
        .weights
        .tensors
        .iter()
        .filter(|(t, _, _)| {
            t.class != memwall_spec::TensorClass::TokenEmbd && t.class != memwall_spec::TensorClass::Output
        })
        .map(|(t, _, _)| t.rows)
        .max()
        .unwrap();
    assert!(widest < vocab, "{widest} {vocab}");
    s.engine.npu.as_mut().unwrap().max_rows.insert("q4_0".into(), widest);
    let plan = CostPlan::new(&s).unwrap();
    // The head's bytes over a token's matrix bytes, by hand: the untied embedding table is
    // read one row a token, the head whole.
    let per_token = |t: &memwall_spec::Tensor, b: u64| match t.class {
        memwall_spec::TensorClass::TokenEmbd if !s.model.tied_embeddings => b as f64 / t.rows as f64,
        _ => b as f64,
    };
    let matrices = plan.weights.tensors.iter().filter(|(t, _, _)| !t.is_vector());
    // An untied embedding table is looked up (get_rows), not multiplied: no limit applies.
    let lookup = |t: &memwall_spec::Tensor| match t.class {
        memwall_spec::TensorClass::TokenEmbd => !s.model.tied_embeddings,
        memwall_spec::TensorClass::PerLayerTokenEmbd => true,
        _ => false,
    };
    let head: f64 =
        matrices.clone().filter(|(t, _, _)| t.rows > widest && !lookup(t)).map(|(t, _, b)| per_token(t, *b)).sum();
    let all: f64 = matrices.map(|(t, _, b)| per_token(t, *b)).sum();
    let host = plan.host.as_ref().expect("the head runs on the CPU");
    assert!((host.bytes_share - head / all).abs() < 1e-12, "{} vs {}", host.bytes_share, head / all);
    assert!(host.bytes_share > 0.01 && host.bytes_share < 0.5);
    assert_eq!(estimate(&s).unwrap().cpu_share, host.bytes_share);
    // A limit at the head's own row count keeps it on the unit.
    s.engine.npu.as_mut().unwrap().max_rows.insert("q4_0".into(), vocab);
    assert!(CostPlan::new(&s).unwrap().host.is_none());
}

/// An engine whose quantized kernels use narrower registers than the core
/// (`quantized_simd_bits`) runs them as on a core that wide, its float kernels and its
/// attention at full width.
/// By hand, on the big cluster widened to 512 bits (4 pipes, int8 dot): Q4_0 at 256 bits is
/// `4 × 256 / 8 = 128` int8 MACs a cycle, so `1 / 128` cycles of arithmetic per weight, and
/// its unpacking `0.04 × (128 / 256) × (2 / 4) = 0.01` cycles (the table's 0.04 at 128 bits,
/// 2 pipes), where the full width would give `1 / 256` and 0.005.
#[test]
fn an_engines_quantized_kernels_run_at_their_own_width() {
    let widen = |s: &mut Scenario, bits: u32| {
        for cl in &mut s.device.clusters {
            cl.simd_bits = bits;
        }
    };
    let work = |s: &Scenario| {
        let (w, _) = CostPlan::new(s).unwrap().decode_step(256);
        (w.arith_cycles / w.weight_macs, w.dequant_cycles)
    };
    let mut wide = scenario("pure-q4_0");
    widen(&mut wide, 512);
    let mut capped = wide.clone();
    capped.engine.cpu.as_mut().unwrap().quantized_simd_bits = Some(256);
    let mut narrow = scenario("pure-q4_0");
    widen(&mut narrow, 256);
    let ((a_wide, d_wide), (a_capped, d_capped)) = (work(&wide), work(&capped));
    assert!((a_capped - 1.0 / 128.0).abs() < 1e-12, "{a_capped}");
    assert!((a_wide - 1.0 / 256.0).abs() < 1e-12, "{a_wide}");
    assert!((d_capped / d_wide - 2.0).abs() < 1e-9, "{d_capped} {d_wide}");
    // The capped 512-bit core multiplies Q4_0 weights as the 256-bit one does, and attends
    // (float arithmetic, no cap) as the uncapped 512-bit one does.
    assert_eq!(work(&capped), work(&narrow));
    let t = |s: &Scenario| estimate(s).unwrap().decode_terms;
    assert_eq!(t(&capped).t_attention, t(&wide).t_attention);
    assert!(t(&wide).t_arith < t(&capped).t_arith && t(&capped).t_arith < t(&narrow).t_arith);
    // F16 weights keep the full width: the cap changes nothing.
    let mut f16 = wide.clone();
    f16.weights = WeightQuant::new("pure-f16".parse().unwrap());
    let mut f16_capped = f16.clone();
    f16_capped.engine = capped.engine.clone();
    assert_eq!(estimate(&f16).unwrap().decode_tok_s, estimate(&f16_capped).unwrap().decode_tok_s);
    // A width that is not a multiple of 64 is refused, naming the field, and so is one
    // stated for a GPU.
    let mut gpu = capped.clone();
    gpu.engine.gpu.as_mut().unwrap().quantized_simd_bits = Some(256);
    let err = estimate(&gpu).unwrap_err().to_string();
    assert!(err.contains("gpu.quantized_simd_bits"), "{err}");
    capped.engine.cpu.as_mut().unwrap().quantized_simd_bits = Some(100);
    let err = estimate(&capped).unwrap_err().to_string();
    assert!(err.contains("quantized_simd_bits") && err.contains("100"), "{err}");
}
