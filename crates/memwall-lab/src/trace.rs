//! Per-token traces streamed to Parquet: a [`TraceSink`] that buffers rows in Arrow column
//! builders and hands a record batch to a [`ParquetStream`] every [`BATCH_ROWS`] rows (so
//! memory stays bounded however long the run); [`ParquetTraceSink::finish`] renames the
//! temporary file into place. A failure never leaves a partial file: until `finish` succeeds
//! the rows live in a `.memwall-*.parquet.tmp` file beside the target, removed if the sink is
//! dropped.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use crate::error::Result;
use crate::files::parquet::ParquetStream;
use arrow::array::{
    ArrayRef, DictionaryArray, Float64Builder, Int8Builder, Int64Builder, StringArray, StringBuilder, UInt32Builder,
    UInt64Builder,
};
use arrow::datatypes::{DataType, Field, Int8Type, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use memwall_sim::SimError;
use memwall_sim::des::{Phase, TraceRow, TraceSink};

/// Rows buffered in the column builders before they are handed to the Parquet writer.
pub const BATCH_ROWS: usize = 8_192;

pub use crate::files::parquet::ROW_GROUP_ROWS;

/// Every phase, in the order of their dictionary keys in the `phase` column.
const PHASES: [Phase; 6] = [Phase::Load, Phase::Prefill, Phase::Decode, Phase::Think, Phase::Pause, Phase::Reload];

/// Dictionary key of a phase: its index in [`PHASES`].
fn phase_key(phase: Phase) -> i8 {
    match phase {
        Phase::Load => 0,
        Phase::Prefill => 1,
        Phase::Decode => 2,
        Phase::Think => 3,
        Phase::Pause => 4,
        Phase::Reload => 5,
    }
}

/// Schema of a trace file: `point` (the design point, see [`ParquetTraceSink::set_point`])
/// then one column per [`TraceRow`] field, with the field's name, in declaration order.
/// `phase` is dictionary-encoded (`Dictionary(Int8, Utf8)`, values [`Phase::name`]).
pub fn trace_schema() -> SchemaRef {
    static SCHEMA: OnceLock<SchemaRef> = OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            let f = |name: &str, dt: DataType| Field::new(name, dt, false);
            Arc::new(Schema::new(vec![
                f("point", DataType::UInt32),
                f("time_s", DataType::Float64),
                f("token", DataType::UInt64),
                f("turn", DataType::UInt32),
                f("phase", DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8))),
                f("latency_s", DataType::Float64),
                f("context", DataType::UInt64),
                f("tokens", DataType::UInt64),
                f("dram_bytes", DataType::Float64),
                f("cache_bytes", DataType::Float64),
                f("flash_bytes", DataType::Float64),
                f("freq_scale", DataType::Float64),
                f("bandwidth_scale", DataType::Float64),
                f("level", DataType::UInt32),
                f("die_c", DataType::Float64),
                f("skin_c", DataType::Float64),
                f("power_w", DataType::Float64),
                f("unit_power_w", DataType::Float64),
                f("dram_power_w", DataType::Float64),
                f("energy_j", DataType::Float64),
                f("resident_bytes", DataType::UInt64),
                f("free_bytes", DataType::Int64),
                f("events", DataType::Utf8),
            ]))
        })
        .clone()
}

/// Column builders for the rows not yet handed to the writer.
struct Columns {
    point: UInt32Builder,
    time_s: Float64Builder,
    token: UInt64Builder,
    turn: UInt32Builder,
    phase: Int8Builder,
    latency_s: Float64Builder,
    context: UInt64Builder,
    tokens: UInt64Builder,
    dram_bytes: Float64Builder,
    cache_bytes: Float64Builder,
    flash_bytes: Float64Builder,
    freq_scale: Float64Builder,
    bandwidth_scale: Float64Builder,
    level: UInt32Builder,
    die_c: Float64Builder,
    skin_c: Float64Builder,
    power_w: Float64Builder,
    unit_power_w: Float64Builder,
    dram_power_w: Float64Builder,
    energy_j: Float64Builder,
    resident_bytes: UInt64Builder,
    free_bytes: Int64Builder,
    events: StringBuilder,
    /// Values of the `phase` dictionary, shared by every batch.
    phase_values: ArrayRef,
    /// Rows buffered.
    len: usize,
}

