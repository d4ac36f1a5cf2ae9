//! Published benchmark scores of the preset models (`datasets/model_benchmarks.csv`): the
//! model-level quality a design starts from, before quantization costs it perplexity. Each
//! score is the model developer's own (a third party's is marked so in its source), for the
//! base or instruct checkpoint, as published.

use std::sync::OnceLock;

use crate::presets::MODEL_BENCHMARKS_CSV;

/// The columns of `datasets/model_benchmarks.csv`.
pub const BENCHMARK_COLUMNS: &str = "model,benchmark,shots,variant,score,source";

/// One published score.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Score {
    /// Preset name (`llama-3.1-8b`).
    pub model: String,
    /// Benchmark (`mmlu`, `gsm8k`, `mmlu_pro`, ...).
    pub benchmark: String,
    /// Examples in the prompt (None: the source does not say).
    pub shots: Option<u32>,
    /// `base` or `instruct`: the checkpoint scored.
    pub variant: String,
    /// Score, percent.
    pub score: f64,
    /// URL and table.
    pub source: String,
    /// How it was measured: `5-shot, base` (`shots not stated, instruct`).
    pub setup: String,
}

impl Score {
    /// `MMLU 66.7 (5-shot, base; <source>)`.
    pub fn describe(&self) -> String {
        format!("{} {} ({}; {})", self.benchmark.to_uppercase(), self.score, self.setup, self.source)
    }
}

/// Parse [`BENCHMARK_COLUMNS`]; a bad cell is refused naming its row, column and value.
pub fn parse(text: &str) -> Result<Vec<Score>, String> {
    let mut out = Vec::new();
    for (row, rec) in crate::tables::records("model_benchmarks.csv", text, BENCHMARK_COLUMNS)? {
        let bad = |col: &str, v: &str, want: &str| format!("model_benchmarks.csv row {row}: {col} = {v:?}: {want}");
        let shots = match rec[2].trim() {
            "" => None,
            s => Some(s.parse::<u32>().map_err(|_| bad("shots", s, "a whole number or empty"))?),
        };
        let variant = rec[3].trim();
        if !matches!(variant, "base" | "instruct") {
            return Err(bad("variant", variant, "base or instruct"));
        }
        let score = rec[4]
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|s| (0.0..=100.0).contains(s))
            .ok_or_else(|| bad("score", &rec[4], "a percentage from 0 to 100"))?;
        if rec[0].trim().is_empty() || rec[1].trim().is_empty() || rec[5].trim().is_empty() {
            return Err(bad("model/benchmark/source", "", "every row names its model, benchmark and source"));
        }
        let setup = format!("{}, {variant}", shots.map_or("shots not stated".to_string(), |s| format!("{s}-shot")));
        out.push(Score {
            setup,
            model: rec[0].trim().to_string(),
            benchmark: rec[1].trim().to_string(),
            shots,
            variant: variant.to_string(),
            score,
            source: rec[5].trim().to_string(),
        });
    }
    Ok(out)
}

/// The embedded scores.
pub fn scores() -> &'static [Score] {
    static SCORES: OnceLock<Vec<Score>> = OnceLock::new();
    SCORES.get_or_init(|| parse(MODEL_BENCHMARKS_CSV).expect("the embedded model_benchmarks.csv parses"))
}

/// The score of `model` (a preset name, case-insensitive) on `benchmark`: the base
/// checkpoint's where published, else the instruct one's.
pub fn score(model: &str, benchmark: &str) -> Option<&'static Score> {
    let of = |variant: &str| {
        scores()
            .iter()
            .find(|s| s.model.eq_ignore_ascii_case(model) && s.benchmark == benchmark && s.variant == variant)
    };
    of("base").or_else(|| of("instruct"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_names_a_preset_and_most_presets_have_mmlu() {
        let names: Vec<&str> = crate::presets::MODELS.iter().map(|(n, _)| *n).collect();
        for s in scores() {
            assert!(names.contains(&s.model.as_str()), "{} is not a preset", s.model);
        }
        let real: Vec<&&str> = names.iter().filter(|n| !n.starts_with("hypothetical")).collect();
        let with: Vec<&&str> = real.iter().copied().filter(|n| score(n, "mmlu").is_some()).collect();
        // Presets added for published speed rows (reasoning distills, hybrids released without a
        // base-model table) may have none; seven in ten do.
        assert!(with.len() * 10 >= real.len() * 7, "{} of {} presets have MMLU", with.len(), real.len());
        // Llama 3.1 8B: Meta's model card, base 66.7 (5-shot) before instruct 69.4.
        let s = score("llama-3.1-8b", "mmlu").unwrap();
        assert_eq!((s.score, s.variant.as_str(), s.shots), (66.7, "base", Some(5)));
        assert!(s.describe().starts_with("MMLU 66.7 (5-shot, base; "), "{}", s.describe());
        assert!(score("hypothetical-35b-dense", "mmlu").is_none());
    }

    #[test]
    fn a_bad_cell_is_refused_naming_column_and_value() {
        let head = BENCHMARK_COLUMNS;
        let e = parse(&format!("{head}\nm,mmlu,5,base,101,src\n")).unwrap_err();
        assert!(e.contains("row 2") && e.contains("score") && e.contains("101"), "{e}");
        let e = parse(&format!("{head}\nm,mmlu,five,base,50,src\n")).unwrap_err();
        assert!(e.contains("shots") && e.contains("five"), "{e}");
        let e = parse(&format!("{head}\nm,mmlu,5,chat,50,src\n")).unwrap_err();
        assert!(e.contains("variant") && e.contains("chat"), "{e}");
        assert!(parse("model,score\n").unwrap_err().contains("columns"));
        assert!(parse(&format!("{head}\nm,mmlu,5,base,NaN,src\n")).is_err());
    }
}
