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

use memwall_spec::{BackgroundEvent, MemorySim, Routing, Scenario, ThermalStatus, WeightQuant};
use serde::Serialize;

use super::event::{Action, ActionKind, Events, SimEvent};
use super::memory::{Memory, Residency};
use super::policy::{self, MemoryAction, Policy, View};
use super::queue::{EventQueue, Nanos, to_ns, to_s};
use super::session::Session;
use super::stats::Rates;
use super::thermal::{Heat, dynamic_power_w};
use super::trace::{Phase, TraceRow, TraceSink};
use super::walk::CacheWalk;
use crate::SimError;
use crate::cost::plan::CostPlan;
use crate::cost::step::{Conditions, StepTime, StepWork};

/// What a run reports.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    /// Simulated time at the end, seconds.
    pub duration_s: f64,
    /// Model load time, seconds.
    pub load_s: f64,
    /// First turn: prompt submitted → first token, seconds; `None` when the run ended before
    /// the first prefill did (no token: nothing to time).
    pub ttft_s: Option<f64>,
    /// Tokens decoded (all sequences).
    pub decode_tokens: u64,
    /// Time spent decoding, seconds.
    pub decode_s: f64,
    /// Decode tokens/s while decoding (`decode_tokens / decode_s`); `None` when no token was
    /// decoded.
    pub decode_tok_s: Option<f64>,
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
    /// Energy of decode steps per decoded token, joules; `None` when no token was decoded.
    pub j_per_token: Option<f64>,
    /// Energy of the prefill steps, joules.
    pub prefill_energy_j: f64,
    /// Energy of the decode steps, joules.
    pub decode_energy_j: f64,
    /// Energy of everything else (loading, think time, pauses, reloads, idle gaps), joules:
    /// `energy_j − prefill_energy_j − decode_energy_j`.
    pub idle_energy_j: f64,
    /// Prefill and decode energy per completed turn (a prompt and its reply), joules; `None`
    /// when no turn completed.
    pub reply_energy_j: Option<f64>,
    /// Share of the battery the run drew, percent (`energy_j` over the battery's energy);
    /// `None` for a device without a `[battery]`.
    pub battery_pct: Option<f64>,
    /// Highest memory held by the model, bytes.
    pub peak_resident_bytes: u64,
    /// Bytes read from storage (load, reloads, paging, expert misses).
    pub flash_bytes: f64,
    /// Highest die temperature, °C.
    pub max_die_c: f64,
    /// Highest skin temperature, °C.
    pub max_skin_c: f64,
    /// Deepest governor level reached (0: never throttled).
    pub max_level: u32,
    /// Highest thermal status the OS reported (NONE without OS thresholds).
    pub max_thermal_status: ThermalStatus,
    /// Mean power over the run, W (`energy_j / duration_s`).
    pub mean_power_w: f64,
    /// Mean dynamic power of the compute unit while it decoded, W (its energy over the decode
    /// steps' time).
    pub unit_decode_power_w: f64,
    /// When the run ended early, seconds: the low-memory killer, the OS's thermal shutdown, or
    /// the app's own stop at a thermal status (the action in `actions` says which).
    pub killed_at_s: Option<f64>,
    /// Policy actions and the kill, in order (written `t=12.3s truncate_context: keep 2048
    /// tokens`).
    pub actions: Vec<Action>,
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
        if s.sim.thermal.enabled {
            crate::cost::unit::require_power(s, &crate::cost::unit::resolve(s)?)?;
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
enum Retime {
    /// Storage reads, think time and pauses: no DVFS or bus share changes them.
    Fixed,
    /// A prefill chunk: one sequence's work, run `batch` times, plus storage seconds.
    Prefill { work: StepWork, flash_s: f64 },
    /// A decoded token: its work and what the on-chip caches served, plus storage seconds.
    Decode { work: StepWork, cached: Option<(f64, f64)>, flash_s: f64 },
}

/// What a step costs when it starts: its duration under the conditions of the moment, the
/// bytes it moves, its dynamic power, and how to re-time it when conditions change.
#[derive(Debug, Clone, Copy)]
struct StepCost {
    dur_s: f64,
    dram_bytes: f64,
    cache_bytes: f64,
    flash_bytes: f64,
    dynamic_w: f64,
    /// Share of the unit's full-load power the step draws ([`StepTime::activity`]).
    activity: f64,
    retime: Retime,
}

impl StepCost {
    /// A step of fixed duration that reads `flash_bytes` from storage and draws no dynamic
    /// power (loads, reloads, think time, pauses).
    fn fixed(dur_s: f64, flash_bytes: f64) -> Self {
        StepCost {
            dur_s,
            dram_bytes: 0.0,
            cache_bytes: 0.0,
            flash_bytes,
            dynamic_w: 0.0,
            activity: 0.0,
            retime: Retime::Fixed,
        }
    }
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
    /// Share of the unit's full-load power the step draws (0 for a step with no work).
    activity: f64,
    dram_w: f64,
    /// DRAM energy of the step so far, J.
    dram_j: f64,
    energy_j: f64,
    retime: Retime,
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
    /// `∫ dynamic_w dt` over the finished slices, J.
    unit_j: f64,
}

/// What the summary is built from while the run goes.
#[derive(Debug, Default)]
struct Stats {
    summary: Summary,
    rates: Rates,
    /// Energy of decode steps, J.
    decode_energy: f64,
    /// Energy of prefill steps, J (those cut short included).
    prefill_energy: f64,
    /// Energy of decode steps cut short (a kill, the end of the run), J.
    cut_decode_energy: f64,
    /// Prefill and decode energy of the turn in progress, and of the turns completed, J.
    turn_energy: f64,
    replies_energy: f64,
    /// The compute unit's dynamic energy during decode steps, J.
    decode_unit_j: f64,
    /// Tokens generated (all sequences).
    tokens: u64,
    /// Latency and start of the last decode step, seconds.
    last_token_s: Option<f64>,
    last_token_start_s: Option<f64>,
}

/// One run: the scenario as it stands (a policy may switch its weights) and the components
/// the simulation loop drives.
struct Run {
    cur: Scenario,
    plan: CostPlan,
    walk: CacheWalk,
    heat: Heat,
    session: Session,
    memory: Memory,
    stats: Stats,
    queue: EventQueue<Ev>,
    now: Nanos,
    /// Exact end time of the step chain, seconds (event times are its rounding).
    clock_s: f64,
    step: Option<Step>,
    next_id: u64,
    /// Events for the row of the step in flight (or of the next one).
    events: Events,
    loaded: bool,
    reload: Option<f64>,
    done: bool,
    killed: bool,
    /// Share of its full-load power the unit drew in the last step that worked (1 before any).
    unit_activity: f64,
    storage_bps: f64,
}

impl Run {
    fn new(s: &Scenario) -> Result<Self, SimError> {
        let plan = CostPlan::new(s)?;
        let walk = CacheWalk::new(s, &plan);
        let heat = Heat::new(s)?;
        Ok(Run {
            session: Session::new(s),
            storage_bps: s.device.storage.read_gbps * 1e9,
            loaded: !s.sim.storage.load,
            cur: s.clone(),
            plan,
            walk,
            heat,
            memory: Memory::new(&s.model),
            stats: Stats::default(),
            queue: EventQueue::new(),
            now: 0,
            clock_s: 0.0,
            step: None,
            next_id: 0,
            events: Events::default(),
            reload: None,
            done: false,
            killed: false,
            unit_activity: 1.0,
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
        if let Some(p) = self.heat.poll_s() {
            self.queue.push(to_ns(p), Ev::Poll);
        }
        self.stats.summary.max_die_c = self.heat.die_c();
        self.stats.summary.max_skin_c = self.heat.skin_c();
        self.check_memory(policies, 0.0);
        self.start_next(policies);
        while let Some((t, ev)) = self.queue.pop() {
            self.advance_thermal(t);
            self.now = t;
            self.stats.summary.events += 1;
            if self.stats.summary.events.is_multiple_of(4096) {
                progress(to_s(t));
            }
            match ev {
                Ev::StepDone(id) => {
                    if self.step.as_ref().is_some_and(|s| s.id == id) {
                        self.finish_step(sink)?;
                        self.start_next(policies);
                    }
                }
                Ev::Poll => self.poll(t),
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
        let st = &mut self.stats;
        let s = &mut st.summary;
        s.duration_s = to_s(self.now);
        s.decode_tok_s = (s.decode_tokens > 0 && s.decode_s > 0.0).then(|| s.decode_tokens as f64 / s.decode_s);
        s.burst_tok_s = st.rates.burst();
        s.sustained_tok_s = st.rates.sustained();
        s.time_to_minus_10pct_s = st.rates.minus_10;
        s.time_to_minus_25pct_s = st.rates.minus_25;
        s.j_per_token = (s.decode_tokens > 0).then(|| st.decode_energy / s.decode_tokens as f64);
        s.prefill_energy_j = st.prefill_energy;
        s.decode_energy_j = st.decode_energy + st.cut_decode_energy;
        s.idle_energy_j = (s.energy_j - s.prefill_energy_j - s.decode_energy_j).max(0.0);
        s.reply_energy_j = (s.turns > 0).then(|| st.replies_energy / s.turns as f64);
        s.battery_pct = self.cur.device.battery.map(|b| 100.0 * s.energy_j / b.energy_j());
        s.mean_power_w = if s.duration_s > 0.0 { s.energy_j / s.duration_s } else { 0.0 };
        s.unit_decode_power_w = if s.decode_s > 0.0 { st.decode_unit_j / s.decode_s } else { 0.0 };
        Ok(s.clone())
    }

    /// The governor polls the temperatures; a level or duty change re-times the step.
    fn poll(&mut self, t: Nanos) {
        let before = self.clocks();
        let status_before = self.heat.status();
        // What the unit draws at full clock for the work in hand (the last working step's
        // activity through idle gaps), as a power allocator estimates its request.
        let change = self.heat.poll(self.plan.compute_w() * self.unit_activity);
        if !self.done
            && let Some(p) = self.heat.poll_s()
        {
            self.queue.push(t + to_ns(p).max(1), Ev::Poll);
        }
        if let Some((from, to)) = change {
            if to > from && self.stats.summary.throttle_onset_s.is_none() {
                self.stats.summary.throttle_onset_s = Some(to_s(t));
            }
            self.note(SimEvent::Throttle { from, to, by: self.heat.cause() });
        }
        let status = self.heat.status();
        if status != status_before {
            self.note(SimEvent::ThermalStatus { from: status_before, to: status });
            let s = &mut self.stats.summary;
            s.max_thermal_status = s.max_thermal_status.max(status);
        }
        let after = self.clocks();
        if after.duty != before.duty {
            self.note(SimEvent::IdleInjection { duty: after.duty });
        }
        if after != before {
            self.retime();
        }
        let skin_c = self.heat.skin_c();
        let end = if status == ThermalStatus::Shutdown {
            Some(ActionKind::ThermalShutdown { skin_c })
        } else {
            self.cur
                .sim
                .thermal
                .stop_at_status
                .filter(|&stop| status >= stop)
                .map(|_| ActionKind::ThermalStop { status, skin_c })
        };
        if !self.killed
            && let Some(what) = end
        {
            self.killed = true;
            self.done = true;
            self.stats.summary.killed_at_s = Some(to_s(t));
            self.act(to_s(t), what);
        }
    }

    /// The time the next step starts at, seconds: the exact end of the step chain, unless the
    /// clock has moved past it by more than the nanosecond rounding of event times (the chain
    /// waited for an event). Without the tolerance every step would start up to 1 ns late.
    fn chain_time_s(&self) -> f64 {
        let now = to_s(self.now);
        if now > self.clock_s + 1e-9 { now } else { self.clock_s }
    }

    /// Record an event on the row of the step in flight (or of the next one).
    fn note(&mut self, e: SimEvent) {
        self.events.push(e);
    }

    /// Integrate temperatures (and the step's energy) up to `t`.
    fn advance_thermal(&mut self, t: Nanos) {
        let (dynamic_w, dram_w) = self.step.as_ref().map_or((0.0, 0.0), |s| (s.dynamic_w, s.dram_w));
        let Some((energy_j, dt)) = self.heat.advance(t, dynamic_w, dram_w) else { return };
        match &mut self.step {
            None => self.stats.summary.energy_j += energy_j,
            Some(step) => {
                step.energy_j += energy_j;
                step.dram_j += step.dram_w * dt;
                let s = &mut self.stats.summary;
                s.max_die_c = s.max_die_c.max(self.heat.die_c());
                s.max_skin_c = s.max_skin_c.max(self.heat.skin_c());
            }
        }
    }

    /// Current memory picture ([`Memory::residency`]).
    fn residency(&self) -> Residency {
        let kv_tokens = self.session.kv_tokens(self.cur.workload.context_policy);
        self.memory.residency(&self.cur, &self.plan, self.walk.n_experts(), kv_tokens)
    }

    fn view<'a>(&self, weights: &'a WeightQuant) -> View<'a> {
        let Residency { resident, free, .. } = self.residency();
        View {
            now_s: to_s(self.now),
            die_c: self.heat.die_c(),
            skin_c: self.heat.skin_c(),
            level: self.heat.level(),
            context: self.session.ctx,
            capacity: self.session.capacity,
            free_bytes: free,
            resident_bytes: resident,
            last_token_s: self.stats.last_token_s,
            since_token_start_s: self.stats.last_token_start_s.map(|t| self.chain_time_s() - t),
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
                Some((policy, MemoryAction::TruncateContext { keep_tokens })) => {
                    self.session.truncate(keep_tokens);
                    self.act(t_s, ActionKind::TruncateContext { policy, keep_tokens });
                }
                Some((policy, MemoryAction::SwitchWeights(w))) => {
                    let mix = w.mix;
                    if let Err(e) = self.switch_weights(w) {
                        self.act(t_s, ActionKind::SwitchFailed { policy, reason: e.to_string() });
                        continue;
                    }
                    self.act(t_s, ActionKind::SwitchWeights { policy, mix });
                }
                None => {
                    self.killed = true;
                    self.stats.summary.killed_at_s = Some(t_s);
                    self.act(t_s, ActionKind::Kill { lmk_free_bytes });
                    self.done = true;
                    return;
                }
            }
        }
    }

    /// Record an action in the summary and on the row.
    fn act(&mut self, t_s: f64, what: ActionKind) {
        let a = Action { t_s, what };
        self.note(SimEvent::Action(a.clone()));
        self.stats.summary.actions.push(a);
    }

    fn switch_weights(&mut self, w: WeightQuant) -> Result<(), SimError> {
        let mut s = self.cur.clone();
        s.weights = w;
        let plan = CostPlan::new(&s)?;
        self.walk.switch(&s, &plan);
        self.reload = Some(plan.footprint.weights as f64);
        self.plan = plan;
        self.cur = s;
        Ok(())
    }

    fn background(&mut self, i: usize, start: bool, policies: &mut [Box<dyn Policy>], t: Nanos) {
        match self.cur.sim.background[i].clone() {
            BackgroundEvent::Alloc { bytes, duration_s, .. } => {
                if start {
                    self.memory.bg_alloc += bytes;
                    self.note(SimEvent::Alloc { bytes });
                    if let Some(d) = duration_s {
                        self.queue.push(t + to_ns(d), Ev::BgEnd(i as u32));
                    }
                    self.check_memory(policies, to_s(t));
                } else {
                    self.memory.bg_alloc -= bytes;
                    self.note(SimEvent::Free { bytes });
                }
            }
            BackgroundEvent::Bandwidth { duration_s, share, .. } => {
                if start {
                    self.memory.bg_share += share;
                    self.note(SimEvent::BusMasterStart { share });
                    self.queue.push(t + to_ns(duration_s), Ev::BgEnd(i as u32));
                } else {
                    self.memory.bg_share -= share;
                    self.note(SimEvent::BusMasterEnd { share });
                }
                self.retime();
            }
        }
    }

    /// The clocks of this moment: the governor's level and duty cycle, and the DRAM share
    /// other bus masters leave.
    fn clocks(&self) -> Clocks {
        let (freq, volt, mem, duty) = self.heat.scales();
        let share = self.memory.bandwidth_share();
        Clocks { freq, volt, bw: if share == 1.0 { mem } else { mem * share }, duty }
    }

    fn start_next(&mut self, policies: &mut [Box<dyn Policy>]) {
        if self.done || self.killed || self.step.is_some() {
            return;
        }
        let start_s = self.chain_time_s();
        if let Some(bytes) = self.reload.take() {
            self.begin(Kind::Reload, StepCost::fixed(bytes / self.storage_bps, bytes));
            return;
        }
        if !self.loaded {
            // The weights that will stay resident; the expert cache starts cold.
            let bytes = self.residency().weights as f64;
            self.begin(Kind::Load, StepCost::fixed(bytes / self.storage_bps, bytes));
            return;
        }
        let clocks = self.clocks();
        if self.session.turn_done() {
            if let Some(think) = self.session.think() {
                self.begin(Kind::Think, StepCost::fixed(think, 0.0));
                return;
            }
            self.stats.summary.turns += 1;
            self.stats.replies_energy += std::mem::take(&mut self.stats.turn_energy);
            if !self.session.next_turn(start_s) {
                self.done = true;
                return;
            }
        }
        self.session.first_turn_starts(start_s);
        let dynamic_w = clocks.dynamic_w(self.plan.compute_w());
        let cond = Conditions { freq_scale: clocks.freq, bandwidth_scale: clocks.bw, cached: None };
        let res = self.residency();
        let paged = res.paged;
        self.walk.set_expert_cache_bytes(res.expert_cap);
        if self.session.prompt_left > 0 {
            let (n, cost) = self.prefill_cost(clocks, &cond, paged, dynamic_w);
            self.begin(Kind::Prefill { n }, cost);
            return;
        }
        // Decode: policies may hold the token back.
        let weights = self.cur.weights.clone();
        let view = self.view(&weights);
        if let Some(wait) = policies.iter_mut().find_map(|p| p.before_token(&view))
            && wait > 0.0
        {
            self.begin(Kind::Pause, StepCost::fixed(wait, 0.0));
            return;
        }
        let cost = self.decode_cost(clocks, &cond, paged, dynamic_w);
        self.begin(Kind::Decode, cost);
    }

    /// The next prefill chunk (its tokens and cost), with room made for it in the context.
    fn prefill_cost(&mut self, clocks: Clocks, cond: &Conditions, paged: f64, dynamic_w: f64) -> (u64, StepCost) {
        let n = self.session.chunk(self.cur.workload.ubatch);
        self.make_room(n);
        let batch = self.cur.workload.batch as f64;
        let w = self.plan.prefill_work(self.session.ctx, n);
        let t = self.plan.prefill_step_at(&w, cond);
        // A chunk touches most experts; those outside the expert cache come from flash
        // (the cache's resident share of all experts, not its LRU detail).
        let flash = match self.walk.expert_cache_bytes() {
            Some(capacity) => {
                let experts = self.plan.expert_bytes() * self.walk.n_experts() as f64;
                let expert_read = (w.weight_bytes - self.plan.dense_bytes).max(0.0);
                paged * self.plan.dense_bytes + expert_read * (1.0 - (capacity / experts).min(1.0))
            }
            None => paged * w.weight_bytes,
        };
        let activity = t.activity_with(flash / self.storage_bps / batch);
        let cost = StepCost {
            dur_s: step_seconds(t.total * batch, flash / self.storage_bps, clocks.duty),
            dram_bytes: self.plan.dram_bytes(&w, &t) * batch,
            cache_bytes: 0.0,
            flash_bytes: flash,
            dynamic_w: dynamic_w * activity,
            activity,
            retime: Retime::Prefill { work: w, flash_s: flash / self.storage_bps },
        };
        (n, cost)
    }

    /// The next decoded token, walked through the caches, with room made for it.
    fn decode_cost(&mut self, clocks: Clocks, cond: &Conditions, paged: f64, dynamic_w: f64) -> StepCost {
        self.make_room(1);
        let mut w = self.plan.decode_work(self.session.ctx);
        let r = self.walk.replay(self.session.ctx, self.cur.workload.batch);
        if let Some(d) = r.distinct_experts {
            // Sampled routing: the experts this step actually touched.
            let expected = self.plan.decode_distinct_experts() * self.walk.routed_layers() as f64;
            w.weight_bytes += (d - expected) * self.walk.expert_bytes();
        }
        let levels = self.walk.has_levels();
        let cached = levels.then_some((r.cached_bytes, r.cached_s));
        let t: StepTime = self.plan.decode_step_at(&w, &Conditions { cached, ..*cond });
        let dense = if self.walk.expert_cache_bytes().is_some() { self.plan.dense_bytes } else { w.weight_bytes };
        let flash = paged * dense + r.expert_flash_bytes;
        let dram = if levels { w.weight_bytes + w.kv_bytes - r.cached_bytes } else { self.plan.dram_bytes(&w, &t) };
        let activity = t.activity_with(flash / self.storage_bps);
        StepCost {
            dur_s: step_seconds(t.total, flash / self.storage_bps, clocks.duty),
            dram_bytes: dram,
            cache_bytes: if levels { r.cached_bytes } else { w.weight_bytes + w.kv_bytes - dram },
            flash_bytes: flash,
            dynamic_w: dynamic_w * activity,
            activity,
            retime: Retime::Decode { work: w, cached, flash_s: flash / self.storage_bps },
        }
    }

    /// Shift the context so that `n` more tokens fit (dropping the oldest).
    fn make_room(&mut self, n: u64) {
        if let Some(shift) = self.session.make_room(n) {
            self.note(shift);
        }
    }

    /// Start a step of `kind` at the end of the chain, costing `cost`.
    fn begin(&mut self, kind: Kind, cost: StepCost) {
        let start_s = self.chain_time_s();
        let id = self.next_id;
        self.next_id += 1;
        let Clocks { freq, bw, duty, .. } = self.clocks();
        let freq = freq * duty;
        let pj = self.plan.dram_pj_per_bit();
        let StepCost { dur_s, dram_bytes, cache_bytes, flash_bytes, dynamic_w, activity, retime } = cost;
        if activity > 0.0 {
            self.unit_activity = activity;
        }
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
            activity,
            dram_w,
            dram_j: 0.0,
            energy_j: 0.0,
            retime,
            done: 0.0,
            seg_s: start_s,
            full_s: dur_s,
            freq,
            bw,
            freq_s: 0.0,
            bw_s: 0.0,
            unit_j: 0.0,
        });
        self.queue.push(to_ns(end_s).max(self.now), Ev::StepDone(id));
    }

    /// Seconds the whole of a step's work takes under `clocks` (`None` for a step no
    /// condition changes).
    fn step_seconds(&self, retime: &Retime, clocks: Clocks) -> Option<f64> {
        let cond = Conditions { freq_scale: clocks.freq, bandwidth_scale: clocks.bw, cached: None };
        match retime {
            Retime::Fixed => None,
            Retime::Prefill { work, flash_s } => {
                let t = self.plan.prefill_step_at(work, &cond).total * self.cur.workload.batch as f64;
                Some(step_seconds(t, *flash_s, clocks.duty))
            }
            Retime::Decode { work, cached, flash_s } => {
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
        let Some(full) = self.step_seconds(&st.retime, clocks) else { return };
        let now_s = to_s(self.now).max(st.seg_s);
        let elapsed = now_s - st.seg_s;
        let done = if st.full_s > 0.0 { (st.done + elapsed / st.full_s).min(1.0) } else { 1.0 };
        let left_s = (1.0 - done) * full;
        let end_s = now_s + left_s;
        // The step keeps the share of full-load power it started with (its arithmetic's share
        // of its time moves a little with the clock; not followed).
        let dynamic_w = clocks.dynamic_w(self.plan.compute_w()) * st.activity;
        let pj = self.plan.dram_pj_per_bit();
        let id = self.next_id;
        self.next_id += 1;
        let Some(st) = &mut self.step else { return };
        st.dram_w = if left_s > 0.0 { (1.0 - done) * st.dram_bytes * 8.0 * pj * 1e-12 / left_s } else { 0.0 };
        st.freq_s += st.freq * elapsed;
        st.bw_s += st.bw * elapsed;
        st.unit_j += st.dynamic_w * elapsed;
        (st.id, st.dur_s, st.dynamic_w, st.done) = (id, end_s - st.start_s, dynamic_w, done);
        (st.seg_s, st.full_s, st.freq, st.bw) = (now_s, full, clocks.freq * clocks.duty, clocks.bw);
        self.clock_s = end_s;
        self.queue.push(to_ns(end_s).max(self.now), Ev::StepDone(id));
    }

    fn finish_step(&mut self, sink: &mut dyn TraceSink) -> Result<(), SimError> {
        let Some(mut st) = self.step.take() else { return Ok(()) };
        // Cut short (a kill, the end of the run): the step's work did not complete.
        let cut = self.killed || self.done;
        let planned_s = st.dur_s;
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
        if !self.heat.enabled() {
            // A step cut short moved its bytes in proportion to its time.
            let share = if planned_s > 0.0 { st.dur_s / planned_s } else { 1.0 };
            st.dram_j = st.dram_bytes * share * 8.0 * self.plan.dram_pj_per_bit() * 1e-12;
            st.energy_j = st.dram_j + (st.dynamic_w + self.plan.static_w()) * st.dur_s;
        }
        let stats = &mut self.stats;
        stats.summary.energy_j += st.energy_j;
        if matches!(st.kind, Kind::Prefill { .. } | Kind::Decode) {
            stats.turn_energy += st.energy_j;
        }
        stats.summary.flash_bytes += st.flash_bytes;
        let batch = self.cur.workload.batch as u64;
        let (phase, tokens) = match st.kind {
            Kind::Load => {
                self.loaded = true;
                stats.summary.load_s = st.dur_s;
                (Phase::Load, 0)
            }
            Kind::Reload => (Phase::Reload, 0),
            Kind::Think => (Phase::Think, 0),
            Kind::Pause => {
                stats.rates.record(st.start_s, st.dur_s, 0);
                (Phase::Pause, 0)
            }
            Kind::Prefill { .. } if cut => {
                stats.prefill_energy += st.energy_j;
                (Phase::Prefill, 0)
            }
            Kind::Decode if cut => {
                stats.cut_decode_energy += st.energy_j;
                (Phase::Decode, 0)
            }
            Kind::Prefill { n } => {
                stats.prefill_energy += st.energy_j;
                if self.session.prefilled(n) {
                    stats.summary.ttft_s = Some(end_s - self.session.turn_start_s);
                }
                (Phase::Prefill, n)
            }
            Kind::Decode => {
                self.session.decoded();
                stats.tokens += batch;
                stats.last_token_s = Some(st.dur_s);
                stats.last_token_start_s = Some(st.start_s);
                stats.summary.decode_tokens += batch;
                stats.summary.decode_s += st.dur_s;
                stats.decode_energy += st.energy_j;
                stats.decode_unit_j += st.unit_j + st.dynamic_w * last;
                stats.rates.record(st.start_s, st.dur_s, batch);
                (Phase::Decode, 1)
            }
        };
        let Residency { resident, free, .. } = self.residency();
        let summary = &mut self.stats.summary;
        summary.peak_resident_bytes = summary.peak_resident_bytes.max(resident);
        summary.max_level = summary.max_level.max(self.heat.level() as u32);
        let row = TraceRow {
            time_s: end_s,
            token: self.stats.tokens,
            turn: self.session.global,
            phase,
            latency_s: st.dur_s,
            context: self.session.ctx,
            tokens,
            dram_bytes: st.dram_bytes,
            cache_bytes: st.cache_bytes,
            flash_bytes: st.flash_bytes,
            freq_scale: st.freq,
            bandwidth_scale: st.bw,
            level: self.heat.level() as u32,
            die_c: self.heat.die_c(),
            skin_c: self.heat.skin_c(),
            power_w: if st.dur_s > 0.0 { st.energy_j / st.dur_s } else { 0.0 },
            unit_power_w: if st.dur_s > 0.0 { (st.unit_j + st.dynamic_w * last) / st.dur_s } else { 0.0 },
            dram_power_w: if st.dur_s > 0.0 { st.dram_j / st.dur_s } else { 0.0 },
            energy_j: st.energy_j,
            resident_bytes: resident,
            free_bytes: free,
            events: std::mem::take(&mut self.events),
        };
        sink.push(&row)?;
        self.stats.summary.rows += 1;
        Ok(())
    }
}

/// Duration of a step whose unit works `compute_s` seconds of its own and waits `storage_s`
/// on flash, with the unit allowed to work `duty` of the time (idle injection):
/// `compute_s / duty + storage_s`, seconds.
fn step_seconds(compute_s: f64, storage_s: f64, duty: f64) -> f64 {
    compute_s / duty + storage_s
}
