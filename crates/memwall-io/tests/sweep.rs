//! Sweeps are deterministic whatever the thread count, and Parquet round-trips them.

use std::fs::File;

use memwall_io::{Experiment, metadata, run_sweep, to_record_batch, write_parquet};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

const EXP: &str = r#"
name = "sweep"
seed = 3
[base]
model = "qwen3-30b-a3b"
device = "snapdragon-8-gen3-16gb"
weights = { mix = "Q4_K_M" }
[base.workload]
routing_skew = 0.5
[grid]
"weights.mix" = ["Q8_0", "Q4_K_M", "IQ2_XS"]
"kv.k+kv.v" = ["f16", "q8_0"]
"workload.threads" = [2, 4, 6]
"device.memory.data_rate_mtps" = [6400.0, 9600.0]
[labels]
"kv.k+kv.v" = ["16-bit", "8-bit"]
"#;

#[test]
fn rows_are_identical_on_one_and_many_threads() {
    let exp = Experiment::parse(EXP, "sweep.toml").unwrap();
    assert_eq!(exp.len(), 36);
    let one =
        rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap().install(|| run_sweep(&exp, |_, _| {}).unwrap());
    let many =
        rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap().install(|| run_sweep(&exp, |_, _| {}).unwrap());
    for (a, b) in one.iter().zip(&many) {
        assert_eq!(a.choice, b.choice);
        assert_eq!(a.estimate.decode_tok_s.to_bits(), b.estimate.decode_tok_s.to_bits());
        assert_eq!(a.estimate.total_bytes, b.estimate.total_bytes);
    }
    // Grid order: the last axis varies fastest.
    assert_eq!(one[1].choice, vec![0, 0, 0, 1]);
    // Faster memory helps; the row with 9600 MT/s is never slower.
    assert!(one[1].estimate.decode_tok_s >= one[0].estimate.decode_tok_s);
}

#[test]
fn parquet_round_trips_columns_and_metadata() {
    let exp = Experiment::parse(EXP, "sweep.toml").unwrap();
    let rows = run_sweep(&exp, |_, _| {}).unwrap();
    let batch = to_record_batch(Some(&exp), &rows).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/dir/sweep.parquet");
    write_parquet(&path, &batch, &metadata(Some(&exp))).unwrap();
    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap();
    let kv = builder.metadata().file_metadata().key_value_metadata().unwrap().clone();
    assert!(kv.iter().any(|x| x.key == "seed" && x.value.as_deref() == Some("3")));
    let back: Vec<_> = builder.build().unwrap().collect::<Result<_, _>>().unwrap();
    assert_eq!(back.len(), 1);
    assert_eq!(back[0], batch);
    let schema = batch.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    // Identity columns, the labelled axis, and the non-identity grid paths.
    for c in ["weights.mix", "kv.k", "kv.k+kv.v", "device.memory.data_rate_mtps", "decode_tok_s", "quality_source"] {
        assert!(names.contains(&c), "{c} missing from {names:?}");
    }
    // workload.threads is shown by the `threads` column and as its own axis.
    assert!(names.contains(&"workload.threads") && names.contains(&"threads"));
}
