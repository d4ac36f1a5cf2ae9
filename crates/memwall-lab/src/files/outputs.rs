//! Output paths checked before a command does any work, so that writing by temporary file
//! and rename never destroys something that is not an old output.
//!
//! [`check_outputs`] refuses an output that is one of the inputs (the same file: same device
//! and inode, so a hard or symbolic link to an input is caught too), that exists and is not a
//! regular file (a directory, a FIFO, a device node such as `/dev/full`, a socket), or that
//! another output of the same command resolves to. An output that is a symbolic link is
//! written through to the file it points to (see [`crate::files::atomic`]), so it is checked as that
//! file. [`default_output`] derives `results/NAME.parquet` from an experiment's name and
//! refuses a name that would leave `results/`.

use std::path::{Component, Path, PathBuf};

use memwall_spec::SpecError;

use crate::error::{LabError, OutputProblem, Result};
use crate::files::atomic::{non_regular_kind, resolve_target};
use memwall_catalog::inputs::{FileId, existing_id};

/// Folder of the outputs derived from an experiment's name.
pub const RESULTS_DIR: &str = "results";

/// Longest experiment name [`default_output`] accepts, bytes (file names are limited to 255
/// bytes on common file systems; this leaves room for the extension and temporary suffixes).
pub const MAX_NAME_BYTES: usize = 200;

/// Absolute form of a path that does not exist: its longest existing ancestor canonicalized,
/// then the rest with `.` dropped and `..` taking back the component before it (those
/// components do not exist yet, so they are no links).
fn absolute_missing(path: &Path) -> PathBuf {
    for a in path.ancestors().skip(1) {
        let dir = if a.as_os_str().is_empty() { Path::new(".") } else { a };
        if let Ok(mut out) = std::fs::canonicalize(dir) {
            for c in path.strip_prefix(a).unwrap_or(path).components() {
                match c {
                    Component::CurDir => {}
                    Component::ParentDir => {
                        out.pop();
                    }
                    other => out.push(other),
                }
            }
            return out;
        }
    }
    // Not even the working directory exists: the path as given is all there is.
    path.to_path_buf()
}

/// Identity of the file an output writes, or why it is refused.
fn output_id(flag: &str, path: &Path) -> Result<FileId> {
    let refuse = |problem| LabError::Output { flag: flag.to_string(), path: path.to_path_buf(), problem };
    let file_err = |source| LabError::File { path: path.to_path_buf(), source };
    if path.file_name().is_none() {
        return Err(refuse(OutputProblem::NoFileName));
    }
    let target = resolve_target(path).map_err(file_err)?;
    match std::fs::symlink_metadata(&target) {
        Ok(m) => match non_regular_kind(&m) {
            Some(kind) => Err(refuse(OutputProblem::NotRegular { kind })),
            None => existing_id(&target, &m).map_err(file_err),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(FileId::Path(absolute_missing(&target))),
        Err(e) => Err(file_err(e)),
    }
}

/// Check a command's outputs (`(flag, path)` pairs, e.g. `("--out", path)`) against its
/// inputs and each other before any work starts. The inputs are `inputs` and every file read
/// so far in the open [`memwall_catalog::inputs::scope`]. Refuses, naming the flag and path
/// ([`LabError::Output`]): an output that is the same file as an input (inputs that do not
/// exist are skipped: nothing was read from them), one that exists and is not a regular file,
/// one that names no file, and two outputs that resolve to the same file. Symbolic links are
/// followed, as the writers follow them. Creates nothing.
pub fn check_outputs(inputs: &[&Path], outputs: &[(&str, &Path)]) -> Result<()> {
    let inputs: Vec<(FileId, &Path)> = inputs
        .iter()
        .filter_map(|p| {
            let m = std::fs::metadata(p).ok()?;
            existing_id(p, &m).ok().map(|id| (id, *p))
        })
        .collect();
    let mut seen: Vec<(FileId, &str)> = Vec::with_capacity(outputs.len());
    for &(flag, path) in outputs {
        let refuse = |problem| LabError::Output { flag: flag.to_string(), path: path.to_path_buf(), problem };
        let id = output_id(flag, path)?;
        let input = inputs.iter().find(|(i, _)| *i == id).map(|(_, p)| p.to_path_buf());
        if let Some(input) = input.or_else(|| memwall_catalog::inputs::input_with(&id)) {
            return Err(refuse(OutputProblem::IsInput { input }));
        }
        if let Some((_, other)) = seen.iter().find(|(s, _)| *s == id) {
            return Err(refuse(OutputProblem::Shared { other: other.to_string() }));
        }
        seen.push((id, flag));
    }
    Ok(())
}

/// The output an experiment's name gives when no path is passed:
/// `results/NAME.{extension}`. The name must be a portable file name that stays in
/// `results/`: 1 to [`MAX_NAME_BYTES`] ASCII letters, digits, `-`, `_` and `.`, not starting
/// with `.` (so no `..`, no separators, no absolute path); any other name is refused, naming
/// `name` and its value (an explicit output path is the way to write such an experiment).
pub fn default_output(name: &str, extension: &str) -> Result<PathBuf> {
    let bad = |reason: &str| {
        LabError::Spec(SpecError::invalid(
            "name",
            format!("{name:?}"),
            format!(
                "{reason}; the default output {RESULTS_DIR}/NAME.{extension} needs a name of ASCII letters, digits, `-`, `_` and `.` that does not start with `.` (or pass an output path)"
            ),
        ))
    };
    if name.is_empty() {
        return Err(bad("empty"));
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(bad(&format!("longer than {MAX_NAME_BYTES} bytes")));
    }
    if let Some(c) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))) {
        return Err(bad(&format!("{c:?} is not portable in a file name")));
    }
    if name.starts_with('.') {
        return Err(bad("starts with `.`"));
    }
    Ok(Path::new(RESULTS_DIR).join(format!("{name}.{extension}")))
}

