//! One design from flags: the model (preset, spec file, GGUF or config.json), the device, the
//! formats, the workload and the engine, built into a validated scenario; `estimate`,
//! `footprint`, `compare` and `solve` all read it.

use anyhow::Result;
use clap::Args;
use memwall_lab::{EngineProfile, load_device, load_model};
use memwall_spec::units::GB;
use memwall_spec::{Backend, ContextPolicy, KvQuant, Mix, QuantFormat, Scenario, Workload};

use crate::{flag, whole};

#[derive(Args)]
pub(crate) struct ScenarioArgs {
    /// Model preset name, or a path to a TOML spec, a GGUF file or a Hugging Face config.json.
    #[arg(long, required_unless_present_any = ["gguf", "hf"], conflicts_with_all = ["gguf", "hf"])]
    pub(crate) model: Option<String>,
    /// A GGUF file: its header gives the shapes and every tensor's type (weight bytes are the
    /// file's); the weights default to the types it stores.
    #[arg(long, conflicts_with = "hf")]
    pub(crate) gguf: Option<String>,
    /// A Hugging Face config.json; its `quantization_config` (fp8, mxfp4) sets the weights
    /// unless --weights does.
    #[arg(long)]
    pub(crate) hf: Option<String>,
    /// Device preset name or TOML path.
    #[arg(long)]
    pub(crate) device: String,
    /// Weight mix: a llama.cpp file type (Q4_K_M, Q2_K, IQ4_XS, TQ1_0, ...), a format (q4_0,
    /// int4-g128, fp8_e4m3-b128, ...) or `stored` (a GGUF's own types) [default: stored for
    /// a GGUF file, the quantization_config of a config.json, Q4_K_M otherwise].
    #[arg(long, value_parser = flag::<Mix>("weights"))]
    pub(crate) weights: Option<Mix>,
    #[command(flatten)]
    pub(crate) kv: KvArgs,
    /// Context the KV cache is allocated for, tokens.
    #[arg(long, default_value_t = 4096, value_parser = whole::<u64>)]
    pub(crate) context: u64,
    /// Prompt tokens.
    #[arg(long, default_value_t = 512, value_parser = whole::<u64>)]
    pub(crate) prompt: u64,
    /// Generated tokens.
    #[arg(long, default_value_t = 128, value_parser = whole::<u64>)]
    pub(crate) gen_tokens: u64,
    /// Tokens already in the KV cache before the prompt (earlier turns): the reply decodes at
    /// depths history + prompt onwards, the prompt's prefill attends to them [default: what
    /// fills the context, context − prompt − generated; 0 for a fresh conversation].
    #[arg(long, value_parser = whole::<u64>)]
    pub(crate) history: Option<u64>,
    /// Let the KV cache grow with the tokens seen instead of allocating the whole context.
    #[arg(long)]
    pub(crate) grow: bool,
    /// Sequences decoded together.
    #[arg(long, default_value_t = 1, value_parser = whole::<u32>)]
    pub(crate) batch: u32,
    /// CPU threads [default: what the engine runs there; llama.cpp: every physical core, the
    /// performance cores on Apple].
    #[arg(long, value_parser = whole::<u32>)]
    pub(crate) threads: Option<u32>,
    /// Compute unit: cpu, gpu or npu.
    #[arg(long, default_value = "cpu", value_parser = flag::<Backend>("backend"))]
    pub(crate) backend: Backend,
    /// Inference engine: a profile name (llama.cpp, ollama, llama.cpp-cuda, llama.cpp-vulkan,
    /// llama.cpp-opencl, mlc-llm, executorch, litert-lm, mlx, mnn, generic, ...) or a TOML path
    /// [default: the best-validated profile for the unit: llama.cpp on the CPU, llama.cpp's
    /// backend for the GPU (Metal, OpenCL, CUDA or Vulkan)].
    #[arg(long, value_parser = |s: &str| s.parse::<EngineProfile>())]
    pub(crate) engine: Option<EngineProfile>,
    /// Use the class default for a figure the device lacks for the unit (a GPU's bandwidth
    /// share), labelled as assumed in the output, instead of refusing.
    #[arg(long)]
    pub(crate) assume_defaults: bool,
    /// Part of the device's app limit kept free for what the footprint does not count, GB
    /// (the workload's default, 0: the app limit is already what the OS leaves one app).
    #[arg(long, default_value_t = Workload::default().margin_bytes as f64 / GB as f64)]
    pub(crate) margin_gb: f64,
    /// Print one JSON document (the versioned schema in README.md) instead of the table.
    #[arg(long)]
    pub(crate) json: bool,
}

