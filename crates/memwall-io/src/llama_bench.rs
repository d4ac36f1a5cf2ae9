//! llama-bench results, and a device calibrated from them: reading the output and the fit
//! live in [`memwall_calib::llama_bench`] (re-exported here under their old paths); this
//! module keeps the Arrow columns of the residual table ([`RESIDUAL_COLUMNS`]).

pub use memwall_calib::llama_bench::{
    BenchFormat, BenchRow, Calibrated, LABEL_FACTOR, MAX_RMS_LOG, PARAMS_TOLERANCE, Residual, SIZE_TOLERANCE,
    calibrate, parse,
};

/// The columns of a calibration's residual table.
pub static RESIDUAL_COLUMNS: &[crate::columns::Column<Residual>] = {
    use crate::columns::{Column, Get};
    &[
        Column { name: "line", get: Get::U64(|r| r.line as u64) },
        Column { name: "depth", get: Get::U64(|r| r.depth) },
        Column { name: "threads", get: Get::OptU32(|r| r.threads) },
        Column { name: "measured_tok_s", get: Get::F64(|r| r.measured_tok_s) },
        Column { name: "before_tok_s", get: Get::F64(|r| r.before_tok_s) },
        Column { name: "calibrated_tok_s", get: Get::F64(|r| r.calibrated_tok_s) },
        Column { name: "error", get: Get::F64(|r| r.calibrated_tok_s / r.measured_tok_s - 1.0) },
    ]
};
