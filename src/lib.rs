//! # memwall
//!
//! The memory wall of on-device LLM inference: whether a model design fits a phone or edge
//! board, how fast it decodes there, and what limits it. This facade re-exports the public
//! API of the workspace:
//!
//! - [`spec`]: models, devices, quantization formats and mixes, workloads, cost-model data.
//! - [`sim`]: byte-exact memory accounting and the cost model the analytic estimator and the
//!   discrete-event simulator share.
//! - [`import`]: GGUF headers and Hugging Face `config.json` as model specs.
//! - [`catalog`]: the shipped presets and quality tables, the user's spec files, and the
//!   registry of every file a command reads.
//! - [`solve`]: design questions answered directly (longest context, least RAM or
//!   bandwidth, best format that fits, what to change).
//! - [`calib`]: every fit (least squares, cross-validation, published rows, llama-bench,
//!   this machine, quality from error, thermal networks).
//! - [`lab`]: the researcher's bench: experiments and sweeps, one function per use case
//!   returning a typed report (`lab::report`), Arrow tables, atomic outputs, Pareto, plots.
//! - [`kernels`]: the reference kernels (GGUF block formats, SIMD GEMV, KV attention, MoE,
//!   SSM) whose measured costs calibrate the simulator.
//! - [`decode`]: a real decode engine built from the kernels (random weights in any GGUF
//!   format), timed per token and operator, with an f64 reference.
//!
//! ```
//! use memwall::lab::{load_device, load_model};
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
pub use memwall_decode as decode;
pub use memwall_import as import;
pub use memwall_kernels as kernels;
pub use memwall_lab as lab;
pub use memwall_sim as sim;
pub use memwall_solve as solve;
pub use memwall_spec as spec;