impl ScenarioArgs {
    pub(crate) fn scenario(&self) -> Result<Scenario> {
        let kv = self.kv.formats();
        let backend = self.backend;
        let margin_bytes = memwall_lab::report::margin_bytes("--margin-gb", self.margin_gb)?;
        let workload = Workload {
            prompt_tokens: self.prompt,
            gen_tokens: self.gen_tokens,
            history_tokens: self.history,
            context_tokens: self.context,
            context_policy: if self.grow { ContextPolicy::Grow } else { ContextPolicy::Allocate },
            batch: self.batch,
            threads: self.threads,
            backend,
            margin_bytes,
            ..Workload::default()
        };
        // `--gguf` and `--hf` always name a file, whatever it is called; `--model` a preset,
        // a spec TOML or a model file by its extension.
        let file = match (&self.gguf, &self.hf, &self.model) {
            (Some(p), _, _) => Some((p.as_str(), "--gguf", memwall_import::ModelFile::Gguf)),
            (None, Some(p), _) => Some((p.as_str(), "--hf", memwall_import::ModelFile::HfConfig)),
            (None, None, Some(name)) => memwall_import::ModelFile::of_name(name).map(|k| (name.as_str(), "--model", k)),
            (None, None, None) => None,
        };
        let (model, stated) = match file {
            Some((path, flag, kind)) => {
                if !std::path::Path::new(path).exists() {
                    let preset = memwall_lab::presets::model_text(path).is_some();
                    anyhow::bail!(
                        "`{flag}` {path}: no such file{}",
                        if preset {
                            format!(" (`{path}` is a model preset: name it with --model)")
                        } else {
                            String::new()
                        }
                    );
                }
                let imported = memwall_lab::presets::import_model_as(path, kind)?;
                report_import(path, &imported);
                (imported.model, imported.weights)
            }
            None => (load_model(self.model.as_deref().unwrap_or_default())?, None),
        };
        let choices = memwall_lab::report::Choices {
            weights: self.weights,
            kv,
            workload,
            engine: self.engine.as_ref().map(|e| e.0.clone()),
            assume_defaults: self.assume_defaults,
        };
        let s = memwall_lab::report::design(model, stated, load_device(&self.device)?, choices)?;
        if let Some(w) = s.context_warning() {
            eprintln!("warning: {w}");
        }
        Ok(s)
    }
}

/// What a model file's mapping decided and could not use, on stderr (the table stays clean).
fn report_import(path: &str, i: &memwall_import::Imported) {
    let m = &i.model;
    let what = match (&i.file_type, i.tensor_bytes) {
        (Some(t), Some(b)) => {
            format!(", file type {t}, {} tensors, {b} bytes of tensor data", m.stored.as_ref().map_or(0, |s| s.len()))
        }
        (None, Some(b)) => format!(", {b} bytes of tensor data"),
        _ => String::new(),
    };
    eprintln!("imported {path}: {} layers, hidden {}{what}", m.n_layers, m.hidden);
    for n in &i.notes {
        eprintln!("  note: {n}");
    }
    if !i.unmapped.is_empty() {
        eprintln!("  not used by memwall's model ({}):", i.unmapped.len());
        for (k, v) in &i.unmapped {
            eprintln!("    {k} = {v}");
        }
    }
}

/// `--kv`, `--kv-k` and `--kv-v`.
#[derive(Args)]
pub(crate) struct KvArgs {
    /// KV-cache format for both K and V (f16, q8_0, q4_0, fp8_e4m3, ...).
    #[arg(long, default_value = "f16", value_parser = flag::<QuantFormat>("kv"))]
    kv: QuantFormat,
    /// K-cache format (overrides --kv).
    #[arg(long, value_parser = flag::<QuantFormat>("kv_k"))]
    kv_k: Option<QuantFormat>,
    /// V-cache format (overrides --kv).
    #[arg(long, value_parser = flag::<QuantFormat>("kv_v"))]
    kv_v: Option<QuantFormat>,
}

impl KvArgs {
    /// The formats (`--kv-k` and `--kv-v` override `--kv`).
    pub(crate) fn formats(&self) -> KvQuant {
        KvQuant { k: self.kv_k.unwrap_or(self.kv), v: self.kv_v.unwrap_or(self.kv) }
    }
}
