//! The simulation loop.
//!
//! The run is a chain of *steps* (model load, prefill chunks, decoded tokens, think time,
//! policy pauses, reloads), each timed when it starts by the estimator's cost functions
//! under the conditions of that moment: governor frequency, bandwidth left by other bus
//! masters and the memory governor, what the caches hold, what must come from flash.
//! Around the chain, timed events fire in (time, insertion) order: governor polls,
//! background allocations and bus masters, the end of the run. Temperatures are integrated
//! exactly from event to event under the power of the step in flight.
//!
//! A decoded token's work is the estimator's [`CostPlan::decode_work`] (the per-tensor,
//! per-layer sum of weight, expert, KV and state bytes and arithmetic); the cache model
//! replays the same token layer by layer (each layer's dense weights, its KV, its experts)
//! through the LRU levels.

use memwall_spec::{
    BackgroundEvent, CacheMode, LayerKind, MemorySim, Routing, Scenario, TensorClass, ThermalSpec, WeightQuant,
};
use rand::SeedableRng;
use rand::rngs::SmallRng;
use serde::Serialize;

use super::cache::LruBytes;
use super::pipeline::{OpKind, decode_ops};
use super::policy::{self, MemoryAction, Policy, View};
use super::queue::{EventQueue, Nanos, to_ns, to_s};
use super::routing::Router;
use super::thermal::{Governor, ThermalModel, dynamic_power_w};
use super::trace::{Phase, TraceRow, TraceSink};
use crate::SimError;
use crate::analytic::{Conditions, CostPlan, StepTime, StepWork, attended_tokens};
use crate::footprint::{kv_cache_bytes, resident_weight_bytes, weights_memory_mapped};

/// What a run reports.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    /// Simulated time at the end, seconds.
    pub duration_s: f64,
    /// Model load time, seconds.
    pub load_s: f64,
    /// First turn: prompt submitted → prefill done, seconds.
    pub ttft_s: f64,
    /// Tokens decoded (all sequences).
    pub decode_tokens: u64,
    /// Time spent decoding, seconds.
    pub decode_s: f64,
    /// Decode tokens/s while decoding (`decode_tokens / decode_s`).
    pub decode_tok_s: f64,
    /// Generation tokens/s over the first 30 s of decoding (decode steps and policy pauses;
    /// prefill and think time excluded).
    pub burst_tok_s: f64,
    /// Generation tokens/s over the last 60 s of the run, measured alike.
    pub sustained_tok_s: f64,
    /// Time of the first throttle, seconds.
    pub throttle_onset_s: Option<f64>,
    /// Seconds after decoding began when the generation rate over a trailing 10 s window
    /// first fell 10 % below the rate of the first 10 s.
    pub time_to_minus_10pct_s: Option<f64>,
    /// Likewise for 25 %.
    pub time_to_minus_25pct_s: Option<f64>,
    /// Energy of the whole run, joules.
    pub energy_j: f64,
    /// Energy of decode steps per decoded token, joules.
    pub j_per_token: f64,
    /// Highest memory held by the model, bytes.
    pub peak_resident_bytes: u64,
    /// Bytes read from storage (load, reloads, paging, expert misses).
    pub flash_bytes: f64,
    /// Highest die temperature, °C.
    pub max_die_c: f64,
    /// Highest skin temperature, °C.
    pub max_skin_c: f64,
    /// Whether the low-memory killer ended the run, and when.
    pub killed_at_s: Option<f64>,
    /// Policy actions, `"t=12.3s truncate_context: keep 2048"`.
    pub actions: Vec<String>,
    /// Turns completed.
    pub turns: u32,
    /// Events processed.
    pub events: u64,
    /// Trace rows written.
    pub rows: u64,
}

#[derive(Debug, Clone, Copy)]
enum Ev {
    StepDone(u64),
    Poll,
    BgStart(u32),
    BgEnd(u32),
    End,
}

/// One configured run; add custom policies with [`Simulator::with_policy`].
pub struct Simulator {
    scenario: Scenario,
    policies: Vec<Box<dyn Policy>>,
}

impl std::fmt::Debug for Simulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulator")
            .field("scenario", &self.scenario.model.name)
            .field("policies", &self.policies.iter().map(|p| p.name().to_string()).collect::<Vec<_>>())
            .finish()
    }
}

/// Simulate a scenario with its configured policies.
pub fn simulate(s: &Scenario, sink: &mut dyn TraceSink) -> Result<Summary, SimError> {
    Simulator::new(s)?.run(sink, &mut |_| {})
}

impl Simulator {
    /// Validate the scenario and set up its configured policies.
    pub fn new(s: &Scenario) -> Result<Self, SimError> {
        s.validate()?;
        if s.sim.storage.expert_cache_bytes.is_some() {
            if s.model.moe.is_none() {
                return Err(SimError::Spec(memwall_spec::SpecError::invalid(
                    "sim.storage.expert_cache_bytes",
                    s.sim.storage.expert_cache_bytes.unwrap_or(0),
                    format!("model `{}` has no routed experts", s.model.name),
                )));
            }
            if s.sim.routing == Routing::Expected {
                return Err(SimError::Spec(memwall_spec::SpecError::invalid(
                    "sim.routing.mode",
                    "expected",
                    "an expert cache needs expert identities: use `sampled`",
                )));
            }
        }
        let policies = s.sim.policies.iter().map(policy::from_spec).collect();
        Ok(Simulator { scenario: s.clone(), policies })
    }

    /// Add a policy after the configured ones.
    pub fn with_policy(mut self, p: Box<dyn Policy>) -> Self {
        self.policies.push(p);
        self
    }

    /// Run to the end of the session (or `duration_s`), streaming rows into `sink` and
    /// calling `progress(simulated seconds)` every few thousand events.
    pub fn run(&mut self, sink: &mut dyn TraceSink, progress: &mut dyn FnMut(f64)) -> Result<Summary, SimError> {
        let mut run = Run::new(&self.scenario)?;
        run.execute(&mut self.policies, sink, progress)
    }
}

/// Where the session stands.
#[derive(Debug, Clone, Copy)]
struct Cursor {
    /// Index in the turn list.
    idx: usize,
    /// Repetition of the list.
    rep: u32,
    /// Turns started overall.
    global: u32,
    prompt_left: u64,
    gen_left: u64,
    think_done: bool,
    turn_start_s: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Load,
    Prefill { n: u64 },
    Decode,
    Think,
    Pause,
    Reload,
}

/// The run-time conditions a step is timed and powered under.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Clocks {
    /// Frequency scale of the governor's level.
    freq: f64,
    /// Voltage scale of that level.
    volt: f64,
    /// DRAM bandwidth scale (memory governor step × share other bus masters leave).
    bw: f64,
    /// Share of time the unit works under idle injection (1 = none).
    duty: f64,
}

