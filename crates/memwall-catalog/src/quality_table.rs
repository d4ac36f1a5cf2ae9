//! Estimated quality cost of a weight mix and a KV format on a given model, with where each
//! figure comes from and, when it is not a published row, an 80 % interval.
//!
//! [`QualityTable::lookup_model`] reads `datasets/quality_by_model.csv` (published perplexity
//! increases of several families and sizes, weights and KV cache apart) and answers, for one
//! model, in this order:
//!
//! 1. **published**: a row of that very model (the preset's name matches the row's);
//! 2. **scaled from `<model>`**: a row of another size of the same family, scaled by the
//!    family-independent size rule `ΔPPL% ∝ params^b` fitted on every format published at two
//!    sizes or more of one family (log-log, pooled within family and format, [`SizeScaling`]);
//!    its 80 % interval comes from the leave-one-model-out residuals of that rule, at the
//!    quantiles whose leave-one-model-out coverage reaches 80 % ([`SizeScaling::coverage`]);
//! 3. **estimated**: no row of the family, so the row of another family (Llama-3 first, the
//!    most sensitive family published) scaled by size, the interval widened by how far families
//!    differ at one size; or, for a single format without any row, the estimate
//!    `memwall quality --write` stored in `datasets/quality_estimated.csv`;
//! 4. **unknown**.
//!
//! KV formats are looked up for K and V apart (`k_type`/`v_type` rows with the other half f16)
//! and added; a pair published together wins. A KV type published for other models takes the
//! geometric mean over them with the spread the multi-model types show; a V type with no V row
//! is bounded by the K figure of the same type (V was the less sensitive half where both were
//! measured). Formats below 2 bits per weight, and ternary formats, on a model not trained for
//! them (`trained_bits`) carry [`Quality::ptq_unusable`]: post-training quantization there
//! destroys the model.
//!
//! [`QualityTable::lookup`] keeps the model-free answer on Llama-3-8B, the reference (weights
//! from llama.cpp's Llama-3-8B tables in `datasets/quant_quality.csv`), which `memwall quality`
//! fits its estimates to.

use memwall_spec::{FileType, GgmlType, KvQuant, Mix, ModelSpec, QuantFormat, WeightQuant};

use crate::presets::{QUALITY_BY_MODEL_CSV, QUALITY_ESTIMATED_CSV, QUANT_QUALITY_CSV};
use crate::quality_mix::{self, FormatErrors, MixRule};

/// The seed's quality thresholds, relative to the model's unquantized perplexity: an increase
/// up to this is acceptable ...
pub const ACCEPTABLE_PPL_INCREASE_PCT: f64 = 5.0;
/// ... and above this the format should be reconsidered.
pub const RECONSIDER_PPL_INCREASE_PCT: f64 = 10.0;

/// Where a figure comes from.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Provenance {
    /// A published row of this model (or the unquantized reference itself).
    Published,
    /// A published row of another size of the same family, scaled by size.
    Scaled {
        /// The model whose row was scaled.
        from: String,
    },
    /// An estimate: another family's row, a pooled figure or the measured-error fit.
    Estimated,
    /// No figure.
    Unknown,
}

impl Provenance {
    /// `published`, `scaled`, `estimated` or `unknown`.
    pub fn name(&self) -> &'static str {
        match self {
            Provenance::Published => "published",
            Provenance::Scaled { .. } => "scaled",
            Provenance::Estimated => "estimated",
            Provenance::Unknown => "unknown",
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Provenance::Published => 0,
            Provenance::Scaled { .. } => 1,
            Provenance::Estimated => 2,
            Provenance::Unknown => 3,
        }
    }

    /// The less certain of two.
    fn worst(self, other: Provenance) -> Provenance {
        if other.rank() > self.rank() { other } else { self }
    }
}

/// A perplexity increase in % of the model's unquantized perplexity, with its 80 % interval
/// (equal to the value for a published row).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct PctFigure {
    /// The increase, % of the baseline perplexity.
    pub pct: f64,
    /// Lower end of the 80 % interval.
    pub lo: f64,
    /// Upper end of the 80 % interval.
    pub hi: f64,
}

impl PctFigure {
    fn exact(pct: f64) -> Self {
        PctFigure { pct, lo: pct, hi: pct }
    }

    fn add(self, o: PctFigure) -> Self {
        PctFigure { pct: self.pct + o.pct, lo: self.lo + o.lo, hi: self.hi + o.hi }
    }
}

/// One looked-up quality figure (serialized as it is named: the `quality` of every `--json`
/// document and report).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Quality {
    /// Perplexity increase from quantizing the weights (None: unknown): the published row's
    /// own, or the percentage applied to the baseline of the row it was scaled from.
    pub ppl_delta_weights: Option<f64>,
    /// Perplexity increase from quantizing the KV cache (None: unknown), likewise.
    pub ppl_delta_kv: Option<f64>,
    /// Where the numbers come from, or `"unknown"`.
    pub source: String,
    /// The weights' increase in % of the baseline perplexity, with its 80 % interval.
    pub weights_pct: Option<PctFigure>,
    /// Where the weights' figure comes from.
    pub weights_provenance: Provenance,
    /// The KV cache's increase in % of the baseline perplexity, with its 80 % interval.
    pub kv_pct: Option<PctFigure>,
    /// Where the KV figure comes from (the less certain of K and V).
    pub kv_provenance: Provenance,
    /// Whether the weights figure speaks for the model's architecture (MoE, one KV head,
    /// recurrent layers): `unknown` when it comes from another architecture's rows.
    pub weights_architecture: ArchEvidence,
    /// The model's published MMLU score (base checkpoint where published, else instruct; the
    /// quality the design starts from), and how it was measured with its source.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_mmlu: Option<crate::benchmarks::Score>,
    /// Set when the weight format is ternary or below 2 bits per weight and the model was not
    /// trained for it: post-training quantization there is not usable (the reason and source).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ptq_unusable: Option<String>,
}

impl Quality {
    /// The whole perplexity increase, % of the baseline (weights and KV added; None when
    /// either is unknown).
    pub fn ppl_increase_pct(&self) -> Option<f64> {
        self.weights_pct.zip(self.kv_pct).map(|(w, k)| w.pct + k.pct)
    }

    /// The seed's verdict on the whole increase: `acceptable` (<= +5 %), `noticeable`,
    /// `reconsider` (> +10 %), `not usable` (flagged [`Quality::ptq_unusable`]) or `unknown`.
    pub fn verdict(&self) -> &'static str {
        if self.ptq_unusable.is_some() {
            return "not usable";
        }
        match self.ppl_increase_pct() {
            None => "unknown",
            Some(p) if p <= ACCEPTABLE_PPL_INCREASE_PCT => "acceptable",
            Some(p) if p <= RECONSIDER_PPL_INCREASE_PCT => "noticeable",
            Some(_) => "reconsider",
        }
    }

    /// The upper end of the whole increase's 80 % interval (None when either is unknown).
    pub fn ppl_increase_pct_hi(&self) -> Option<f64> {
        self.weights_pct.zip(self.kv_pct).map(|(w, k)| w.hi + k.hi)
    }
}

/// The model a lookup is for: its name (matched against the rows' models), parameter count and
/// the precision it was trained at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelRef<'a> {
    /// Preset or model name (`llama-2-7b`).
    pub name: &'a str,
    /// Parameters, billions.
    pub params_b: f64,
    /// Bits per weight it was trained at (quantization-aware), if not 16.
    pub trained_bits: Option<f64>,
    /// Its shapes, which weigh an override's or a file's own per-tensor types (None: such a
    /// mix has no figure).
    pub spec: Option<&'a ModelSpec>,
}

impl<'a> ModelRef<'a> {
    /// The model of a spec.
    pub fn of(m: &'a ModelSpec) -> Self {
        ModelRef { name: &m.name, params_b: m.params().total as f64 / 1e9, trained_bits: m.trained_bits, spec: Some(m) }
    }

    /// The model's architecture (a model known by name only is taken as dense).
    pub fn architecture(&self) -> Architecture {
        self.spec.map_or(Architecture::Dense, Architecture::of)
    }

    /// Llama-3-8B, the reference of the model-free lookup.
    pub const REFERENCE: ModelRef<'static> =
        ModelRef { name: "Llama-3-8B", params_b: 8.0, trained_bits: None, spec: None };
}

