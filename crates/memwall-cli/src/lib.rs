//! `memwall`: footprint, speed and limits of on-device LLM inference from the command line.
//! The `memwall` binary and the `memwall` command the Python package installs both call
//! [`run`]: one command line, one native code.
//!
//! Every error is printed with the field and value it concerns and exits with status 2;
//! output paths are checked before any work; SIGINT/SIGTERM remove the temporary files in
//! flight and exit with 130/143; a closed stdout or stderr ends printing quietly.

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::Context;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use memwall_spec::units::{ByteSize, Seconds};

mod stdio;

// `println!`/`eprintln!` in this binary go through `stdio`, which does not panic when the
// reader of stdout or stderr has gone (`memwall presets | head -1`).
macro_rules! println {
    () => {
        $crate::stdio::out(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::stdio::out(format_args!($($arg)*))
    };
}
macro_rules! eprintln {
    ($($arg:tt)*) => {
        $crate::stdio::err(format_args!($($arg)*))
    };
}

mod args;
mod cmd;
mod design;
mod json;
mod render;
mod signals;

pub(crate) use args::{flag, whole};
pub(crate) use design::{KvArgs, ScenarioArgs};
pub(crate) use render::{gb, print_table, signed_gb};

/// Parse the command line with every subcommand accepting a leading minus as a value, so that
/// `--context -1` reaches the flag's parser (which refuses it by name) rather than being taken
/// for an unknown flag.
fn parse_args(args: Vec<OsString>) -> std::result::Result<Cli, clap::Error> {
    let cmd = Cli::command().mut_subcommands(|c| c.allow_negative_numbers(true));
    Cli::from_arg_matches(&cmd.try_get_matches_from(args)?)
}

#[derive(Parser)]
#[command(name = "memwall", version, about = "The memory wall of on-device LLM inference")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the model, device and engine presets.
    Presets {
        /// Only `models`, `devices` or `engines`.
        kind: Option<String>,
        /// One JSON document (`memwall.presets`: `models`, `devices`, `engines`, each a list of
        /// the figures the table shows and more) instead of the tables.
        #[arg(long)]
        json: bool,
    },
    /// The device database: chips of phones, laptops, desktops, boards and modules from their
    /// spec sheets, with the names users type for them (`--device "Galaxy S24 Ultra"`).
    Devices {
        /// Only chips whose id, name or device names contain this (`"pixel"`, `"m3 max"`).
        query: Option<String>,
        /// One JSON document (`memwall.devices`) instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Memory footprint by component, and whether it fits the device with the margin.
    Footprint(ScenarioArgs),
    /// Decode tok/s, TTFT, energy per token and the binding term of one design point.
    Estimate(cmd::estimate::EstimateArgs),
    /// Two to eight designs side by side: components and metrics with their deltas from the
    /// first and the binding term of each.
    Compare(cmd::compare::CompareArgs),
    /// Answer a design question directly: the longest context, the least RAM or bandwidth,
    /// the best-quality format that fits, or what to change so that a design fits.
    Solve(cmd::solve::SolveArgs),
    /// Run an experiment (a base scenario and a grid) and write the results as Parquet.
    Run {
        /// The experiment TOML.
        #[arg(default_value = "experiments/phone-35b.toml")]
        experiment: PathBuf,
        /// Output Parquet file (default: `results/NAME.parquet`, NAME being the experiment's name).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print the table of every design when the grid has at most this many points; a larger
        /// grid prints its counts and best designs (0: always the whole table).
        #[arg(long, default_value_t = 200, value_parser = whole::<usize>)]
        max_rows: usize,
        /// Refuse a grid of more points than this.
        #[arg(long, default_value_t = 50_000_000, value_parser = whole::<u64>)]
        max_points: u64,
        /// Figure of memory against decode tok/s, coloured by estimated quality, with the Pareto
        /// front drawn (`.pdf`, `.svg` or `.png`; a sweep beyond 200 000 points is sampled evenly, the
        /// front always complete).
        #[arg(long)]
        plot: Option<PathBuf>,
        /// The figure's size in pixels.
        #[arg(long, default_value = "1000x700", value_parser = flag::<memwall_lab::plot::Size>("--plot-size"))]
        plot_size: memwall_lab::plot::Size,
    },
    /// Open the web page: pick a model, device, unit and formats and see the footprint against
    /// the budget, decode and prefill with their 80 % bands, designs side by side, a sweep's
    /// front and a short simulation, computed in the browser (`scripts/build-web` builds it).
    Ui(cmd::ui::UiArgs),
    /// Simulate a scenario through time (thermal throttling, memory pressure, policies) and
    /// print a summary per design point; optionally write the per-token trace as Parquet.
    Simulate {
        /// The scenario: an experiment TOML whose `[base.sim]` configures the simulation
        /// (a `[grid]` simulates every point).
        scenario: PathBuf,
        /// Simulated time per point (`90s`, `10m`, `1h`); the session's turns repeat until then.
        #[arg(long, allow_hyphen_values = true, value_parser = flag::<Seconds>("duration"))]
        duration: Option<Seconds>,
        /// Per-token trace output (Parquet).
        #[arg(long)]
        trace: Option<PathBuf>,
        /// Summary output, one row per design point (Parquet).
        #[arg(long)]
        summary: Option<PathBuf>,
        /// Figure of generation tok/s, die/skin temperature, the compute unit's power and clock over
        /// time, one line per point, with kills, policy actions and background events marked
        /// (`.pdf`, `.svg` or `.png`).
        #[arg(long)]
        plot: Option<PathBuf>,
        /// The figure's size in pixels.
        #[arg(long, default_value = "1100x1000", value_parser = flag::<memwall_lab::plot::Size>("--plot-size"))]
        plot_size: memwall_lab::plot::Size,
        /// Refuse a run whose trace would exceed this size (`500MB`, `2GB`, `10GB`).
        #[arg(long, default_value = "2GB", allow_hyphen_values = true, value_parser = flag::<ByteSize>("--trace-limit"))]
        trace_limit: ByteSize,
    },
    /// Calibrate a device. Without `--from-llama-bench`: probe this machine with memwall's
    /// kernels and engine (read bandwidth by threads and working set, the GEMV of each weight
    /// format in cache and DRAM, attention per KV format and context, MoE routing, the
    /// engine's fixed costs), fit the cost model with confidence intervals, and write a device
    /// profile, an engine profile (`memwall@NAME`) and the raw measurements. With it: fit a
    /// device from llama-bench output of a model on the device (its bandwidth share, the
    /// engine's fixed cost per token and how attention grows with the context there).
    Calibrate {
        /// llama-bench output with generation tests (tg128, tg128 @ d4096, ...).
        #[arg(long)]
        from_llama_bench: Option<PathBuf>,
        /// With --from-llama-bench: the device measured, a preset name or TOML path.
        #[arg(long)]
        device: Option<String>,
        /// With --from-llama-bench: the model benchmarked, a preset name or TOML path.
        #[arg(long)]
        model: Option<String>,
        /// With --from-llama-bench: the engine that ran it.
        #[arg(long, default_value = "llama.cpp")]
        engine: String,
        /// Device profile to write (`datasets/hosts/NAME.toml`); the engine profile and the raw
        /// measurements go beside it (`NAME.engine.toml`, `NAME.measurements.csv`).
        #[arg(long)]
        out: PathBuf,
        /// Engine profile to write (default: OUT with `.engine.toml`).
        #[arg(long)]
        engine_out: Option<PathBuf>,
        /// Host probing: the short probe set (about 2 minutes).
        #[arg(long)]
        quick: bool,
        /// Host probing: the most threads probed (default: the CPUs available).
        #[arg(long, value_parser = whole::<usize>)]
        threads: Option<usize>,
    },
    /// Decode for real on this machine with memwall's reference engine: a model with seeded
    /// random weights in the chosen formats, timed per token and per operator.
    Decode(cmd::decode::DecodeArgs),
    /// Quality from measured error: the output error of each weight format on realistic
    /// synthetic weights, fitted to the published perplexity deltas of llama.cpp's mixes,
    /// and estimates (with 80 % intervals) for formats and quantizers without a published
    /// figure (group-wise int3/int4 by RTN, AWQ or GPTQ, per-channel int4/int8).
    Quality(cmd::quality::QualityArgs),
    /// Check predictions against measurements: published decode and prefill rates
    /// leave-one-device-out (--devices), published power and energy per token (--energy),
    /// published sustained runs (--sustained), or this machine's runs against its host
    /// profile (--host).
    Validate {
        /// Validate decode and prefill tok/s across devices, cross-validated.
        #[arg(long)]
        devices: bool,
        /// Validate power and energy per token against published measurements
        /// (datasets/energy_measurements.csv, or --table), each at the boundary its source
        /// measured.
        #[arg(long, conflicts_with_all = ["devices", "host", "write_engines"])]
        energy: bool,
        /// Simulate published sustained runs (datasets/sustained_validation.csv, or --table)
        /// on the presets' thermal networks or their class networks, and compare the retained
        /// fraction, time to -25 %, early ends and die temperature.
        #[arg(long, conflicts_with_all = ["devices", "energy", "host", "write_engines"])]
        sustained: bool,
        /// Validate on this machine: run the reference engine on 14 designs and predict each
        /// with this calibrated host profile (`memwall calibrate --out HOST.toml`; its
        /// `HOST.engine.toml` beside it).
        #[arg(long)]
        host: Option<PathBuf>,
        /// With --host: tokens timed per design.
        #[arg(long, default_value_t = 8, value_parser = whole::<usize>)]
        tokens: usize,
        /// With --host: timed runs per design, interleaved across the designs in rounds; a
        /// design's measurement is their median, its noise their relative half-range.
        #[arg(long, default_value_t = 3, value_parser = whole::<usize>)]
        repeats: usize,
        /// With --host: only the designs whose id contains this.
        #[arg(long)]
        only: Option<String>,
        /// The validation table (default: the shipped datasets/validation_decode.csv, with
        /// --energy datasets/energy_measurements.csv, with --sustained
        /// datasets/sustained_validation.csv).
        #[arg(long)]
        table: Option<PathBuf>,
        /// Write the per-row report as Parquet.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Write the engine profiles with the figures fitted on every row (and the
        /// cross-validated error ratios) into this directory.
        #[arg(long)]
        write_engines: Option<PathBuf>,
    },
}

/// An error and its causes on one line, each cause shown once: a message that already
/// contains its cause's text (as `path: os error` does) is not followed by it again.
fn report(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let m = cause.to_string();
        if out.contains(&m) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&m);
    }
    out
}

