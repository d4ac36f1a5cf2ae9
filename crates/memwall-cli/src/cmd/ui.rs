//! `memwall ui`: serve the web page on this machine and open it in the browser. The page is a
//! static site (`scripts/build-web` builds it: the estimator as WebAssembly beside the page's
//! files); this command serves its files over HTTP on the loopback address, read once at the
//! start, and nothing else. Every answer is computed in the browser.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::Args;

/// The files a site must have.
const REQUIRED: &[&str] = &["index.html", "memwall_web.wasm"];

/// The environment variable naming the site's folder when `--dir` does not (the Python
/// package sets it to the page it ships).
pub(crate) const SITE_ENV: &str = "MEMWALL_WEB";

/// `memwall ui`'s flags.
#[derive(Args)]
pub(crate) struct UiArgs {
    /// The built page (a folder with index.html and memwall_web.wasm) [default: $MEMWALL_WEB,
    /// else target/web of the source tree this binary was built from].
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 8765)]
    port: u16,
    /// Print the address without opening a browser.
    #[arg(long)]
    no_open: bool,
}

/// Where the site is: `--dir`, `$MEMWALL_WEB`, or the source tree's `target/web`.
fn site_dir(a: &UiArgs) -> Result<PathBuf> {
    let (dir, from) = match (&a.dir, std::env::var_os(SITE_ENV)) {
        (Some(d), _) => (d.clone(), "--dir"),
        (None, Some(d)) => (PathBuf::from(d), SITE_ENV),
        (None, None) => (Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/web"), "the default"),
    };
    for f in REQUIRED {
        let p = dir.join(f);
        if !p.is_file() {
            bail!(
                "invalid `{from}` = {}: no {f} there; build the page with `scripts/build-web` (it needs the wasm32 target: \
                 `rustup target add wasm32-unknown-unknown`), or name the folder with --dir",
                dir.display()
            );
        }
    }
    Ok(dir.canonicalize().unwrap_or(dir))
}

/// The site's top-level files by name, read once (a file changed later is not served
/// half-written; no path below the folder can be asked for).
fn read_site(dir: &Path) -> Result<BTreeMap<String, Vec<u8>>> {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry?;
        let path = entry.path();
        if !entry.file_type()?.is_file() || content_type(&path).is_none() {
            continue;
        }
        if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
            let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            files.insert(name.to_string(), bytes);
        }
    }
    Ok(files)
}

/// The media type of a file the site may serve, by extension (None: not served).
fn content_type(path: &Path) -> Option<&'static str> {
    Some(match path.extension()?.to_str()? {
        "html" => "text/html; charset=utf-8",
        "js" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "wasm" => "application/wasm",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "json" => "application/json",
        _ => return None,
    })
}

/// The file a request's target names: `/` is `index.html`; a query or fragment is ignored;
/// anything with a further `/` or `..` names nothing.
fn file_of(target: &str) -> Option<&str> {
    let path = target.split(['?', '#']).next()?.strip_prefix('/')?;
    let name = if path.is_empty() { "index.html" } else { path };
    (!name.contains('/') && !name.contains("..") && !name.contains('\\')).then_some(name)
}

/// Answer one connection: a GET or HEAD of a site file, else 404 or 405.
fn serve(stream: TcpStream, files: &BTreeMap<String, Vec<u8>>) -> std::io::Result<()> {
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.by_ref().take(8192).read_line(&mut line)?;
    // The headers: read and dropped (at most 64 KiB).
    let mut header = String::new();
    let mut seen = 0;
    while reader.by_ref().take(8192).read_line(&mut header)? > 2 && seen < 65536 {
        seen += header.len();
        header.clear();
    }
    let mut words = line.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let found = file_of(target).and_then(|n| files.get_key_value(n));
    let (status, kind, body): (&str, &str, &[u8]) = match (method, found) {
        ("GET" | "HEAD", Some((name, bytes))) => {
            ("200 OK", content_type(Path::new(name)).unwrap_or("application/octet-stream"), bytes)
        }
        ("GET" | "HEAD", None) => ("404 Not Found", "text/plain; charset=utf-8", b"not found\n"),
        _ => ("405 Method Not Allowed", "text/plain; charset=utf-8", b"only GET and HEAD\n"),
    };
    let mut out = std::io::BufWriter::new(stream);
    write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nCache-Control: no-cache\r\n\
         X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    if method != "HEAD" {
        out.write_all(body)?;
    }
    out.flush()
}

/// Open `url` in the desktop's browser, if there is one to ask.
fn open_browser(url: &str) -> bool {
    let (cmd, args): (&str, Vec<&str>) = if cfg!(target_os = "macos") {
        ("open", vec![url])
    } else if cfg!(windows) {
        ("cmd", vec!["/C", "start", "", url])
    } else {
        ("xdg-open", vec![url])
    };
    std::process::Command::new(cmd)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .is_ok()
}

/// `memwall ui`: serve until interrupted.
pub(crate) fn ui(a: &UiArgs) -> Result<()> {
    let dir = site_dir(a)?;
    let files = Arc::new(read_site(&dir)?);
    let listener =
        TcpListener::bind(("127.0.0.1", a.port)).with_context(|| format!("listening on 127.0.0.1:{}", a.port))?;
    let url = format!("http://{}/", listener.local_addr()?);
    // Stdout is line-buffered, so the address is out at once; a reader that went away (`|
    // head`) leaves the server serving.
    println!("serving the page in {} at {url} (Ctrl-C to stop)", dir.display());
    if !a.no_open && !open_browser(&url) {
        eprintln!("no browser could be opened here: open {url} in one");
    }
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let files = files.clone();
        std::thread::spawn(move || {
            // A client that goes away mid-answer costs nothing but its connection.
            let _ = serve(stream, &files);
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_top_level_site_files_are_named() {
        assert_eq!(file_of("/"), Some("index.html"));
        assert_eq!(file_of("/?model=qwen3-4b#x"), Some("index.html"));
        assert_eq!(file_of("/app.js"), Some("app.js"));
        assert_eq!(file_of("/../etc/passwd"), None);
        assert_eq!(file_of("/a/b.js"), None);
        assert_eq!(file_of("app.js"), None);
        assert_eq!(content_type(Path::new("x.wasm")), Some("application/wasm"));
        assert_eq!(content_type(Path::new("x.toml")), None);
    }

    #[test]
    fn a_folder_without_the_page_is_refused_naming_it() {
        let d = tempfile::tempdir().unwrap();
        let a = UiArgs { dir: Some(d.path().into()), port: 0, no_open: true };
        let e = site_dir(&a).unwrap_err().to_string();
        assert!(e.contains("--dir") && e.contains("index.html") && e.contains("scripts/build-web"), "{e}");
    }

    #[test]
    fn files_are_served_and_nothing_else() {
        let mut files = BTreeMap::new();
        files.insert("index.html".to_string(), b"<p>hi</p>".to_vec());
        let files = Arc::new(files);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let f = files.clone();
        std::thread::spawn(move || {
            for s in listener.incoming().take(3) {
                serve(s.unwrap(), &f).unwrap();
            }
        });
        let get = |req: &str| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(req.as_bytes()).unwrap();
            let mut out = String::new();
            std::io::Read::read_to_string(&mut s, &mut out).unwrap();
            out
        };
        let ok = get("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200 OK") && ok.contains("text/html") && ok.ends_with("<p>hi</p>"), "{ok}");
        assert!(get("GET /../Cargo.toml HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(get("POST / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
    }
}
