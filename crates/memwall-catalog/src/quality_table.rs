//! Estimated quality cost of a weight mix and a KV format, looked up from llama.cpp's published
//! Llama-3-8B tables in `datasets/quant_quality.csv`, with the source carried along.
//!
//! The deltas are wikitext-2 perplexity increases measured on Llama-3-8B; for other models they
//! are a proxy (larger models usually suffer less) and the source string says so. A single
//! format without a published figure (`int3-g64`, `int4-pc`, `pure-q4_K`, ...) takes the
//! estimate `memwall quality --write` stored in `datasets/quality_estimated.csv` (measured
//! output error → the fit over the published mixes), labelled as estimated with its 80 %
//! interval.

use memwall_spec::{FileType, GgmlType, KvQuant, Mix, QuantFormat, WeightQuant};

use crate::presets::{QUALITY_ESTIMATED_CSV, QUANT_QUALITY_CSV};

/// One looked-up quality figure (serialized as it is named: the `quality` of every `--json`
/// document and report).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Quality {
    /// Perplexity increase from quantizing the weights (None: unknown).
    pub ppl_delta_weights: Option<f64>,
    /// Perplexity increase from quantizing the KV cache (None: unknown).
    pub ppl_delta_kv: Option<f64>,
    /// Where the numbers come from, or `"unknown"`.
    pub source: String,
}

#[derive(Debug, Clone)]
struct Row {
    model: String,
    method: String,
    quant_type: String,
    metric: String,
    delta_abs: Option<f64>,
    source: String,
}

/// The quality table.
#[derive(Debug, Clone)]
pub struct QualityTable {
    rows: Vec<Row>,
    /// Estimates of single formats quantized by RTN.
    estimated: Vec<Estimated>,
}

/// An estimated ΔPPL of one format: name, value, 80 % interval, provenance.
#[derive(Debug, Clone)]
struct Estimated {
    format: String,
    dppl: f64,
    lo: f64,
    hi: f64,
    source: String,
}

impl Default for QualityTable {
    fn default() -> Self {
        let mut t = Self::parse(QUANT_QUALITY_CSV).expect("the embedded quality table parses");
        t.estimated = parse_estimates(QUALITY_ESTIMATED_CSV).expect("the embedded estimates parse");
        t
    }
}

/// The columns of `datasets/quality_estimated.csv`.
pub const ESTIMATE_COLUMNS: &str = "format,method,bits,output_err,dppl,dppl_lo80,dppl_hi80,source";

/// Parse the estimates (`ESTIMATE_COLUMNS`); rows of a method other than `rtn` are kept out
/// of lookups (a weight mix does not say how it was quantized).
fn parse_estimates(text: &str) -> Result<Vec<Estimated>, csv::Error> {
    let mut out = Vec::new();
    for rec in csv::Reader::from_reader(text.as_bytes()).records() {
        let rec = rec?;
        let num = |i: usize| rec.get(i).and_then(|v| v.parse::<f64>().ok());
        if rec.get(1) != Some("rtn") {
            continue;
        }
        if let (Some(f), Some(d), Some(lo), Some(hi)) = (rec.get(0), num(4), num(5), num(6)) {
            out.push(Estimated {
                format: f.to_string(),
                dppl: d,
                lo,
                hi,
                source: rec.get(7).unwrap_or("").to_string(),
            });
        }
    }
    Ok(out)
}

fn parse_delta(s: &str) -> Option<f64> {
    s.trim().trim_start_matches('+').parse().ok()
}

impl QualityTable {
    /// Parse the CSV (columns `model, method_or_format, quant_type, …, metric, …, delta_abs,
    /// …, source`).
    pub fn parse(text: &str) -> Result<Self, csv::Error> {
        let mut r = csv::ReaderBuilder::new().flexible(true).from_reader(text.as_bytes());
        let headers = r.headers()?.clone();
        let col = |name: &str| headers.iter().position(|h| h == name);
        let (m, me, q, mt, d, s) =
            (col("model"), col("method_or_format"), col("quant_type"), col("metric"), col("delta_abs"), col("source"));
        let mut rows = Vec::new();
        for rec in r.records() {
            let rec = rec?;
            let get = |i: Option<usize>| i.and_then(|i| rec.get(i)).unwrap_or("").to_string();
            rows.push(Row {
                model: get(m),
                method: get(me),
                quant_type: get(q),
                metric: get(mt),
                delta_abs: parse_delta(&get(d)),
                source: get(s),
            });
        }
        Ok(QualityTable { rows, estimated: Vec::new() })
    }

