//! Calibration use cases: a device and engine profile fitted to llama-bench rows (`memwall
//! calibrate --from-llama-bench`, `memwall.calibrate(llama_bench=...)`), and the profile files
//! every calibration writes. Calibrating this machine is [`memwall_calib::hostfit::calibrate_host`].

use std::path::Path;

use memwall_spec::{DeviceSpec, EngineSpec};

use crate::error::{LabError, Result};
use memwall_calib::llama_bench::Calibrated;

/// Fit `device` and `engine` (presets or files) to the llama-bench output at `file` of
/// `model` run on that device. Every input is read (and registered as an input) before
/// `outputs` (flag, path) are checked against them; nothing is written here.
pub fn calibrate_llama_bench(
    file: &Path,
    model: &str,
    device: &str,
    engine: &str,
    outputs: &[(&str, &Path)],
) -> Result<Calibrated> {
    let text = crate::read_text(file)?;
    let (model, device, engine) = (crate::load_model(model)?, crate::load_device(device)?, crate::load_engine(engine)?);
    crate::check_outputs(&[], outputs)?;
    let rows = memwall_calib::llama_bench::parse(&text, &file.display().to_string())?;
    Ok(memwall_calib::llama_bench::calibrate(&rows, &model, &device, &engine)?)
}

/// A calibrated device and engine as the TOML of their profile files.
pub fn profile_texts(device: &DeviceSpec, engine: &EngineSpec) -> Result<(String, String)> {
    let fail = |what: &str, e: toml::ser::Error| LabError::Write {
        path: format!("<{what} profile>").into(),
        message: format!("serializing the calibrated {what}: {e}"),
    };
    Ok((
        toml::to_string(device).map_err(|e| fail("device", e))?,
        toml::to_string(engine).map_err(|e| fail("engine", e))?,
    ))
}
