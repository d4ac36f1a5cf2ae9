//! # memwall
//!
//! The memory wall of on-device LLM inference: whether a model design fits a phone or edge
//! board, how fast it decodes there, and what limits it. This facade re-exports the public
//! API of the workspace:
//!
//! - [`spec`]: models, devices, quantization formats and mixes, workloads, cost-model data.
//! - [`sim`]: byte-exact memory accounting and the analytic estimator.
//! - [`catalog`]: the shipped presets and quality tables, the user's spec files, and the
//!   registry of every file a command reads.
//! - [`solve`]: design questions answered directly (longest context, least RAM or
//!   bandwidth, best format that fits, what to change).
//! - [`io`]: experiments and sweeps, Arrow results and Parquet export.
//! - [`kernels`]: the reference kernels (GGUF block formats, SIMD GEMV, KV attention, MoE,
//!   SSM) whose measured costs calibrate the simulator.
//! - [`engine`]: a real decode engine built from the kernels (random weights in any GGUF
//!   format), timed per token and operator, with an f64 reference.
//!
//! ```
//! use memwall::io::{load_device, load_model};
//! use memwall::spec::{KvQuant, Scenario, WeightQuant};
//!
//! let s = Scenario {
//!     model: load_model("llama-3.1-8b").unwrap(),
//!     device: load_device("snapdragon-8-gen3-16gb").unwrap(),
//!     weights: WeightQuant::new("Q4_K_M".parse().unwrap()),
//!     kv: KvQuant::default(),
//!     workload: Default::default(),
//!     cost: Default::default(),
//!     engine: Default::default(),
//!     assume_defaults: false,
//!     sim: Default::default(),
//! };
//! let e = memwall::sim::estimate(&s).unwrap();
//! assert!(e.fits && e.decode_tok_s > 1.0);
//! ```

pub use memwall_calib as calib;
pub use memwall_catalog as catalog;
pub use memwall_engine as engine;
pub use memwall_import as import;
pub use memwall_io as io;
pub use memwall_kernels as kernels;
pub use memwall_sim as sim;
pub use memwall_solve as solve;
pub use memwall_spec as spec;