impl Columns {
    fn new() -> Self {
        let n = BATCH_ROWS;
        Columns {
            point: UInt32Builder::with_capacity(n),
            time_s: Float64Builder::with_capacity(n),
            token: UInt64Builder::with_capacity(n),
            turn: UInt32Builder::with_capacity(n),
            phase: Int8Builder::with_capacity(n),
            latency_s: Float64Builder::with_capacity(n),
            context: UInt64Builder::with_capacity(n),
            tokens: UInt64Builder::with_capacity(n),
            dram_bytes: Float64Builder::with_capacity(n),
            cache_bytes: Float64Builder::with_capacity(n),
            flash_bytes: Float64Builder::with_capacity(n),
            freq_scale: Float64Builder::with_capacity(n),
            bandwidth_scale: Float64Builder::with_capacity(n),
            level: UInt32Builder::with_capacity(n),
            die_c: Float64Builder::with_capacity(n),
            skin_c: Float64Builder::with_capacity(n),
            power_w: Float64Builder::with_capacity(n),
            unit_power_w: Float64Builder::with_capacity(n),
            dram_power_w: Float64Builder::with_capacity(n),
            energy_j: Float64Builder::with_capacity(n),
            resident_bytes: UInt64Builder::with_capacity(n),
            free_bytes: Int64Builder::with_capacity(n),
            events: StringBuilder::with_capacity(n, 16 * n),
            phase_values: Arc::new(StringArray::from_iter_values(PHASES.iter().map(|p| p.name()))),
            len: 0,
        }
    }

    fn append(&mut self, point: u32, r: &TraceRow) {
        self.point.append_value(point);
        self.time_s.append_value(r.time_s);
        self.token.append_value(r.token);
        self.turn.append_value(r.turn);
        self.phase.append_value(phase_key(r.phase));
        self.latency_s.append_value(r.latency_s);
        self.context.append_value(r.context);
        self.tokens.append_value(r.tokens);
        self.dram_bytes.append_value(r.dram_bytes);
        self.cache_bytes.append_value(r.cache_bytes);
        self.flash_bytes.append_value(r.flash_bytes);
        self.freq_scale.append_value(r.freq_scale);
        self.bandwidth_scale.append_value(r.bandwidth_scale);
        self.level.append_value(r.level);
        self.die_c.append_value(r.die_c);
        self.skin_c.append_value(r.skin_c);
        self.power_w.append_value(r.power_w);
        self.unit_power_w.append_value(r.unit_power_w);
        self.dram_power_w.append_value(r.dram_power_w);
        self.energy_j.append_value(r.energy_j);
        self.resident_bytes.append_value(r.resident_bytes);
        self.free_bytes.append_value(r.free_bytes);
        if r.events.is_empty() {
            self.events.append_value("");
        } else {
            self.events.append_value(r.events.to_string());
        }
        self.len += 1;
    }

    /// The buffered rows as a record batch; the builders are left empty.
    fn take_batch(&mut self) -> std::result::Result<RecordBatch, String> {
        let phase = DictionaryArray::<Int8Type>::try_new(self.phase.finish(), self.phase_values.clone())
            .map_err(|e| e.to_string())?;
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(self.point.finish()),
            Arc::new(self.time_s.finish()),
            Arc::new(self.token.finish()),
            Arc::new(self.turn.finish()),
            Arc::new(phase),
            Arc::new(self.latency_s.finish()),
            Arc::new(self.context.finish()),
            Arc::new(self.tokens.finish()),
            Arc::new(self.dram_bytes.finish()),
            Arc::new(self.cache_bytes.finish()),
            Arc::new(self.flash_bytes.finish()),
            Arc::new(self.freq_scale.finish()),
            Arc::new(self.bandwidth_scale.finish()),
            Arc::new(self.level.finish()),
            Arc::new(self.die_c.finish()),
            Arc::new(self.skin_c.finish()),
            Arc::new(self.power_w.finish()),
            Arc::new(self.unit_power_w.finish()),
            Arc::new(self.dram_power_w.finish()),
            Arc::new(self.energy_j.finish()),
            Arc::new(self.resident_bytes.finish()),
            Arc::new(self.free_bytes.finish()),
            Arc::new(self.events.finish()),
        ];
        self.len = 0;
        RecordBatch::try_new(trace_schema(), arrays).map_err(|e| e.to_string())
    }
}