impl Clocks {
    /// Dynamic power of a unit drawing `p_max_w` at full clock: `P f V² × duty`, W.
    fn dynamic_w(&self, p_max_w: f64) -> f64 {
        dynamic_power_w(p_max_w, self.freq, self.volt) * self.duty
    }
}

/// How a step's duration depends on the conditions of the moment, so that a step the
/// governor or a bus master interrupts is re-timed for the work it has left.
#[derive(Debug, Clone, Copy)]
enum StepCost {
    /// Storage reads, think time and pauses: no DVFS or bus share changes them.
    Fixed,
    /// A prefill chunk: one sequence's work, run `batch` times, plus storage seconds.
    Prefill { work: StepWork, flash_s: f64 },
    /// A decoded token: its work and what the on-chip caches served, plus storage seconds.
    Decode { work: StepWork, cached: Option<(f64, f64)>, flash_s: f64 },
}

/// The step in flight.
#[derive(Debug, Clone)]
struct Step {
    id: u64,
    kind: Kind,
    start_s: f64,
    dur_s: f64,
    dram_bytes: f64,
    cache_bytes: f64,
    flash_bytes: f64,
    dynamic_w: f64,
    dram_w: f64,
    energy_j: f64,
    cost: StepCost,
    /// Fraction of the step's work done before `seg_s`.
    done: f64,
    /// Start of the current slice (the step's start or its last re-timing), seconds.
    seg_s: f64,
    /// The whole step's duration under the current slice's conditions, seconds.
    full_s: f64,
    /// Frequency and bandwidth scales of the current slice.
    freq: f64,
    bw: f64,
    /// `∫ freq dt` and `∫ bw dt` over the finished slices (the row reports time means).
    freq_s: f64,
    bw_s: f64,
}

/// Generation throughput as a user sees it: decoded tokens over the time spent decoding
/// or held back by a policy (prefill and think time excluded).
#[derive(Debug, Clone, Default)]
struct Rates {
    /// Start of the first decode step.
    t0: Option<f64>,
    /// (tokens, seconds) over the first 30 s after `t0`.
    burst: (u64, f64),
    /// (tokens, seconds) over the first 10 s after `t0`: the reference for slowdowns.
    initial: (u64, f64),
    /// (end, tokens, seconds) of the steps in the last 60 s.
    recent: std::collections::VecDeque<(f64, u64, f64)>,
    /// (end, tokens, seconds) of the steps in the trailing 10 s.
    window: std::collections::VecDeque<(f64, u64, f64)>,
    minus_10: Option<f64>,
    minus_25: Option<f64>,
}

impl Rates {
    const BURST_S: f64 = 30.0;
    const SUSTAINED_S: f64 = 60.0;
    const WINDOW_S: f64 = 10.0;

    fn rate(q: &std::collections::VecDeque<(f64, u64, f64)>) -> f64 {
        let (n, d) = q.iter().fold((0u64, 0.0), |a, r| (a.0 + r.1, a.1 + r.2));
        if d > 0.0 { n as f64 / d } else { 0.0 }
    }

    /// A decode step (tokens > 0) or a policy pause (tokens = 0) from `start` lasting `dur`.
    fn record(&mut self, start: f64, dur: f64, tokens: u64) {
        let t0 = match self.t0 {
            Some(t) => t,
            None if tokens > 0 => *self.t0.insert(start),
            None => return,
        };
        let end = start + dur;
        if end <= t0 + Self::BURST_S {
            self.burst.0 += tokens;
            self.burst.1 += dur;
        }
        if end <= t0 + Self::WINDOW_S {
            self.initial.0 += tokens;
            self.initial.1 += dur;
        }
        self.recent.push_back((end, tokens, dur));
        while self.recent.front().is_some_and(|r| r.0 < end - Self::SUSTAINED_S) {
            self.recent.pop_front();
        }
        self.window.push_back((end, tokens, dur));
        while self.window.front().is_some_and(|r| r.0 < end - Self::WINDOW_S) {
            self.window.pop_front();
        }
        // Slowdowns: the trailing 10 s window against the first 10 s of decoding.
        if end > t0 + Self::WINDOW_S && self.initial.1 > 0.0 {
            let (first, now) = (self.initial.0 as f64 / self.initial.1, Self::rate(&self.window));
            if self.minus_10.is_none() && now < 0.9 * first {
                self.minus_10 = Some(end - t0);
            }
            if self.minus_25.is_none() && now < 0.75 * first {
                self.minus_25 = Some(end - t0);
            }
        }
    }

    fn burst(&self) -> f64 {
        if self.burst.1 > 0.0 { self.burst.0 as f64 / self.burst.1 } else { 0.0 }
    }

    fn sustained(&self) -> f64 {
        Self::rate(&self.recent)
    }
}

/// Where the model's memory stands.
#[derive(Debug, Clone, Copy)]
struct Residency {
    /// Weight bytes held in DRAM.
    weights: u64,
    /// Bytes the model holds in DRAM.
    resident: u64,
    /// Fraction of the dense weights paged from flash on every use.
    paged: f64,
    /// Free memory, bytes.
    free: i64,
    /// Memory left for the model after its anonymous bytes.
    room: i64,
    /// DRAM the expert cache may use, bytes.
    expert_cap: f64,
}

/// Cache objects of one plan.
#[derive(Debug, Clone)]
struct Objects {
    /// Per layer: dense weight bytes.
    layer_bytes: Vec<f64>,
    /// Bytes of tensors outside the layers read per token (output head, norms).
    global_bytes: f64,
    /// Per layer: `Some(kind)` when it holds a KV cache.
    kv_kind: Vec<Option<LayerKind>>,
    /// Per layer: KV bytes per cached token (all sequences), 0 where it holds no cache.
    kv_token_bytes: Vec<f64>,
    window: u64,
    /// MoE layer index per layer.
    moe_of_layer: Vec<Option<usize>>,
    /// Bytes of one expert in one MoE layer.
    expert_bytes: f64,
    n_experts: usize,
}

