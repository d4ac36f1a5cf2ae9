//! Every output file is written the same way: into a temporary file beside the target
//! (`.memwall-*.tmp`), then made an ordinary file (0644; temporary files are created private)
//! and renamed into place, so a failure never leaves a partial file.
//!
//! - A target that is a symbolic link is written *through*: the temporary file goes beside
//!   the file the link points to and is renamed onto it, so the link stays a link.
//! - A target that exists and is not a regular file (a directory, a FIFO, a device node such
//!   as `/dev/full`, a socket) is refused before anything is created: a rename would replace
//!   it.
//! - Every temporary file in flight is registered in one process-wide list until it is
//!   published or dropped; [`abandon_outputs`] (what a SIGINT/SIGTERM handler calls) removes
//!   them all and stops any further temporary file or rename, so an interrupted process
//!   leaves neither a temporary file nor a new output.
//! - A process killed outright (SIGKILL, power loss) cannot clean up. Its temporary files are
//!   named after it (`.memwall-PID-*`), so the next write into the same folder finds those of
//!   processes no longer running and removes them; [`take_stale_removed`] says which.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use tempfile::NamedTempFile;

use crate::error::{LabError, OutputProblem, Result};

/// Symbolic links followed before a target is declared a loop (Linux's `MAXSYMLINKS`).
const MAX_SYMLINKS: usize = 40;

/// The temporary files in flight, and whether outputs were abandoned.
struct Live {
    abandoned: bool,
    paths: Vec<PathBuf>,
}

static LIVE: Mutex<Live> = Mutex::new(Live { abandoned: false, paths: Vec::new() });

/// The registry, whatever a panicking holder left in it (the list stays consistent: every
/// change is one push or one removal).
fn live() -> MutexGuard<'static, Live> {
    LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Remove every temporary output file in flight and refuse any new temporary file or rename
/// from now on (they fail with [`LabError::Interrupted`]); returns how many files were removed.
/// Meant for a signal handler that then exits: once this returns, no output of this process
/// will appear and no temporary file of it is left. It cannot be undone.
pub fn abandon_outputs() -> usize {
    let mut live = live();
    live.abandoned = true;
    let mut removed = 0;
    for p in std::mem::take(&mut live.paths) {
        if std::fs::remove_file(p).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Whether [`abandon_outputs`] was called.
pub fn outputs_abandoned() -> bool {
    live().abandoned
}

/// The file `path` names once symbolic links at its last component are followed (relative
/// link targets are relative to the link's directory). A missing file is its own target; a
/// dangling link resolves to the missing file it points to.
pub(crate) fn resolve_target(path: &Path) -> std::io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_SYMLINKS {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            Ok(_) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(p),
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("too many levels of symbolic links"))
}

pub(crate) use memwall_import::file::non_regular_kind;

/// How every temporary output's name starts; the writing process's id follows.
const TEMP_PREFIX: &str = ".memwall-";

/// Stale temporary files removed so far, for the caller to report.
static STALE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The stale temporary files removed since the last call (see the module documentation).
pub fn take_stale_removed() -> Vec<PathBuf> {
    std::mem::take(&mut *STALE.lock().unwrap_or_else(|p| p.into_inner()))
}

/// The id of the process that wrote the temporary file named `name`, when the name is one
/// of memwall's (`.memwall-PID-…`).
fn temp_owner(name: &str) -> Option<u32> {
    name.strip_prefix(TEMP_PREFIX)?.split('-').next()?.parse().ok()
}

/// Whether process `pid` is running, when this system can tell (Linux's `/proc`).
fn running(pid: u32) -> Option<bool> {
    let proc = Path::new("/proc");
    proc.join("self").exists().then(|| proc.join(pid.to_string()).exists())
}

/// Remove the temporary files in `dir` left by memwall processes that are no longer running.
/// A file whose writer may still run (or where that cannot be told) is left alone.
fn remove_stale(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(temp_owner) else { continue };
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        if is_file && pid != std::process::id() && running(pid) == Some(false) {
            let path = entry.path();
            if std::fs::remove_file(&path).is_ok() {
                STALE.lock().unwrap_or_else(|p| p.into_inner()).push(path);
            }
        }
    }
}

