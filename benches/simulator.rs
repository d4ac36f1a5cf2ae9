//! Discrete-event simulator speed: the event queue alone (events per second on one core,
//! in the hold model: a queue of pending events, each pop followed by a push a random
//! interval later) and a one-hour phone session with everything on (thermal RC network and
//! governor, LRU caches, sampled expert routing with a DRAM expert cache, memory pressure,
//! a background allocation and a bus master), the trace discarded.

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use memwall::lab::Experiment;
use memwall::sim::des::{EventQueue, NullSink, Simulator, simulate};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

#[derive(Clone, Copy)]
enum Ev {
    Token(#[allow(dead_code)] u32),
    Poll,
}

fn queue(c: &mut Criterion) {
    let mut g = c.benchmark_group("event_queue");
    for pending in [4usize, 64, 1024] {
        const OPS: u64 = 1_000_000;
        g.throughput(Throughput::Elements(OPS));
        g.bench_function(format!("hold/{pending}_pending"), |b| {
            let mut rng = StdRng::seed_from_u64(1);
            let delays: Vec<u64> = (0..4096).map(|_| rng.random_range(1..1_000_000)).collect();
            b.iter_batched_ref(
                || {
                    let mut q = EventQueue::new();
                    for i in 0..pending {
                        q.push(delays[i % delays.len()], Ev::Poll);
                    }
                    q
                },
                |q| {
                    for i in 0..OPS as usize {
                        let (t, e) = q.pop().expect("hold model keeps the queue full");
                        let next = match e {
                            Ev::Token(_) => Ev::Poll,
                            Ev::Poll => Ev::Token(i as u32),
                        };
                        q.push(t + delays[i & 4095], next);
                    }
                },
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

/// The sustained-phone experiment's base point (35B MoE with a DRAM expert cache), run
/// for an hour; with `dense`, a Llama-3.2-3B Q4_K_M chat instead (~30k tokens an hour).
fn hour(dense: bool) -> memwall::spec::Scenario {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/sustained-phone.toml");
    let exp = Experiment::load(std::path::Path::new(path)).unwrap();
    let mut s = exp.point(0).unwrap().scenario;
    s.sim.duration_s = Some(3600.0);
    // Keep the bus master; the game's allocation would end the MoE run with a kill.
    s.sim.background.retain(|b| matches!(b, memwall::spec::BackgroundEvent::Bandwidth { .. }));
    if dense {
        s.model = memwall::lab::load_model("llama-3.2-3b").unwrap();
        s.weights = memwall::spec::WeightQuant::new("Q4_K_M".parse().unwrap());
        s.sim.storage.expert_cache_bytes = None;
    }
    s
}

fn session(c: &mut Criterion) {
    let mut g = c.benchmark_group("session_1h");
    g.sample_size(10);
    for (name, dense) in [("llama_3b_dense", true), ("moe_35b_expert_cache", false)] {
        let s = hour(dense);
        let summary = simulate(&s, &mut NullSink).unwrap();
        println!(
            "{name}: {} decoded tokens, {} events, {} trace rows, burst {:.2} / sustained {:.2} tok/s, max die {:.1} °C",
            summary.decode_tokens,
            summary.events,
            summary.rows,
            summary.burst_tok_s,
            summary.sustained_tok_s,
            summary.max_die_c
        );
        g.throughput(Throughput::Elements(summary.decode_tokens));
        g.bench_function(name, |b| b.iter(|| Simulator::new(&s).unwrap().run(&mut NullSink, &mut |_| {}).unwrap()));
    }
    g.finish();
}

criterion_group!(benches, queue, session);
criterion_main!(benches);
