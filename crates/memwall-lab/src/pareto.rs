//! The Pareto front of a sweep over four objectives: memory (footprint bytes, less is
//! better), decode tokens/s (more), estimated quality (the perplexity increase of the weights
//! and the KV cache together, less) and energy per token (J, less).
//!
//! Dominance rule: design `a` dominates `b` when `a` is no worse than `b` in all four
//! objectives and strictly better in at least one. The front holds the designs no other
//! design dominates, among those *eligible*: designs that fit their device with the margin
//! and whose quality is known. A design that does not fit, or whose quality is unknown, is
//! never on the front and dominates nothing. Designs equal in all four objectives are all on
//! the front.

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray};
use arrow::datatypes::{DataType, Field, Float64Type, Schema, SchemaRef, UInt64Type};
use arrow::record_batch::RecordBatch;

use crate::columns::by_name as column;
use crate::error::{LabError, Result};

/// The name of the column that marks the front.
pub const PARETO_COLUMN: &str = "pareto";

/// The column that identifies a design: its index in the grid.
const POINT: &str = "point";

/// The columns [`Front::column`] reads from a batch.
pub const READS: &[&str] = &[POINT];

/// One eligible design's objectives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Objectives {
    /// Index in the grid.
    pub point: u64,
    /// Footprint, bytes.
    pub total_bytes: u64,
    /// Decode tokens/s.
    pub decode_tok_s: f64,
    /// Perplexity increase, weights and KV together.
    pub ppl_delta: f64,
    /// Joules per decoded token.
    pub j_per_token: f64,
}

impl Objectives {
    /// A design's objectives when it is eligible for the front: it fits, both quality figures
    /// are known, and every objective is finite (None otherwise).
    pub fn eligible(
        point: u64,
        fits: bool,
        total_bytes: u64,
        decode_tok_s: f64,
        ppl_delta_weights: Option<f64>,
        ppl_delta_kv: Option<f64>,
        j_per_token: f64,
    ) -> Option<Self> {
        let ppl_delta = ppl_delta_weights? + ppl_delta_kv?;
        let finite = decode_tok_s.is_finite() && ppl_delta.is_finite() && j_per_token.is_finite();
        (fits && finite).then_some(Objectives { point, total_bytes, decode_tok_s, ppl_delta, j_per_token })
    }
}

/// Whether `a` dominates `b` (see the module documentation).
pub fn dominates(a: &Objectives, b: &Objectives) -> bool {
    let no_worse = a.total_bytes <= b.total_bytes
        && a.decode_tok_s >= b.decode_tok_s
        && a.ppl_delta <= b.ppl_delta
        && a.j_per_token <= b.j_per_token;
    let better = a.total_bytes < b.total_bytes
        || a.decode_tok_s > b.decode_tok_s
        || a.ppl_delta < b.ppl_delta
        || a.j_per_token < b.j_per_token;
    no_worse && better
}

/// The front of the designs offered so far, kept as designs arrive (each offer costs one
/// pass over the front).
#[derive(Debug, Clone, Default)]
pub struct Front {
    members: Vec<Objectives>,
}

impl Front {
    /// Offer a design: it joins unless a member dominates it, and removes the members it
    /// dominates.
    pub fn offer(&mut self, o: Objectives) {
        if self.members.iter().any(|m| dominates(m, &o)) {
            return;
        }
        self.members.retain(|m| !dominates(&o, m));
        self.members.push(o);
    }

    /// Offer every eligible row of a batch of sweep results (columns `point`, `fits`,
    /// `total_bytes`, `decode_tok_s`, `ppl_delta_weights`, `ppl_delta_kv`,
    /// `energy_j_per_token`).
    pub fn observe(&mut self, batch: &RecordBatch) -> Result<()> {
        let point = column(batch, POINT)?.as_primitive::<UInt64Type>();
        let fits = column(batch, "fits")?.as_boolean();
        let total = column(batch, "total_bytes")?.as_primitive::<UInt64Type>();
        let tok_s = column(batch, "decode_tok_s")?.as_primitive::<Float64Type>();
        let w = column(batch, "ppl_delta_weights")?.as_primitive::<Float64Type>();
        let kv = column(batch, "ppl_delta_kv")?.as_primitive::<Float64Type>();
        let j = column(batch, "energy_j_per_token")?.as_primitive::<Float64Type>();
        for i in 0..batch.num_rows() {
            let opt = |a: &arrow::array::PrimitiveArray<Float64Type>| (!a.is_null(i)).then(|| a.value(i));
            let o = Objectives::eligible(
                point.value(i),
                fits.value(i),
                total.value(i),
                tok_s.value(i),
                opt(w),
                opt(kv),
                j.value(i),
            );
            if let Some(o) = o {
                self.offer(o);
            }
        }
        Ok(())
    }

