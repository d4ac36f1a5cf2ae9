//! Import real models: the header of a GGUF file (metadata of every value type, every
//! tensor's name, shape, type and offset) mapped to a [`memwall_spec::ModelSpec`] whose
//! weight bytes are the file's, and a Hugging Face `config.json` mapped field by field. What
//! cannot be mapped is listed, never dropped silently; malformed input is an error naming the
//! byte offset or JSON path, never a panic or an allocation the file cannot back.

mod checked;
mod error;
pub mod file;
pub mod gguf;
pub mod gguf_model;
mod gguf_shapes;
pub mod hf;
mod hf_quant;

pub use error::ImportError;
pub use gguf::{GgufHeader, TensorInfo, Value};
pub use gguf_model::{Imported, model_from_gguf};
pub use hf::model_from_hf;

/// The two kinds of model file memwall reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelFile {
    /// A GGUF file (its header).
    Gguf,
    /// A Hugging Face `config.json` (or a directory holding one).
    HfConfig,
}

impl ModelFile {
    /// The kind a file name's extension says: `.gguf` or `.json` (any case); `None` otherwise.
    pub fn of_name(name: &str) -> Option<Self> {
        let lower = name.to_ascii_lowercase();
        if lower.ends_with(".gguf") {
            Some(Self::Gguf)
        } else if lower.ends_with(".json") {
            Some(Self::HfConfig)
        } else {
            None
        }
    }
}

/// Read a model file by extension: `.gguf` (header only) or a Hugging Face `config.json`
/// (any `.json`). The model is named after the file (its stem, or the parent directory for a
/// `config.json`).
pub fn import(path: &std::path::Path) -> Result<Imported, ImportError> {
    match ModelFile::of_name(&path.to_string_lossy()) {
        Some(kind) => import_as(path, kind),
        None => Err(ImportError::Format { path: path.display().to_string() }),
    }
}

/// Read `path` as a model file of `kind`, whatever its name: a GGUF header, or a Hugging
/// Face config (a directory stands for the `config.json` in it). Only a regular file is read
/// ([`file::open_regular`]).
pub fn import_as(path: &std::path::Path, kind: ModelFile) -> Result<Imported, ImportError> {
    match kind {
        ModelFile::Gguf => {
            let header = gguf::read_header(path)?;
            let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("gguf-model");
            model_from_gguf(&header, name)
        }
        ModelFile::HfConfig => {
            let path = &hf_config_file(path);
            let text = file::read_regular(path)
                .map_err(|source| ImportError::Io { path: path.display().to_string(), source })?;
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("hf-model");
            let name = if stem == "config" {
                path.parent().and_then(|p| p.file_name()).and_then(|s| s.to_str()).unwrap_or("hf-model")
            } else {
                stem
            };
            model_from_hf(&text, name)
        }
    }
}

/// A model file held in memory (a file dropped on the web page), as [`import_as`] reads one
/// from disk: `bytes` is the start of a file of `file_len` bytes in all (a GGUF's header is all
/// that is read, so the tensor data may be left out), `name` names the model and the errors.
pub fn import_bytes(kind: ModelFile, name: &str, bytes: &[u8], file_len: u64) -> Result<Imported, ImportError> {
    let stem = std::path::Path::new(name).file_stem().and_then(|s| s.to_str()).unwrap_or(name);
    match kind {
        ModelFile::Gguf => {
            let header = gguf::parse(std::io::Cursor::new(bytes), file_len.max(bytes.len() as u64), name)?;
            model_from_gguf(&header, stem)
        }
        ModelFile::HfConfig => {
            let text = std::str::from_utf8(bytes).map_err(|e| ImportError::Io {
                path: name.to_string(),
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, format!("not UTF-8 text: {e}")),
            })?;
            model_from_hf(text, if stem == "config" { "hf-model" } else { stem })
        }
    }
}

/// The file a Hugging Face config path names: `path` itself, or the `config.json` in it when
/// it is a directory (a downloaded model's folder).
pub fn hf_config_file(path: &std::path::Path) -> std::path::PathBuf {
    if path.is_dir() { path.join("config.json") } else { path.to_path_buf() }
}

/// Whether `name` names a model file [`import`] reads (`.gguf` or `.json`).
pub fn is_model_file(name: &str) -> bool {
    ModelFile::of_name(name).is_some()
}
