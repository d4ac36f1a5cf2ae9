//! The native module behind the `memwall` Python package: experiments are swept in Rust with
//! the GIL released, and their results cross into Python through the Arrow PyCapsule
//! interface (`__arrow_c_stream__`), so pyarrow, polars and pandas take them without a copy.
//! Rust errors become typed Python exceptions carrying the field and value they name.
//!
//! One module per object of the Python package, each calling the one Rust function that the
//! command line calls too: `specs` (Model, Device, Engine, presets), `experiment` (sweeps),
//! `answers` (footprint, ops, compare, solve, Pareto), `simulate`, `calibrate`,
//! `validate`, and `cli`, the whole command line behind the `memwall` command the package
//! installs; tables cross in `arrow` and errors become exceptions in `errors`.

mod answers;
mod arrow;
mod calibrate;
mod cli;
mod errors;
mod experiment;
mod simulate;
mod specs;
mod validate;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(experiment::parse_experiment, m)?)?;
    m.add_function(wrap_pyfunction!(experiment::estimate_row, m)?)?;
    m.add_function(wrap_pyfunction!(specs::presets, m)?)?;
    m.add_function(wrap_pyfunction!(specs::device_database, m)?)?;
    m.add_function(wrap_pyfunction!(specs::preset_facts, m)?)?;
    m.add_function(wrap_pyfunction!(specs::did_you_mean, m)?)?;
    m.add_function(wrap_pyfunction!(specs::parse_duration, m)?)?;
    m.add_function(wrap_pyfunction!(specs::spec_json, m)?)?;
    m.add_function(wrap_pyfunction!(specs::describe, m)?)?;
    m.add_function(wrap_pyfunction!(answers::footprint, m)?)?;
    m.add_function(wrap_pyfunction!(simulate::simulate, m)?)?;
    m.add_function(wrap_pyfunction!(experiment::metadata, m)?)?;
    m.add_function(wrap_pyfunction!(validate::validate_devices, m)?)?;
    m.add_function(wrap_pyfunction!(validate::validate_energy, m)?)?;
    m.add_function(wrap_pyfunction!(validate::validate_sustained, m)?)?;
    m.add_function(wrap_pyfunction!(validate::validate_host, m)?)?;
    m.add_function(wrap_pyfunction!(calibrate::calibrate_llama_bench, m)?)?;
    m.add_function(wrap_pyfunction!(calibrate::calibrate_host, m)?)?;
    m.add_function(wrap_pyfunction!(specs::parse_mix, m)?)?;
    m.add_function(wrap_pyfunction!(specs::parse_format, m)?)?;
    m.add_function(wrap_pyfunction!(specs::parse_backend, m)?)?;
    m.add_function(wrap_pyfunction!(specs::parse_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(calibrate::beside, m)?)?;
    m.add_function(wrap_pyfunction!(calibrate::write_texts, m)?)?;
    m.add_function(wrap_pyfunction!(answers::solve, m)?)?;
    m.add_function(wrap_pyfunction!(answers::pareto, m)?)?;
    m.add_function(wrap_pyfunction!(answers::ops, m)?)?;
    m.add_function(wrap_pyfunction!(answers::compare, m)?)?;
    m.add_function(wrap_pyfunction!(answers::at_depths, m)?)?;
    m.add_function(wrap_pyfunction!(arrow::write_parquet, m)?)?;
    m.add_function(wrap_pyfunction!(arrow::plot_sweep, m)?)?;
    m.add_function(wrap_pyfunction!(cli::cli, m)?)?;
    m.add_class::<arrow::ArrowStream>()?;
    m.add_class::<experiment::Experiment>()?;
    m.add("MemwallError", py.get_type::<errors::MemwallError>())?;
    m.add("SpecError", py.get_type::<errors::SpecError>())?;
    m.add("GgufError", py.get_type::<errors::GgufError>())?;
    m.add("ConfigError", py.get_type::<errors::ConfigError>())?;
    m.add("MemwallIOError", py.get_type::<errors::MemwallIOError>())?;
    m.add("CalibrationError", py.get_type::<errors::CalibrationError>())?;
    m.add("SimulationError", py.get_type::<errors::SimulationError>())?;
    Ok(())
}
