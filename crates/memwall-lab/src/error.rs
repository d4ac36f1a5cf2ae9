//! The error type of memwall-lab.

use std::path::PathBuf;

use memwall_spec::SpecError;

/// Errors reading presets and experiments or writing results.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
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
        source: Box<LabError>,
    },
    /// A row of a table (a validation row) cannot be used.
    #[error("row {id}: {source}")]
    Row {
        /// The row's identifier.
        id: String,
        /// What is wrong.
        source: Box<LabError>,
    },
    /// An error about a field of the user's file, with the line that field is on.
    #[error("{error} ({origin}, line {line})")]
    At {
        /// The file.
        origin: String,
        /// 1-based line of the field.
        line: usize,
        /// The error.
        error: Box<LabError>,
    },
    /// A model file (GGUF or config.json) could not be imported.
    #[error(transparent)]
    Import(Box<memwall_import::ImportError>),
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// An output path would destroy something that is not an old output (refused before
    /// anything is written).
    #[error("`{flag}` {}: {problem}", path.display())]
    Output {
        /// The command-line flag or role of the output (`--out`, `--trace`, ...).
        flag: String,
        /// The path as given.
        path: PathBuf,
        /// What is wrong with it.
        problem: OutputProblem,
    },
    /// Outputs were abandoned ([`crate::abandon_outputs`], on SIGINT/SIGTERM): temporary
    /// files removed, nothing published.
    #[error("interrupted: temporary outputs removed, nothing written")]
    Interrupted,
    /// A fit failed (nothing to fit, a scenario the estimator refused inside a fit, a probe
    /// of the host).
    #[error(transparent)]
    Calib(memwall_calib::CalibError),
    /// Arrow or Parquet failed.
    #[error("writing {}: {message}", path.display())]
    Write {
        /// The output file.
        path: PathBuf,
        /// The library's message.
        message: String,
    },
    /// One of several designs (`compare`) is invalid; `index` counts from 1.
    #[error("design {index}: {source}")]
    Design {
        /// The design's place among those given, from 1.
        index: usize,
        /// What is wrong.
        source: Box<LabError>,
    },
}

impl From<memwall_catalog::CatalogError> for LabError {
    /// The catalog's errors are this crate's of the same kind (a catalog error about a file's
    /// field keeps its line).
    fn from(e: memwall_catalog::CatalogError) -> Self {
        use memwall_catalog::CatalogError as C;
        match e {
            C::Spec(s) => LabError::Spec(s),
            C::Import(i) => LabError::Import(i),
            C::File { path, source } => LabError::File { path, source },
            C::At { origin, line, error } => LabError::At { origin, line, error: Box::new(LabError::Spec(*error)) },
        }
    }
}

impl From<memwall_calib::CalibError> for LabError {
    /// Calibration's errors about its inputs are this crate's of the same kind (a spec
    /// refused, a preset or file missing, a row of a table), so they read and classify as
    /// before calibration moved to memwall-calib; the fit's own failures are [`LabError::Calib`].
    fn from(e: memwall_calib::CalibError) -> Self {
        use memwall_calib::CalibError as C;
        match e {
            C::Spec(s) => LabError::Spec(s),
            C::Sim(s) => LabError::Sim(s),
            C::Catalog(c) => c.into(),
            C::Row { id, source } => LabError::Row { id, source: Box::new((*source).into()) },
            other @ (C::Scenario { .. } | C::Empty(_) | C::Probe(_)) => LabError::Calib(other),
        }
    }
}

/// Why an output path is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutputProblem {
    /// It is (or links to) a file the command reads.
    #[error("is the input {}; writing it would destroy it", input.display())]
    IsInput {
        /// The input, as given.
        input: PathBuf,
    },
    /// It exists and is not a regular file, which a rename would replace.
    #[error("is {kind}, not a regular file; outputs are only written to regular files")]
    NotRegular {
        /// `a directory`, `a FIFO`, `a character device`, ...
        kind: &'static str,
    },
    /// Another output of the same command resolves to the same file.
    #[error("is the same file as `{other}`; each output needs its own file")]
    Shared {
        /// The other output's flag.
        other: String,
    },
    /// It names no file (empty, `.`, `..`, a root).
    #[error("names no file")]
    NoFileName,
}

/// Result alias of memwall-lab.
pub type Result<T, E = LabError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use memwall_calib::CalibError;
    use memwall_spec::SpecError;

    use super::*;

    #[test]
    fn a_calibration_error_keeps_its_kind_and_its_message() {
        let spec = || SpecError::invalid("line 3: avg_ts", "0", "must be > 0");
        let row = CalibError::Row { id: "ddm-1".into(), source: Box::new(CalibError::Spec(spec())) };
        let text = row.to_string();
        let io = LabError::from(row);
        assert_eq!(io.to_string(), text);
        assert!(matches!(&io, LabError::Row { source, .. } if matches!(**source, LabError::Spec(_))), "{io:?}");
        let missing = CalibError::Catalog(memwall_catalog::CatalogError::File {
            path: "t.csv".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        });
        let text = missing.to_string();
        let io = LabError::from(missing);
        assert!(matches!(io, LabError::File { .. }) && io.to_string() == text, "{io:?}");
        assert!(matches!(LabError::from(CalibError::Empty("x".into())), LabError::Calib(_)));
    }
}
