//! Opening an input file so that it can neither block nor be something other than a file.
//!
//! `open(2)` on a FIFO waits for a writer, and a read from a character device such as
//! `/dev/zero` never ends; a directory opens but reads fail obscurely. Every file memwall
//! reads is opened by [`open_regular`]: non-blocking (so a FIFO opens at once), then checked
//! on the open descriptor (so the file checked is the file read), and refused unless it is a
//! regular file.

use std::fs::File;
use std::io::{Error, ErrorKind};
use std::path::Path;

/// What an existing file that is not a regular file is, for messages; `None` for a regular
/// file.
pub fn non_regular_kind(m: &std::fs::Metadata) -> Option<&'static str> {
    let t = m.file_type();
    if t.is_file() {
        return None;
    }
    if t.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return Some("a FIFO");
        }
        if t.is_char_device() {
            return Some("a character device");
        }
        if t.is_block_device() {
            return Some("a block device");
        }
        if t.is_socket() {
            return Some("a socket");
        }
    }
    Some("not a regular file")
}

/// Open `path` for reading if it is a regular file (symbolic links followed). Anything else
/// (a FIFO, a device node, a socket, a directory) is refused at once with an error of kind
/// `InvalidInput` saying what it is; the open itself never blocks.
pub fn open_regular(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Without it, opening a FIFO waits for a writer that may never come.
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if let Some(kind) = non_regular_kind(&meta) {
        return Err(Error::new(ErrorKind::InvalidInput, format!("{kind}, not a regular file")));
    }
    // O_NONBLOCK has no effect on reads of a regular file.
    Ok(file)
}

/// Largest text input read (a spec, an experiment, a `config.json`, a table): 64 MiB. The
/// largest memwall ships is under 1 MiB; a bigger file is not one of these (a GGUF named as a
/// device, a disk image) and reading it whole would only exhaust memory.
pub const MAX_TEXT_BYTES: u64 = 64 << 20;

/// Read the open regular file `file` as UTF-8 text, refusing one above [`MAX_TEXT_BYTES`]
/// (checked on its size and again while reading, in case it grows).
pub fn read_text(file: File) -> std::io::Result<String> {
    use std::io::Read;
    let too_big = |n: u64| {
        Error::new(
            ErrorKind::InvalidData,
            format!(
                "{n} bytes, more than the {MAX_TEXT_BYTES} a text input (spec, experiment, config.json, table) may hold"
            ),
        )
    };
    let len = file.metadata()?.len();
    if len > MAX_TEXT_BYTES {
        return Err(too_big(len));
    }
    let mut text = String::new();
    file.take(MAX_TEXT_BYTES + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_TEXT_BYTES {
        return Err(too_big(text.len() as u64));
    }
    Ok(text)
}

/// Read the regular file `path` as UTF-8 text ([`open_regular`], [`read_text`]).
pub fn read_regular(path: &Path) -> std::io::Result<String> {
    read_text(open_regular(path)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_is_read_and_anything_else_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.toml");
        std::fs::write(&f, "x = 1").unwrap();
        assert_eq!(read_regular(&f).unwrap(), "x = 1");
        // A file beyond the bound is refused without being read (a sparse file: no disk used).
        let big = dir.path().join("big.toml");
        std::fs::File::create(&big).unwrap().set_len(MAX_TEXT_BYTES + 1).unwrap();
        let e = read_regular(&big).unwrap_err();
        assert!(e.to_string().contains("more than the 67108864"), "{e}");
        let e = read_regular(dir.path()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(e.to_string().contains("a directory"), "{e}");
        #[cfg(unix)]
        {
            let fifo = dir.path().join("fifo");
            assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
            // Would block forever without O_NONBLOCK: no writer ever opens it.
            let e = read_regular(&fifo).unwrap_err();
            assert!(e.to_string().contains("a FIFO"), "{e}");
            if Path::new("/dev/zero").exists() {
                let e = read_regular(Path::new("/dev/zero")).unwrap_err();
                assert!(e.to_string().contains("a character device"), "{e}");
            }
        }
    }
}