/// A temporary output file beside its target, registered until it is published or dropped
/// (dropping removes it).
pub(crate) struct TempOutput {
    /// `None` once published.
    tmp: Option<NamedTempFile>,
    /// The target as the caller named it (errors name it).
    path: PathBuf,
    /// The file renamed onto: `path` with symbolic links followed.
    target: PathBuf,
}

impl TempOutput {
    fn file(&self) -> &NamedTempFile {
        self.tmp.as_ref().expect("a temporary output is only taken by publish, which consumes it")
    }

    /// The temporary file's path.
    pub(crate) fn path(&self) -> &Path {
        self.file().path()
    }

    /// A second handle to the temporary file.
    pub(crate) fn reopen(&self) -> std::io::Result<File> {
        self.file().reopen()
    }
}

impl std::io::Write for TempOutput {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.tmp.as_mut().expect("not yet published").write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.tmp.as_mut().expect("not yet published").flush()
    }
}

impl Drop for TempOutput {
    fn drop(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            // Remove the file before it leaves the registry, so that a process exiting
            // in between still finds it there.
            let mut live = live();
            let p = tmp.path().to_path_buf();
            let _ = tmp.close();
            live.paths.retain(|x| *x != p);
        }
    }
}

/// A temporary file beside `path`'s target (symbolic links followed; its directory created
/// if needed), named `.memwall-*{suffix}` and registered for [`abandon_outputs`]. Refuses a
/// target that exists and is not a regular file. Errors name `path`, which shows both the
/// file asked for and its directory.
pub(crate) fn temp_beside(path: &Path, suffix: &str) -> Result<TempOutput> {
    let err = |source| LabError::File { path: path.to_path_buf(), source };
    let target = resolve_target(path).map_err(err)?;
    if let Ok(m) = std::fs::symlink_metadata(&target)
        && let Some(kind) = non_regular_kind(&m)
    {
        return Err(LabError::Output {
            flag: "output".into(),
            path: path.to_path_buf(),
            problem: OutputProblem::NotRegular { kind },
        });
    }
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(err)?;
    remove_stale(&dir);
    let mut live = live();
    if live.abandoned {
        return Err(LabError::Interrupted);
    }
    let prefix = format!("{TEMP_PREFIX}{}-", std::process::id());
    let tmp = tempfile::Builder::new().prefix(&prefix).suffix(suffix).tempfile_in(&dir).map_err(err)?;
    live.paths.push(tmp.path().to_path_buf());
    Ok(TempOutput { tmp: Some(tmp), path: path.to_path_buf(), target })
}

/// Make the finished temporary file an ordinary file and rename it onto its target. `path`
/// is the target as given to [`temp_beside`].
pub(crate) fn publish(mut out: TempOutput, path: &Path) -> Result<()> {
    debug_assert_eq!(out.path, path, "published under the name it was made for");
    let mut live = live();
    if live.abandoned {
        return Err(LabError::Interrupted);
    }
    // The last guard of the inputs: an input read after the outputs were checked is still
    // never replaced.
    if let Ok(m) = std::fs::metadata(&out.target)
        && let Ok(id) = memwall_catalog::inputs::existing_id(&out.target, &m)
        && let Some(input) = memwall_catalog::inputs::input_with(&id)
    {
        drop(live);
        return Err(LabError::Output {
            flag: "output".into(),
            path: out.path.clone(),
            problem: OutputProblem::IsInput { input },
        });
    }
    let tmp = out.tmp.take().expect("published once");
    let tmp_path = tmp.path().to_path_buf();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Err(source) = std::fs::set_permissions(&tmp_path, std::fs::Permissions::from_mode(0o644)) {
            out.tmp = Some(tmp);
            drop(live);
            return Err(LabError::File { path: tmp_path, source });
        }
    }
    match tmp.persist(&out.target) {
        Ok(_) => {
            live.paths.retain(|x| *x != tmp_path);
            Ok(())
        }
        Err(e) => {
            // Back in `out`, the file is removed when `out` drops (after the lock is released).
            out.tmp = Some(e.file);
            drop(live);
            Err(LabError::File { path: out.path.clone(), source: e.error })
        }
    }
}

