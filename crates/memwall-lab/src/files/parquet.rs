//! One way to write a Parquet file: batches streamed into row groups of a temporary file
//! beside the target, renamed into place only by [`ParquetStream::finish`] (dropping the
//! stream removes the temporary file, so a failure or an interrupt never leaves a partial
//! file). The key-value metadata goes both into the file footer and onto the Arrow schema,
//! so `pyarrow.parquet.read_table(f).schema.metadata` and polars see it too.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::ArrayRef;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use crate::error::{LabError, Result};
use crate::files::atomic::TempOutput;

/// Rows per Parquet row group of a results file: what a stream holds in memory at most.
pub const ROW_GROUP_ROWS: usize = 65_536;

/// The writer properties and schema of every Parquet file memwall writes: `metadata` in the
/// footer and on the schema, row groups of at most `row_group_rows`, Snappy, dictionaries for
/// text columns only.
fn writer_setup(
    schema: &SchemaRef,
    metadata: &[(String, String)],
    row_group_rows: usize,
) -> (WriterProperties, SchemaRef) {
    // Dictionaries pay off for text (model, device and format names repeat); numbers are
    // mostly distinct, and interning them costs a sweep a fifth of its time. Snappy keeps
    // the repeats of numbers small (a trace's clocks and levels) at little cost.
    let mut props = WriterProperties::builder()
        .set_key_value_metadata(Some(metadata.iter().map(|(k, v)| KeyValue::new(k.clone(), Some(v.clone()))).collect()))
        .set_max_row_group_row_count(Some(row_group_rows.max(1)))
        .set_compression(Compression::SNAPPY)
        .set_dictionary_enabled(false);
    for f in schema.fields() {
        if matches!(f.data_type(), DataType::Utf8 | DataType::Dictionary(..)) {
            props = props.set_column_dictionary_enabled(ColumnPath::from(f.name().as_str()), true);
        }
    }
    let with_meta: HashMap<String, String> = metadata.iter().cloned().collect();
    (props.build(), Arc::new(Schema::new_with_metadata(schema.fields().clone(), with_meta)))
}

/// `batches` (rows of `schema`) as the bytes of a Parquet file written as [`ParquetStream`]
/// writes one (the same properties and metadata), for a front end with no file system (the
/// web page's download).
pub fn parquet_bytes(schema: &SchemaRef, batches: &[RecordBatch], metadata: &[(String, String)]) -> Result<Vec<u8>> {
    let werr =
        |e: parquet::errors::ParquetError| LabError::Write { path: "<parquet bytes>".into(), message: e.to_string() };
    let (props, schema) = writer_setup(schema, metadata, ROW_GROUP_ROWS);
    let mut out = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut out, schema.clone(), Some(props)).map_err(werr)?;
    for b in batches {
        writer.write(b).map_err(werr)?;
    }
    writer.close().map_err(werr)?;
    Ok(out)
}

/// A Parquet file being written (see the module documentation).
pub struct ParquetStream {
    path: PathBuf,
    tmp: TempOutput,
    writer: ArrowWriter<File>,
    rows: u64,
    /// The writer's properties and schema, for a rewrite ([`ParquetStream::finish_adding`]).
    props: WriterProperties,
    schema: SchemaRef,
}

