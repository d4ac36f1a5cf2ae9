//! Records the git commit memwall is built from (with `-dirty` when tracked files differ from
//! it) as `MEMWALL_GIT_COMMIT`, for the metadata of every results file; outside a git
//! checkout (a source package) no commit is recorded.

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
}