/// Run the command line `args` (the program name first, as `std::env::args_os` gives it) and
/// return the exit status: 0, 2 on any error (printed with the field and value it concerns),
/// 128 + the signal when interrupted. With `handle_signals`, SIGINT and SIGTERM remove the
/// temporary outputs in flight and end the process (exit 130/143) — what a process that only
/// runs this command wants; a host process with its own handlers (a Python session calling
/// the command line in-process) passes `false` and keeps them.
pub fn run(args: impl IntoIterator<Item = OsString>, handle_signals: bool) -> u8 {
    #[cfg(unix)]
    if handle_signals {
        signals::exit_on_signals();
    }
    #[cfg(not(unix))]
    let _ = handle_signals;
    // Every file this process reads is an input no output may replace.
    let _inputs = memwall_lab::inputs::scope();
    let cli = match parse_args(args.into_iter().collect()) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let result = match &cli.command {
        Command::Presets { kind, json } => cmd::presets::presets(kind.as_deref(), *json),
        Command::Devices { query, json } => cmd::presets::devices(query.as_deref(), *json),
        Command::Footprint(a) => cmd::footprint::footprint(a),
        Command::Estimate(a) => cmd::estimate::estimate(a),
        Command::Solve(a) => cmd::solve::solve(a),
        Command::Compare(a) => cmd::compare::compare(a),
        Command::Decode(a) => cmd::decode::decode(a),
        Command::Quality(a) => cmd::quality::quality(a),
        Command::Run { experiment, out, max_rows, max_points, plot, plot_size } => {
            cmd::run::run(experiment, out.clone(), *max_rows, *max_points, plot.as_deref().map(|p| (p, *plot_size)))
        }
        Command::Calibrate { from_llama_bench, device, model, engine, out, engine_out, quick, threads } => {
            match (from_llama_bench, device, model) {
                (Some(file), Some(device), Some(model)) => {
                    cmd::calibrate::from_llama_bench(file, device, model, engine, out, engine_out.as_deref())
                }
                (Some(_), _, _) => Err(anyhow::anyhow!("`--from-llama-bench` needs `--device` and `--model`")),
                (None, Some(_), _) | (None, _, Some(_)) => Err(anyhow::anyhow!(
                    "`--device` and `--model` go with `--from-llama-bench`; without it memwall probes this machine"
                )),
                (None, None, None) => cmd::calibrate::host(out, engine_out.as_deref(), *quick, *threads),
            }
        }
        Command::Validate { devices, energy, sustained, host, tokens, repeats, only, table, out, write_engines } => {
            if *energy {
                cmd::validate::validate_energy(table.as_deref(), out.as_deref())
            } else if *sustained {
                cmd::validate::validate_sustained(table.as_deref(), out.as_deref())
            } else if let Some(h) = host {
                cmd::calibrate::validate_host(h, *tokens, *repeats, only.as_deref(), out.as_deref())
            } else if *devices {
                cmd::validate::validate(table.as_deref(), out.as_deref(), write_engines.as_deref())
            } else {
                Err(anyhow::anyhow!(
                    "say what to validate: `memwall validate --devices`, `--energy`, `--sustained` or `--host HOST.toml`"
                ))
            }
        }
        Command::Ui(a) => cmd::ui::ui(a),
        Command::Simulate { scenario, duration, trace, summary, plot, plot_size, trace_limit } => {
            cmd::simulate::simulate(
                scenario,
                duration.map(|d| d.0),
                memwall_lab::Outputs {
                    trace: trace.as_deref(),
                    plot: plot.as_deref(),
                    plot_size: *plot_size,
                    trace_limit_bytes: trace_limit.0,
                },
                summary.as_deref(),
            )
        }
    };
    for p in memwall_lab::files::atomic::take_stale_removed() {
        eprintln!("note: removed {}, a temporary file left by a memwall process that no longer runs", p.display());
    }
    let result = result.and_then(|()| stdio::finish().context("writing to stdout"));
    let signal = signals::caught();
    if signal != 0 {
        // The signal thread is exiting with this status; return the same.
        return (128 + signal) as u8;
    }
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {}", report(&e));
            2
        }
    }
}
