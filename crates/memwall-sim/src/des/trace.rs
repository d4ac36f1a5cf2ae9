//! The per-token trace: one row per simulated step (a decoded token, a prefill chunk, a
//! model load, a pause), handed to a [`TraceSink`] as it happens so hour-long runs stay in
//! bounded memory.

use serde::Serialize;

use crate::SimError;

/// What a trace row describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Reading the model from storage.
    Load,
    /// A prefill chunk.
    Prefill,
    /// One decoded token (per sequence).
    Decode,
    /// Idle between turns.
    Think,
    /// Waiting on a policy (cooling down, rate cap).
    Pause,
    /// Reloading the model in another format.
    Reload,
}

impl Phase {
    /// Name as written in traces.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Load => "load",
            Phase::Prefill => "prefill",
            Phase::Decode => "decode",
            Phase::Think => "think",
            Phase::Pause => "pause",
            Phase::Reload => "reload",
        }
    }
}

/// One row of the trace. Quantities are for the step that ends at `time_s`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceRow {
    /// Simulated time at the end of the step, seconds.
    pub time_s: f64,
    /// Tokens generated so far in the run (decode steps), counting this one.
    pub token: u64,
    /// Turn index (0-based, counting repetitions).
    pub turn: u32,
    /// What happened.
    pub phase: Phase,
    /// Duration of the step, seconds.
    pub latency_s: f64,
    /// Tokens held in the context after the step.
    pub context: u64,
    /// Tokens this step processed (1 for decode, the chunk for prefill, 0 otherwise).
    pub tokens: u64,
    /// Bytes read from DRAM.
    pub dram_bytes: f64,
    /// Bytes served by on-chip caches.
    pub cache_bytes: f64,
    /// Bytes read from storage.
    pub flash_bytes: f64,
    /// CPU (or accelerator) frequency as a fraction of its maximum.
    pub freq_scale: f64,
    /// DRAM bandwidth available to the model as a fraction of the unshared, unthrottled one.
    pub bandwidth_scale: f64,
    /// Governor level (0 = unthrottled).
    pub level: u32,
    /// Die temperature at the end of the step, °C.
    pub die_c: f64,
    /// Skin temperature at the end of the step, °C.
    pub skin_c: f64,
    /// Mean power over the step, W.
    pub power_w: f64,
    /// Mean dynamic power of the compute unit running the model over the step (its share of
    /// `power_w`; the rest is static and DRAM power), W.
    pub unit_power_w: f64,
    /// Mean DRAM power over the step (its DRAM bytes × 8 × pJ/bit over its time), W.
    pub dram_power_w: f64,
    /// Energy of the step, J.
    pub energy_j: f64,
    /// Bytes the model holds in DRAM.
    pub resident_bytes: u64,
    /// Free memory after the step (RAM − OS − apps − model − background), bytes.
    pub free_bytes: i64,
    /// Events during the step (governor steps, background apps, context shifts, policy
    /// actions, the kill); written `throttle 0→1; alloc +3.00 GB`.
    pub events: super::event::Events,
}

/// Where trace rows go.
pub trait TraceSink {
    /// Take one row.
    fn push(&mut self, row: &TraceRow) -> Result<(), SimError>;
}

/// Discards rows (summary-only runs).
#[derive(Debug, Default)]
pub struct NullSink;

impl TraceSink for NullSink {
    fn push(&mut self, _row: &TraceRow) -> Result<(), SimError> {
        Ok(())
    }
}

/// Keeps every row in memory (tests, short runs, Python).
#[derive(Debug, Default)]
pub struct VecSink {
    /// Rows in order.
    pub rows: Vec<TraceRow>,
}

impl TraceSink for VecSink {
    fn push(&mut self, row: &TraceRow) -> Result<(), SimError> {
        self.rows.push(row.clone());
        Ok(())
    }
}