/// The family a model name belongs to, as `quality_by_model.csv` names families (None: a
/// family without published rows).
pub fn family_of(name: &str) -> Option<&'static str> {
    let n = name.to_ascii_lowercase();
    let n = n.rsplit('/').next().unwrap_or(&n).trim_start_matches("meta-");
    const FAMILIES: [(&str, &str); 10] = [
        ("mixtral", "mixtral"),
        ("mistral", "mistral"),
        ("falcon-7b", "falcon"),
        ("llama-3", "llama-3"),
        ("llama3", "llama-3"),
        ("llama-2", "llama-2"),
        ("llama2", "llama-2"),
        ("llama-v1", "llama-1"),
        ("qwen3", "qwen3"),
        ("bitnet", "bitnet-b1.58"),
    ];
    if let Some(f) = FAMILIES.iter().find(|(p, _)| n.starts_with(p)) {
        return Some(f.1);
    }
    // The first LLaMA's sizes, named without a version (`llama-7b`, `huggyllama/llama-65b`).
    matches!(n.strip_prefix("llama-"), Some("7b" | "13b" | "30b" | "33b" | "65b")).then_some("llama-1")
}

/// What in a model's architecture may change how it takes quantization, as far as published
/// rows can speak for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Architecture {
    /// A dense transformer with several KV heads (Llama, Qwen, Gemma, ...).
    Dense,
    /// Routed experts.
    Moe,
    /// One KV head for all query heads.
    Mqa,
    /// State-space, linear-attention or short-convolution layers beside or instead of
    /// attention.
    Recurrent,
}

impl Architecture {
    /// The architecture of a model spec (recurrent layers first, then experts, then one KV head).
    pub fn of(m: &ModelSpec) -> Architecture {
        use memwall_spec::LayerKind;
        if m.layer_kinds().iter().any(|k| !matches!(k, LayerKind::Full | LayerKind::Sliding)) {
            Architecture::Recurrent
        } else if m.moe.is_some() {
            Architecture::Moe
        } else if m.n_kv_heads == 1 {
            Architecture::Mqa
        } else {
            Architecture::Dense
        }
    }

    /// The architecture of a published family's rows (`quality_by_model.csv`): Mixtral is
    /// an MoE, Falcon-7B (the family's llama.cpp rows) has one KV head, the rest are dense.
    pub fn of_family(family: &str) -> Architecture {
        match family {
            "mixtral" | "qwen3-moe" | "deepseek-v2" => Architecture::Moe,
            "falcon" => Architecture::Mqa,
            "mamba" | "falcon-mamba" | "jamba" => Architecture::Recurrent,
            _ => Architecture::Dense,
        }
    }

    /// `dense`, `moe`, `mqa` or `recurrent`.
    pub fn name(self) -> &'static str {
        match self {
            Architecture::Dense => "dense",
            Architecture::Moe => "moe",
            Architecture::Mqa => "mqa",
            Architecture::Recurrent => "recurrent",
        }
    }

    /// What a figure from another architecture leaves out.
    fn caveat(self) -> &'static str {
        match self {
            Architecture::Dense => "",
            Architecture::Moe => "how routed experts change the cost is not published for this format",
            Architecture::Mqa => "how one KV head changes the cost is not published for this format",
            Architecture::Recurrent => {
                "how state-space / linear-attention layers take weight quantization is not published (no weight-only \
                 row of such a model): the figure is a transformer's"
            }
        }
    }
}

/// Whether a weights figure speaks for the model's architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ArchEvidence {
    /// No figure, or an unquantized one.
    NotApplicable,
    /// From the model itself, its family, or a family of the same architecture.
    Included,
    /// From a model of another architecture: the effect of the design's is unknown.
    Unknown,
}

impl ArchEvidence {
    /// `n/a`, `included` or `unknown`.
    pub fn name(self) -> &'static str {
        match self {
            ArchEvidence::NotApplicable => "n/a",
            ArchEvidence::Included => "included",
            ArchEvidence::Unknown => "unknown",
        }
    }
}

/// What every quantized KV figure leaves out: how its cost grows with the context.
pub const KV_CONTEXT_CAVEAT: &str = " [KV figures are measured at short context (512 tokens, or unstated): how a KV \
     format's cost grows with the context is not published as a series (ik_llama.cpp PR #1547: it grows, measured at \
     8192 only), so at long context the increase may be larger]";

/// The family published rows are taken from first when a model's own family has none.
const REFERENCE_FAMILY: &str = "llama-3";

#[derive(Debug, Clone)]
struct Row {
    model: String,
    method: String,
    quant_type: String,
    metric: String,
    delta_abs: Option<f64>,
    source: String,
}

/// One row of `datasets/quality_by_model.csv`.
#[derive(Debug, Clone, PartialEq)]
struct PubRow {
    kv: bool,
    model: String,
    family: String,
    params_b: f64,
    format: String,
    k_type: String,
    v_type: String,
    method: String,
    imatrix: bool,
    /// The unquantized perplexity (published, or the value over the published ratio).
    baseline: f64,
    delta: f64,
    pct: f64,
    source: String,
}

/// The columns of `datasets/quality_by_model.csv`.
pub const BY_MODEL_COLUMNS: &str = "kind,model,family,params_b,format,k_type,v_type,method,imatrix,metric,context,\
                                    baseline,value,delta,delta_pct,eval_setup,source";

/// Parse `quality_by_model.csv`; a bad cell is refused naming its row, column and value.
fn parse_by_model(text: &str) -> Result<Vec<PubRow>, String> {
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let headers = r.headers().map_err(|e| e.to_string())?.clone();
    let want: Vec<&str> = BY_MODEL_COLUMNS.split(',').collect();
    if headers.iter().collect::<Vec<_>>() != want {
        return Err(format!("quality_by_model.csv: columns must be {BY_MODEL_COLUMNS}"));
    }
    let mut out = Vec::new();
    for (n, rec) in r.records().enumerate() {
        let rec = rec.map_err(|e| e.to_string())?;
        let row = n + 2;
        let get = |c: &str| rec.get(want.iter().position(|w| *w == c).expect("a known column")).unwrap_or("").trim();
        let num = |c: &str| -> Result<Option<f64>, String> {
            let v = get(c);
            if v.is_empty() {
                return Ok(None);
            }
            v.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .map(Some)
                .ok_or_else(|| format!("quality_by_model.csv row {row}: {c} = {v:?} is not a number"))
        };
        let kv = match get("kind") {
            "weights" => false,
            "kv" => true,
            other => return Err(format!("quality_by_model.csv row {row}: kind = {other:?} is neither weights nor kv")),
        };
        let params_b = num("params_b")?.filter(|p| *p > 0.0).ok_or_else(|| {
            format!("quality_by_model.csv row {row}: params_b = {:?} is not a positive number", get("params_b"))
        })?;
        let value = num("value")?;
        let pct = num("delta_pct")?.ok_or_else(|| {
            format!("quality_by_model.csv row {row}: delta_pct = {:?} is not a number", get("delta_pct"))
        })?;
        let baseline = match (num("baseline")?, value) {
            (Some(b), _) => b,
            (None, Some(v)) => v / (1.0 + pct / 100.0),
            (None, None) => {
                return Err(format!("quality_by_model.csv row {row}: baseline and value are both empty"));
            }
        };
        if baseline <= 0.0 {
            return Err(format!("quality_by_model.csv row {row}: baseline = {baseline} is not positive"));
        }
        let delta = num("delta")?.unwrap_or(baseline * pct / 100.0);
        let imatrix = match get("imatrix") {
            "yes" => true,
            "no" | "" => false,
            other => return Err(format!("quality_by_model.csv row {row}: imatrix = {other:?} is neither yes nor no")),
        };
        out.push(PubRow {
            kv,
            model: get("model").to_string(),
            family: get("family").to_string(),
            params_b,
            format: get("format").to_string(),
            k_type: get("k_type").to_ascii_lowercase(),
            v_type: get("v_type").to_ascii_lowercase(),
            method: get("method").to_string(),
            imatrix,
            baseline,
            delta,
            pct,
            source: get("source").to_string(),
        });
    }
    Ok(out)
}

