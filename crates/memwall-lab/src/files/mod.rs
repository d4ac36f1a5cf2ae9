//! Every file memwall writes, whole or not at all: outputs are checked against the command's
//! inputs and each other before any work ([`outputs`]: [`crate::check_outputs`]), written to a
//! temporary file beside the target and renamed into place, removed when the process is
//! interrupted ([`atomic`]); Parquet files streamed in row groups ([`parquet`]) or written
//! from memory ([`metadata::write_parquet_batches`], the path Python's `write_parquet` takes
//! too), with memwall's key-value metadata on the schema and in the footer ([`metadata`]).

pub mod atomic;
pub mod metadata;
pub mod outputs;
pub mod parquet;