/// A [`TraceSink`] writing rows to a Parquet file (schema [`trace_schema`]), atomically:
/// rows go to a temporary file beside the target, renamed into place by
/// [`finish`](Self::finish). Dropping the sink without `finish` removes the temporary file
/// and leaves nothing at the target path.
#[derive(Debug)]
pub struct ParquetTraceSink {
    stream: ParquetStream,
    cols: Columns,
    point: u32,
    rows: u64,
}

impl std::fmt::Debug for Columns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Columns").field("buffered", &self.len).finish_non_exhaustive()
    }
}

impl ParquetTraceSink {
    /// Start a trace file at `path` with key-value `metadata` (e.g. [`crate::metadata`]).
    /// Creates the parent directory if needed and a temporary file in it; nothing exists at
    /// `path` until [`finish`](Self::finish).
    pub fn create(path: &Path, metadata: &[(String, String)]) -> Result<Self> {
        let stream = ParquetStream::create(path, trace_schema(), metadata, ROW_GROUP_ROWS)?;
        Ok(ParquetTraceSink { stream, cols: Columns::new(), point: 0, rows: 0 })
    }

    /// Set the value of the `point` column for the rows pushed from now on (several design
    /// points share one file). Starts at 0.
    pub fn set_point(&mut self, point: u32) {
        self.point = point;
    }

    /// The final path of the file.
    pub fn path(&self) -> &Path {
        self.stream.path()
    }

    /// Rows pushed so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Hand the buffered rows to the Parquet writer.
    fn flush_batch(&mut self) -> Result<()> {
        if self.cols.len == 0 {
            return Ok(());
        }
        let batch = self
            .cols
            .take_batch()
            .map_err(|message| crate::LabError::Write { path: self.stream.path().to_path_buf(), message })?;
        self.stream.write(&batch)
    }

    /// Write the remaining rows, close the file and rename it to the target path. Returns the
    /// number of rows written.
    pub fn finish(mut self) -> Result<u64> {
        self.flush_batch()?;
        self.stream.finish()
    }
}

impl TraceSink for ParquetTraceSink {
    fn push(&mut self, row: &TraceRow) -> std::result::Result<(), SimError> {
        self.cols.append(self.point, row);
        self.rows += 1;
        if self.cols.len >= BATCH_ROWS {
            self.flush_batch().map_err(|e| SimError::Sink(e.to_string()))?;
        }
        Ok(())
    }
}

/// A sink told which design point its rows belong to: the trace of several points is one
/// table with a `point` column.
pub trait PointSink: TraceSink {
    /// Set the value of the `point` column for the rows pushed from now on.
    fn set_point(&mut self, point: u32);
}

impl PointSink for ParquetTraceSink {
    fn set_point(&mut self, point: u32) {
        ParquetTraceSink::set_point(self, point);
    }
}

/// A [`TraceSink`] keeping the rows in memory as record batches of [`BATCH_ROWS`] rows
/// (schema [`trace_schema`]), for callers that hand the trace on as Arrow (the Python
/// bindings) instead of writing a file.
#[derive(Debug)]
pub struct BatchTraceSink {
    cols: Columns,
    point: u32,
    batches: Vec<RecordBatch>,
}