/// The size rule `ln ΔPPL% = a(family, format) + slope · ln params`, fitted on the published
/// weight rows with two sizes or more of one family and format, and the 80 % interval of a
/// scaled figure: the factors `[lo, hi]` are quantiles of the leave-one-model-out residuals
/// (each model's rows predicted from the nearest other size of its family with the slope fitted
/// without it), at the tail `tail` each side — the widest of 10 %, 7.5 %, 5 %, 2.5 % being
/// kept only if its leave-one-model-out coverage (the interval from every other model's
/// residuals around each held-out row) reaches 80 %.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeScaling {
    /// Exponent of the parameter count.
    pub slope: f64,
    /// Multiplier of a scaled figure giving the lower end of its 80 % interval.
    pub lo: f64,
    /// Multiplier giving the upper end.
    pub hi: f64,
    /// Tail quantile each side the factors are taken at.
    pub tail: f64,
    /// Held-out rows inside their interval, of all held-out rows (leave one model out).
    pub coverage: (usize, usize),
    /// Multipliers `[lo, hi]` of a figure taken from another family (same format, scaled by
    /// size): the spread of every family's rows predicted from the other families'.
    pub cross_family: (f64, f64),
}

/// Whether rows of `method` quantize the weights only, as a lookup does (`llama.cpp`, `rtn`):
/// trained-ternary and weight-and-activation (`w8a8-*`) rows stay out of the size rule.
fn weight_only(method: &str) -> bool {
    matches!(method, "llama.cpp" | "rtn")
}

/// A group of weight rows measured alike: (family, format, method, imatrix).
type GroupKey<'a> = (&'a str, &'a str, &'a str, bool);

/// The `p` quantile of `xs` (sorted in place), linear between order statistics.
pub(crate) fn quantile(xs: &mut [f64], p: f64) -> f64 {
    xs.sort_by(f64::total_cmp);
    let at = p * (xs.len() - 1) as f64;
    let (i, f) = (at.floor() as usize, at.fract());
    let j = (i + 1).min(xs.len() - 1);
    xs[i] + (xs[j] - xs[i]) * f
}

impl SizeScaling {
    fn fit(rows: &[PubRow]) -> SizeScaling {
        let mut groups: std::collections::BTreeMap<GroupKey, Vec<(f64, f64, &str)>> = Default::default();
        for r in rows.iter().filter(|r| !r.kv && r.pct > 0.0 && weight_only(&r.method)) {
            groups.entry((&r.family, &r.format, &r.method, r.imatrix)).or_default().push((
                r.params_b.ln(),
                r.pct.ln(),
                &r.model,
            ));
        }
        groups.retain(|_, v| v.iter().any(|p| p.0 != v[0].0));
        let slope = |without: Option<&str>| {
            let (mut sxy, mut sxx) = (0.0, 0.0);
            for v in groups.values() {
                let v: Vec<_> = v.iter().filter(|p| Some(p.2) != without).collect();
                if v.len() < 2 {
                    continue;
                }
                let mx = v.iter().map(|p| p.0).sum::<f64>() / v.len() as f64;
                let my = v.iter().map(|p| p.1).sum::<f64>() / v.len() as f64;
                for p in v {
                    sxy += (p.0 - mx) * (p.1 - my);
                    sxx += (p.0 - mx).powi(2);
                }
            }
            if sxx > 0.0 { sxy / sxx } else { 0.0 }
        };
        let models: std::collections::BTreeSet<&str> = groups.values().flatten().map(|p| p.2).collect();
        let mut residuals: Vec<(&str, f64)> = Vec::new();
        for m in &models {
            let b = slope(Some(m));
            for v in groups.values() {
                let others: Vec<_> = v.iter().filter(|p| p.2 != *m).collect();
                for held in v.iter().filter(|p| p.2 == *m) {
                    let Some(near) = others.iter().min_by(|a, b| (a.0 - held.0).abs().total_cmp(&(b.0 - held.0).abs()))
                    else {
                        continue;
                    };
                    residuals.push((m, held.1 - (near.1 + b * (held.0 - near.0))));
                }
            }
        }
        let covered = |tail: f64| {
            let mut hit = 0;
            for (m, r) in &residuals {
                let mut rest: Vec<f64> = residuals.iter().filter(|x| x.0 != *m).map(|x| x.1).collect();
                let (lo, hi) = (quantile(&mut rest, tail), quantile(&mut rest, 1.0 - tail));
                hit += usize::from(lo <= *r && *r <= hi);
            }
            hit
        };
        let n = residuals.len();
        let tail = [0.10, 0.075, 0.05, 0.025].into_iter().find(|t| covered(*t) * 5 >= n * 4).unwrap_or(0.025);
        let mut all: Vec<f64> = residuals.iter().map(|x| x.1).collect();
        let (lo, hi) = if all.is_empty() {
            (1.0, 1.0)
        } else {
            (quantile(&mut all, tail).exp(), quantile(&mut all, 1.0 - tail).exp())
        };
        let b = slope(None);
        // Another family's figure: every family's rows predicted from the other families'
        // (same format, method and imatrix, nearest size, scaled by the slope).
        let mut cross: Vec<f64> = Vec::new();
        for r in rows.iter().filter(|r| !r.kv && r.pct > 0.0 && weight_only(&r.method)) {
            let near = rows
                .iter()
                .filter(|o| {
                    !o.kv
                        && o.pct > 0.0
                        && o.family != r.family
                        && o.format == r.format
                        && o.method == r.method
                        && o.imatrix == r.imatrix
                })
                .min_by(|a, c| (a.params_b / r.params_b).ln().abs().total_cmp(&(c.params_b / r.params_b).ln().abs()));
            if let Some(o) = near {
                cross.push(r.pct.ln() - (o.pct.ln() + b * (r.params_b / o.params_b).ln()));
            }
        }
        let cross_family = if cross.is_empty() {
            (lo, hi)
        } else {
            // Either direction: a family may be more sensitive than the one published.
            let mut abs: Vec<f64> = cross.iter().map(|x| x.abs()).collect();
            let w = quantile(&mut abs, 1.0 - 2.0 * tail).exp();
            ((1.0 / w).min(lo), w.max(hi))
        };
        SizeScaling { slope: b, lo, hi, tail, coverage: (covered(tail), n), cross_family }
    }

    /// The multiplier of a figure published at `from_b` billion parameters for `to_b`.
    pub fn factor(&self, from_b: f64, to_b: f64) -> f64 {
        (to_b / from_b).powf(self.slope)
    }
}

/// The quality table.
#[derive(Debug, Clone)]
pub struct QualityTable {
    rows: Vec<Row>,
    /// Estimates of single formats quantized by RTN.
    estimated: Vec<Estimated>,
    /// `quality_by_model.csv`.
    published: Vec<PubRow>,
    scaling: SizeScaling,
    /// Multipliers `[lo, hi]` of a KV figure pooled over models: how far each model's row of a
    /// KV type published for several models lies from their geometric mean, at the extremes.
    kv_spread: (f64, f64),
    /// Output error of each format (`format_errors.csv`, and the estimates' single formats).
    errors: FormatErrors,
    /// The per-tensor rule that weighs overrides and a file's own types.
    mix_rule: Option<MixRule>,
}

/// An estimated ΔPPL of one format: name, value, 80 % interval, provenance.
#[derive(Debug, Clone)]
struct Estimated {
    format: String,
    output_err: f64,
    dppl: f64,
    lo: f64,
    hi: f64,
    source: String,
}

impl Default for QualityTable {
    /// The embedded tables (a copy of [`QualityTable::shared`]).
    fn default() -> Self {
        Self::shared().clone()
    }
}

