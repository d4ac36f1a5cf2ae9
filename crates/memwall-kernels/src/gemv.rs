//! Quantized GEMV and GEMM: `y = W · x` for `W` stored row by row in a ggml format.
//! Rows are independent; the multi-threaded GEMV hands contiguous row ranges to rayon.

use memwall_spec::GgmlType;
use rayon::prelude::*;

use crate::KernelError;
use crate::acts::Acts;
use crate::dot::{Kernel, check_row};

/// A row-major quantized matrix: `rows` rows of `cols` weights.
#[derive(Debug, Clone, Copy)]
pub struct QMatrix<'a> {
    format: GgmlType,
    rows: usize,
    cols: usize,
    row_bytes: usize,
    data: &'a [u8],
}

impl<'a> QMatrix<'a> {
    /// Wrap `data`, checking that it holds exactly `rows × cols` weights of `format`.
    pub fn new(format: GgmlType, rows: usize, cols: usize, data: &'a [u8]) -> Result<Self, KernelError> {
        let block = format.block_size() as usize;
        if !cols.is_multiple_of(block) {
            return Err(KernelError::RowLength { format: format.name(), len: cols, block });
        }
        let row_bytes = cols / block * format.type_size() as usize;
        if data.len() != rows * row_bytes {
            return Err(KernelError::ByteLength { format: format.name(), len: data.len(), expected: rows * row_bytes });
        }
        Ok(QMatrix { format, rows, cols, row_bytes, data })
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Bytes of one row.
    pub fn row_bytes(&self) -> usize {
        self.row_bytes
    }

    /// The weight format.
    pub fn format(&self) -> GgmlType {
        self.format
    }

    /// Row `r`'s bytes.
    pub fn row(&self, r: usize) -> &'a [u8] {
        &self.data[r * self.row_bytes..(r + 1) * self.row_bytes]
    }

    /// The bytes of `n` consecutive rows from row `first`.
    fn rows_from(&self, first: usize, n: usize) -> &'a [u8] {
        &self.data[first * self.row_bytes..(first + n) * self.row_bytes]
    }
}

/// Check the shapes of `y = W x` and prepare `x`'s activations, checked against `W`'s rows.
fn prepare(k: &Kernel, m: &QMatrix, x: &[f32], y: &[f32]) -> Result<Acts, KernelError> {
    if k.format() != m.format {
        return Err(KernelError::Unsupported { format: m.format.name() });
    }
    if x.len() != m.cols {
        return Err(KernelError::Shape { what: "x", len: x.len(), expected: m.cols });
    }
    if y.len() != m.rows {
        return Err(KernelError::Shape { what: "y", len: y.len(), expected: m.rows });
    }
    let a = k.prepare(x)?;
    check_row(m.format, m.row_bytes, &a)?;
    Ok(a)
}

/// `y = W x` on the calling thread.
pub fn gemv(k: &Kernel, m: &QMatrix, x: &[f32], y: &mut [f32]) -> Result<(), KernelError> {
    let a = prepare(k, m, x, y)?;
    k.rows_checked(m.data, m.row_bytes, &a, y);
    Ok(())
}

/// `y = W x` over rayon's pool, `rows_per_task` rows per task (0: rows / (4 × threads)).
/// Kept for comparison: [`gemv_mt`] is cheaper per call.
pub fn gemv_par(k: &Kernel, m: &QMatrix, x: &[f32], y: &mut [f32], rows_per_task: usize) -> Result<(), KernelError> {
    let a = prepare(k, m, x, y)?;
    let chunk =
        if rows_per_task > 0 { rows_per_task } else { m.rows.div_ceil(4 * rayon::current_num_threads()).max(1) };
    y.par_chunks_mut(chunk).enumerate().for_each(|(c, ys)| {
        k.rows_checked(m.rows_from(c * chunk, ys.len()), m.row_bytes, &a, ys);
    });
    Ok(())
}

/// `Y = X Wᵀ` for `tokens` input rows of `cols` (row-major), output `tokens × rows`: a GEMM
/// as the prefill runs it, each weight row read once per block of tokens.
pub fn gemm_par(k: &Kernel, m: &QMatrix, xs: &[f32], tokens: usize, ys: &mut [f32]) -> Result<(), KernelError> {
    if xs.len() != tokens * m.cols {
        return Err(KernelError::Shape { what: "xs", len: xs.len(), expected: tokens * m.cols });
    }
    if ys.len() != tokens * m.rows {
        return Err(KernelError::Shape { what: "ys", len: ys.len(), expected: tokens * m.rows });
    }
    if k.format() != m.format {
        return Err(KernelError::Unsupported { format: m.format.name() });
    }
    let acts = xs.chunks_exact(m.cols).map(|x| k.prepare(x)).collect::<Result<Vec<_>, _>>()?;
    for a in &acts {
        check_row(m.format, m.row_bytes, a)?;
    }
    let rows = m.rows;
    let out: Vec<Vec<f32>> = (0..rows)
        .into_par_iter()
        .map(|r| {
            let w = m.row(r);
            acts.iter().map(|a| k.dot_checked(w, a)).collect()
        })
        .collect();
    for (r, col) in out.into_iter().enumerate() {
        for (t, v) in col.into_iter().enumerate() {
            ys[t * rows + r] = v;
        }
    }
    Ok(())
}

