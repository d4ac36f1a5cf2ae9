//! The error type of memwall-io.

use std::path::PathBuf;

use memwall_spec::SpecError;

/// Errors reading presets and experiments or writing results.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    /// A spec is invalid.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// A simulation input is invalid.
    #[error(transparent)]
    Sim(#[from] memwall_sim::SimError),
    /// A grid point is invalid; names the point's parameters.
    #[error("grid point {index} ({params}): {source}")]
    Point {
        /// Index of the point in the sweep.
        index: usize,
        /// `path=value` pairs of the point.
        params: String,
        /// What is wrong.
        source: Box<IoError>,
    },
    /// An error about a field of the user's file, with the line that field is on.
    #[error("{error} ({origin}, line {line})")]
    At {
        /// The file.
        origin: String,
        /// 1-based line of the field.
        line: usize,
        /// The error.
        error: Box<IoError>,
    },
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Arrow or Parquet failed.
    #[error("writing {}: {message}", path.display())]
    Write {
        /// The output file.
        path: PathBuf,
        /// The library's message.
        message: String,
    },
}

/// Result alias of memwall-io.
pub type Result<T, E = IoError> = std::result::Result<T, E>;
