//! The cost model both estimators read: what a design costs per token and per step, computed
//! once per scenario and shared by the analytic estimator ([`crate::analytic`]) and the
//! discrete-event simulator ([`crate::des`]).
//!
//! - [`formulas`]: the small physics functions, each with its formula and units.
//! - [`unit`](mod@unit): the compute unit a design runs on, resolved once ([`unit::UnitModel`]).
//! - [`token`]: the table of a token's operators, built once from the design's tensors
//!   ([`token::TokenTable`]); every per-token and per-layer fact comes from it.
//! - [`plan`]: the per-scenario cost plan ([`plan::TensorPlan`], [`plan::CostPlan`]).
//! - [`step`]: one step's work and time terms and what binds it.
//! - [`ops`]: a decoded token as per-operator work and time (the breakdown `estimate --ops`
//!   prints and the simulator's cache walk reads).

pub mod formulas;
pub mod ops;
pub mod plan;
pub mod step;
pub mod token;
pub mod unit;