impl QualityTable {
    /// The embedded tables, parsed and fitted once per process and shared: what a lookup
    /// that changes nothing reads (a copy costs a sweep's set-up more than its point).
    pub fn shared() -> &'static QualityTable {
        static TABLE: std::sync::OnceLock<QualityTable> = std::sync::OnceLock::new();
        TABLE.get_or_init(|| {
            let mut t = Self::parse(QUANT_QUALITY_CSV).expect("the embedded quality table parses");
            t.estimated = parse_estimates(QUALITY_ESTIMATED_CSV).expect("the embedded estimates parse");
            t.set_published(parse_by_model(QUALITY_BY_MODEL_CSV).expect("the embedded quality_by_model.csv parses"));
            t.set_errors(quality_mix::embedded_errors());
            t
        })
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
        if let (Some(f), Some(e), Some(d), Some(lo), Some(hi)) = (rec.get(0), num(3), num(4), num(5), num(6)) {
            out.push(Estimated {
                format: f.to_string(),
                output_err: e,
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

/// One half of a lookup (weights, or the KV cache): the figure, its absolute ΔPPL, where it
/// comes from, and the text the source string gets.
#[derive(Debug, Clone)]
struct Part {
    pct: Option<PctFigure>,
    abs: Option<f64>,
    provenance: Provenance,
    text: String,
    arch: ArchEvidence,
}

impl Part {
    fn unknown(text: impl Into<String>) -> Part {
        Part {
            pct: None,
            abs: None,
            provenance: Provenance::Unknown,
            text: text.into(),
            arch: ArchEvidence::NotApplicable,
        }
    }

    /// A figure given as a share of the baseline: its perplexity increase is
    /// `pct / 100 × baseline` (perplexity points).
    fn of_pct(p: PctFigure, baseline: f64, provenance: Provenance, text: String) -> Part {
        Part { abs: Some(p.pct / 100.0 * baseline), pct: Some(p), provenance, text, arch: ArchEvidence::Included }
    }

    /// Mark a figure taken from a model of architecture `from` for a model of `to`: included
    /// when they agree, else unknown with what it leaves out added to the text.
    fn arch_from(&mut self, to: Architecture, from: Architecture) {
        if to == from {
            self.arch = ArchEvidence::Included;
        } else {
            self.arch = ArchEvidence::Unknown;
            self.text = format!("{} [{} model: {}]", self.text, to.name(), to.caveat());
        }
    }

    /// The model's own published row `r`, its figure exactly, the text `label: +x % (source)`.
    fn published(r: &PubRow, label: &str, arch: ArchEvidence) -> Part {
        let p = PctFigure::exact(r.pct);
        Part {
            pct: Some(p),
            abs: Some(r.delta),
            provenance: Provenance::Published,
            text: format!("{label}: {} ({})", fmt_pct(&p), r.source),
            arch,
        }
    }

    fn reference(text: &str) -> Part {
        Part {
            pct: Some(PctFigure::exact(0.0)),
            abs: Some(0.0),
            provenance: Provenance::Published,
            text: text.into(),
            arch: ArchEvidence::NotApplicable,
        }
    }
}

fn is_unquantized(t: &str) -> bool {
    matches!(t, "f16" | "f32" | "bf16")
}

/// A weight format below what post-training quantization survives: its name and bits per
/// weight, and whether it is ternary (ternary formats, and any format under 2 bits per weight).
fn sub_2_bit(w: &WeightQuant) -> Option<(String, f64, bool)> {
    let (name, bits, ternary) = match w.mix {
        Mix::File(ft) => (
            ft.name().to_string(),
            ft.default_type().bits_per_weight(),
            matches!(ft, FileType::TQ1_0 | FileType::TQ2_0),
        ),
        Mix::Pure(f) => {
            (f.to_string(), f.bits_per_weight(), matches!(f, QuantFormat::Ggml(GgmlType::TQ1_0 | GgmlType::TQ2_0)))
        }
        Mix::Stored => return None,
    };
    (ternary || bits < 2.0).then_some((name, bits, ternary))
}

/// The row of `rs` nearest `params_b` in log parameter count.
fn nearest<'a>(rs: impl Iterator<Item = &'a PubRow>, params_b: f64) -> Option<&'a PubRow> {
    rs.min_by(|a, b| (a.params_b / params_b).ln().abs().total_cmp(&(b.params_b / params_b).ln().abs()))
}

fn fmt_pct(p: &PctFigure) -> String {
    if p.lo == p.hi { format!("+{:.3} %", p.pct) } else { format!("+{:.3} % (80% [{:.3}, {:.3}])", p.pct, p.lo, p.hi) }
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
        Ok(QualityTable {
            rows,
            estimated: Vec::new(),
            published: Vec::new(),
            scaling: SizeScaling::fit(&[]),
            kv_spread: (1.0, 1.0),
            errors: FormatErrors::default(),
            mix_rule: None,
        })
    }

    /// Replace the published per-model rows, refitting the size rule and the KV spread.
    fn set_published(&mut self, rows: Vec<PubRow>) {
        self.scaling = SizeScaling::fit(&rows);
        let mut by_type: std::collections::BTreeMap<(bool, &str), Vec<f64>> = Default::default();
        for r in rows.iter().filter(|r| r.kv && r.pct > 0.0) {
            if r.v_type == "f16" {
                by_type.entry((true, &r.k_type)).or_default().push(r.pct.ln());
            } else if r.k_type == "f16" {
                by_type.entry((false, &r.v_type)).or_default().push(r.pct.ln());
            }
        }
        let (mut lo, mut hi) = (0.0f64, 0.0f64);
        for v in by_type.values().filter(|v| v.len() > 1) {
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            for x in v {
                lo = lo.min(x - mean);
                hi = hi.max(x - mean);
            }
        }
        self.kv_spread = (lo.exp(), hi.exp());
        self.published = rows;
    }

    /// The size rule and its checked interval.
    pub fn size_scaling(&self) -> &SizeScaling {
        &self.scaling
    }

    /// Take the format errors (adding the estimates' single formats, measured on the same
    /// layer) and fit the per-tensor rule on the published llama.cpp rows.
    fn set_errors(&mut self, mut errors: FormatErrors) {
        for e in &self.estimated {
            if let Ok(f) = e.format.parse::<QuantFormat>() {
                errors.insert(f, e.output_err);
            }
        }
        let rows = self
            .published
            .iter()
            .filter(|r| !r.kv && r.method == "llama.cpp")
            .map(|r| (r.model.clone(), r.format.clone(), r.imatrix, r.pct));
        self.mix_rule = MixRule::fit(&quality_mix::mix_points(rows, &errors));
        self.errors = errors;
    }

    /// The per-tensor rule (None: no format errors were loaded).
    pub fn mix_rule(&self) -> Option<&MixRule> {
        self.mix_rule.as_ref()
    }

    /// Why `w` is not usable on a model not trained for it, if it is a ternary or sub-2-bit
    /// format: the published 1-bit rows of the reference model say what post-training
    /// quantization there does.
    fn ptq_unusable(&self, w: &WeightQuant) -> Option<String> {
        let (name, bits, ternary) = sub_2_bit(w)?;
        let evidence: Vec<String> = self
            .published
            .iter()
            .filter(|r| !r.kv && r.method == "llama.cpp" && r.model.eq_ignore_ascii_case(ModelRef::REFERENCE.name))
            .filter(|r| r.format.to_ascii_uppercase().starts_with("IQ1"))
            .map(|r| format!("{} +{:.0} % ({})", r.format, r.pct, r.source))
            .collect();
        let qat = self.published.iter().find(|r| r.method == "qat").map_or("", |r| r.source.as_str());
        Some(format!(
            "{name} ({bits:.2} bits per weight{}) on a model not trained for it: post-training quantization below \
             ~2 bits is not usable ({}: {}); ternary weights need a model trained ternary ({qat}), see trained_bits",
            if ternary { ", ternary" } else { "" },
            ModelRef::REFERENCE.name,
            evidence.join("; ")
        ))
    }

    /// Llama-3-8B's weights figure from `quant_quality.csv` (the reference lookup).
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

    /// The weights of `w` on `m`, from the published per-model rows (see the module).
    fn weights_for(&self, m: &ModelRef, w: &WeightQuant) -> Part {
        if !w.overrides.is_empty() {
            let plain = WeightQuant { overrides: Vec::new(), ..w.clone() };
            return self.with_overrides(m, w, &plain, self.weights_for(m, &plain));
        }
        let (name, method) = match w.mix {
            Mix::Stored => return self.by_error(m, w, "the file's own per-tensor types"),
            Mix::File(FileType::F16 | FileType::F32 | FileType::BF16)
            | Mix::Pure(QuantFormat::Ggml(GgmlType::F16 | GgmlType::F32 | GgmlType::BF16)) => {
                return Part::reference("unquantized reference");
            }
            Mix::File(ft) => (ft.name().to_string(), "llama.cpp"),
            Mix::Pure(f) => (f.to_string(), "rtn"),
        };
        let ternary = matches!(w.mix, Mix::File(FileType::TQ1_0 | FileType::TQ2_0))
            || matches!(w.mix, Mix::Pure(QuantFormat::Ggml(GgmlType::TQ1_0 | GgmlType::TQ2_0)));
        if ternary && m.trained_bits.is_some_and(|b| b <= 2.0) {
            let src = self.published.iter().find(|r| r.method == "qat").map(|r| r.source.as_str()).unwrap_or("");
            return Part {
                text: format!(
                    "trained ternary (trained_bits {}): {name} stores the trained weights exactly; a ternary-trained \
                     model against an FP16 one trained alike: {src}",
                    m.trained_bits.unwrap_or_default()
                ),
                ..Part::reference("")
            };
        }
        let all: Vec<&PubRow> = self
            .published
            .iter()
            .filter(|r| !r.kv && r.method == method && r.format.eq_ignore_ascii_case(&name))
            .collect();
        let same: Vec<&PubRow> = all.iter().copied().filter(|r| r.imatrix == w.imatrix).collect();
        let (rows, note) = if same.is_empty() {
            (all, if w.imatrix { " (measured without imatrix)" } else { " (measured with imatrix)" })
        } else {
            (same, "")
        };
        let family = family_of(m.name);
        if let Some(r) = rows.iter().find(|r| r.model.eq_ignore_ascii_case(m.name)) {
            return Part::published(r, &format!("{} {name}{note}", r.model), ArchEvidence::Included);
        }
        let arch = m.architecture();
        let s = &self.scaling;
        let scaled = |r: &PubRow, (lo, hi): (f64, f64)| {
            let pct = r.pct * s.factor(r.params_b, m.params_b);
            PctFigure { pct, lo: pct * lo, hi: pct * hi }
        };
        if let Some(r) = nearest(rows.iter().copied().filter(|r| Some(r.family.as_str()) == family), m.params_b) {
            let p = scaled(r, (s.lo, s.hi));
            return Part::of_pct(
                p,
                r.baseline,
                Provenance::Scaled { from: r.model.clone() },
                format!(
                    "{name}{note} scaled from {} ({:.1}B -> {:.1}B, x(params ratio)^{:.3}): {} ({})",
                    r.model,
                    r.params_b,
                    m.params_b,
                    s.slope,
                    fmt_pct(&p),
                    r.source
                ),
            );
        }
        // Another family: one of the model's architecture first (an MoE's figure from an MoE),
        // then the reference family, then any.
        let same_arch = (arch != Architecture::Dense)
            .then(|| nearest(rows.iter().copied().filter(|r| Architecture::of_family(&r.family) == arch), m.params_b))
            .flatten();
        let other = same_arch
            .or_else(|| nearest(rows.iter().copied().filter(|r| r.family == REFERENCE_FAMILY), m.params_b))
            .or_else(|| nearest(rows.iter().copied(), m.params_b));
        if let Some(r) = other {
            let p = scaled(r, s.cross_family);
            let mut part = Part::of_pct(
                p,
                r.baseline,
                Provenance::Estimated,
                format!(
                    "{name}{note} estimated from {} (another family: {}, {}), scaled {:.1}B -> {:.1}B: {} ({})",
                    r.model,
                    r.family,
                    Architecture::of_family(&r.family).name(),
                    r.params_b,
                    m.params_b,
                    fmt_pct(&p),
                    r.source
                ),
            );
            part.arch_from(arch, Architecture::of_family(&r.family));
            return part;
        }
        if let Some(e) = self.estimated.iter().find(|e| e.format == name) {
            // The estimates are Llama-3-8B's; scaled to the model by size, and widened as
            // another family's figure when the model is not a Llama-3.
            let reference = self.reference_baseline();
            let f = s.factor(ModelRef::REFERENCE.params_b, m.params_b);
            let (wlo, whi) = if family == Some(REFERENCE_FAMILY) { (1.0, 1.0) } else { s.cross_family };
            let p = PctFigure {
                pct: e.dppl / reference * 100.0 * f,
                lo: e.lo / reference * 100.0 * f * wlo,
                hi: e.hi / reference * 100.0 * f * whi,
            };
            let mut part = Part::of_pct(
                p,
                reference,
                Provenance::Estimated,
                format!(
                    "{name} estimated from measured output error on Llama-3-8B, scaled to {:.1}B: {}: {}",
                    m.params_b,
                    fmt_pct(&p),
                    e.source
                ),
            );
            part.arch_from(arch, Architecture::Dense);
            return part;
        }
        Part::unknown(format!("{name}: no published or estimated figure"))
    }

    /// The error sums of `w` on the model's shapes, or why there are none.
    fn error_of(&self, m: &ModelRef, w: &WeightQuant) -> Result<quality_mix::ErrorSums, String> {
        let spec = m.spec.ok_or_else(|| format!("the shapes of {} are not known", m.name))?;
        quality_mix::error_sums(spec, w, |f| self.errors.get(f).ok_or_else(|| format!("{f} has no measured error")))?
            .ok_or_else(|| format!("{} has no quantizable matrix", m.name))
    }

    /// A mix no row describes, from its error by the per-tensor rule (Llama-3-8B's ΔPPL at
    /// that error, scaled to the model's size; the 80 % interval of the rule's leave-one-out
    /// residuals, widened as another family's figure when the model is not a Llama 3).
    fn by_error(&self, m: &ModelRef, w: &WeightQuant, what: &str) -> Part {
        let Some(rule) = &self.mix_rule else { return Part::unknown(format!("{what}: no per-tensor rule loaded")) };
        let err = match self.error_of(m, w) {
            Ok(e) => e,
            Err(why) => return Part::unknown(format!("{what}: {why}")),
        };
        if err.err(1.0) == 0.0 {
            return Part::reference("unquantized reference");
        }
        let s = &self.scaling;
        let f = s.factor(ModelRef::REFERENCE.params_b, m.params_b);
        let (wlo, whi) = if family_of(m.name) == Some(REFERENCE_FAMILY) { (1.0, 1.0) } else { s.cross_family };
        let pct = rule.pct_at(&err) * f;
        let p = PctFigure { pct, lo: pct * rule.fit.0 * wlo, hi: pct * rule.fit.1 * whi };
        let mut part = Part::of_pct(
            p,
            self.reference_baseline(),
            Provenance::Estimated,
            format!(
                "{what} estimated from their output error {:.4} (sensitive tensors x{}; ln dPPL% = {:.3} + {:.3} ln err \
                 over {} llama.cpp mixes of Llama-3-8B), scaled to {:.1}B: {}",
                err.err(rule.s),
                rule.s,
                rule.a,
                rule.b,
                rule.n,
                m.params_b,
                fmt_pct(&p)
            ),
        );
        part.arch_from(m.architecture(), Architecture::Dense);
        part
    }

    /// `w` (a mix with overrides) from the figure `base` of the same mix without them
    /// (`plain`): multiplied by `(err(w) / err(plain))^b`, its interval widened by the checked
    /// residuals of llama.cpp's S/M/L series ([`MixRule::pair`]).
    fn with_overrides(&self, m: &ModelRef, w: &WeightQuant, plain: &WeightQuant, base: Part) -> Part {
        let what = format!("overrides ({})", w.overrides.iter().map(|o| o.to_string()).collect::<Vec<_>>().join(", "));
        let Some(rule) = &self.mix_rule else { return Part::unknown(format!("{what}: no per-tensor rule loaded")) };
        let (e0, e1) = match (self.error_of(m, plain), self.error_of(m, w)) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(why), _) | (_, Err(why)) => return Part::unknown(format!("{what}: {why}")),
        };
        let Some(p) = base.pct.filter(|p| p.pct > 0.0 && e0.err(1.0) > 0.0) else {
            // Nothing to scale (an unquantized mix, or one without a figure): the rule's own
            // estimate of the whole mix.
            return self.by_error(m, w, &format!("the mix with {what}"));
        };
        let f = rule.factor(&e0, &e1);
        let q = PctFigure { pct: p.pct * f, lo: p.lo * f * rule.pair.0, hi: p.hi * f * rule.pair.1 };
        Part {
            pct: Some(q),
            abs: base.abs.map(|a| a * f),
            provenance: base.provenance.worst(Provenance::Estimated),
            arch: base.arch,
            text: format!(
                "{} | {what}: x{f:.3} (mix output error {:.4} -> {:.4} with sensitive tensors x{}, ^{:.3}; 80% x[{:.2}, \
                 {:.2}] from llama.cpp's S/M/L mixes, {}/{} held-out pairs inside): {}",
                base.text,
                e0.err(rule.s),
                e1.err(rule.s),
                rule.s,
                rule.b,
                rule.pair.0,
                rule.pair.1,
                rule.pair_coverage.0,
                rule.pair_coverage.1,
                fmt_pct(&q)
            ),
        }
    }

    /// Llama-3-8B's unquantized wikitext-2 perplexity, from its published rows.
    fn reference_baseline(&self) -> f64 {
        self.published
            .iter()
            .find(|r| r.model.eq_ignore_ascii_case(ModelRef::REFERENCE.name) && !r.kv)
            .map(|r| r.baseline)
            .unwrap_or(f64::NAN)
    }

    /// One half of the KV cache (`k`: the K cache, else the V cache) in format `t` on `m`.
    fn kv_half(&self, m: &ModelRef, k: bool, t: &str) -> Part {
        let half = if k { "K" } else { "V" };
        if is_unquantized(t) {
            return Part::reference(&format!("{half} {t} unquantized"));
        }
        let rows: Vec<&PubRow> = self
            .published
            .iter()
            .filter(|r| r.kv && if k { r.k_type == t && r.v_type == "f16" } else { r.v_type == t && r.k_type == "f16" })
            .collect();
        let family = family_of(m.name);
        if let Some(r) = rows.iter().find(|r| r.model.eq_ignore_ascii_case(m.name)) {
            return Part::published(r, &format!("{half} {t} on {}", r.model), ArchEvidence::NotApplicable);
        }
        let (lo, hi) = self.kv_spread;
        if let Some(r) = rows.iter().find(|r| Some(r.family.as_str()) == family) {
            let p = PctFigure { pct: r.pct, lo: r.pct * lo, hi: r.pct * hi };
            return Part {
                arch: ArchEvidence::NotApplicable,
                pct: Some(p),
                abs: Some(r.delta),
                provenance: Provenance::Scaled { from: r.model.clone() },
                text: format!("{half} {t} as on {} (same family): {} ({})", r.model, fmt_pct(&p), r.source),
            };
        }
        if !rows.is_empty() {
            let gm = (rows.iter().map(|r| r.pct.ln()).sum::<f64>() / rows.len() as f64).exp();
            let p = PctFigure {
                pct: gm,
                lo: (gm * lo).min(rows.iter().map(|r| r.pct).fold(f64::INFINITY, f64::min)),
                hi: (gm * hi).max(rows.iter().map(|r| r.pct).fold(0.0, f64::max)),
            };
            let models: Vec<String> =
                rows.iter().map(|r| format!("{} {}", r.model, fmt_pct(&PctFigure::exact(r.pct)))).collect();
            let sources: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.source.as_str()).collect();
            return Part::of_pct(
                p,
                self.reference_baseline(),
                Provenance::Estimated,
                format!(
                    "{half} {t} estimated as the geometric mean over {} ({}): {} ({})",
                    if rows.len() == 1 {
                        "the one published model".to_string()
                    } else {
                        format!("{} published models", rows.len())
                    },
                    models.join(", "),
                    fmt_pct(&p),
                    sources.into_iter().collect::<Vec<_>>().join("; ")
                ),
            );
        }
        if !k {
            // No V row of this type anywhere: bounded by the K figure of the same type.
            let kp = self.kv_half(m, true, t);
            if let Some(p) = kp.pct {
                let p = PctFigure { pct: p.pct, lo: 0.0, hi: p.hi };
                return Part {
                    arch: ArchEvidence::NotApplicable,
                    abs: kp.abs,
                    pct: Some(p),
                    provenance: Provenance::Estimated,
                    text: format!(
                        "V {t} has no published V-only figure; bounded by the K figure of the same type (V was the less \
                         sensitive half where both were measured, llama.cpp PR #7412): {}",
                        fmt_pct(&p)
                    ),
                };
            }
        }
        Part::unknown(format!("{half} {t}: no published figure"))
    }

    /// The KV cache `kv` on `m` ([`QualityTable::kv_pair`]), a quantized cache's figure
    /// saying the context it holds for.
    fn kv_for(&self, m: &ModelRef, kv: &KvQuant) -> Part {
        let mut p = self.kv_pair(m, kv);
        if p.pct.is_some() && p.text != "unquantized KV reference" {
            p.text.push_str(KV_CONTEXT_CAVEAT);
        }
        p
    }

    /// The KV cache `kv` on `m`: a pair published together, else K and V added.
    fn kv_pair(&self, m: &ModelRef, kv: &KvQuant) -> Part {
        let norm = |f: QuantFormat| {
            let s = f.to_string().to_ascii_lowercase();
            if is_unquantized(&s) { "f16".to_string() } else { s }
        };
        let (k, v) = (norm(kv.k), norm(kv.v));
        if k == "f16" && v == "f16" {
            return Part::reference("unquantized KV reference");
        }
        if let Some(r) = self
            .published
            .iter()
            .find(|r| r.kv && r.k_type == k && r.v_type == v && r.model.eq_ignore_ascii_case(m.name))
        {
            return Part::published(r, &format!("K/V {k}/{v} on {}", r.model), ArchEvidence::NotApplicable);
        }
        let family = family_of(m.name);
        if let Some(r) =
            self.published.iter().find(|r| r.kv && r.k_type == k && r.v_type == v && Some(r.family.as_str()) == family)
        {
            let (lo, hi) = self.kv_spread;
            let p = PctFigure { pct: r.pct, lo: r.pct * lo, hi: r.pct * hi };
            return Part {
                arch: ArchEvidence::NotApplicable,
                pct: Some(p),
                abs: Some(r.delta),
                provenance: Provenance::Scaled { from: r.model.clone() },
                text: format!("K/V {k}/{v} as on {} (same family): {} ({})", r.model, fmt_pct(&p), r.source),
            };
        }
        let (a, b) = (self.kv_half(m, true, &k), self.kv_half(m, false, &v));
        let text = [&a, &b]
            .iter()
            .filter(|p| !(p.pct == Some(PctFigure::exact(0.0)) && p.provenance == Provenance::Published))
            .map(|p| p.text.clone())
            .collect::<Vec<_>>()
            .join("; ");
        Part {
            arch: ArchEvidence::NotApplicable,
            pct: a.pct.zip(b.pct).map(|(x, y)| x.add(y)),
            abs: a.abs.zip(b.abs).map(|(x, y)| x + y),
            provenance: a.provenance.worst(b.provenance),
            text,
        }
    }

    fn assemble(w: Part, kv: Part, unusable: Option<String>) -> Quality {
        let source = match (&w.pct, &kv.pct) {
            (None, None) => "unknown".to_string(),
            // One half known: the other says why it is not.
            _ => [("weights", &w), ("kv", &kv)]
                .into_iter()
                .filter(|(_, p)| p.pct.is_some() || !p.text.is_empty())
                .map(|(half, p)| {
                    if p.pct.is_some() {
                        format!("{half}: {}", p.text)
                    } else {
                        format!("{half}: unknown ({})", p.text)
                    }
                })
                .collect::<Vec<_>>()
                .join(" | "),
        };
        Quality {
            ppl_delta_weights: w.abs,
            ppl_delta_kv: kv.abs,
            source,
            weights_pct: w.pct,
            weights_provenance: w.provenance,
            kv_pct: kv.pct,
            kv_provenance: kv.provenance,
            weights_architecture: w.arch,
            model_mmlu: None,
            ptq_unusable: unusable,
        }
    }

    /// Look up the quality cost of a weight mix and KV formats on Llama-3-8B, the reference
    /// (the weights from llama.cpp's Llama-3-8B tables, as `memwall quality` fits them).
    pub fn lookup(&self, w: &WeightQuant, kv: &KvQuant) -> Quality {
        let m = ModelRef::REFERENCE;
        let reference = self.reference_baseline();
        let wp = match self.weights(w) {
            Some((d, text)) => {
                let pct = d / reference * 100.0;
                let published = matches!(w.mix, Mix::File(_)) || d == 0.0;
                let (lo, hi) = self
                    .estimated
                    .iter()
                    .find(|e| {
                        !published && Mix::Pure(e.format.parse().unwrap_or(QuantFormat::Ggml(GgmlType::F16))) == w.mix
                    })
                    .map_or((pct, pct), |e| (e.lo / reference * 100.0, e.hi / reference * 100.0));
                Part {
                    arch: ArchEvidence::Included,
                    pct: Some(PctFigure { pct, lo, hi }),
                    abs: Some(d),
                    provenance: if published { Provenance::Published } else { Provenance::Estimated },
                    text,
                }
            }
            None => Part::unknown(""),
        };
        let unusable = self.ptq_unusable(w);
        Self::assemble(wp, self.kv_for(&m, kv), unusable)
    }

    /// Look up the quality cost of a weight mix and KV formats on model `m` (see the module for
    /// the order: published, scaled from another size, estimated, unknown).
    pub fn lookup_model(&self, m: &ModelRef, w: &WeightQuant, kv: &KvQuant) -> Quality {
        let unusable = if m.trained_bits.is_some_and(|b| b <= 2.0) { None } else { self.ptq_unusable(w) };
        let mut q = Self::assemble(self.weights_for(m, w), self.kv_for(m, kv), unusable);
        q.model_mmlu = crate::benchmarks::score(m.name, "mmlu").cloned();
        q
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
        let q = t.lookup(&WeightQuant::new("int5-g256".parse().unwrap()), &KvQuant::both("int4-g32".parse().unwrap()));
        assert_eq!(q.ppl_delta_weights, None);
        assert_eq!(q.ppl_delta_kv, None);
        assert_eq!((q.weights_provenance, q.kv_provenance), (Provenance::Unknown, Provenance::Unknown));
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

    fn model(name: &str, params_b: f64) -> ModelRef<'_> {
        ModelRef { name, params_b, trained_bits: None, spec: None }
    }

    fn q(t: &QualityTable, m: &ModelRef, w: &str, k: &str, v: &str) -> Quality {
        t.lookup_model(
            m,
            &WeightQuant::new(w.parse().unwrap()),
            &KvQuant { k: k.parse().unwrap(), v: v.parse().unwrap() },
        )
    }

    #[test]
    fn a_published_row_of_the_model_is_used_as_it_is() {
        let t = QualityTable::default();
        // Llama 2 70B scorechart: Q4_K_M 3.4725 against f16 3.4313.
        let r = q(&t, &model("llama-2-70b", 69.0), "Q4_K_M", "f16", "f16");
        assert_eq!(r.weights_provenance, Provenance::Published);
        assert!((r.ppl_delta_weights.unwrap() - 0.0412).abs() < 1e-9);
        let w = r.weights_pct.unwrap();
        assert!((w.pct - 1.2007).abs() < 1e-4 && w.lo == w.hi, "{w:?}");
        assert_eq!(r.ppl_increase_pct(), Some(w.pct));
        assert!(r.source.contains("70B Scorechart"), "{}", r.source);
    }

    #[test]
    fn another_size_of_the_family_is_scaled_with_the_checked_interval() {
        let t = QualityTable::default();
        let s = t.size_scaling();
        // Larger models lose less, mildly.
        assert!(s.slope < 0.0 && s.slope > -0.5, "{s:?}");
        // Llama-2 13B has no Q4_K_M row: Llama-2-7B's +1.424 % (the nearer size) scaled.
        let r = q(&t, &model("llama-2-13b", 13.0), "Q4_K_M", "f16", "f16");
        assert_eq!(r.weights_provenance, Provenance::Scaled { from: "Llama-2-7B".into() });
        let w = r.weights_pct.unwrap();
        let want = 1.424 * (13.0f64 / 7.0).powf(s.slope);
        assert!((w.pct - want).abs() < 1e-9, "{w:?} vs {want}");
        assert!((w.lo - want * s.lo).abs() < 1e-9 && (w.hi - want * s.hi).abs() < 1e-9);
        assert!(w.lo < w.pct && w.pct < w.hi);
        assert!(r.source.contains("scaled from Llama-2-7B"), "{}", r.source);
    }

    #[test]
    fn the_size_rule_covers_80_percent_of_held_out_models() {
        let s = QualityTable::default().size_scaling().clone();
        let (hit, n) = s.coverage;
        println!(
            "size rule: slope {:.3}, 80% factors [{:.3}, {:.3}] at tails {}, leave-one-model-out coverage {hit}/{n}; \
             another family [{:.3}, {:.3}]",
            s.slope, s.lo, s.hi, s.tail, s.cross_family.0, s.cross_family.1
        );
        assert!(n >= 30, "{n} held-out rows");
        assert!(hit * 5 >= n * 4, "coverage {hit}/{n} below 80 %");
        assert!(s.lo < 1.0 && s.hi > 1.0);
        assert!(s.cross_family.0 <= s.lo && s.cross_family.1 >= s.hi);
    }

    #[test]
    fn a_family_without_rows_takes_llama_3_as_an_estimate() {
        let t = QualityTable::default();
        let s = t.size_scaling();
        let r = q(&t, &model("qwen3-8b", 8.2), "Q4_K_M", "f16", "f16");
        assert_eq!(r.weights_provenance, Provenance::Estimated);
        let w = r.weights_pct.unwrap();
        // The scoreboard's Q4_K_M without imatrix: 0.175482 over 6.233160.
        let want = 0.175482 / 6.233160 * 100.0 * (8.2f64 / 8.0).powf(s.slope);
        assert!((w.pct - want).abs() < 1e-3, "{w:?} vs {want}");
        assert!((w.lo - w.pct * s.cross_family.0).abs() < 1e-9 && (w.hi - w.pct * s.cross_family.1).abs() < 1e-9);
        assert!(r.source.contains("another family"), "{}", r.source);
        // A format no row or estimate covers stays unknown.
        let u = q(&t, &model("qwen3-8b", 8.2), "int5-g256", "f16", "f16");
        assert_eq!((u.weights_pct, &u.weights_provenance), (None, &Provenance::Unknown));
        assert_eq!(u.ppl_increase_pct(), None);
    }

    #[test]
    fn q4_0_kv_has_a_figure_k_and_v_apart() {
        let t = QualityTable::default();
        // Published K-only row (PR #6183): Llama-2-7B, K q4_0 5.9790 against 5.8671.
        let r = q(&t, &model("llama-2-7b", 6.7), "F16", "q4_0", "f16");
        assert_eq!(r.kv_provenance, Provenance::Published);
        assert!((r.kv_pct.unwrap().pct - (5.9790 - 5.8671) / 5.8671 * 100.0).abs() < 1e-3);
        // Llama-3.1-8B: K q4_0 is the geometric mean of the two published models (Llama-2-7B,
        // Qwen3-30B-A3B); V q4_0 has no V row anywhere, so it is bounded by the K figure.
        let r = q(&t, &model("llama-3.1-8b", 8.0), "Q4_K_M", "q4_0", "q4_0");
        assert_eq!(r.kv_provenance, Provenance::Estimated);
        let gm = (1.9072f64 * 11.3019).sqrt();
        let kv = r.kv_pct.unwrap();
        assert!((kv.pct - 2.0 * gm).abs() < 1e-2, "{kv:?} vs {}", 2.0 * gm);
        assert!(kv.lo <= 1.9072 + 1e-9 && kv.hi >= 11.3019, "{kv:?}");
        assert!(r.source.contains("no published V-only figure"), "{}", r.source);
        // A quantized cache's figure says it was measured at short context; f16 says nothing.
        assert!(r.source.contains("not published as a series"), "{}", r.source);
        assert!(!q(&t, &model("llama-3.1-8b", 8.0), "Q4_K_M", "f16", "f16").source.contains("series"));
        // A pair published together wins over K and V added (PR #7412, Llama-3-8B q8_0/q8_0).
        let p = q(&t, &model("Llama-3-8B", 8.0), "F16", "q8_0", "q8_0");
        assert_eq!(p.kv_provenance, Provenance::Published);
        assert!((p.ppl_delta_kv.unwrap() - (6.234369 - 6.232196)).abs() < 1e-9);
        // Every KV type llama.cpp offers has a figure on a preset model.
        for ty in ["q8_0", "q5_1", "q5_0", "q4_1", "iq4_nl", "q4_0"] {
            let r = q(&t, &model("gemma-3-4b", 4.3), "Q4_K_M", ty, ty);
            assert!(r.kv_pct.is_some(), "{ty}: {}", r.source);
        }
    }

    #[test]
    fn ternary_on_a_model_not_trained_for_it_is_flagged() {
        let t = QualityTable::default();
        let m = model("llama-3.2-1b", 1.2);
        let r = q(&t, &m, "TQ1_0", "f16", "f16");
        let why = r.ptq_unusable.as_deref().unwrap();
        assert!(why.contains("not usable") && why.contains("2402.17764"), "{why}");
        // The evidence is the reference's published 1-bit rows: IQ1_S +832 %, IQ1_M +309 %.
        assert!(why.contains("IQ1_S +832 %") && why.contains("IQ1_M +309 %"), "{why}");
        assert!(q(&t, &m, "IQ1_S", "f16", "f16").ptq_unusable.is_some());
        assert!(q(&t, &m, "Q4_K_M", "f16", "f16").ptq_unusable.is_none());
        // The model-free lookup flags it too.
        assert!(t.lookup(&WeightQuant::new("TQ2_0".parse().unwrap()), &KvQuant::default()).ptq_unusable.is_some());
        // A model trained ternary stores its weights exactly in a ternary format.
        let qat = ModelRef { trained_bits: Some(1.58), ..model("bitnet-b1.58-2b", 2.4) };
        let r = q(&t, &qat, "TQ1_0", "f16", "f16");
        assert_eq!(r.ptq_unusable, None);
        assert_eq!(r.weights_pct, Some(PctFigure::exact(0.0)));
        assert!(r.source.contains("trained ternary"), "{}", r.source);
    }

    #[test]
    fn overrides_move_the_mix_they_change_and_own_types_get_an_estimate() {
        use memwall_spec::{LayerSelector, Override};
        let t = QualityTable::default();
        let spec = crate::load_model("llama-3.1-8b").unwrap();
        let m = ModelRef::of(&spec);
        let ovr = |mix: &str, tensors: &[&str], f: &str| WeightQuant {
            mix: mix.parse().unwrap(),
            imatrix: false,
            overrides: vec![Override {
                tensors: tensors.iter().map(|s| s.to_string()).collect(),
                layers: LayerSelector("all".into()),
                format: f.parse().unwrap(),
            }],
        };
        let pct = |w: &WeightQuant| t.lookup_model(&m, w, &KvQuant::default());
        let plain = pct(&WeightQuant::new("Q4_K_S".parse().unwrap()));
        // Keeping attn_v and ffn_down at Q6_K in every layer: better than Q4_K_S, and better
        // than Q4_K_M, which keeps them at Q6_K in about half the layers.
        let kept = pct(&ovr("Q4_K_S", &["attn_v", "ffn_down"], "q6_K"));
        let m4 = pct(&WeightQuant::new("Q4_K_M".parse().unwrap()));
        let (p, k) = (plain.weights_pct.unwrap(), kept.weights_pct.unwrap());
        assert!(k.pct < m4.weights_pct.unwrap().pct && k.pct < p.pct, "{k:?} {p:?}");
        assert!(k.lo < k.pct && k.pct < k.hi);
        assert_eq!(
            kept.weights_provenance,
            Provenance::Scaled { from: "Llama-3-8B".into() }.worst(Provenance::Estimated)
        );
        // The output matrix at Q4_K instead of Q6_K costs quality.
        let low = pct(&ovr("Q4_K_M", &["output"], "q4_K"));
        assert!(low.weights_pct.unwrap().pct > m4.weights_pct.unwrap().pct);
        // An unquantized mix with its FFN quantized: no figure to scale, so the rule's own
        // estimate from the error, with the checked band.
        let ffn = pct(&ovr("F16", &["ffn_*"], "q4_K"));
        let f = ffn.weights_pct.unwrap();
        let r = t.mix_rule().unwrap();
        assert_eq!(ffn.weights_provenance, Provenance::Estimated);
        assert!(f.pct > 0.5 && f.pct < p.pct, "{f:?}");
        assert!((f.lo / f.pct - r.fit.0).abs() < 1e-9 && (f.hi / f.pct - r.fit.1).abs() < 1e-9);
        // Without the model's shapes an override has no figure, and says why.
        let bare =
            t.lookup_model(&model("llama-3.1-8b", 8.0), &ovr("Q4_K_S", &["output"], "q8_0"), &KvQuant::default());
        assert_eq!(bare.weights_pct, None);
        assert!(bare.source.contains("weights: unknown (overrides (output=q8_0): the shapes of"), "{}", bare.source);
    }

    #[test]
    fn architecture_effects_come_from_rows_of_the_same_architecture_or_are_unknown() {
        let t = QualityTable::default();
        let look = |preset: &str, w: &str, imatrix: bool| {
            let spec = crate::load_model(preset).unwrap();
            let w = WeightQuant { imatrix, ..WeightQuant::new(w.parse().unwrap()) };
            (Architecture::of(&spec), t.lookup_model(&ModelRef::of(&spec), &w, &KvQuant::default()))
        };
        // Mixtral's own row (llama.cpp Q4_0, Dec 2023: 4.2232 against Q8_0's 4.1049).
        let (arch, q) = look("mixtral-8x7b", "Q4_0", false);
        assert_eq!((arch, &q.weights_provenance), (Architecture::Moe, &Provenance::Published));
        assert!((q.weights_pct.unwrap().pct - 2.8819).abs() < 1e-9);
        assert_eq!(q.weights_architecture, ArchEvidence::Included);
        // Another MoE takes the MoE's row, scaled by size with the cross-family band.
        let (arch, q) = look("qwen3-30b-a3b", "Q4_0", false);
        assert_eq!(arch, Architecture::Moe);
        assert_eq!(q.weights_architecture, ArchEvidence::Included);
        assert!(q.source.contains("Mixtral-8x7B (another family: mixtral, moe)"), "{}", q.source);
        let s = t.size_scaling();
        let spec = crate::load_model("qwen3-30b-a3b").unwrap();
        let want = 2.8819 * (spec.params().total as f64 / 1e9 / 46.7).powf(s.slope);
        assert!((q.weights_pct.unwrap().pct - want).abs() < 1e-6, "{:?} vs {want}", q.weights_pct);
        // No MoE row of Q4_K_M without imatrix: a dense model's figure, the effect unknown.
        let (_, q) = look("qwen3-30b-a3b", "Q4_K_M", false);
        assert_eq!(q.weights_architecture, ArchEvidence::Unknown);
        assert!(q.source.contains("routed experts"), "{}", q.source);
        // Recurrent layers: no weight-only row of such a model anywhere.
        let (arch, q) = look("falcon-mamba-7b", "Q4_K_M", false);
        assert_eq!((arch, q.weights_architecture), (Architecture::Recurrent, ArchEvidence::Unknown));
        assert!(q.source.contains("state-space") && q.weights_pct.is_some(), "{}", q.source);
        // One KV head: Falcon-7B's llama.cpp rows speak for Gemma 3 1B at Q4_0 and Q5_0 ...
        let (arch, q) = look("gemma-3-1b", "Q5_0", false);
        assert_eq!((arch, q.weights_architecture), (Architecture::Mqa, ArchEvidence::Included));
        assert!(q.source.contains("Falcon-7B"), "{}", q.source);
        // ... and not at Q4_K_M. A dense model's figure is always included.
        assert_eq!(look("gemma-3-1b", "Q4_K_M", false).1.weights_architecture, ArchEvidence::Unknown);
        assert_eq!(look("llama-3.2-1b", "Q4_K_M", false).1.weights_architecture, ArchEvidence::Included);
        // Weight-and-activation rows never answer a weights lookup, nor enter the size rule.
        assert!(t.published.iter().any(|r| r.method.starts_with("w8a8")));
        assert!(!look("llama-2-7b", "int8-pc", false).1.source.contains("SmoothQuant"));
    }

    #[test]
    fn families_are_read_from_model_names() {
        assert_eq!(family_of("llama-3.1-8b"), Some("llama-3"));
        assert_eq!(family_of("meta-llama/Llama-2-7b-hf"), Some("llama-2"));
        assert_eq!(family_of("huggyllama/llama-65b"), Some("llama-1"));
        assert_eq!(family_of("qwen3-4b"), Some("qwen3"));
        assert_eq!(family_of("llama-4-scout"), None);
        assert_eq!(family_of("gemma-3-4b"), None);
        assert_eq!(family_of("mixtral-8x7b"), Some("mixtral"));
        assert_eq!(family_of("falcon-mamba-7b"), None);
    }

    #[test]
    fn a_bad_cell_is_refused_naming_column_and_value() {
        let head = BY_MODEL_COLUMNS;
        let bad = format!("{head}\nweights,M,f,seven,Q4_0,,,llama.cpp,no,ppl,512,5,5.1,0.1,2,setup,src\n");
        let e = parse_by_model(&bad).unwrap_err();
        assert!(e.contains("params_b") && e.contains("seven") && e.contains("row 2"), "{e}");
        let bad = format!("{head}\nweights,M,f,7,Q4_0,,,llama.cpp,maybe,ppl,512,5,5.1,0.1,2,setup,src\n");
        assert!(parse_by_model(&bad).unwrap_err().contains("imatrix = \"maybe\""));
        let ok = format!("{head}\nweights,M,f,7,Q4_0,,,llama.cpp,no,ppl,512,,5.1,,2,setup,src\n");
        let r = parse_by_model(&ok).unwrap();
        // The baseline from the value and the published ratio.
        assert!((r[0].baseline - 5.1 / 1.02).abs() < 1e-12 && (r[0].delta - (5.1 - 5.1 / 1.02)).abs() < 1e-12);
    }
}
