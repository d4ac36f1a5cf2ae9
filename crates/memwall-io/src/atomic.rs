//! Every output file is written the same way: into a temporary file beside the target
//! (`.memwall-*.tmp`, removed if dropped), then made an ordinary file (0644; temporary files
//! are created private) and renamed into place, so a failure never leaves a partial file.

use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::error::{IoError, Result};

/// A temporary file in `path`'s directory (created if needed), named `.memwall-*{suffix}`.
/// Errors name the target, which shows both the file asked for and its directory.
pub(crate) fn temp_beside(path: &Path, suffix: &str) -> Result<NamedTempFile> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let err = |source| IoError::File { path: path.to_path_buf(), source };
    std::fs::create_dir_all(&dir).map_err(err)?;
    tempfile::Builder::new().prefix(".memwall-").suffix(suffix).tempfile_in(&dir).map_err(err)
}

/// Make the finished temporary file an ordinary file and rename it to `path`.
pub(crate) fn publish(tmp: NamedTempFile, path: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644))
            .map_err(|source| IoError::File { path: tmp.path().into(), source })?;
    }
    tmp.persist(path).map_err(|e| IoError::File { path: path.to_path_buf(), source: e.error })?;
    Ok(())
}
