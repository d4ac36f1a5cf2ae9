//! Import real models: the header of a GGUF file (metadata of every value type, every
//! tensor's name, shape, type and offset) mapped to a [`memwall_spec::ModelSpec`] whose
//! weight bytes are the file's, and a Hugging Face `config.json` mapped field by field. What
//! cannot be mapped is listed, never dropped silently; malformed input is an error naming the
//! byte offset or JSON path, never a panic or an allocation the file cannot back.

mod error;
pub mod gguf;
pub mod gguf_model;
pub mod hf;

pub use error::ImportError;
pub use gguf::{GgufHeader, TensorInfo, Value};
pub use gguf_model::{Imported, model_from_gguf};
pub use hf::model_from_hf;

/// Read a model file by extension: `.gguf` (header only) or a Hugging Face `config.json`
/// (any `.json`). The model is named after the file (its stem, or the parent directory for a
/// `config.json`).
pub fn import(path: &std::path::Path) -> Result<Imported, ImportError> {
    // A FIFO or device would block the read or never end: only regular files are models.
    let meta =
        std::fs::metadata(path).map_err(|source| ImportError::Io { path: path.display().to_string(), source })?;
    if !meta.is_file() {
        return Err(ImportError::Io {
            path: path.display().to_string(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file"),
        });
    }
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    match ext.as_str() {
        "gguf" => {
            let header = gguf::read_header(path)?;
            let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("gguf-model");
            model_from_gguf(&header, name)
        }
        "json" => {
            let text = std::fs::read_to_string(path)
                .map_err(|source| ImportError::Io { path: path.display().to_string(), source })?;
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("hf-model");
            let name = if stem == "config" {
                path.parent().and_then(|p| p.file_name()).and_then(|s| s.to_str()).unwrap_or("hf-model")
            } else {
                stem
            };
            model_from_hf(&text, name)
        }
        _ => Err(ImportError::Format { path: path.display().to_string() }),
    }
}

/// Whether `name` names a model file [`import`] reads (`.gguf` or `.json`).
pub fn is_model_file(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(".gguf") || lower.ends_with(".json")
}
