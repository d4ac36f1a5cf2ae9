//! The error type of memwall-import.

use memwall_spec::SpecError;

/// Why a model file cannot be imported. Every variant says where: a byte offset of a GGUF
/// file, a JSON path of a config, or the spec field the mapped model got wrong.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// Neither `.gguf` nor `.json`.
    #[error("{path}: unknown model file format (expected a .gguf file or a Hugging Face config.json)")]
    Format {
        /// The file.
        path: String,
    },
    /// A malformed GGUF file.
    #[error("GGUF {origin}, byte {offset}: {what}")]
    Gguf {
        /// The file.
        origin: String,
        /// Byte offset of the offending field.
        offset: u64,
        /// What is wrong.
        what: String,
    },
    /// A malformed or unmappable config.json.
    #[error("config.json `{path}`: {what}")]
    Json {
        /// JSON path of the offending field (`text_config.num_attention_heads`).
        path: String,
        /// What is wrong.
        what: String,
    },
    /// A metadata key the architecture needs is missing or of the wrong type.
    #[error("GGUF {origin}: metadata `{key}` {what}")]
    Key {
        /// The file.
        origin: String,
        /// The key.
        key: String,
        /// What is wrong.
        what: String,
    },
    /// The mapped model is not a valid spec.
    #[error("model mapped from {origin}: {source}")]
    Spec {
        /// The file or description.
        origin: String,
        /// The spec error (names the field).
        source: SpecError,
    },
}