impl Objects {
    fn new(s: &Scenario, plan: &CostPlan) -> Self {
        let m = &s.model;
        let n = m.n_layers as usize;
        // The token's per-layer operations: each layer's weights but its routed experts
        // (walked one by one) form one object; the embedding row and the head another.
        let mut layer_bytes = vec![0.0; n];
        let mut global_bytes = 0.0;
        for op in decode_ops(plan, 0) {
            match (op.layer, op.kind) {
                (_, OpKind::Experts) => {}
                (Some(l), _) if (l as usize) < n => layer_bytes[l as usize] += op.weight_bytes,
                _ => global_bytes += op.weight_bytes,
            }
        }
        let mut moe_layers = Vec::new();
        for (t, _, _) in &plan.weights.tensors {
            if t.class == TensorClass::FfnUpExps
                && let Some(l) = t.layer
            {
                moe_layers.push(l as usize);
            }
        }
        let mut kv_kind = vec![None; n];
        for (l, k) in m.kv_cache_layers() {
            if (l as usize) < n {
                kv_kind[l as usize] = Some(k);
            }
        }
        let kv_token_bytes: Vec<f64> = (0..n)
            .map(|l| {
                let row = crate::footprint::kv_row_bytes(m.kv_row_elems_at(l as u32), s.kv.k, s.kv.v);
                if kv_kind[l].is_some() { row as f64 * s.workload.batch as f64 } else { 0.0 }
            })
            .collect();
        let mut moe_of_layer = vec![None; n];
        for (i, &l) in moe_layers.iter().enumerate() {
            if l < n {
                moe_of_layer[l] = Some(i);
            }
        }
        let (n_experts, expert_bytes) = match plan.moe() {
            Some(m) if m.layers > 0 => (m.n_experts as usize, plan.expert_bytes() / m.layers as f64),
            _ => (0, 0.0),
        };
        Objects {
            layer_bytes,
            global_bytes,
            kv_kind,
            kv_token_bytes,
            window: m.sliding_window.unwrap_or(u64::MAX),
            moe_of_layer,
            expert_bytes,
            n_experts,
        }
    }

    fn n_layers(&self) -> usize {
        self.layer_bytes.len()
    }

    /// Object ids: layer weights `0..n`, global `n`, KV `n+1..2n+1`, experts after.
    fn count(&self, moe_layers: usize) -> usize {
        2 * self.n_layers() + 1 + moe_layers * self.n_experts
    }
}

/// One on-chip cache level.
#[derive(Debug, Clone)]
struct Level {
    lru: LruBytes,
    bandwidth_bps: f64,
}

struct Run {
    events: String,
    cur: Scenario,
    plan: CostPlan,
    objects: Objects,
    levels: Vec<Level>,
    router: Option<Router>,
    expert_cache: Option<LruBytes>,
    rng: SmallRng,
    queue: EventQueue<Ev>,
    now: Nanos,
    /// Exact end time of the step chain, seconds (event times are its rounding).
    clock_s: f64,
    thermal: Option<(ThermalModel, Governor)>,
    last_thermal: Nanos,
    ambient_c: f64,
    step: Option<Step>,
    next_id: u64,
    cursor: Cursor,
    turns: Vec<memwall_spec::Turn>,
    ctx: u64,
    capacity: u64,
    loaded: bool,
    reload: Option<f64>,
    done: bool,
    killed: bool,
    bg_alloc: u64,
    bg_share: f64,
    storage_bps: f64,
    last_token_s: Option<f64>,
    last_token_start_s: Option<f64>,
    tokens: u64,
    summary: Summary,
    rates: Rates,
    decode_energy: f64,
    expert_ids: Vec<u32>,
    expert_offsets: Vec<usize>,
}

impl Run {
    fn new(s: &Scenario) -> Result<Self, SimError> {
        let cfg = &s.sim;
        let plan = CostPlan::new(s)?;
        let objects = Objects::new(s, &plan);
        let mut rng = SmallRng::seed_from_u64(cfg.seed);
        let moe_layers = plan.moe().map_or(0, |m| m.layers as usize);
        let levels = if cfg.cache == CacheMode::Lru { cache_levels(s, objects.count(moe_layers)) } else { Vec::new() };
        let router = match (plan.moe(), cfg.routing) {
            (Some(m), Routing::Sampled { correlation }) if m.layers > 0 => Some(Router::new(
                m.n_experts,
                m.top_k,
                m.layers as usize,
                s.workload.batch,
                s.workload.routing_skew,
                correlation,
                &mut rng,
            )),
            _ => None,
        };
        let expert_cache =
            cfg.storage.expert_cache_bytes.map(|b| LruBytes::new(b as f64, moe_layers * objects.n_experts));
        let thermal = if cfg.thermal.enabled {
            let (spec, origin): (ThermalSpec, &str) = match (&cfg.thermal.spec, &s.device.thermal) {
                (Some(t), _) => (t.clone(), "sim.thermal.spec"),
                (None, Some(t)) => (t.clone(), "device.thermal"),
                (None, None) => (ThermalSpec::generic_phone(), "generic phone network"),
            };
            let start = cfg.thermal.start_c.unwrap_or(spec.ambient_c);
            // Errors about the network's own fields get its path; `power.static_w` and
            // `thermal.start_c` already name theirs.
            let generic = origin == "generic phone network";
            let model = ThermalModel::new(&spec, s.device.power.static_w, start).map_err(|e| match e {
                // The generic network cannot describe a device whose static power runs it away.
                SimError::Spec(memwall_spec::SpecError::Invalid { field, reason, .. })
                    if generic && field == "leakage_per_c" =>
                {
                    SimError::Spec(memwall_spec::SpecError::invalid(
                        "power.static_w",
                        s.device.power.static_w,
                        format!(
                            "on the generic phone network (the device has no [thermal] table) the static power \
                             alone runs the die away ({reason}): no governor can hold it, so that network does not \
                             describe this device; give the device its own [thermal] table, set sim.thermal.spec, \
                             or disable sim.thermal"
                        ),
                    ))
                }
                SimError::Spec(memwall_spec::SpecError::Invalid { field, value, reason })
                    if !field.starts_with("power.") && !field.starts_with("thermal.") =>
                {
                    SimError::Spec(memwall_spec::SpecError::Invalid { field, value, reason }.within(origin))
                }
                other => other,
            })?;
            check_holds_idle(&model, &spec, origin, s.device.power.static_w)?;
            Some((model, Governor::new(&spec.governor)))
        } else {
            None
        };
        let ambient_c = thermal.as_ref().map_or(25.0, |t| t.0.ambient_c());
        let turns = if cfg.session.turns.is_empty() {
            vec![memwall_spec::Turn {
                prompt_tokens: s.workload.prompt_tokens,
                gen_tokens: s.workload.gen_tokens,
                think_s: 0.0,
            }]
        } else {
            cfg.session.turns.clone()
        };
        let cursor = Cursor {
            idx: 0,
            rep: 0,
            global: 0,
            prompt_left: turns[0].prompt_tokens,
            gen_left: turns[0].gen_tokens,
            think_done: false,
            turn_start_s: 0.0,
        };
        Ok(Run {
            events: String::new(),
            capacity: s.workload.context_tokens,
            storage_bps: s.device.storage.read_gbps * 1e9,
            cur: s.clone(),
            plan,
            objects,
            levels,
            router,
            expert_cache,
            rng,
            queue: EventQueue::new(),
            now: 0,
            clock_s: 0.0,
            thermal,
            last_thermal: 0,
            ambient_c,
            step: None,
            next_id: 0,
            cursor,
            turns,
            ctx: 0,
            loaded: !cfg.storage.load,
            reload: None,
            done: false,
            killed: false,
            bg_alloc: 0,
            bg_share: 0.0,
            last_token_s: None,
            last_token_start_s: None,
            tokens: 0,
            summary: Summary::default(),
            rates: Rates::default(),
            decode_energy: 0.0,
            expert_ids: Vec::new(),
            expert_offsets: Vec::new(),
        })
    }

