//! A scenario: one design point (model, device, weight and KV formats, workload, cost model).

use serde::{Deserialize, Serialize};

use crate::cost::CostModel;
use crate::device::DeviceSpec;
use crate::engine::EngineSpec;
use crate::error::{Result, SpecError};
use crate::mix::WeightQuant;
use crate::model::ModelSpec;
use crate::sim::SimConfig;
use crate::workload::{Backend, KvQuant, Workload};

/// One fully resolved design point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// The model.
    pub model: ModelSpec,
    /// The device.
    pub device: DeviceSpec,
    /// Weight quantization.
    pub weights: WeightQuant,
    /// KV-cache formats.
    #[serde(default)]
    pub kv: KvQuant,
    /// Workload.
    #[serde(default)]
    pub workload: Workload,
    /// The inference engine (absent: [`EngineSpec::generic`]).
    #[serde(default)]
    pub engine: EngineSpec,
    /// Cost-model parameters.
    #[serde(default)]
    pub cost: CostModel,
    /// Where the device lacks a figure for the compute unit the design runs on (a GPU's
    /// bandwidth share), use the generic value for the device's class instead of refusing;
    /// results list the figures so assumed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub assume_defaults: bool,
    /// Discrete-event simulation settings (the estimator ignores them).
    #[serde(default)]
    pub sim: SimConfig,
}

impl Scenario {
    /// Whether a unit figure the device does not state takes its family or class default
    /// (listed in the results) instead of refusing the design: asked for (`assume_defaults`),
    /// or a device from the device database ([`crate::DeviceSpec::sheet`]), whose spec sheet
    /// never states those figures.
    pub fn takes_defaults(&self) -> bool {
        self.assume_defaults || self.device.sheet.is_some()
    }

    /// Threads the CPU backend uses: the workload's, or what the engine runs on the device
    /// by default ([`crate::ThreadRule`]).
    pub fn threads(&self) -> u32 {
        self.workload.threads.unwrap_or_else(|| self.engine.threads.threads(&self.device).0)
    }

    /// Tokens in the KV cache before the first prompt. A session of turns
    /// (`sim.session.turns`) is the conversation, so an unset `workload.history_tokens` is 0
    /// there; otherwise it is [`crate::Workload::history`] (the conversation fills the context).
    pub fn history_tokens(&self) -> u64 {
        if self.sim.session.turns.is_empty() {
            self.workload.history()
        } else {
            self.workload.history_tokens.unwrap_or(0)
        }
    }

    /// Whether the context exceeds the model's trained `max_context` (allowed, for RoPE-scaling
    /// studies, but flagged: the model may not work there).
    pub fn context_beyond_max(&self) -> bool {
        self.model.max_context.is_some_and(|m| self.workload.context_tokens > m)
    }

    /// The warning to show when [`Scenario::context_beyond_max`] holds.
    pub fn context_warning(&self) -> Option<String> {
        self.context_beyond_max().then(|| {
            format!(
                "context of {} tokens exceeds {}'s max_context = {} (results assume the model works there, \
                 e.g. with RoPE scaling)",
                self.workload.context_tokens,
                self.model.name,
                self.model.max_context.unwrap_or_default()
            )
        })
    }

    /// Validate every part and their combination; errors carry the full field path
    /// (`model.n_kv_heads`, `workload.threads`).
    pub fn validate(&self) -> Result<()> {
        self.model.validate().map_err(|e| e.within("model"))?;
        self.device.validate().map_err(|e| e.within("device"))?;
        self.weights.validate().map_err(|e| e.within("weights"))?;
        if self.weights.mix == crate::Mix::Stored && self.model.stored.is_none() {
            return Err(SpecError::invalid(
                "weights.mix",
                "stored",
                format!(
                    "model `{}` was not read from a GGUF file, so it has no stored tensor types: name a mix",
                    self.model.name
                ),
            ));
        }
        self.engine.validate().map_err(|e| e.within("engine"))?;
        self.validate_point()
    }

    /// Validate everything but the model, the device and the weight mix (already validated
    /// for another point of the same sweep): KV formats, workload, cost model, simulation
    /// settings and how they combine with the model and device.
    pub fn validate_point(&self) -> Result<()> {
        self.kv.validate().map_err(|e| e.within("kv"))?;
        self.workload.validate().map_err(|e| e.within("workload"))?;
        self.cost.validate().map_err(|e| e.within("cost"))?;
        self.sim.validate().map_err(|e| e.within("sim"))?;
        let cores = self.device.total_cores();
        if let Some(t) = self.workload.threads
            && t > cores
        {
            return Err(SpecError::invalid(
                "workload.threads",
                t,
                format!("device `{}` has {cores} cores", self.device.name),
            ));
        }
        if self.engine.unit(self.workload.backend).is_none() {
            let b = self.workload.backend.name();
            return Err(SpecError::invalid(
                "workload.backend",
                b,
                format!("engine `{}` does not run on the {b} (its profile has no [{b}] table)", self.engine.name),
            ));
        }
        let a = &self.device.accelerators;
        match self.workload.backend {
            // Class defaults stand in for missing unit figures, named in the results.
            _ if self.takes_defaults() => {}
            Backend::Gpu if a.gpu_fp16_tflops.is_none() => {
                return Err(SpecError::invalid(
                    "workload.backend",
                    "gpu",
                    format!(
                        "device `{}` has no accelerators.gpu_fp16_tflops (add it, or pass --assume-defaults for the \
                         class default)",
                        self.device.name
                    ),
                ));
            }
            Backend::Npu if a.npu_int8_tops.is_none() => {
                return Err(SpecError::invalid(
                    "workload.backend",
                    "npu",
                    format!(
                        "device `{}` has no accelerators.npu_int8_tops (add it, or pass --assume-defaults for the \
                         class default)",
                        self.device.name
                    ),
                ));
            }
            _ => {}
        }
        Ok(())
    }
}