impl Default for BatchTraceSink {
    fn default() -> Self {
        BatchTraceSink { cols: Columns::new(), point: 0, batches: Vec::new() }
    }
}

impl BatchTraceSink {
    /// Every row pushed, as record batches.
    pub fn finish(mut self) -> std::result::Result<Vec<RecordBatch>, SimError> {
        if self.cols.len > 0 {
            self.batches.push(self.cols.take_batch().map_err(SimError::Sink)?);
        }
        Ok(self.batches)
    }
}

impl TraceSink for BatchTraceSink {
    fn push(&mut self, row: &TraceRow) -> std::result::Result<(), SimError> {
        self.cols.append(self.point, row);
        if self.cols.len >= BATCH_ROWS {
            self.batches.push(self.cols.take_batch().map_err(SimError::Sink)?);
        }
        Ok(())
    }
}

impl PointSink for BatchTraceSink {
    fn set_point(&mut self, point: u32) {
        self.point = point;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LabError;
    use arrow::array::{Array, Float64Array, Int64Array, StringArray, UInt32Array, UInt64Array};
    use memwall_sim::des::{Events, SimEvent};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use std::fs::File;

    fn row(i: u64) -> TraceRow {
        TraceRow {
            time_s: i as f64 * 0.025,
            token: i,
            turn: (i / 1000) as u32,
            phase: PHASES[(i % 6) as usize],
            latency_s: 0.025 + (i % 7) as f64 * 1e-3,
            context: 512 + i,
            tokens: i % 3,
            dram_bytes: 1.5e9 + i as f64,
            cache_bytes: (i * 11) as f64,
            flash_bytes: if i.is_multiple_of(5) { 4096.0 } else { 0.0 },
            freq_scale: 1.0 - (i % 10) as f64 * 0.05,
            bandwidth_scale: 0.9,
            level: (i % 4) as u32,
            die_c: 40.0 + (i % 50) as f64 * 0.5,
            skin_c: 30.0 + (i % 20) as f64 * 0.25,
            power_w: 4.5,
            unit_power_w: 3.0,
            dram_power_w: 1.0,
            energy_j: 0.1 * i as f64,
            resident_bytes: 3_000_000_000 + i,
            free_bytes: 1_000_000 - 20 * i as i64,
            events: if i.is_multiple_of(1000) {
                Events::from(vec![SimEvent::Throttle {
                    from: (i % 4) as usize,
                    to: (i % 4 + 1) as usize,
                    by: memwall_sim::des::ThrottleCause::Die,
                }])
            } else {
                Events::default()
            },
        }
    }

    fn col<'a, T: 'static>(b: &'a RecordBatch, name: &str) -> &'a T {
        b.column_by_name(name).unwrap().as_any().downcast_ref::<T>().unwrap()
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".memwall-"))
            .collect()
    }

