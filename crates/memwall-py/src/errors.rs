//! Python exceptions for memwall's errors: one class per kind, each carrying the `field` and
//! `value` the error names, and [`Error`], which every native function returns and which
//! becomes the right exception (`From<Error> for PyErr`).

use memwall_lab::LabError;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

pyo3::create_exception!(_native, MemwallError, PyException, "Base class of every memwall error.");

pyo3::create_exception!(_native, SpecError, MemwallError, "An invalid, unknown or unparsable specification value.");

pyo3::create_exception!(_native, GgufError, MemwallError, "A malformed or unmappable GGUF file.");

pyo3::create_exception!(_native, ConfigError, MemwallError, "A malformed or unmappable config.json.");

pyo3::create_exception!(_native, MemwallIOError, MemwallError, "A file could not be read or written.");

pyo3::create_exception!(_native, CalibrationError, MemwallError, "A calibration or validation run failed.");

pyo3::create_exception!(_native, SimulationError, MemwallError, "A simulation could not run or its trace not be kept.");

/// Which exception class an error becomes.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    Spec,
    Gguf,
    Config,
    Io,
    Sim,
    Calib,
    Other,
}

/// The class, field and value of an error (wrappers that add a place are looked through).
pub(crate) fn classify(e: &memwall_lab::LabError) -> (Kind, Option<String>, Option<String>) {
    use memwall_import::ImportError as I;
    use memwall_lab::LabError as E;
    match e {
        E::Spec(s) => match spec_parts(s) {
            Some((f, v)) => (Kind::Spec, Some(f), v),
            None => (Kind::Spec, None, None),
        },
        E::At { error, .. } => classify(error),
        E::Point { source, .. } | E::Row { source, .. } | E::Design { source, .. } => classify(source),
        E::Calib(_) => (Kind::Calib, None, None),
        E::Import(i) => match i.as_ref() {
            I::Gguf { offset, .. } => (Kind::Gguf, Some("offset".into()), Some(offset.to_string())),
            I::Key { key, .. } => (Kind::Gguf, Some(key.clone()), None),
            I::Json { path, .. } => (Kind::Config, Some(path.clone()), None),
            I::Spec { source, .. } => match spec_parts(source) {
                Some((f, v)) => (Kind::Spec, Some(f), v),
                None => (Kind::Spec, None, None),
            },
            I::Io { .. } | I::Format { .. } => (Kind::Io, None, None),
        },
        E::File { .. } | E::Output { .. } | E::Write { .. } => (Kind::Io, None, None),
        E::Sim(memwall_sim::SimError::Spec(s)) => match spec_parts(s) {
            Some((f, v)) => (Kind::Spec, Some(f), v),
            None => (Kind::Spec, None, None),
        },
        E::Sim(_) => (Kind::Sim, None, None),
        _ => (Kind::Other, None, None),
    }
}

/// The Python exception for a memwall error, with `field` and `value` attributes (None where
/// the error names none).
pub(crate) fn to_py(py: Python<'_>, e: memwall_lab::LabError) -> PyErr {
    let (kind, field, value) = classify(&e);
    let message = e.to_string();
    let err = match kind {
        Kind::Spec => SpecError::new_err(message),
        Kind::Gguf => GgufError::new_err(message),
        Kind::Config => ConfigError::new_err(message),
        Kind::Io => MemwallIOError::new_err(message),
        Kind::Sim => SimulationError::new_err(message),
        Kind::Calib => CalibrationError::new_err(message),
        Kind::Other => MemwallError::new_err(message),
    };
    let v = err.value(py);
    // Setting attributes on a fresh exception instance cannot fail.
    let _ = v.setattr("field", field);
    let _ = v.setattr("value", value);
    err
}

/// Field and value of a spec error.
pub(crate) fn spec_parts(s: &memwall_spec::SpecError) -> Option<(String, Option<String>)> {
    use memwall_spec::SpecError as S;
    match s {
        S::Invalid { field, value, .. } | S::Unknown { field, value, .. } => Some((field.clone(), Some(value.clone()))),
        S::Field { field, .. } => Some((field.clone(), None)),
        S::Parse { .. } => None,
    }
}

/// A spec error as a memwall error.
pub(crate) fn spec_err(e: memwall_spec::SpecError) -> LabError {
    LabError::Spec(e)
}

/// Every native function's error: a memwall error, which becomes the exception of its kind
/// with the `field` and `value` it names ([`to_py`]), or a Python exception raised on the way
/// (by a progress callback, or by a conversion).
#[derive(Debug)]
pub(crate) enum Error {
    /// memwall refused or failed.
    Memwall(LabError),
    /// Python raised.
    Python(PyErr),
}

/// What native functions return.
pub(crate) type Result<T> = std::result::Result<T, Error>;

impl From<LabError> for Error {
    fn from(e: LabError) -> Self {
        Error::Memwall(e)
    }
}

impl From<memwall_spec::SpecError> for Error {
    fn from(e: memwall_spec::SpecError) -> Self {
        Error::Memwall(LabError::Spec(e))
    }
}

impl From<PyErr> for Error {
    fn from(e: PyErr) -> Self {
        Error::Python(e)
    }
}

impl From<Error> for PyErr {
    fn from(e: Error) -> Self {
        match e {
            Error::Memwall(e) => Python::attach(|py| to_py(py, e)),
            Error::Python(e) => e,
        }
    }
}
