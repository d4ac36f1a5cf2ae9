//! `memwall.validate`: published rows predicted by leave-one-device-out fits, and this
//! machine's runs against its host profile.

use pyo3::prelude::*;

use crate::arrow::{ArrowStream, one_batch};
use crate::errors::Result;

/// Leave-one-device-out validation of decode and prefill tok/s against published measurements
/// ([`memwall_lab::report::validate_devices`]): the report rows (the columns of `memwall validate
/// --out`, decode rows then prefill rows, told apart by `phase`) and the rows set aside with why.
#[pyfunction]
#[pyo3(signature = (table=None))]
pub(crate) fn validate_devices(py: Python<'_>, table: Option<&str>) -> Result<(ArrowStream, Vec<(String, String)>)> {
    let r = py.detach(|| -> memwall_lab::Result<_> {
        let r = memwall_lab::report::validate_devices(table.map(std::path::Path::new), &[])?;
        let rows = r.report_rows();
        Ok((memwall_lab::columns::batch_of(memwall_lab::columns::REPORT_COLUMNS, &rows)?, r.validation.excluded))
    });
    let (batch, excluded) = r?;
    Ok((one_batch(batch), excluded))
}

/// Published power rows (`table`, or the shipped ones) predicted at their boundaries
/// ([`memwall_lab::report::validate_energy`]): the report and the rows set aside.
#[pyfunction]
#[pyo3(signature = (table=None))]
pub(crate) fn validate_energy(py: Python<'_>, table: Option<&str>) -> Result<(ArrowStream, Vec<(String, String)>)> {
    let r = py.detach(|| -> memwall_lab::Result<_> {
        let r = memwall_lab::report::validate_energy(table.map(std::path::Path::new), &[])?;
        let batch = memwall_lab::columns::batch_of(memwall_lab::columns::ENERGY_REPORT_COLUMNS, &r.validation.checks)?;
        Ok((batch, r.validation.excluded))
    });
    let (batch, excluded) = r?;
    Ok((one_batch(batch), excluded))
}

/// Published sustained runs (`table`, or the shipped ones) simulated on the presets' thermal
/// networks or their class networks ([`memwall_lab::report::validate_sustained`]): the report
/// and the rows set aside.
#[pyfunction]
#[pyo3(signature = (table=None))]
pub(crate) fn validate_sustained(py: Python<'_>, table: Option<&str>) -> Result<(ArrowStream, Vec<(String, String)>)> {
    let r = py.detach(|| -> memwall_lab::Result<_> {
        let r = memwall_lab::report::validate_sustained(table.map(std::path::Path::new), &[])?;
        let batch =
            memwall_lab::columns::batch_of(memwall_lab::columns::SUSTAINED_REPORT_COLUMNS, &r.validation.checks)?;
        Ok((batch, r.validation.excluded))
    });
    let (batch, excluded) = r?;
    Ok((one_batch(batch), excluded))
}

/// Run memwall's reference engine on the host-validation designs whose id contains `only`
/// (all when None) and predict each with the host profile at `host` (its `.engine.toml`
/// beside it) ([`memwall_lab::report::validate_host`]): the rows of `memwall validate --host --out`.
#[pyfunction]
#[pyo3(signature = (host, tokens=8, repeats=3, only=None))]
pub(crate) fn validate_host(
    py: Python<'_>,
    host: &str,
    tokens: usize,
    repeats: usize,
    only: Option<&str>,
) -> Result<ArrowStream> {
    let r = py.detach(|| -> memwall_lab::Result<_> {
        let v =
            memwall_lab::report::validate_host(std::path::Path::new(host), tokens, repeats, only, &[], &mut |_, _| {})?;
        memwall_lab::columns::batch_of(memwall_lab::columns::HOST_REPORT_COLUMNS, &v.rows)
    });
    Ok(one_batch(r?))
}