/// A file beside `path` named after its stem (`default_stem` when it has none) with
/// `suffix`: the engine profile and raw measurements of a device profile (`host.toml` →
/// `host.engine.toml`, `host.measurements.csv`).
pub fn beside(path: &Path, suffix: &str, default_stem: &str) -> PathBuf {
    let stem = path.file_stem().map_or_else(|| default_stem.into(), |s| s.to_string_lossy().into_owned());
    path.with_file_name(format!("{stem}{suffix}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::Experiment;

    fn problem(r: Result<()>) -> (String, OutputProblem) {
        match r {
            Err(LabError::Output { flag, problem, .. }) => (flag, problem),
            other => panic!("expected a refused output, got {other:?}"),
        }
    }

    #[test]
    fn an_output_that_is_an_input_is_refused_however_it_is_spelled() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("exp.toml");
        std::fs::write(&input, "name = \"x\"").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let respelled = dir.path().join("sub/../exp.toml");
        let (flag, p) = problem(check_outputs(&[&input], &[("--out", &respelled)]));
        assert_eq!(flag, "--out");
        assert_eq!(p, OutputProblem::IsInput { input: input.clone() });
        let hard = dir.path().join("hard.parquet");
        std::fs::hard_link(&input, &hard).unwrap();
        assert!(matches!(problem(check_outputs(&[&input], &[("--out", &hard)])).1, OutputProblem::IsInput { .. }));
        #[cfg(unix)]
        {
            let link = dir.path().join("link.parquet");
            std::os::unix::fs::symlink("exp.toml", &link).unwrap();
            let (_, p) = problem(check_outputs(&[&input], &[("--trace", &link)]));
            assert!(matches!(p, OutputProblem::IsInput { .. }));
        }
        assert_eq!(std::fs::read_to_string(&input).unwrap(), "name = \"x\"");
        // A missing input was not read: nothing to protect.
        check_outputs(&[&dir.path().join("missing.toml")], &[("--out", &dir.path().join("missing.toml"))]).unwrap();
    }

    #[test]
    fn two_outputs_resolving_to_one_file_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("new/a.parquet");
        let b = dir.path().join("new/./x/../a.parquet");
        let (flag, p) = problem(check_outputs(&[], &[("--trace", &a), ("--summary", &b)]));
        assert_eq!((flag.as_str(), p), ("--summary", OutputProblem::Shared { other: "--trace".into() }));
        check_outputs(&[], &[("--trace", &a), ("--summary", &dir.path().join("new/b.parquet"))]).unwrap();
        assert!(!dir.path().join("new").exists(), "checking creates nothing");
        std::fs::write(dir.path().join("old.parquet"), "old").unwrap();
        let old = dir.path().join("old.parquet");
        check_outputs(&[], &[("--out", &old)]).unwrap();
        #[cfg(unix)]
        {
            let link = dir.path().join("link.parquet");
            std::os::unix::fs::symlink(&old, &link).unwrap();
            let (_, p) = problem(check_outputs(&[], &[("--trace", &old), ("--summary", &link)]));
            assert_eq!(p, OutputProblem::Shared { other: "--trace".into() });
        }
    }

    #[test]
    fn non_regular_files_and_pathless_outputs_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (_, p) = problem(check_outputs(&[], &[("--plot", dir.path())]));
        assert_eq!(p, OutputProblem::NotRegular { kind: "a directory" });
        for none in ["", "..", "/"] {
            let (_, p) = problem(check_outputs(&[], &[("--out", Path::new(none))]));
            assert_eq!(p, OutputProblem::NoFileName, "{none:?}");
        }
        #[cfg(unix)]
        {
            let sock = dir.path().join("s.sock");
            let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
            let (_, p) = problem(check_outputs(&[], &[("--out", &sock)]));
            assert_eq!(p, OutputProblem::NotRegular { kind: "a socket" });
            // Checked only, never opened: a device node is safe to ask about.
            if Path::new("/dev/null").exists() {
                let (_, p) = problem(check_outputs(&[], &[("--out", Path::new("/dev/null"))]));
                assert_eq!(p, OutputProblem::NotRegular { kind: "a character device" });
            }
        }
    }

    #[test]
    fn default_outputs_stay_in_the_results_folder() {
        assert_eq!(default_output("phone-35b", "parquet").unwrap(), Path::new("results/phone-35b.parquet"));
        assert_eq!(default_output("run_2.v1", "parquet").unwrap(), Path::new("results/run_2.v1.parquet"));
        for bad in ["../../x", "..", "/etc/passwd", "a/b", "a\\b", "", ".hidden", "two words", "é", "a\0b"] {
            let e = default_output(bad, "parquet").unwrap_err().to_string();
            assert!(e.contains("name") && e.contains(&format!("{bad:?}")), "{bad:?}: {e}");
        }
        assert!(default_output(&"x".repeat(MAX_NAME_BYTES), "parquet").is_ok());
        assert!(default_output(&"x".repeat(MAX_NAME_BYTES + 1), "parquet").is_err());
    }

    #[test]
    fn every_file_an_experiment_reads_is_an_input_no_output_may_be() {
        let dir = tempfile::tempdir().unwrap();
        let device = memwall_catalog::presets::device_text("raspberry-pi-5-8gb").unwrap();
        let engine = memwall_catalog::presets::engine_text("llama.cpp").unwrap();
        let model = memwall_catalog::presets::model_text("llama-3.2-1b").unwrap();
        let (d, e, m) = (dir.path().join("dev"), dir.path().join("eng.toml"), dir.path().join("models/m.toml"));
        std::fs::write(&d, device).unwrap();
        std::fs::write(&e, engine).unwrap();
        std::fs::create_dir(dir.path().join("models")).unwrap();
        std::fs::write(&m, model).unwrap();
        let text = format!(
            "name = \"files\"\n[base]\nmodel = \"llama-3.2-1b\"\ndevice = \"{}\"\nengine = \"{}\"\n\
             weights = {{ mix = \"Q4_K_M\" }}\n[grid]\n\"model\" = [\"llama-3.2-1b\", \"{}\"]\n",
            d.display(),
            e.display(),
            m.display()
        );
        let exp_path = dir.path().join("exp");
        std::fs::write(&exp_path, &text).unwrap();
        let _scope = memwall_catalog::inputs::scope();
        Experiment::load(&exp_path).unwrap();
        // A device file without an extension, an engine in the base, a model in the grid and the
        // experiment itself: each is refused as an output, whatever it is called.
        for input in [&d, &e, &m, &exp_path] {
            let (flag, p) = problem(check_outputs(&[], &[("--out", input)]));
            assert_eq!(flag, "--out");
            assert!(matches!(p, OutputProblem::IsInput { .. }), "{}", input.display());
        }
        // The last guard: a write that reaches the rename is refused too, and leaves the input.
        let e = crate::files::atomic::write_text(&d, "overwritten").unwrap_err().to_string();
        assert!(e.contains("is the input"), "{e}");
        assert_eq!(std::fs::read_to_string(&d).unwrap(), device);
    }
}
