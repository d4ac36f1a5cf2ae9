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
    #[error("model mapped from {origin}: {source}{}", key.as_ref().map_or(String::new(), |k| format!(" (read from `{k}`)")))]
    Spec {
        /// The file or description.
        origin: String,
        /// The spec error (names the field).
        source: Box<SpecError>,
        /// The file's key the field was read from, when it is one of the mapping's field keys.
        key: Option<String>,
    },
}

/// The keys a spec field is read from, so that an error about the field names the file's key
/// too: (spec field, GGUF keys after `{arch}.`, config.json keys), in the mappings' order of
/// preference.
pub const FIELD_KEYS: &[(&str, &[&str], &[&str])] = &[
    ("hidden", &["embedding_length"], &["hidden_size", "d_model", "n_embd"]),
    ("n_layers", &["block_count"], &["num_hidden_layers", "n_layer"]),
    ("n_heads", &["attention.head_count"], &["num_attention_heads", "n_head"]),
    ("n_kv_heads", &["attention.head_count_kv"], &["num_key_value_heads"]),
    ("head_dim", &["attention.key_length"], &["head_dim"]),
    ("ffn", &["feed_forward_length"], &["intermediate_size", "block_ff_dim"]),
    ("vocab", &["vocab_size"], &["vocab_size"]),
    ("max_context", &["context_length"], &["max_position_embeddings"]),
    ("window", &["attention.sliding_window"], &["sliding_window"]),
    ("ssm.d_inner", &["ssm.inner_size"], &["intermediate_size"]),
    ("ssm.d_state", &["ssm.state_size"], &["state_size"]),
];

/// The first of `field`'s keys ([`FIELD_KEYS`]; `gguf` picks the GGUF column) for which
/// `present` holds, as `present` was asked.
pub(crate) fn key_of(field: Option<&str>, gguf: bool, present: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let (_, g, h) = FIELD_KEYS.iter().find(|(f, _, _)| Some(*f) == field)?;
    (if gguf { *g } else { *h }).iter().find_map(|k| present(k))
}
