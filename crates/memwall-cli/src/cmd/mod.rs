//! One module per command: each parses nothing (clap did), calls the library and prints.

pub(crate) mod calibrate;
pub(crate) mod compare;
pub(crate) mod decode;
pub(crate) mod estimate;
pub(crate) mod footprint;
pub(crate) mod presets;
pub(crate) mod quality;
pub(crate) mod run;
pub(crate) mod simulate;
pub(crate) mod solve;
pub(crate) mod ui;
pub(crate) mod validate;
