//! SIGINT and SIGTERM: temporary outputs removed, nothing published, exit 128 + signal.

/// The signal that interrupted the process, 0 if none.
static SIGNAL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// On SIGINT or SIGTERM, remove every temporary output in flight, let nothing be published,
/// and exit with 128 + the signal (130, 143). A thread waits for the signals, so this holds
/// wherever the work is (a sweep, a long simulation, a Parquet write).
#[cfg(unix)]
pub(crate) fn exit_on_signals() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = match signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("warning: cannot handle SIGINT/SIGTERM ({e}); an interrupt may leave .memwall-* temporary files");
            return;
        }
    };
    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            SIGNAL.store(sig, std::sync::atomic::Ordering::SeqCst);
            let removed = memwall_lab::abandon_outputs();
            let name = if sig == SIGINT { "SIGINT" } else { "SIGTERM" };
            eprintln!("\ninterrupted by {name}: {removed} temporary file(s) removed, nothing written");
            std::process::exit(128 + sig);
        }
    });
}

/// The signal that interrupted the process, 0 if none.
pub(crate) fn caught() -> i32 {
    SIGNAL.load(std::sync::atomic::Ordering::SeqCst)
}
