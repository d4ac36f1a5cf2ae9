//! Output paths checked before a command does any work, so that writing by temporary file
//! and rename never destroys something that is not an old output.
//!
//! [`check_outputs`] refuses an output that is one of the inputs (the same file: same device
//! and inode, so a hard or symbolic link to an input is caught too), that exists and is not a
//! regular file (a directory, a FIFO, a device node such as `/dev/full`, a socket), or that
//! another output of the same command resolves to. An output that is a symbolic link is
//! written through to the file it points to (see [`crate::atomic`]), so it is checked as that
//! file. [`default_output`] derives `results/NAME.parquet` from an experiment's name and
//! refuses a name that would leave `results/`.

use std::path::{Component, Path, PathBuf};

use memwall_spec::SpecError;

use crate::atomic::{non_regular_kind, resolve_target};
use crate::error::{IoError, OutputProblem, Result};
use crate::experiment::Experiment;

/// Folder of the outputs derived from an experiment's name.
pub const RESULTS_DIR: &str = "results";

/// Longest experiment name [`default_output`] accepts, bytes (file names are limited to 255
/// bytes on common file systems; this leaves room for the extension and temporary suffixes).
pub const MAX_NAME_BYTES: usize = 200;

/// Identity of a file: an existing file by device and inode (by canonical path where there
/// are none), a file yet to be written by its absolute, normalized path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum FileId {
    #[cfg(unix)]
    Inode(u64, u64),
    Path(PathBuf),
}

fn existing_id(path: &Path, m: &std::fs::Metadata) -> std::io::Result<FileId> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let _ = path;
        Ok(FileId::Inode(m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = m;
        Ok(FileId::Path(std::fs::canonicalize(path)?))
    }
}

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
    let refuse = |problem| IoError::Output { flag: flag.to_string(), path: path.to_path_buf(), problem };
    let file_err = |source| IoError::File { path: path.to_path_buf(), source };
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
/// inputs and each other before any work starts. Refuses, naming the flag and path
/// ([`IoError::Output`]): an output that is the same file as an input (inputs that do not
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
        let refuse = |problem| IoError::Output { flag: flag.to_string(), path: path.to_path_buf(), problem };
        let id = output_id(flag, path)?;
        if let Some((_, input)) = inputs.iter().find(|(i, _)| *i == id) {
            return Err(refuse(OutputProblem::IsInput { input: input.to_path_buf() }));
        }
        if let Some((_, other)) = seen.iter().find(|(s, _)| *s == id) {
            return Err(refuse(OutputProblem::Shared { other: other.to_string() }));
        }
        seen.push((id, flag));
    }
    Ok(())
}

/// Whether a `model`/`device` value names a file rather than a preset (as the loaders
/// decide).
fn names_file(v: &toml::Value) -> Option<&str> {
    v.as_str().filter(|s| crate::presets::is_path(s))
}

/// The files an experiment reads: the experiment file itself and every model or device TOML
/// file its base or grid names (paths as written, relative to the working directory as the
/// loaders read them).
pub fn experiment_inputs(path: &Path, exp: &Experiment) -> Vec<PathBuf> {
    let mut files = vec![path.to_path_buf()];
    let Ok(doc) = exp.text.parse::<toml::Table>() else { return files };
    let base = doc.get("base").and_then(|b| b.as_table());
    for key in ["model", "device"] {
        files.extend(base.and_then(|b| b.get(key)).and_then(names_file).map(PathBuf::from));
    }
    for (key, values) in doc.get("grid").and_then(|g| g.as_table()).into_iter().flatten() {
        if key.split('+').any(|p| matches!(p.trim(), "model" | "device")) {
            let values = values.as_array().map(Vec::as_slice).unwrap_or_default();
            files.extend(values.iter().filter_map(names_file).map(PathBuf::from));
        }
    }
    files
}

/// The output an experiment's name gives when no path is passed:
/// `results/NAME.{extension}`. The name must be a portable file name that stays in
/// `results/`: 1 to [`MAX_NAME_BYTES`] ASCII letters, digits, `-`, `_` and `.`, not starting
/// with `.` (so no `..`, no separators, no absolute path); any other name is refused, naming
/// `name` and its value (an explicit output path is the way to write such an experiment).
pub fn default_output(name: &str, extension: &str) -> Result<PathBuf> {
    let bad = |reason: &str| {
        IoError::Spec(SpecError::invalid(
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

    fn problem(r: Result<()>) -> (String, OutputProblem) {
        match r {
            Err(IoError::Output { flag, problem, .. }) => (flag, problem),
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
    fn an_experiment_reads_its_file_and_the_spec_files_it_names() {
        let text = r#"
name = "files"
[base]
model = "llama-3.2-1b"
device = "my-device.toml"
weights = { mix = "Q4_K_M" }
[grid]
"model" = ["llama-3.2-1b", "models/mine.toml"]
"#;
        let dir = tempfile::tempdir().unwrap();
        let device = crate::presets::device_text("raspberry-pi-5-8gb").unwrap();
        let model = crate::presets::model_text("llama-3.2-1b").unwrap();
        std::fs::write(dir.path().join("my-device.toml"), device).unwrap();
        std::fs::create_dir(dir.path().join("models")).unwrap();
        std::fs::write(dir.path().join("models/mine.toml"), model).unwrap();
        let text = text
            .replace("my-device.toml", &dir.path().join("my-device.toml").display().to_string())
            .replace("models/mine.toml", &dir.path().join("models/mine.toml").display().to_string());
        let exp = Experiment::parse(&text, "files.toml").unwrap();
        let inputs = experiment_inputs(Path::new("files.toml"), &exp);
        assert_eq!(
            inputs,
            [PathBuf::from("files.toml"), dir.path().join("my-device.toml"), dir.path().join("models/mine.toml")]
        );
    }
}
