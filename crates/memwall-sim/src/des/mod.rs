//! The discrete-event simulator: the estimator's cost functions driven through time, with
//! the bandwidth shared with other bus masters, LRU caches, a thermal RC network and its
//! governor, storage, OS memory pressure and degradation policies, producing a per-token
//! trace and a summary. With thermal, background activity and memory pressure off (and the
//! estimator's cache and routing rules) it reproduces the analytic estimate.

pub mod cache;
pub mod event;
mod memory;
pub mod policy;
pub mod queue;
pub mod routing;
mod session;
pub mod simulator;
mod stats;
pub mod thermal;
pub mod trace;
mod walk;

pub use event::{Action, ActionKind, Events, SimEvent};
pub use policy::{MemoryAction, Policy, View};
pub use queue::{EventQueue, Nanos};
pub use simulator::{Simulator, Summary, simulate};
pub use thermal::ThrottleCause;
pub use trace::{NullSink, Phase, TraceRow, TraceSink, VecSink};
