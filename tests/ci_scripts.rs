//! The test scripts never call a suite that could not run a pass: `scripts/test-aarch64`
//! fails, naming what is missing, when it cannot install its cross toolchain.

#[cfg(unix)]
#[test]
fn the_aarch64_suite_fails_when_its_tools_cannot_be_installed() {
    use std::os::unix::fs::PermissionsExt;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let bin = tempfile::tempdir().unwrap();
    // A PATH with a shell and an apt-get that always fails, and no cross compiler or qemu.
    let bash = ["/bin/bash", "/usr/bin/bash"].into_iter().find(|p| std::path::Path::new(p).exists()).unwrap();
    std::os::unix::fs::symlink(bash, bin.path().join("bash")).unwrap();
    for tool in ["dirname", "grep"] {
        let found = ["/usr/bin", "/bin"].iter().map(|d| std::path::Path::new(d).join(tool)).find(|p| p.exists());
        std::os::unix::fs::symlink(found.unwrap(), bin.path().join(tool)).unwrap();
    }
    let apt = bin.path().join("apt-get");
    std::fs::write(&apt, "#!/bin/sh\necho 'E: no network' >&2\nexit 100\n").unwrap();
    std::fs::set_permissions(&apt, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = std::process::Command::new(bash)
        .arg(root.join("scripts/test-aarch64"))
        .env_clear()
        .env("PATH", bin.path())
        .env("CI", "true")
        .env("MEMWALL_SKIP_AARCH64", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("FAILED") && err.contains("gcc-aarch64-linux-gnu") && err.contains("qemu-user"), "{err}");
    assert!(!String::from_utf8_lossy(&o.stdout).contains("SKIPPED"));
}