    fn execute(
        &mut self,
        policies: &mut [Box<dyn Policy>],
        sink: &mut dyn TraceSink,
        progress: &mut dyn FnMut(f64),
    ) -> Result<Summary, SimError> {
        if let Some(d) = self.cur.sim.duration_s {
            self.queue.push(to_ns(d), Ev::End);
        }
        for (i, b) in self.cur.sim.background.iter().enumerate() {
            let at = match b {
                BackgroundEvent::Alloc { at_s, .. } | BackgroundEvent::Bandwidth { at_s, .. } => *at_s,
            };
            self.queue.push(to_ns(at), Ev::BgStart(i as u32));
        }
        if let Some((_, g)) = &self.thermal {
            self.queue.push(to_ns(g.poll_s()), Ev::Poll);
        }
        self.summary.max_die_c = self.die_c();
        self.summary.max_skin_c = self.skin_c();
        self.check_memory(policies, 0.0);
        self.start_next(policies);
        while let Some((t, ev)) = self.queue.pop() {
            self.advance_thermal(t);
            self.now = t;
            self.summary.events += 1;
            if self.summary.events.is_multiple_of(4096) {
                progress(to_s(t));
            }
            match ev {
                Ev::StepDone(id) => {
                    if self.step.as_ref().is_some_and(|s| s.id == id) {
                        self.finish_step(sink)?;
                        self.start_next(policies);
                    }
                }
                Ev::Poll => {
                    let mut change = None;
                    let before = self.clocks();
                    if let Some((th, g)) = &mut self.thermal {
                        change = g.poll(th.die_c(), th.skin_c());
                        if !self.done {
                            self.queue.push(t + to_ns(g.poll_s()).max(1), Ev::Poll);
                        }
                    }
                    if let Some((a, b)) = change {
                        if b > a && self.summary.throttle_onset_s.is_none() {
                            self.summary.throttle_onset_s = Some(to_s(t));
                        }
                        self.note(format!("throttle {a}→{b}"));
                    }
                    let after = self.clocks();
                    if after.duty != before.duty {
                        self.note(format!("idle injection: duty {:.0}%", after.duty * 100.0));
                    }
                    if after != before {
                        self.retime();
                    }
                }
                Ev::BgStart(i) => self.background(i as usize, true, policies, t),
                Ev::BgEnd(i) => self.background(i as usize, false, policies, t),
                Ev::End => self.done = true,
            }
            if self.done {
                if self.step.is_some() {
                    self.finish_step(sink)?;
                }
                break;
            }
            if self.step.is_none() && !self.done {
                self.start_next(policies);
            }
            if self.step.is_none() {
                // Nothing left to run: the session is over.
                break;
            }
        }
        progress(to_s(self.now));
        self.summary.duration_s = to_s(self.now);
        let s = &mut self.summary;
        s.decode_tok_s = if s.decode_s > 0.0 { s.decode_tokens as f64 / s.decode_s } else { 0.0 };
        s.burst_tok_s = self.rates.burst();
        s.sustained_tok_s = self.rates.sustained();
        s.time_to_minus_10pct_s = self.rates.minus_10;
        s.time_to_minus_25pct_s = self.rates.minus_25;
        s.j_per_token = if s.decode_tokens > 0 { self.decode_energy / s.decode_tokens as f64 } else { 0.0 };
        Ok(self.summary.clone())
    }

    /// The time the next step starts at, seconds: the exact end of the step chain, unless the
    /// clock has moved past it by more than the nanosecond rounding of event times (the chain
    /// waited for an event). Without the tolerance every step would start up to 1 ns late.
    fn chain_time_s(&self) -> f64 {
        let now = to_s(self.now);
        if now > self.clock_s + 1e-9 { now } else { self.clock_s }
    }

    fn die_c(&self) -> f64 {
        self.thermal.as_ref().map_or(self.ambient_c, |t| t.0.die_c())
    }

    fn skin_c(&self) -> f64 {
        self.thermal.as_ref().map_or(self.ambient_c, |t| t.0.skin_c())
    }

    fn level(&self) -> usize {
        self.thermal.as_ref().map_or(0, |t| t.1.level())
    }

    /// Record an event on the row of the step in flight (or of the next one).
    fn note(&mut self, e: String) {
        if !self.events.is_empty() {
            self.events.push_str("; ");
        }
        self.events.push_str(&e);
    }

    /// Integrate temperatures (and the step's energy) up to `t`.
    fn advance_thermal(&mut self, t: Nanos) {
        if t <= self.last_thermal {
            return;
        }
        let dt = to_s(t - self.last_thermal);
        self.last_thermal = t;
        let Some(step) = &mut self.step else {
            if let Some((th, _)) = &mut self.thermal {
                self.summary.energy_j += th.advance(dt, 0.0, 0.0);
            }
            return;
        };
        if let Some((th, _)) = &mut self.thermal {
            step.energy_j += th.advance(dt, step.dynamic_w, step.dram_w);
            self.summary.max_die_c = self.summary.max_die_c.max(th.die_c());
            self.summary.max_skin_c = self.summary.max_skin_c.max(th.skin_c());
        }
    }

