//! Running the `memwall` binary from the integration tests.

use std::path::Path;
use std::process::{Command, Output};

/// Run `memwall args` in `dir`.
pub fn memwall(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_memwall")).args(args).current_dir(dir).output().unwrap()
}

/// (stdout, stderr) as text.
#[allow(dead_code)] // not every test file reads the output
pub fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}
