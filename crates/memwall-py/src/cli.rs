//! The command line in-process: the `memwall` command `pip install` puts on the PATH
//! (`memwall._cli:main`) runs [`memwall_cli::run`], the function the `memwall` binary runs.

use std::ffi::OsString;

use pyo3::prelude::*;

/// Run the command line `argv` (the program name first) with the GIL released and return its
/// exit status (0, 2 on an error, 128 + the signal when interrupted). `handle_signals` as in
/// [`memwall_cli::run`]: the console command passes `true`; a call from a Python session
/// that keeps its own Ctrl-C handling passes `false`.
#[pyfunction]
#[pyo3(signature = (argv, handle_signals=false))]
pub(crate) fn cli(py: Python<'_>, argv: Vec<OsString>, handle_signals: bool) -> u8 {
    py.detach(|| memwall_cli::run(argv, handle_signals))
}