/// Pool tasks per thread of a GEMV by default. Two contiguous chunks per thread stream DRAM
/// best on the development machine (TinyLlama Q4_K_M decode at 2 threads, alternating runs:
/// 1 task per thread 28–29 tok/s, 2: 32–33, 4: 28, 8: 31, 16: 26–27); fewer leave a thread
/// idle at the tail, more break the streams the prefetchers follow.
pub const TASKS_PER_THREAD: usize = 2;

/// `y = W x` on a persistent [`SpinPool`](crate::pool::SpinPool), `rows_per_task` rows per
/// task (0: rows / ([`TASKS_PER_THREAD`] × threads)).
pub fn gemv_pool(
    k: &Kernel,
    m: &QMatrix,
    x: &[f32],
    y: &mut [f32],
    pool: &crate::pool::SpinPool,
    rows_per_task: usize,
) -> Result<(), KernelError> {
    let a = prepare(k, m, x, y)?;
    let chunk =
        if rows_per_task > 0 { rows_per_task } else { m.rows.div_ceil(TASKS_PER_THREAD * pool.threads()).max(1) };
    // Each task owns one chunk of `y`; the locks are never contended.
    let chunks: Vec<std::sync::Mutex<&mut [f32]>> = y.chunks_mut(chunk).map(std::sync::Mutex::new).collect();
    pool.run(chunks.len(), &|c| {
        let mut ys = chunks[c].lock().unwrap_or_else(|e| e.into_inner());
        let n = ys.len();
        k.rows_checked(m.rows_from(c * chunk, n), m.row_bytes, &a, &mut ys[..]);
    });
    Ok(())
}

/// `y = W x` on the process-wide spin pool: the multi-threaded GEMV of the decode path.
pub fn gemv_mt(k: &Kernel, m: &QMatrix, x: &[f32], y: &mut [f32]) -> Result<(), KernelError> {
    gemv_pool(k, m, x, y, crate::pool::global(), 0)
}

/// One GEMV of a batch: `y = W x`.
#[derive(Debug)]
pub struct GemvJob<'a> {
    /// The kernel of `m`'s format.
    pub kernel: &'a Kernel,
    /// The matrix.
    pub m: QMatrix<'a>,
    /// Input.
    pub x: &'a [f32],
    /// Output.
    pub y: &'a mut [f32],
}

/// Several GEMVs in one pass of the pool (the chosen experts of an MoE layer, as ggml's
/// `mul_mat_id` runs them): the rows of all jobs are split into
/// `rows / (`[`TASKS_PER_THREAD`]` × threads)` chunks that the threads share, so small matrices do not each pay a dispatch.
pub fn gemv_batch_pool(jobs: Vec<GemvJob<'_>>, pool: &crate::pool::SpinPool) -> Result<(), KernelError> {
    let mut acts = Vec::with_capacity(jobs.len());
    for j in &jobs {
        acts.push(prepare(j.kernel, &j.m, j.x, j.y)?);
    }
    let total: usize = jobs.iter().map(|j| j.m.rows).sum();
    let chunk = total.div_ceil(TASKS_PER_THREAD * pool.threads()).max(1);
    // (job, first row, output rows): each task owns its chunk of one job's `y`.
    let mut tasks = Vec::new();
    let mut meta = Vec::with_capacity(jobs.len());
    for (i, j) in jobs.into_iter().enumerate() {
        meta.push((j.kernel, j.m));
        for (c, ys) in j.y.chunks_mut(chunk).enumerate() {
            tasks.push(std::sync::Mutex::new((i, c * chunk, ys)));
        }
    }
    pool.run(tasks.len(), &|t| {
        let mut g = tasks[t].lock().unwrap_or_else(|e| e.into_inner());
        let (i, first, ref mut ys) = *g;
        let (k, m) = meta[i];
        let n = ys.len();
        k.rows_checked(m.rows_from(first, n), m.row_bytes, &acts[i], ys);
    });
    Ok(())
}
