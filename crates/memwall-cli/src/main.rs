//! The `memwall` binary: [`memwall_cli::run`] on this process's arguments.

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(memwall_cli::run(std::env::args_os(), true))
}
