//! Printing that survives a closed stdout or stderr: `memwall presets | head -1` must end
//! quietly, not panic as `println!` does on a broken pipe.
//!
//! - stdout: a broken pipe (the reader went away) silently drops this and every later line;
//!   the command carries on (its files are still written) and exits with its own status. Any
//!   other write error (`> /dev/full`) also stops printing and is reported by [`finish`], which
//!   turns a successful command into exit status 2.
//! - stderr: write errors are ignored (there is nowhere left to report them).
//!
//! `main.rs` routes `println!`/`eprintln!` here through two macros of the same names.

use std::io::Write as _;
use std::sync::Mutex;

/// State of stdout: `None` while lines are written, else why they are not.
static STDOUT: Mutex<Option<Gone>> = Mutex::new(None);

enum Gone {
    /// The reader closed the pipe.
    Closed,
    /// Another write error, reported at the end.
    Failed(std::io::Error),
}

/// Write one line to stdout (see the module docs).
pub fn out(args: std::fmt::Arguments) {
    let mut state = STDOUT.lock().unwrap_or_else(|p| p.into_inner());
    if state.is_some() {
        return;
    }
    if let Err(e) = writeln!(std::io::stdout().lock(), "{args}") {
        *state = Some(if e.kind() == std::io::ErrorKind::BrokenPipe { Gone::Closed } else { Gone::Failed(e) });
    }
}

/// Write one line to stderr, ignoring errors.
pub fn err(args: std::fmt::Arguments) {
    let _ = writeln!(std::io::stderr().lock(), "{args}");
}

/// Flush stdout; the first write error other than a closed pipe, if any.
pub fn finish() -> std::io::Result<()> {
    let mut state = STDOUT.lock().unwrap_or_else(|p| p.into_inner());
    if state.is_none()
        && let Err(e) = std::io::stdout().lock().flush()
    {
        *state = Some(if e.kind() == std::io::ErrorKind::BrokenPipe { Gone::Closed } else { Gone::Failed(e) });
    }
    match state.take() {
        Some(Gone::Failed(e)) => Err(e),
        _ => Ok(()),
    }
}
