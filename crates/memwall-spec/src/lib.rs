//! # memwall-spec
//!
//! The vocabulary of memwall: what a model is ([`ModelSpec`]), what a device is
//! ([`DeviceSpec`]), how weights and the KV cache are stored ([`QuantFormat`], [`Mix`],
//! [`WeightQuant`], [`KvQuant`]), what is run ([`Workload`]) and the cost-model data the
//! estimators share ([`CostModel`]). Everything is plain serde data read from TOML and
//! checked by `validate()`, whose errors name the offending field and value.
//!
//! ```
//! use memwall_spec::{GgmlType, QuantFormat};
//! // A GGUF Q4_K block holds 256 weights in 144 bytes: 4.5 bits per weight.
//! let q4k = QuantFormat::Ggml(GgmlType::Q4_K);
//! assert_eq!(q4k.bits_per_weight(), 4.5);
//! assert_eq!(q4k.row_bytes(4096), Some(16 * 144));
//! ```

pub mod bounds;
pub mod class;
pub mod cores;
pub mod cost;
pub mod device;
pub mod engine;
pub mod error;
pub mod mix;
pub mod model;
pub mod power_mode;
pub mod quant;
pub mod scenario;
pub mod sim;
pub mod suggest;
pub mod thermal;
pub mod units;
pub mod workload;

pub use class::{PHONE_GPU_FLOOR, SKIN_GAIN_LEVELS_PER_K, SKIN_INTEGRAL_K_S};
pub use cost::CostModel;
pub use device::{
    AcceleratorSpec, AppLimit, BatterySpec, CacheSpec, ClusterSpec, Cooling, DeviceKind, DeviceSpec, GpuVendor,
    MemorySpec, Os, PowerSpec, StorageSpec,
};
pub use engine::{EngineSpec, ThreadRule, UnitCosts};
pub use error::{Result, SpecError};
pub use mix::{Assignment, FileType, LayerSelector, Mix, Override, WeightQuant};
pub use model::{
    LayerKind, LinearSpec, MlaSpec, ModelSpec, MoeSpec, ParamCounts, PerLayerEmbeddingSpec, ShortConvSpec, SsmKind,
    SsmSpec, StoredTensor, Tensor, TensorClass,
};
pub use power_mode::PowerModeSpec;
pub use quant::{ChannelQuant, Fp8Kind, Fp8Quant, Fp8Scale, GgmlType, GroupQuant, QuantFormat, ScaleDtype};
pub use scenario::Scenario;
pub use sim::{
    BackgroundEvent, CacheMode, MemorySim, PolicySpec, Routing, Session, SimConfig, StorageSim, ThermalSim, Turn,
};
pub use thermal::{
    GovernorSpec, PowerBudgetSpec, PowerLimitSpec, Sensor, ThermalNode, ThermalSpec, ThermalStatus, UnitTripOffsets,
};
pub use workload::{Backend, ContextPolicy, KvQuant, Workload};

/// Parse a TOML document into a spec type, mapping parser errors to [`SpecError::Parse`]
/// (the message names the key and line).
pub fn from_toml<T: serde::de::DeserializeOwned>(text: &str, origin: &str) -> Result<T> {
    toml::from_str(text)
        .map_err(|e| SpecError::Parse { origin: origin.to_string(), message: suggest::annotate(&e.to_string()) })
}