    #[test]
    fn writes_readable_trace() {
        const N: u64 = 100_000;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/trace.parquet");
        let meta = vec![("memwall_version".to_string(), "test".to_string()), ("seed".to_string(), "7".to_string())];
        let mut sink = ParquetTraceSink::create(&path, &meta).unwrap();
        assert!(!path.exists(), "nothing at the target before finish");
        for i in 0..N {
            if i == 60_000 {
                sink.set_point(1);
            }
            sink.push(&row(i)).unwrap();
        }
        assert_eq!(sink.rows(), N);
        assert_eq!(sink.finish().unwrap(), N);
        assert!(leftovers(path.parent().unwrap()).is_empty());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o644);
        }

        let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap();
        let md = builder.metadata().clone();
        assert!(md.num_row_groups() >= 2, "{} row groups", md.num_row_groups());
        assert_eq!(md.row_group(0).num_rows(), ROW_GROUP_ROWS as i64);
        assert_eq!(md.file_metadata().num_rows(), N as i64);
        let kv = md.file_metadata().key_value_metadata().unwrap();
        let get = |k: &str| kv.iter().find(|e| e.key == k).and_then(|e| e.value.clone());
        assert_eq!(get("memwall_version").as_deref(), Some("test"));
        assert_eq!(get("seed").as_deref(), Some("7"));
        assert_eq!(builder.schema().fields(), trace_schema().fields());

        let batches: Vec<RecordBatch> = builder.with_batch_size(30_000).build().unwrap().map(|b| b.unwrap()).collect();
        let batch = arrow::compute::concat_batches(&trace_schema(), &batches).unwrap();
        assert_eq!(batch.num_rows(), N as usize);
        let names: Vec<&str> = batch.schema_ref().fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names[0], "point");
        assert_eq!(names[4], "phase");
        assert_eq!(names[22], "events");
        assert_eq!(names[18], "dram_power_w");

        let point = col::<UInt32Array>(&batch, "point");
        assert_eq!((point.value(59_999), point.value(60_000), point.value(99_999)), (0, 1, 1));
        let token = col::<UInt64Array>(&batch, "token");
        let time = col::<Float64Array>(&batch, "time_s");
        let free = col::<Int64Array>(&batch, "free_bytes");
        let events = col::<StringArray>(&batch, "events");
        let phase = col::<DictionaryArray<Int8Type>>(&batch, "phase");
        let phase_names = phase.values().as_any().downcast_ref::<StringArray>().unwrap();
        for i in [0usize, 1, 8_191, 8_192, 65_535, 65_536, 77_777, 99_999] {
            let r = row(i as u64);
            assert_eq!(token.value(i), r.token);
            assert_eq!(time.value(i), r.time_s);
            assert_eq!(free.value(i), r.free_bytes);
            assert_eq!(events.value(i), r.events.to_string());
            assert_eq!(phase_names.value(phase.keys().value(i) as usize), r.phase.name());
            assert_eq!(col::<UInt32Array>(&batch, "level").value(i), r.level);
            assert_eq!(col::<Float64Array>(&batch, "die_c").value(i), r.die_c);
            assert_eq!(col::<UInt64Array>(&batch, "resident_bytes").value(i), r.resident_bytes);
        }
        assert_eq!(events.value(3000), "throttle 0→1 (die)");
        assert!(free.value(99_999) < 0);
        assert_eq!(phase.null_count(), 0);
    }

    #[test]
    fn batch_sink_keeps_every_row_in_batches_of_the_file_schema() {
        let mut sink = BatchTraceSink::default();
        for i in 0..(BATCH_ROWS as u64 + 10) {
            if i == 5 {
                sink.set_point(3);
            }
            sink.push(&row(i)).unwrap();
        }
        let batches = sink.finish().unwrap();
        assert_eq!(batches.len(), 2);
        assert_eq!(batches[0].num_rows(), BATCH_ROWS);
        assert_eq!(batches[1].num_rows(), 10);
        assert_eq!(batches[0].schema(), trace_schema());
        let point = col::<UInt32Array>(&batches[0], "point");
        assert_eq!((point.value(4), point.value(5)), (0, 3));
        let token = col::<UInt64Array>(&batches[1], "token");
        assert_eq!(token.value(9), BATCH_ROWS as u64 + 9);
    }

    #[test]
    fn drop_without_finish_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.parquet");
        {
            let mut sink = ParquetTraceSink::create(&path, &[]).unwrap();
            for i in 0..20_000 {
                sink.push(&row(i)).unwrap();
            }
            assert_eq!(leftovers(dir.path()).len(), 1, "the temporary file exists while writing");
        }
        assert!(!path.exists());
        assert!(leftovers(dir.path()).is_empty(), "{:?}", leftovers(dir.path()));
    }

    #[test]
    fn parent_is_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("blocker");
        std::fs::write(&blocker, b"x").unwrap();
        let path = blocker.join("trace.parquet");
        let err = ParquetTraceSink::create(&path, &[]).unwrap_err();
        assert!(matches!(err, LabError::File { .. }), "{err:?}");
        assert!(err.to_string().contains(&*path.to_string_lossy()), "{err}");
    }
}
