//! Published decode measurements as memwall scenarios, for `memwall validate`: the rows,
//! their reading and the leave-one-device-out run live in [`memwall_calib::published`]
//! (re-exported here under their old paths); this module keeps the Arrow columns of the
//! reports ([`REPORT_COLUMNS`], [`HOST_REPORT_COLUMNS`], [`FITTED_COLUMNS`]).

pub use memwall_calib::published::{
    COLUMNS, Validated, Validation, ValidationRow, fitted_engine_profiles, observation, parse_table, ratio_interval,
    read_table, validate,
};

/// The columns of a validation report (`memwall validate --out`).
pub static REPORT_COLUMNS: &[crate::columns::Column<Validated>] = {
    use crate::columns::{Column, Get};
    &[
        Column { name: "id", get: Get::Str(|v| &v.id) },
        Column { name: "unit_device", get: Get::Str(|v| &v.unit_device) },
        Column { name: "device", get: Get::Str(|v| &v.device) },
        Column { name: "class", get: Get::Str(|v| &v.class) },
        Column { name: "engine", get: Get::Str(|v| &v.engine) },
        Column { name: "backend", get: Get::Str(|v| &v.backend) },
        Column { name: "model", get: Get::Str(|v| &v.model) },
        Column { name: "weights", get: Get::Str(|v| &v.weights) },
        Column { name: "measured_tok_s", get: Get::F64(|v| v.measured_tok_s) },
        Column { name: "predicted_tok_s", get: Get::F64(|v| v.predicted_tok_s) },
        Column { name: "in_sample_tok_s", get: Get::F64(|v| v.in_sample_tok_s) },
        Column { name: "roofline_tok_s", get: Get::F64(|v| v.roofline_tok_s) },
        Column { name: "error", get: Get::F64(|v| v.predicted_tok_s / v.measured_tok_s - 1.0) },
        Column { name: "roofline_error", get: Get::F64(|v| v.roofline_tok_s / v.measured_tok_s - 1.0) },
    ]
};

/// Columns of the `memwall validate --host` report, one row per design run on this machine.
pub static HOST_REPORT_COLUMNS: &[crate::columns::Column<memwall_calib::hostval::HostRow>] = {
    use crate::columns::{Column, Get};
    &[
        Column { name: "id", get: Get::Str(|v| &v.id) },
        Column { name: "what", get: Get::Str(|v| &v.what) },
        Column { name: "model", get: Get::Str(|v| &v.model) },
        Column { name: "weights", get: Get::Str(|v| &v.weights) },
        Column { name: "kv", get: Get::Str(|v| &v.kv) },
        Column { name: "context", get: Get::U64(|v| v.context) },
        Column { name: "threads", get: Get::U32(|v| v.threads) },
        Column { name: "weight_bytes", get: Get::U64(|v| v.weight_bytes) },
        Column { name: "measured_tok_s", get: Get::F64(|v| v.measured_tok_s) },
        Column { name: "estimated_tok_s", get: Get::F64(|v| v.estimated_tok_s) },
        Column { name: "simulated_tok_s", get: Get::F64(|v| v.simulated_tok_s) },
        Column { name: "error", get: Get::F64(|v| v.error()) },
        Column { name: "sim_error", get: Get::F64(|v| v.sim_error()) },
        Column { name: "binding", get: Get::Str(|v| &v.binding) },
    ]
};

/// Columns of a host calibration's fitted figures (`memwall calibrate`'s table).
pub static FITTED_COLUMNS: &[crate::columns::Column<memwall_calib::hostfit::Fitted>] = {
    use crate::columns::{Column, Get};
    &[
        Column { name: "field", get: Get::Str(|f| &f.field) },
        Column { name: "value", get: Get::F64(|f| f.value) },
        Column { name: "lo", get: Get::F64(|f| f.lo) },
        Column { name: "hi", get: Get::F64(|f| f.hi) },
        Column { name: "how", get: Get::Str(|f| &f.how) },
    ]
};