/// Write `text` to `path` atomically (temporary file beside it, then renamed).
pub fn write_text(path: &Path, text: &str) -> Result<()> {
    write_bytes(path, text.as_bytes())
}

/// Write `bytes` to `path` atomically (temporary file beside it, then renamed).
pub fn write_bytes(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let suffix = format!(".{}.tmp", path.extension().and_then(|e| e.to_str()).unwrap_or("out"));
    let mut tmp = temp_beside(path, &suffix)?;
    tmp.write_all(bytes).map_err(|source| LabError::File { path: tmp.path().into(), source })?;
    publish(tmp, path)
}

/// Paths of the temporary files in flight (for tests).
#[cfg(test)]
pub(crate) fn live_paths() -> Vec<PathBuf> {
    live().paths.clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[test]
    fn temporary_files_are_registered_until_published_or_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("sub/out.txt");
        let mut t = temp_beside(&target, ".txt.tmp").unwrap();
        let tmp = t.path().to_path_buf();
        let name = tmp.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(temp_owner(&name), Some(std::process::id()), "{name}");
        assert!(live_paths().contains(&tmp));
        t.write_all(b"hello").unwrap();
        publish(t, &target).unwrap();
        assert!(!live_paths().contains(&tmp) && !tmp.exists());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "hello");

        let t = temp_beside(&target, ".txt.tmp").unwrap();
        let tmp = t.path().to_path_buf();
        drop(t);
        assert!(!live_paths().contains(&tmp) && !tmp.exists());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "hello", "a dropped write leaves the old output");
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_target_is_written_through_and_stays_a_link() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        // A relative link whose target does not exist yet: the write creates it.
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink("real/data.txt", &link).unwrap();
        for text in ["one", "two"] {
            let mut t = temp_beside(&link, ".txt.tmp").unwrap();
            assert_eq!(t.path().parent().unwrap(), dir.path().join("real"));
            t.write_all(text.as_bytes()).unwrap();
            publish(t, &link).unwrap();
            assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
            assert_eq!(std::fs::read_to_string(dir.path().join("real/data.txt")).unwrap(), text);
        }
        let looped = dir.path().join("loop");
        std::os::unix::fs::symlink("loop", &looped).unwrap();
        let e = temp_beside(&looped, ".tmp").err().expect("a link loop is refused").to_string();
        assert!(e.contains("loop") && e.contains("symbolic links"), "{e}");
    }

    #[test]
    fn temporaries_of_processes_no_longer_running_are_removed_by_the_next_write() {
        let dir = tempfile::tempdir().unwrap();
        // A process that has exited: its id is free (until reused, which only keeps a file).
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let stale = dir.path().join(format!(".memwall-{dead}-abc123.parquet.tmp"));
        let mine = dir.path().join(format!(".memwall-{}-def456.parquet.tmp", std::process::id()));
        let other = dir.path().join(".memwall-notapid.parquet.tmp");
        for p in [&stale, &mine, &other] {
            std::fs::write(p, "x").unwrap();
        }
        take_stale_removed();
        write_text(&dir.path().join("out.txt"), "done").unwrap();
        if running(dead) == Some(false) {
            assert!(!stale.exists());
            assert!(take_stale_removed().contains(&stale));
        }
        assert!(mine.exists() && other.exists(), "a live process's file and a foreign name are kept");
    }

    #[test]
    fn a_directory_target_is_refused_before_any_file_is_made() {
        let dir = tempfile::tempdir().unwrap();
        let e = temp_beside(dir.path(), ".tmp").err().expect("a directory is refused").to_string();
        assert!(e.contains("is a directory"), "{e}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
