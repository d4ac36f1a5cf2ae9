//! Analytic-estimator throughput: design points per second on real presets (a dense 8B
//! model and a 128-expert MoE), full decode of 128 tokens and a 512-token prefill each.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use memwall::lab::{load_device, load_model};
use memwall::sim::{CostPlan, Estimator, analytic::estimate_with, estimate};
use memwall::spec::{KvQuant, Scenario, WeightQuant};

fn scenario(model: &str) -> Scenario {
    Scenario {
        model: load_model(model).unwrap(),
        device: load_device("snapdragon-8-gen3-16gb").unwrap(),
        weights: WeightQuant::new("Q4_K_M".parse().unwrap()),
        kv: KvQuant::default(),
        workload: Default::default(),
        cost: Default::default(),
        engine: Default::default(),
        assume_defaults: false,
        sim: Default::default(),
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("estimate");
    g.throughput(Throughput::Elements(1));
    for model in ["llama-3.1-8b", "qwen3-30b-a3b"] {
        let s = scenario(model);
        g.bench_function(format!("{model}/full"), |b| b.iter(|| estimate(std::hint::black_box(&s)).unwrap()));
        let plan = CostPlan::new(&s).unwrap();
        g.bench_function(format!("{model}/planned"), |b| b.iter(|| estimate_with(std::hint::black_box(&plan), &s)));
        // A sweep point that changes only the context: the tensor plan is reused.
        let mut est = Estimator::new();
        let mut p = s.clone();
        let mut ctx = 4096;
        g.bench_function(format!("{model}/cached"), |b| {
            b.iter(|| {
                ctx = if ctx == 4096 { 8192 } else { 4096 };
                p.workload.context_tokens = ctx;
                est.estimate(std::hint::black_box(&p)).unwrap()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
