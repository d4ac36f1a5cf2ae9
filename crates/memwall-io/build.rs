//! Embeds every preset TOML of `datasets/` so the binary works from any directory, and
//! records the git commit memwall is built from (with `-dirty` when tracked files differ from
//! it) as `MEMWALL_GIT_COMMIT`, for the metadata of every results file; outside a git
//! checkout (a source package) no commit is recorded.

use std::fmt::Write;
use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn git_commit() {
    let Some(top) = git(&["rev-parse", "--show-toplevel"]) else { return };
    // Rebuild when HEAD moves or the index changes (a commit, a checkout, a staged edit).
    let mut watch = vec![Path::new(&top).join(".git/HEAD"), Path::new(&top).join(".git/index")];
    if let Some(head) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch.push(Path::new(&top).join(".git").join(head));
    }
    for p in watch.iter().filter(|p| p.exists()) {
        println!("cargo:rerun-if-changed={}", p.display());
    }
    let Some(commit) = git(&["rev-parse", "HEAD"]) else { return };
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    println!("cargo:rustc-env=MEMWALL_GIT_COMMIT={commit}{}", if dirty { "-dirty" } else { "" });
}

fn main() {
    git_commit();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets");
    let mut out = String::new();
    for (kind, konst) in [("models", "MODELS"), ("devices", "DEVICES"), ("engines", "ENGINES")] {
        let dir = root.join(kind);
        println!("cargo:rerun-if-changed={}", dir.display());
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        writeln!(out, "/// Embedded {kind} presets: (name, TOML text).").unwrap();
        writeln!(out, "pub static {konst}: &[(&str, &str)] = &[").unwrap();
        for f in files {
            println!("cargo:rerun-if-changed={}", f.display());
            let name = f.file_stem().unwrap().to_string_lossy();
            writeln!(out, "    ({name:?}, include_str!({:?})),", f.canonicalize().unwrap().display().to_string())
                .unwrap();
        }
        writeln!(out, "];").unwrap();
    }
    for (file, konst, what) in [
        ("validation_decode.csv", "VALIDATION_DECODE_CSV", "The validation table"),
        ("quant_quality.csv", "QUANT_QUALITY_CSV", "The quantization-quality table"),
        ("quality_estimated.csv", "QUALITY_ESTIMATED_CSV", "Perplexity deltas estimated from measured error"),
    ] {
        let path = root.join(file);
        println!("cargo:rerun-if-changed={}", path.display());
        writeln!(out, "/// {what} (datasets/{file}).").unwrap();
        let at = path.canonicalize().unwrap().display().to_string();
        writeln!(out, "pub static {konst}: &str = include_str!({at:?});").unwrap();
    }
    std::fs::write(Path::new(&std::env::var("OUT_DIR").unwrap()).join("presets.rs"), out).unwrap();
}
