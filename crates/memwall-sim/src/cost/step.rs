//! What one step (a decoded token or a prefill chunk) costs: its work ([`StepWork`]), its
//! time terms ([`StepTime`]) and the term that binds ([`Binding`]), under the run-time
//! [`Conditions`] the simulator sets (nominal for the estimator).

use serde::Serialize;

/// Which term limits a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Binding {
    /// DRAM bandwidth.
    Memory,
    /// Cache bandwidth (the working set fits in the last-level cache).
    Cache,
    /// Multiply-add throughput.
    Compute,
    /// Dequantization throughput.
    Dequant,
    /// Fixed per-operator and per-token costs.
    Overhead,
    /// Weights paged in from storage (the design does not fit in memory).
    Storage,
}

impl Binding {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Binding::Memory => "memory",
            Binding::Cache => "cache",
            Binding::Compute => "compute",
            Binding::Dequant => "dequant",
            Binding::Overhead => "overhead",
            Binding::Storage => "storage",
        }
    }
}

/// The time terms of one step (a decoded token or a prefill chunk), seconds.
///
/// A step runs in two phases, one after the other (the graph's operators are serialized by
/// barriers or kernel boundaries): the weight matrix products, which stream the weights, and
/// attention, which streams the KV cache (and recurrent state). Within a phase memory and
/// arithmetic overlap; across phases they add: `total = overlap_time(t_mem_w, t_compute_w) +
/// overlap_time(t_mem_a, t_compute_a) + t_overhead + t_storage` on a CPU. On an accelerator the
/// kernel launches overlap the work (its queue runs one kernel while the host launches the
/// next): `total = max(work, launches) + per-token cost + t_storage`. An attention phase bound
/// by arithmetic (f32 attention on small CPU cores) therefore slows decode as the context
/// grows even while the weights are memory-bound.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StepTime {
    /// Bytes moved / bandwidth (DRAM, or cache when the working set fits), both phases.
    pub t_mem: f64,
    /// Multiply-adds / throughput, both phases.
    pub t_arith: f64,
    /// Dequantization / throughput.
    pub t_dequant: f64,
    /// Per-operator and per-token overheads, in full (on an accelerator `total` counts the
    /// launches only where they outlast the work, and the step is bound by them when they
    /// are its largest term).
    pub t_overhead: f64,
    /// Weights read from storage ([`crate::cost::formulas::storage_time_s`]; 0 when the design fits).
    pub t_storage: f64,
    /// The attention phase alone: `overlap_time(t_mem_a, t_compute_a)`.
    pub t_attention: f64,
    /// Total time of the step.
    pub total: f64,
    /// Whether memory traffic was served from cache.
    pub from_cache: bool,
    /// Whether each phase's memory time is at least its arithmetic time (weights,
    /// attention): the regimes in which the step is linear in the context.
    pub memory_bound: (bool, bool),
}

impl StepTime {
    /// Share of the step the unit's arithmetic keeps it busy: `(t_arith + t_dequant) /
    /// total`, within 0–1 (1 for a step of no time).
    pub fn busy(&self) -> f64 {
        if self.total > 0.0 { ((self.t_arith + self.t_dequant) / self.total).clamp(0.0, 1.0) } else { 1.0 }
    }

    /// Share of its full-load dynamic power the unit draws over the step
    /// ([`crate::cost::formulas::activity_share`] of [`Self::busy`]).
    pub fn activity(&self) -> f64 {
        crate::cost::formulas::activity_share(self.busy())
    }

    /// [`Self::activity`] of the step lengthened by `storage_s` seconds of reads from storage
    /// not yet in `total` (the unit waits through them).
    pub fn activity_with(&self, storage_s: f64) -> f64 {
        StepTime { total: self.total + storage_s, ..*self }.activity()
    }

    /// A step of which `share` runs as `other` and the rest as `self`, one after the other:
    /// every time term `(1 − share) × self + share × other`; the cache and regime flags of
    /// the larger part.
    pub fn blend(&self, other: &StepTime, share: f64) -> StepTime {
        let mix = |a: f64, b: f64| (1.0 - share) * a + share * b;
        let major = if share > 0.5 { other } else { self };
        StepTime {
            t_mem: mix(self.t_mem, other.t_mem),
            t_arith: mix(self.t_arith, other.t_arith),
            t_dequant: mix(self.t_dequant, other.t_dequant),
            t_overhead: mix(self.t_overhead, other.t_overhead),
            t_storage: mix(self.t_storage, other.t_storage),
            t_attention: mix(self.t_attention, other.t_attention),
            total: mix(self.total, other.total),
            from_cache: major.from_cache,
            memory_bound: major.memory_bound,
        }
    }

    /// The largest term.
    pub fn binding(&self) -> Binding {
        let mem = if self.from_cache { Binding::Cache } else { Binding::Memory };
        [
            (self.t_mem, mem),
            (self.t_arith, Binding::Compute),
            (self.t_dequant, Binding::Dequant),
            (self.t_overhead, Binding::Overhead),
            (self.t_storage, Binding::Storage),
        ]
        .into_iter()
        .fold((f64::NEG_INFINITY, Binding::Memory), |acc, x| if x.0 > acc.0 { x } else { acc })
        .1
    }
}

/// Bytes and work of one step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct StepWork {
    /// Weight bytes read.
    pub weight_bytes: f64,
    /// KV-cache and recurrent-state bytes read and written.
    pub kv_bytes: f64,
    /// Activation bytes (assumed cache-resident, not paid at DRAM).
    pub activation_bytes: f64,
    /// Weight multiply-adds.
    pub weight_macs: f64,
    /// Attention / state-update multiply-adds.
    pub attn_macs: f64,
    /// CPU cycles of dequantization work (summed over weights, per core).
    pub dequant_cycles: f64,
    /// CPU cycles of arithmetic (summed over weights, per core).
    pub arith_cycles: f64,
    /// Graph operators executed.
    pub ops: f64,
    /// The CPU's dequantization cycles of the same step, where the unit hands weights to
    /// the CPU ([`super::plan::HostPart`]: a CPU may unpack a format again for every token
    /// of a chunk, where the unit's kernels do not); 0 otherwise.
    pub host_dequant_cycles: f64,
}

/// Run-time conditions of a step in the simulator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Conditions {
    /// CPU (or accelerator) frequency as a fraction of its maximum.
    pub freq_scale: f64,
    /// DRAM bandwidth available to the model as a fraction of the nominal one (governor
    /// memory steps, other bus masters).
    pub bandwidth_scale: f64,
    /// Bytes served by on-chip caches and the seconds they took (the simulator's LRU model);
    /// `None`: the estimator's steady-state rule.
    pub cached: Option<(f64, f64)>,
}

impl Conditions {
    /// Full frequency, full bandwidth, steady-state caches.
    pub const NOMINAL: Conditions = Conditions { freq_scale: 1.0, bandwidth_scale: 1.0, cached: None };
}
