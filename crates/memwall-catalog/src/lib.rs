//! # memwall-catalog
//!
//! What memwall ships and what it reads of the user's: the model, device and engine presets
//! and the quality and validation tables embedded from `datasets/` ([`presets`],
//! [`quality_table`]); the user's own spec files, named by path or by a bare name that is not a
//! preset ([`presets::load_model`], [`presets::load_device`], [`presets::load_engine`]); and
//! the registry of every file a command reads ([`inputs`]), opened only as a regular file, so
//! that no output can replace one. It knows nothing of sweeps, Arrow or plots: the solvers
//! use it without them.

pub mod benchmarks;
pub mod defaults;
pub mod device_db;
pub mod error;
pub mod inputs;
pub mod locate;
pub mod presets;
pub mod quality_mix;
pub mod quality_table;
pub mod tables;

pub use error::{CatalogError, Result};
pub use inputs::{InputScope, read_text};
pub use presets::{EngineProfile, load_device, load_engine, load_model};
pub use quality_table::{Quality, QualityTable};