    /// Current memory picture. Anonymous memory is the KV cache, recurrent state, compute
    /// buffers, runtime overhead, and the weights unless they are memory-mapped; mapped
    /// weights are page cache, which the kernel evicts under pressure (keeping
    /// `lmk_free_bytes` free) before the low-memory killer acts on anonymous memory.
    fn residency(&self) -> Residency {
        let s = &self.cur;
        let wl = &s.workload;
        let kv_tokens = match wl.context_policy {
            memwall_spec::ContextPolicy::Allocate => self.capacity,
            memwall_spec::ContextPolicy::Grow => self.ctx.max(1),
        };
        let fp = &self.plan.footprint;
        // At most the validated footprint's KV cache (kv_tokens <= capacity), so within 2^60.
        let kv =
            u64::try_from(kv_cache_bytes(&s.model, s.kv.k, s.kv.v, kv_tokens, wl.ubatch, wl.batch)).unwrap_or(u64::MAX);
        let mut anon = kv + fp.state + fp.compute + fp.overhead;
        // Weights wanted in DRAM: all of them, or the dense part plus the expert cache.
        let experts = self.plan.expert_bytes() * self.objects.n_experts as f64;
        let (dense, cache) = match self.cur.sim.storage.expert_cache_bytes {
            Some(c) => (fp.weights.saturating_sub(experts as u64), (c as f64).min(experts) as u64),
            None => (fp.weights, 0),
        };
        let mut file = dense + cache;
        let mapped = weights_memory_mapped(&self.cur);
        if !mapped {
            anon += file;
            file = 0;
        }
        let mem = &s.device.memory;
        let avail =
            mem.ram_bytes as i64 - mem.os_reserved_bytes as i64 - mem.other_apps_bytes as i64 - self.bg_alloc as i64;
        let room = avail - anon as i64;
        let resident_file = if self.cur.sim.memory.pressure {
            resident_weight_bytes(file, room, self.cur.sim.memory.lmk_free_bytes)
        } else {
            file
        };
        let (dense_resident, expert_cap) = if mapped {
            // The dense weights are touched every token; the page cache keeps them first.
            let d = resident_file.min(dense);
            (d, (resident_file - d) as f64)
        } else {
            (dense, cache as f64)
        };
        Residency {
            weights: if mapped { resident_file } else { dense + cache },
            resident: anon + resident_file,
            paged: if dense > 0 { 1.0 - dense_resident as f64 / dense as f64 } else { 0.0 },
            free: room - resident_file as i64,
            room,
            expert_cap,
        }
    }