    fn weights(&self, w: &WeightQuant) -> Option<(f64, String)> {
        let ft = match w.mix {
            Mix::File(ft) => ft,
            // A file's own per-tensor types: no table row describes that exact mix.
            Mix::Stored => return None,
            Mix::Pure(QuantFormat::Ggml(GgmlType::F16 | GgmlType::F32 | GgmlType::BF16)) => {
                return Some((0.0, "unquantized reference".into()));
            }
            Mix::Pure(f) => {
                let name = f.to_string();
                let e = self.estimated.iter().find(|e| e.format == name)?;
                let (lo, hi) = (e.lo, e.hi);
                return Some((
                    e.dppl,
                    format!("estimated from measured output error, 80% [{lo:.3}, {hi:.3}]: {}", e.source),
                ));
            }
        };
        if matches!(ft, FileType::F16 | FileType::F32 | FileType::BF16) {
            return Some((0.0, "unquantized reference".into()));
        }
        let name = ft.name();
        let llama3 = |r: &&Row| r.model.eq_ignore_ascii_case("Llama-3-8B") && r.quant_type.eq_ignore_ascii_case(name);
        // 1. llama.cpp's QUANT_OPTIONS table (no imatrix), 2. the perplexity scoreboard with
        // the same imatrix setting, 3. the scoreboard with the other setting.
        let options = self.rows.iter().filter(llama3).find(|r| r.metric.starts_with("wikitext-2 PPL delta vs F16"));
        let board = |imatrix: bool| {
            self.rows
                .iter()
                .filter(llama3)
                .find(|r| r.metric.contains("dPPL") && r.method.contains("imatrix") == imatrix)
        };
        let (row, note) = match (w.imatrix, options) {
            (false, Some(r)) => (r, ""),
            _ => match board(w.imatrix).or(options) {
                Some(r) => (r, ""),
                None => (
                    board(!w.imatrix)?,
                    if w.imatrix { " (measured without imatrix)" } else { " (measured with imatrix)" },
                ),
            },
        };
        Some((row.delta_abs?, format!("Llama-3-8B wikitext-2 dPPL{note}: {}", row.source)))
    }

    fn kv(&self, kv: &KvQuant) -> Option<(f64, String)> {
        let kv_rows: Vec<&Row> = self.rows.iter().filter(|r| r.method.contains("KV-cache quantization")).collect();
        let lookup = |k: &str, v: &str| {
            let key = format!("weights/K/V = f16/{k}/{v}");
            kv_rows.iter().find(|r| r.quant_type == key).and_then(|r| r.delta_abs.map(|d| (d, r.source.clone())))
        };
        let (k, v) = (kv.k.to_string(), kv.v.to_string());
        if k == "f16" && v == "f16" {
            return Some((0.0, "unquantized KV reference".into()));
        }
        let (base, _) = lookup("f16", "f16")?;
        let (d, src) = lookup(&k, &v)?;
        Some((d - base, format!("Llama-3-8B wikitext-2 dPPL vs f16 KV: {src}")))
    }

    /// Look up the quality cost of a weight mix and KV formats.
    pub fn lookup(&self, w: &WeightQuant, kv: &KvQuant) -> Quality {
        let wq = self.weights(w);
        let kq = self.kv(kv);
        let source = match (&wq, &kq) {
            (None, None) => "unknown".to_string(),
            _ => [wq.as_ref().map(|x| format!("weights: {}", x.1)), kq.as_ref().map(|x| format!("kv: {}", x.1))]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" | "),
        };
        Quality { ppl_delta_weights: wq.map(|x| x.0), ppl_delta_kv: kq.map(|x| x.0), source }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q4_k_m_and_q8_0_kv_come_from_the_llama_cpp_tables() {
        let t = QualityTable::default();
        let q = t.lookup(&WeightQuant::new("Q4_K_M".parse().unwrap()), &KvQuant::both("q8_0".parse().unwrap()));
        assert_eq!(q.ppl_delta_weights, Some(0.1754));
        assert!((q.ppl_delta_kv.unwrap() - (0.004616 - 0.002443)).abs() < 1e-12);
        assert!(q.source.contains("quantize.cpp") && q.source.contains("7412"), "{}", q.source);
    }

    #[test]
    fn missing_entries_are_unknown() {
        let t = QualityTable::default();
        let q = t.lookup(&WeightQuant::new("int5-g256".parse().unwrap()), &KvQuant::both("q4_0".parse().unwrap()));
        assert_eq!(q.ppl_delta_weights, None);
        assert_eq!(q.ppl_delta_kv, None);
        assert_eq!(q.source, "unknown");
    }

    #[test]
    fn single_formats_without_a_published_figure_take_the_labelled_estimate() {
        let t = QualityTable::default();
        let q = t.lookup(&WeightQuant::new("int3-g64".parse().unwrap()), &KvQuant::default());
        let d = q.ppl_delta_weights.unwrap();
        assert!(d > 0.5 && d < 10.0, "{d}");
        assert!(q.source.contains("estimated from measured output error") && q.source.contains("80%"), "{}", q.source);
        // More bits, less damage.
        let q4 =
            t.lookup(&WeightQuant::new("int4-g64".parse().unwrap()), &KvQuant::default()).ppl_delta_weights.unwrap();
        assert!(q4 < d);
        // A published mix keeps its published figure.
        let m = t.lookup(&WeightQuant::new("Q4_K_M".parse().unwrap()), &KvQuant::default());
        assert_eq!(m.ppl_delta_weights, Some(0.1754));
    }
}
