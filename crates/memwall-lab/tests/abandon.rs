//! Abandoning outputs (what the command line does on SIGINT/SIGTERM) removes every temporary
//! file in flight and publishes nothing afterwards. It is process-wide and cannot be undone,
//! so it has this test binary to itself.

use memwall_lab::{LabError, ParquetTraceSink, abandon_outputs, metadata, outputs_abandoned};

fn temp_files(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

#[test]
fn abandoned_outputs_leave_no_temporary_file_and_publish_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let a = ParquetTraceSink::create(&dir.path().join("a.parquet"), &metadata(None)).unwrap();
    let b = ParquetTraceSink::create(&dir.path().join("sub/b.parquet"), &metadata(None)).unwrap();
    assert_eq!(temp_files(dir.path()).iter().filter(|n| n.starts_with(".memwall-")).count(), 1);
    assert!(!outputs_abandoned());

    assert_eq!(abandon_outputs(), 2);
    assert!(outputs_abandoned());
    assert_eq!(temp_files(dir.path()), ["sub"], "only the folder made for b is left");
    assert!(temp_files(&dir.path().join("sub")).is_empty());

    // A write that was running when outputs were abandoned fails at its rename ...
    assert!(matches!(a.finish(), Err(LabError::Interrupted)));
    drop(b);
    // ... and no new one starts.
    let e = ParquetTraceSink::create(&dir.path().join("c.parquet"), &metadata(None)).unwrap_err();
    assert!(matches!(e, LabError::Interrupted), "{e}");
    assert_eq!(temp_files(dir.path()), ["sub"]);
}