impl std::fmt::Debug for ParquetStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParquetStream")
            .field("path", &self.path)
            .field("tmp", &self.tmp.path())
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl ParquetStream {
    /// Start a file at `path` whose rows follow `schema`, with key-value `metadata`, in row
    /// groups of at most `row_group_rows` rows. Creates the parent directory if needed and a
    /// temporary file in it; nothing exists at `path` until [`ParquetStream::finish`].
    pub fn create(
        path: &Path,
        schema: SchemaRef,
        metadata: &[(String, String)],
        row_group_rows: usize,
    ) -> Result<Self> {
        let werr = |m: String| LabError::Write { path: path.to_path_buf(), message: m };
        let tmp = crate::files::atomic::temp_beside(path, ".parquet.tmp")?;
        let file = tmp.reopen().map_err(|source| LabError::File { path: tmp.path().into(), source })?;
        let (props, schema) = writer_setup(&schema, metadata, row_group_rows);
        let writer =
            ArrowWriter::try_new(file, schema.clone(), Some(props.clone())).map_err(|e| werr(e.to_string()))?;
        Ok(ParquetStream { path: path.to_path_buf(), tmp, writer, rows: 0, props, schema })
    }

    /// The final path of the file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Append a batch (its schema's fields must be the stream's).
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.writer.write(batch).map_err(|e| LabError::Write { path: self.path.clone(), message: e.to_string() })?;
        self.rows += batch.num_rows() as u64;
        Ok(())
    }

    /// Close the file and rewrite it with one more column, `field`, whose values `column`
    /// computes for each row group from that group's columns named in `reads` (a column
    /// known only once every row is written, such as the Pareto front of a sweep); then
    /// rename it to the target path as [`ParquetStream::finish`] does. The columns already
    /// written are copied as encoded bytes with their statistics and page indexes, so only
    /// `reads` is decoded and only the new column encoded; one row group of them is in
    /// memory at a time. Returns the rows written.
    pub fn finish_adding(
        self,
        field: Field,
        reads: &[&str],
        column: &dyn Fn(&RecordBatch) -> Result<ArrayRef>,
    ) -> Result<u64> {
        use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
        use parquet::arrow::arrow_writer::{ArrowRowGroupWriterFactory, compute_leaves};
        use parquet::arrow::{ArrowSchemaConverter, ProjectionMask, add_encoded_arrow_schema_to_metadata};
        use parquet::column::writer::ColumnCloseResult;
        use parquet::file::metadata::PageIndexPolicy;
        use parquet::file::writer::SerializedFileWriter;

        let ParquetStream { path, tmp, writer, rows, mut props, schema } = self;
        let werr = |e: &dyn std::fmt::Display| LabError::Write { path: path.clone(), message: e.to_string() };
        writer.close().map_err(|e| werr(&e))?;
        let read = File::open(tmp.path()).map_err(|source| LabError::File { path: tmp.path().into(), source })?;
        let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Optional);
        let meta = ArrowReaderMetadata::load(&read, options).map_err(|e| werr(&e))?;
        let projection = ProjectionMask::columns(meta.parquet_schema(), reads.iter().copied());

        let mut fields = schema.fields().to_vec();
        fields.push(Arc::new(field.clone()));
        let wider = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
        add_encoded_arrow_schema_to_metadata(&wider, &mut props);
        let descr = ArrowSchemaConverter::new()
            .with_coerce_types(props.coerce_types())
            .convert(&wider)
            .map_err(|e| werr(&e))?;
        let out = crate::files::atomic::temp_beside(&path, ".parquet.tmp")?;
        let file = out.reopen().map_err(|source| LabError::File { path: out.path().into(), source })?;
        let mut w = SerializedFileWriter::new(file, descr.root_schema_ptr(), Arc::new(props)).map_err(|e| werr(&e))?;
        let factory = ArrowRowGroupWriterFactory::new(&w, wider.clone());
        let added = wider.fields().len() - 1;
        let parquet_meta = meta.metadata().clone();
        for (g, group) in parquet_meta.row_groups().iter().enumerate() {
            let mut rg = w.next_row_group().map_err(|e| werr(&e))?;
            let index = parquet_meta.page_index_for_row_group(g);
            for (c, chunk) in group.columns().iter().enumerate() {
                let close = ColumnCloseResult {
                    bytes_written: chunk.compressed_size() as u64,
                    rows_written: group.num_rows() as u64,
                    metadata: chunk.clone(),
                    bloom_filter: None,
                    column_index: index.column_index(c).cloned(),
                    offset_index: index.offset_index(c).cloned(),
                };
                rg.append_column(&read, close).map_err(|e| werr(&e))?;
            }
            let input = read.try_clone().map_err(|source| LabError::File { path: tmp.path().into(), source })?;
            let batches = ParquetRecordBatchReaderBuilder::new_with_metadata(input, meta.clone())
                .with_projection(projection.clone())
                .with_row_groups(vec![g])
                .with_batch_size(group.num_rows().max(1) as usize)
                .build()
                .map_err(|e| werr(&e))?
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|e| werr(&e))?;
            // One batch of the group's rows, as the batch size asks; joined should a reader split it.
            let batch = match batches.as_slice() {
                [one] => one.clone(),
                [first, ..] => arrow::compute::concat_batches(&first.schema(), &batches).map_err(|e| werr(&e))?,
                [] => return Err(werr(&format!("row group {g} read back without rows"))),
            };
            let values = column(&batch)?;
            let mut writer = factory.create_column_writers(g).map_err(|e| werr(&e))?.swap_remove(added);
            for leaf in compute_leaves(&field, &values).map_err(|e| werr(&e))? {
                writer.write(&leaf).map_err(|e| werr(&e))?;
            }
            writer.close().and_then(|chunk| chunk.append_to_row_group(&mut rg)).map_err(|e| werr(&e))?;
            rg.close().map_err(|e| werr(&e))?;
        }
        w.close().map_err(|e| werr(&e))?;
        drop(tmp);
        crate::files::atomic::publish(out, &path)?;
        Ok(rows)
    }

    /// Close the file and rename it to the target path; returns the rows written.
    pub fn finish(self) -> Result<u64> {
        let ParquetStream { path, tmp, writer, rows, .. } = self;
        writer.close().map_err(|e| LabError::Write { path: path.clone(), message: e.to_string() })?;
        crate::files::atomic::publish(tmp, &path)?;
        Ok(rows)
    }
}
