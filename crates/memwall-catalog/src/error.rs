//! The error type of memwall-catalog.

use std::path::PathBuf;

use memwall_spec::SpecError;

/// Why a preset, a spec file or a model file cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// A spec is invalid or a name unknown.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// A model file (GGUF or config.json) could not be imported.
    #[error(transparent)]
    Import(Box<memwall_import::ImportError>),
    /// A file could not be read.
    #[error("{}: {source}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// An error about a field of the user's file, with the line that field is on.
    #[error("{error} ({origin}, line {line})")]
    At {
        /// The file.
        origin: String,
        /// 1-based line of the field.
        line: usize,
        /// The error.
        error: Box<SpecError>,
    },
}

/// Result alias of memwall-catalog.
pub type Result<T, E = CatalogError> = std::result::Result<T, E>;
