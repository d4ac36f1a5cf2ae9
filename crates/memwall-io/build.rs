//! Records the git commit memwall is built from (with `-dirty` when tracked files differ
//! from it) as `MEMWALL_GIT_COMMIT`, for the metadata of every results file. Outside a git
//! checkout (a source package) nothing is recorded.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let Some(top) = git(&["rev-parse", "--show-toplevel"]) else {
        println!("cargo:rerun-if-changed=build.rs");
        return;
    };
    // Rebuild when HEAD moves or the index changes (a commit, a checkout, a staged edit).
    for f in ["HEAD", "index"] {
        let p = Path::new(&top).join(".git").join(f);
        if p.exists() {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    }
    if let Some(head) = git(&["symbolic-ref", "-q", "HEAD"]) {
        let p = Path::new(&top).join(".git").join(&head);
        if p.exists() {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    }
    let Some(commit) = git(&["rev-parse", "HEAD"]) else { return };
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    println!("cargo:rustc-env=MEMWALL_GIT_COMMIT={commit}{}", if dirty { "-dirty" } else { "" });
}
