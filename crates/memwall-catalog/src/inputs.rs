//! The files a command reads: one registry, so that no output can replace an input.
//!
//! Every file memwall reads (an experiment, a model, device or engine TOML, a GGUF header, a
//! `config.json`, a llama-bench table, a validation table, a design file) goes through
//! [`read_text`] or [`record`], which open it only as a regular file (a FIFO, a device node, a
//! socket or a directory is refused at once, never waited on: see
//! [`memwall_import::file::open_regular`]) and, while an [`InputScope`] is open, remember its
//! identity (device and inode, so a hard link or a symbolic link to it is the same file).
//! `memwall_lab::check_outputs` refuses an output that is any of them before work starts, and
//! the rename that publishes an output (`memwall_lab::files::atomic`) refuses again, so an input read
//! after the check is protected too.
//!
//! A command-line process opens one scope for its whole life. The Python package, whose
//! process lives across many unrelated calls, holds none: a call that writes names its inputs
//! to `check_outputs` itself (`Calibration.write` passes the files its calibration read), so
//! files read by earlier calls are not held against it.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use crate::error::{CatalogError, Result};

/// Identity of a file: an existing file by device and inode (by canonical path where there
/// are none), a file yet to be written by its absolute, normalized path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileId {
    /// Device and inode of an existing file.
    #[cfg(unix)]
    Inode(u64, u64),
    /// An absolute, normalized path.
    Path(PathBuf),
}

/// The identity of the existing file `path` whose metadata is `m`.
pub fn existing_id(path: &Path, m: &std::fs::Metadata) -> std::io::Result<FileId> {
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

/// Open scopes and the files read inside them.
struct Registry {
    scopes: usize,
    files: Vec<(FileId, PathBuf)>,
}

static READ: Mutex<Registry> = Mutex::new(Registry { scopes: 0, files: Vec::new() });

fn registry() -> MutexGuard<'static, Registry> {
    READ.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// While alive, every file read is registered as an input; the registry empties when the
/// last scope ends.
#[must_use = "inputs are registered only while the scope is alive"]
pub struct InputScope(());

impl Drop for InputScope {
    fn drop(&mut self) {
        let mut r = registry();
        r.scopes = r.scopes.saturating_sub(1);
        if r.scopes == 0 {
            r.files.clear();
        }
    }
}

/// Open a scope of inputs (see the module documentation).
pub fn scope() -> InputScope {
    registry().scopes += 1;
    InputScope(())
}

/// Register the file `path` whose metadata is `m` as an input, if a scope is open.
fn register(path: &Path, m: &std::fs::Metadata) {
    let mut r = registry();
    if r.scopes == 0 {
        return;
    }
    if let Ok(id) = existing_id(path, m)
        && !r.files.iter().any(|(f, _)| *f == id)
    {
        r.files.push((id, path.to_path_buf()));
    }
}

/// The error for `path` that could not be read.
fn file_error(path: &Path, source: std::io::Error) -> CatalogError {
    CatalogError::File { path: path.to_path_buf(), source }
}

/// Read the input `path` as text: refused unless it is a regular file, and registered.
/// Text inputs above [`memwall_import::file::MAX_TEXT_BYTES`] are refused unread.
pub fn read_text(path: &Path) -> Result<String> {
    let file = memwall_import::file::open_regular(path).map_err(|e| file_error(path, e))?;
    let m = file.metadata().map_err(|e| file_error(path, e))?;
    register(path, &m);
    memwall_import::file::read_text(file).map_err(|e| file_error(path, e))
}

/// Register `path` as an input read by other code (a GGUF header or a `config.json`, read by
/// the importer), refusing it unless it is a regular file.
pub fn record(path: &Path) -> Result<()> {
    let file = memwall_import::file::open_regular(path).map_err(|e| file_error(path, e))?;
    let m = file.metadata().map_err(|e| file_error(path, e))?;
    register(path, &m);
    Ok(())
}

/// The input that has identity `id`, if one was read in the open scope.
pub fn input_with(id: &FileId) -> Option<PathBuf> {
    registry().files.iter().find(|(f, _)| f == id).map(|(_, p)| p.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_registered_only_inside_a_scope_and_forgotten_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.toml");
        std::fs::write(&a, "x = 1").unwrap();
        let m = std::fs::metadata(&a).unwrap();
        let id = existing_id(&a, &m).unwrap();
        {
            let _s = scope();
            assert_eq!(read_text(&a).unwrap(), "x = 1");
            assert_eq!(input_with(&id), Some(a.clone()));
            let hard = dir.path().join("hard.parquet");
            std::fs::hard_link(&a, &hard).unwrap();
            let hid = existing_id(&hard, &std::fs::metadata(&hard).unwrap()).unwrap();
            assert_eq!(input_with(&hid), Some(a.clone()), "a hard link is the same file");
        }
        // Other tests of this crate may hold a scope at the same time; only this one is known
        // to be closed when no scope is open.
        if registry().scopes == 0 {
            assert_eq!(input_with(&id), None);
        }
        let e = read_text(dir.path()).unwrap_err().to_string();
        assert!(e.contains("a directory, not a regular file"), "{e}");
    }
}