    /// The members, by footprint (then by point).
    pub fn members(&self) -> Vec<Objectives> {
        let mut m = self.members.clone();
        m.sort_by(|a, b| a.total_bytes.cmp(&b.total_bytes).then(a.point.cmp(&b.point)));
        m
    }

    /// The `pareto` column of a batch of results: whether each row's point is on the front.
    /// Reads only the columns named in [`READS`].
    pub fn column(&self, batch: &RecordBatch) -> Result<ArrayRef> {
        let mut on: Vec<u64> = self.members.iter().map(|m| m.point).collect();
        on.sort_unstable();
        let point = column(batch, POINT)?.as_primitive::<UInt64Type>();
        let mask: BooleanArray = point.iter().map(|p| Some(p.is_some_and(|p| on.binary_search(&p).is_ok()))).collect();
        Ok(std::sync::Arc::new(mask))
    }
}

/// The `pareto` column's field.
pub fn field() -> Field {
    Field::new(PARETO_COLUMN, DataType::Boolean, false)
}

/// `batches` (of `schema`) with the `pareto` column appended: the front of these rows.
pub fn with_column(schema: &SchemaRef, batches: Vec<RecordBatch>) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    let mut front = Front::default();
    for b in &batches {
        front.observe(b)?;
    }
    let mut fields = schema.fields().to_vec();
    fields.push(std::sync::Arc::new(field()));
    let wider = std::sync::Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    let werr = |e: arrow::error::ArrowError| LabError::Write { path: "<record batch>".into(), message: e.to_string() };
    let batches = batches
        .into_iter()
        .map(|b| {
            let mut cols = b.columns().to_vec();
            cols.push(front.column(&b)?);
            RecordBatch::try_new(wider.clone(), cols).map_err(werr)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((wider, batches))
}

/// Which of `designs` are on their front (`None`: not eligible, never on it).
pub fn mask(designs: &[Option<Objectives>]) -> Vec<bool> {
    let mut front = Front::default();
    for o in designs.iter().flatten() {
        front.offer(*o);
    }
    let mut on: Vec<u64> = front.members.iter().map(|m| m.point).collect();
    on.sort_unstable();
    designs.iter().map(|o| o.is_some_and(|o| on.binary_search(&o.point).is_ok())).collect()
}

impl Front {
    /// Whether the front is empty.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(point: u64, gb: u64, tok_s: f64, ppl: f64, j: f64) -> Objectives {
        Objectives { point, total_bytes: gb, decode_tok_s: tok_s, ppl_delta: ppl, j_per_token: j }
    }

    /// By hand: five designs, (memory, tok/s, dPPL, J/token).
    /// - 0 (4, 10, 0.2, 1.0) and 1 (6, 12, 0.1, 1.0) trade memory for speed and quality: both on.
    /// - 2 (6, 11, 0.2, 1.0) is dominated by 1 (same memory, faster, better quality).
    /// - 3 (4, 10, 0.2, 1.0) equals 0: equal designs are both on.
    /// - 4 (3, 5, 0.9, 2.0) is smallest: on, although worse in everything else.
    #[test]
    fn the_front_by_hand() {
        assert!(dominates(&o(1, 6, 12.0, 0.1, 1.0), &o(2, 6, 11.0, 0.2, 1.0)));
        assert!(!dominates(&o(0, 4, 10.0, 0.2, 1.0), &o(3, 4, 10.0, 0.2, 1.0)), "equal: no dominance");
        assert!(!dominates(&o(0, 4, 10.0, 0.2, 1.0), &o(1, 6, 12.0, 0.1, 1.0)));
        let mut f = Front::default();
        // Offered in an order where 2 joins first and is later removed.
        for d in [
            o(2, 6, 11.0, 0.2, 1.0),
            o(0, 4, 10.0, 0.2, 1.0),
            o(1, 6, 12.0, 0.1, 1.0),
            o(3, 4, 10.0, 0.2, 1.0),
            o(4, 3, 5.0, 0.9, 2.0),
        ] {
            f.offer(d);
        }
        let on: Vec<u64> = f.members().iter().map(|m| m.point).collect();
        assert_eq!(on, vec![4, 0, 3, 1]);
    }
}