    fn view<'a>(&self, weights: &'a WeightQuant) -> View<'a> {
        let Residency { resident, free, .. } = self.residency();
        View {
            now_s: to_s(self.now),
            die_c: self.die_c(),
            skin_c: self.skin_c(),
            level: self.level(),
            context: self.ctx,
            capacity: self.capacity,
            free_bytes: free,
            resident_bytes: resident,
            last_token_s: self.last_token_s,
            since_token_start_s: self.last_token_start_s.map(|t| self.chain_time_s() - t),
            batch: self.cur.workload.batch,
            weights,
        }
    }

    /// Act on low memory: policies in order, else the kill.
    fn check_memory(&mut self, policies: &mut [Box<dyn Policy>], t_s: f64) {
        if !self.cur.sim.memory.pressure || self.killed {
            return;
        }
        let MemorySim { lmk_free_bytes, .. } = self.cur.sim.memory;
        for _ in 0..=policies.len() {
            if self.residency().room >= lmk_free_bytes as i64 {
                return;
            }
            let weights = self.cur.weights.clone();
            let view = self.view(&weights);
            let action = policies.iter_mut().find_map(|p| p.on_low_memory(&view).map(|a| (p.name().to_string(), a)));
            match action {
                Some((name, MemoryAction::TruncateContext { keep_tokens })) => {
                    self.capacity = self.capacity.min(keep_tokens).max(1);
                    self.ctx = self.ctx.min(self.capacity);
                    self.act(format!("t={t_s:.1}s {name}: keep {keep_tokens} tokens"));
                }
                Some((name, MemoryAction::SwitchWeights(w))) => {
                    let label = w.mix.to_string();
                    if let Err(e) = self.switch_weights(w) {
                        self.act(format!("t={t_s:.1}s {name}: failed ({e})"));
                        continue;
                    }
                    self.act(format!("t={t_s:.1}s {name}: reload as {label}"));
                }
                None => {
                    self.killed = true;
                    self.summary.killed_at_s = Some(t_s);
                    self.act(format!("t={t_s:.1}s kill: free memory below {lmk_free_bytes} B"));
                    self.done = true;
                    return;
                }
            }
        }
    }

    fn act(&mut self, text: String) {
        let short = text.split_once(' ').map_or(text.as_str(), |x| x.1).to_string();
        self.note(short);
        self.summary.actions.push(text);
    }

    fn switch_weights(&mut self, w: WeightQuant) -> Result<(), SimError> {
        let mut s = self.cur.clone();
        s.weights = w;
        let plan = CostPlan::new(&s)?;
        self.objects = Objects::new(&s, &plan);
        let moe_layers = plan.moe().map_or(0, |m| m.layers as usize);
        if self.cur.sim.cache == CacheMode::Lru {
            self.levels = cache_levels(&s, self.objects.count(moe_layers));
        }
        if let Some(c) = &self.expert_cache {
            self.expert_cache = Some(LruBytes::new(c.capacity(), moe_layers * self.objects.n_experts));
        }
        self.reload = Some(plan.footprint.weights as f64);
        self.plan = plan;
        self.cur = s;
        Ok(())
    }

    fn background(&mut self, i: usize, start: bool, policies: &mut [Box<dyn Policy>], t: Nanos) {
        match self.cur.sim.background[i].clone() {
            BackgroundEvent::Alloc { bytes, duration_s, .. } => {
                if start {
                    self.bg_alloc += bytes;
                    self.note(format!("alloc +{:.2} GB", bytes as f64 / 1e9));
                    if let Some(d) = duration_s {
                        self.queue.push(t + to_ns(d), Ev::BgEnd(i as u32));
                    }
                    self.check_memory(policies, to_s(t));
                } else {
                    self.bg_alloc -= bytes;
                    self.note(format!("free -{:.2} GB", bytes as f64 / 1e9));
                }
            }
            BackgroundEvent::Bandwidth { duration_s, share, .. } => {
                if start {
                    self.bg_share += share;
                    self.note(format!("bus master {:.0}%", share * 100.0));
                    self.queue.push(t + to_ns(duration_s), Ev::BgEnd(i as u32));
                } else {
                    self.bg_share -= share;
                    self.note(format!("bus master -{:.0}%", share * 100.0));
                }
                self.retime();
            }
        }
    }

    /// The clocks of this moment: the governor's level and duty cycle, and the DRAM share
    /// other bus masters leave.
    fn clocks(&self) -> Clocks {
        let (freq, volt, mem, duty) = self
            .thermal
            .as_ref()
            .map_or((1.0, 1.0, 1.0, 1.0), |(_, g)| (g.freq_scale(), g.volt_scale(), g.mem_scale(), g.duty()));
        let share = (1.0 - self.bg_share).max(0.05);
        Clocks { freq, volt, bw: if share == 1.0 { mem } else { mem * share }, duty }
    }

    /// Replay one decode step through the caches: (bytes served on chip, their seconds,
    /// flash bytes of expert misses, distinct experts per MoE layer summed).
    fn replay(&mut self) -> (f64, f64, f64, Option<f64>) {
        let o = &self.objects;
        let n = o.n_layers();
        // Draw experts (identities matter for the caches; counts for batches) into a flat
        // buffer: layer m's experts are `ids[offsets[m]..offsets[m + 1]]`.
        let need_ids = !self.levels.is_empty() || self.expert_cache.is_some() || self.cur.workload.batch > 1;
        let (ids, offsets) = (&mut self.expert_ids, &mut self.expert_offsets);
        ids.clear();
        offsets.clear();
        if let Some(r) = &mut self.router
            && need_ids
        {
            offsets.push(0);
            r.step(&mut self.rng, |_, e| {
                ids.extend_from_slice(e);
                offsets.push(ids.len());
            });
        }
        let distinct = (!offsets.is_empty()).then_some(ids.len() as f64);
        let mut flash = 0.0;
        if let Some(c) = &mut self.expert_cache {
            for l in 0..offsets.len().saturating_sub(1) {
                for &e in &ids[offsets[l]..offsets[l + 1]] {
                    let id = l * o.n_experts + e as usize;
                    flash += o.expert_bytes - c.access(id, o.expert_bytes);
                }
            }
        }
        if self.levels.is_empty() {
            return (0.0, 0.0, flash, distinct);
        }
        let mut served = vec![0.0; self.levels.len()];
        let expert_base = 2 * n + 1;
        let mut touch = |levels: &mut [Level], id: usize, bytes: f64| {
            let mut prev = 0.0;
            for (i, lv) in levels.iter_mut().enumerate() {
                let h = lv.lru.access(id, bytes);
                if h > prev {
                    served[i] += h - prev;
                    prev = h;
                }
            }
        };
        let ctx = self.ctx + 1;
        for l in 0..n {
            touch(&mut self.levels, l, o.layer_bytes[l]);
            if let Some(kind) = o.kv_kind[l] {
                let kv = attended_tokens(kind, ctx, o.window) as f64 * o.kv_token_bytes[l];
                touch(&mut self.levels, n + 1 + l, kv);
            }
            if let Some(m) = o.moe_of_layer[l]
                && m + 1 < offsets.len()
            {
                for &e in &ids[offsets[m]..offsets[m + 1]] {
                    touch(&mut self.levels, expert_base + m * o.n_experts + e as usize, o.expert_bytes);
                }
            }
        }
        touch(&mut self.levels, n, o.global_bytes);
        let bytes: f64 = served.iter().sum();
        let secs: f64 = served.iter().zip(&self.levels).map(|(b, lv)| b / lv.bandwidth_bps).sum();
        (bytes, secs, flash, distinct)
    }

    fn start_next(&mut self, policies: &mut [Box<dyn Policy>]) {
        if self.done || self.killed || self.step.is_some() {
            return;
        }
        let start_s = self.chain_time_s();
        if let Some(bytes) = self.reload.take() {
            self.begin(Kind::Reload, start_s, bytes / self.storage_bps, 0.0, 0.0, bytes, 0.0, StepCost::Fixed);
            return;
        }
        if !self.loaded {
            // The weights that will stay resident; the expert cache starts cold.
            let bytes = self.residency().weights as f64;
            self.begin(Kind::Load, start_s, bytes / self.storage_bps, 0.0, 0.0, bytes, 0.0, StepCost::Fixed);
            return;
        }
        let clocks = self.clocks();
        if self.cursor.prompt_left == 0 && self.cursor.gen_left == 0 {
            let think = self.turns[self.cursor.idx].think_s;
            if think > 0.0 && !self.cursor.think_done {
                self.cursor.think_done = true;
                self.begin(Kind::Think, start_s, think, 0.0, 0.0, 0.0, 0.0, StepCost::Fixed);
                return;
            }
            // Next turn.
            self.summary.turns += 1;
            let mut c = self.cursor;
            c.idx += 1;
            if c.idx == self.turns.len() {
                c.idx = 0;
                c.rep += 1;
                let repeat = self.cur.sim.session.repeat;
                if repeat != 0 && c.rep >= repeat {
                    self.done = true;
                    return;
                }
                if self.cur.sim.session.fresh_context {
                    self.ctx = 0;
                }
            }
            c.global += 1;
            c.prompt_left = self.turns[c.idx].prompt_tokens;
            c.gen_left = self.turns[c.idx].gen_tokens;
            c.think_done = false;
            c.turn_start_s = start_s;
            self.cursor = c;
        }
        if self.cursor.global == 0 && self.cursor.prompt_left == self.turns[0].prompt_tokens {
            // The first turn starts once the model is loaded.
            self.cursor.turn_start_s = start_s;
        }
        let dynamic = clocks.dynamic_w(self.plan.compute_w());
        let cond = Conditions { freq_scale: clocks.freq, bandwidth_scale: clocks.bw, cached: None };
        let res = self.residency();
        let paged = res.paged;
        if let Some(c) = &mut self.expert_cache {
            c.set_capacity(res.expert_cap);
        }
        let batch = self.cur.workload.batch as f64;
        if self.cursor.prompt_left > 0 {
            let n = self.cursor.prompt_left.min(self.cur.workload.ubatch).min(self.capacity);
            self.make_room(n);
            let w = self.plan.prefill_work(self.ctx, n);
            let t = self.plan.prefill_step_at(&w, &cond);
            // A chunk touches most experts; those outside the expert cache come from flash
            // (the cache's resident share of all experts, not its LRU detail).
            let flash = match &self.expert_cache {
                Some(c) => {
                    let experts = self.plan.expert_bytes() * self.objects.n_experts as f64;
                    let expert_read = (w.weight_bytes - self.plan.dense_bytes).max(0.0);
                    paged * self.plan.dense_bytes + expert_read * (1.0 - (c.capacity() / experts).min(1.0))
                }
                None => paged * w.weight_bytes,
            };
            let cost = StepCost::Prefill { work: w, flash_s: flash / self.storage_bps };
            let dur = step_seconds(t.total * batch, flash / self.storage_bps, clocks.duty);
            let dram = self.plan.dram_bytes(&w, &t) * batch;
            self.begin(Kind::Prefill { n }, start_s, dur, dram, 0.0, flash, dynamic, cost);
            return;
        }
        // Decode: policies may hold the token back.
        let weights = self.cur.weights.clone();
        let view = self.view(&weights);
        if let Some(wait) = policies.iter_mut().find_map(|p| p.before_token(&view))
            && wait > 0.0
        {
            self.begin(Kind::Pause, start_s, wait, 0.0, 0.0, 0.0, 0.0, StepCost::Fixed);
            return;
        }
        self.make_room(1);
        let mut w = self.plan.decode_work(self.ctx);
        let (cached_b, cached_s, expert_flash, distinct) = self.replay();
        if let Some(d) = distinct {
            // Sampled routing: the experts this step actually touched.
            let expected =
                self.plan.decode_distinct_experts() * self.router.as_ref().map_or(0.0, |r| r.layers() as f64);
            let per = self.objects.expert_bytes;
            w.weight_bytes += (d - expected) * per;
        }
        let cached = (!self.levels.is_empty()).then_some((cached_b, cached_s));
        let cond = Conditions { cached, ..cond };
        let t: StepTime = self.plan.decode_step_at(&w, &cond);
        let flash = paged * self.dense_token_bytes(&w) + expert_flash;
        let cost = StepCost::Decode { work: w, cached, flash_s: flash / self.storage_bps };
        let dur = step_seconds(t.total, flash / self.storage_bps, clocks.duty);
        let dram =
            if self.levels.is_empty() { self.plan.dram_bytes(&w, &t) } else { w.weight_bytes + w.kv_bytes - cached_b };
        let cache = if self.levels.is_empty() { w.weight_bytes + w.kv_bytes - dram } else { cached_b };
        self.begin(Kind::Decode, start_s, dur, dram, cache, flash, dynamic, cost);
    }

    /// Weight bytes of a step outside the routed experts when those are offloaded.
    fn dense_token_bytes(&self, w: &StepWork) -> f64 {
        if self.expert_cache.is_some() { self.plan.dense_bytes } else { w.weight_bytes }
    }

    /// Shift the context so that `n` more tokens fit (dropping the oldest).
    fn make_room(&mut self, n: u64) {
        if self.ctx + n > self.capacity {
            let keep = self.capacity.saturating_sub(n);
            self.note(format!("context shift {}→{keep}", self.ctx));
            self.ctx = keep;
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn begin(
        &mut self,
        kind: Kind,
        start_s: f64,
        dur_s: f64,
        dram_bytes: f64,
        cache_bytes: f64,
        flash_bytes: f64,
        dynamic_w: f64,
        cost: StepCost,
    ) {
        let id = self.next_id;
        self.next_id += 1;
        let Clocks { freq, bw, duty, .. } = self.clocks();
        let freq = freq * duty;
        let pj = self.plan.dram_pj_per_bit();
        let dram_w = if dur_s > 0.0 { dram_bytes * 8.0 * pj * 1e-12 / dur_s } else { 0.0 };
        let end_s = start_s + dur_s;
        self.clock_s = end_s;
        self.step = Some(Step {
            id,
            kind,
            start_s,
            dur_s,
            dram_bytes,
            cache_bytes,
            flash_bytes,
            dynamic_w,
            dram_w,
            energy_j: 0.0,
            cost,
            done: 0.0,
            seg_s: start_s,
            full_s: dur_s,
            freq,
            bw,
            freq_s: 0.0,
            bw_s: 0.0,
        });
        self.queue.push(to_ns(end_s).max(self.now), Ev::StepDone(id));
    }

    /// Seconds the whole of a step's work takes under `clocks` (`None` for a step no
    /// condition changes).
    fn step_seconds(&self, cost: &StepCost, clocks: Clocks) -> Option<f64> {
        let cond = Conditions { freq_scale: clocks.freq, bandwidth_scale: clocks.bw, cached: None };
        match cost {
            StepCost::Fixed => None,
            StepCost::Prefill { work, flash_s } => {
                let t = self.plan.prefill_step_at(work, &cond).total * self.cur.workload.batch as f64;
                Some(step_seconds(t, *flash_s, clocks.duty))
            }
            StepCost::Decode { work, cached, flash_s } => {
                let t = self.plan.decode_step_at(work, &Conditions { cached: *cached, ..cond }).total;
                Some(step_seconds(t, *flash_s, clocks.duty))
            }
        }
    }

    /// Conditions changed mid-step (a governor level, a bus master): the step's work done so
    /// far is kept, and what is left is timed, powered and rescheduled under the new
    /// conditions. A step longer than the governor's poll interval thus runs as slices, each
    /// at the clock of its own moment, and the die heats at the power of that clock.
    ///
    /// With `d` the fraction of work done by the slice start `s₀` and `T` the whole step's
    /// duration under the old conditions, at time `t`: `d' = d + (t − s₀) / T`; the step ends
    /// at `t + (1 − d') T'` with `T'` its duration under the new conditions. DRAM power
    /// spreads the bytes left, `(1 − d') × dram_bytes`, over the time left.
    fn retime(&mut self) {
        let clocks = self.clocks();
        let Some(st) = &self.step else { return };
        let Some(full) = self.step_seconds(&st.cost, clocks) else { return };
        let now_s = to_s(self.now).max(st.seg_s);
        let elapsed = now_s - st.seg_s;
        let done = if st.full_s > 0.0 { (st.done + elapsed / st.full_s).min(1.0) } else { 1.0 };
        let left_s = (1.0 - done) * full;
        let end_s = now_s + left_s;
        let dynamic_w = if st.dynamic_w > 0.0 { clocks.dynamic_w(self.plan.compute_w()) } else { 0.0 };
        let pj = self.plan.dram_pj_per_bit();
        let id = self.next_id;
        self.next_id += 1;
        let Some(st) = &mut self.step else { return };
        st.dram_w = if left_s > 0.0 { (1.0 - done) * st.dram_bytes * 8.0 * pj * 1e-12 / left_s } else { 0.0 };
        st.freq_s += st.freq * elapsed;
        st.bw_s += st.bw * elapsed;
        (st.id, st.dur_s, st.dynamic_w, st.done) = (id, end_s - st.start_s, dynamic_w, done);
        (st.seg_s, st.full_s, st.freq, st.bw) = (now_s, full, clocks.freq * clocks.duty, clocks.bw);
        self.clock_s = end_s;
        self.queue.push(to_ns(end_s).max(self.now), Ev::StepDone(id));
    }

    fn finish_step(&mut self, sink: &mut dyn TraceSink) -> Result<(), SimError> {
        let Some(mut st) = self.step.take() else { return Ok(()) };
        // Cut short (a kill, the end of the run): the step's work did not complete.
        let cut = self.killed || self.done;
        if cut {
            st.dur_s = (to_s(self.now) - st.start_s).clamp(0.0, st.dur_s);
        }
        let end_s = st.start_s + st.dur_s;
        // Time means of the clock and bandwidth over the step's slices.
        let last = (end_s - st.seg_s).max(0.0);
        if st.dur_s > 0.0 && st.seg_s > st.start_s {
            st.freq = (st.freq_s + st.freq * last) / st.dur_s;
            st.bw = (st.bw_s + st.bw * last) / st.dur_s;
        }
        // Energy: exact under the thermal model (integrated per event); otherwise
        // `dram + (dynamic + static) × t` as the estimator has it.
        if self.thermal.is_none() {
            st.energy_j = st.dram_bytes * 8.0 * self.plan.dram_pj_per_bit() * 1e-12
                + (st.dynamic_w + self.plan.static_w()) * st.dur_s;
        }
        self.summary.energy_j += st.energy_j;
        self.summary.flash_bytes += st.flash_bytes;
        let batch = self.cur.workload.batch as u64;
        let (phase, tokens) = match st.kind {
            Kind::Load => {
                self.loaded = true;
                self.summary.load_s = st.dur_s;
                (Phase::Load, 0)
            }
            Kind::Reload => (Phase::Reload, 0),
            Kind::Think => (Phase::Think, 0),
            Kind::Pause => {
                self.rates.record(st.start_s, st.dur_s, 0);
                (Phase::Pause, 0)
            }
            Kind::Prefill { .. } if cut => (Phase::Prefill, 0),
            Kind::Decode if cut => (Phase::Decode, 0),
            Kind::Prefill { n } => {
                self.ctx += n;
                self.cursor.prompt_left -= n;
                if self.cursor.prompt_left == 0 && self.cursor.global == 0 && self.cursor.idx == 0 {
                    self.summary.ttft_s = end_s - self.cursor.turn_start_s;
                }
                (Phase::Prefill, n)
            }
            Kind::Decode => {
                self.ctx += 1;
                self.cursor.gen_left -= 1;
                self.tokens += batch;
                self.last_token_s = Some(st.dur_s);
                self.last_token_start_s = Some(st.start_s);
                let s = &mut self.summary;
                s.decode_tokens += batch;
                s.decode_s += st.dur_s;
                self.decode_energy += st.energy_j;
                self.rates.record(st.start_s, st.dur_s, batch);
                (Phase::Decode, 1)
            }
        };
        let Residency { resident, free, .. } = self.residency();
        self.summary.peak_resident_bytes = self.summary.peak_resident_bytes.max(resident);
        let row = TraceRow {
            time_s: end_s,
            token: self.tokens,
            turn: self.cursor.global,
            phase,
            latency_s: st.dur_s,
            context: self.ctx,
            tokens,
            dram_bytes: st.dram_bytes,
            cache_bytes: st.cache_bytes,
            flash_bytes: st.flash_bytes,
            freq_scale: st.freq,
            bandwidth_scale: st.bw,
            level: self.level() as u32,
            die_c: self.die_c(),
            skin_c: self.skin_c(),
            power_w: if st.dur_s > 0.0 { st.energy_j / st.dur_s } else { 0.0 },
            energy_j: st.energy_j,
            resident_bytes: resident,
            free_bytes: free,
            events: std::mem::take(&mut self.events),
        };
        sink.push(&row)?;
        self.summary.rows += 1;
        Ok(())
    }
}

/// Refuse a network on which the device's static power alone settles the die above its
/// critical temperature: no governor (DVFS or idle injection) can hold such a die, so the
/// temperatures and the throttling it would report describe another device (typically the
/// generic phone network applied to a laptop or a module with watts of static power).
fn check_holds_idle(model: &ThermalModel, spec: &ThermalSpec, origin: &str, static_w: f64) -> Result<(), SimError> {
    let Some(critical) = spec.governor.critical_c() else { return Ok(()) };
    let idle_c = model.steady_state_c(0.0, 0.0)[0];
    if idle_c.is_finite() && idle_c <= critical {
        return Ok(());
    }
    let network = match origin {
        "sim.thermal.spec" => "the network of sim.thermal.spec",
        "device.thermal" => "the device's own network",
        _ => "the generic phone network (the device has no [thermal] table)",
    };
    Err(SimError::Spec(memwall_spec::SpecError::invalid(
        "power.static_w",
        static_w,
        format!(
            "on {network} the static power alone settles the die at {idle_c:.0} °C, above its critical \
             temperature ({critical} °C): no governor can hold it, so that network does not describe this device; give \
             the device its own [thermal] table, set sim.thermal.spec, or disable sim.thermal"
        ),
    )))
}

/// Duration of a step whose unit works `compute_s` seconds of its own and waits `storage_s`
/// on flash, with the unit allowed to work `duty` of the time (idle injection):
/// `compute_s / duty + storage_s`, seconds.
fn step_seconds(compute_s: f64, storage_s: f64, duty: f64) -> f64 {
    compute_s / duty + storage_s
}

/// On-chip cache levels the threads use: per level, the caches of the clusters in use plus
/// the shared ones; usable capacity `size × cache_usable_fraction`, bandwidths summed.
fn cache_levels(s: &Scenario, objects: usize) -> Vec<Level> {
    let clusters: Vec<&str> = s.device.placement(s.threads()).iter().map(|(c, _)| c.name.as_str()).collect();
    let all: Vec<&str> = s.device.clusters.iter().map(|c| c.name.as_str()).collect();
    let mut levels: Vec<u32> = s.device.caches.iter().map(|c| c.level).collect();
    levels.sort_unstable();
    levels.dedup();
    levels
        .into_iter()
        .filter_map(|lv| {
            let used: Vec<_> = s
                .device
                .caches
                .iter()
                .filter(|c| {
                    c.level == lv && (clusters.contains(&c.shared_by.as_str()) || !all.contains(&c.shared_by.as_str()))
                })
                .collect();
            if used.is_empty() {
                return None;
            }
            let bytes: f64 = used.iter().map(|c| c.size_bytes as f64).sum::<f64>() * s.cost.cache_usable_fraction;
            let bw: f64 = used.iter().map(|c| c.bandwidth_gbps * 1e9).sum();
            Some(Level { lru: LruBytes::new(bytes, objects), bandwidth_bps: bw })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::Rates;

    #[test]
    fn rates_by_hand() {
        let mut r = Rates::default();
        // 0.1 s tokens for 30 s: 10 tok/s burst.
        let mut t = 5.0;
        for _ in 0..300 {
            r.record(t, 0.1, 1);
            t += 0.1;
        }
        assert!((r.burst() - 10.0).abs() < 1e-9);
        // Then 0.125 s tokens (8 tok/s, −20 %): −10 % is crossed once the trailing 10 s
        // window holds enough slow tokens, −25 % never.
        for _ in 0..800 {
            r.record(t, 0.125, 1);
            t += 0.125;
        }
        assert!((r.sustained() - 8.0).abs() < 1e-9);
        let m10 = r.minus_10.expect("crossed −10 %");
        assert!(m10 > 30.0 && m10 < 40.0, "{m10}");
        assert_eq!(r.minus_25, None);
        // Pauses count as generation time: 1 token per 0.125 s plus a 0.375 s pause = 2 tok/s.
        for _ in 0..200 {
            r.record(t, 0.125, 1);
            r.record(t + 0.125, 0.375, 0);
            t += 0.5;
        }
        assert!((r.sustained() - 2.0).abs() < 0.02, "{}", r.sustained());
        assert!(r.minus_25.is_some());
    }
}
