//! `--json`: one JSON document on stdout per command, in the versioned schema README.md
//! documents ("Machine-readable output"): `{"schema": "memwall.<command>", "version": N,
//! "design": {...}, ...}`. A field is added within a version; renaming or removing one, or
//! changing its meaning, raises the version.

use memwall_spec::Scenario;
use serde_json::{Value, json};

/// The schema version of every `--json` document.
pub const VERSION: u32 = 1;

/// The design a document describes: model, device, formats, workload, unit and engine.
pub fn design(s: &Scenario) -> Value {
    json!({
        "model": s.model.name,
        "device": s.device.name,
        "weights": s.weights.mix.to_string(),
        "kv_k": s.kv.k.to_string(),
        "kv_v": s.kv.v.to_string(),
        "context_tokens": s.workload.context_tokens,
        "kv_tokens": s.workload.kv_tokens(),
        "prompt_tokens": s.workload.prompt_tokens,
        "gen_tokens": s.workload.gen_tokens,
        "batch": s.workload.batch,
        "backend": s.workload.backend.name(),
        "engine": s.engine.name,
        "margin_bytes": s.workload.margin_bytes,
    })
}

/// A design's estimated quality cost: `ppl_delta_weights`, `ppl_delta_kv`, `source`.
pub fn quality(q: &memwall_io::Quality) -> Value {
    json!({"ppl_delta_weights": q.ppl_delta_weights, "ppl_delta_kv": q.ppl_delta_kv, "source": q.source})
}

/// Print a document: the schema name and version, then `fields` (an object) in order.
pub fn print(command: &str, fields: Value) {
    let mut doc = serde_json::Map::new();
    doc.insert("schema".into(), Value::from(format!("memwall.{command}")));
    doc.insert("version".into(), Value::from(VERSION));
    if let Value::Object(m) = fields {
        doc.extend(m);
    }
    println!("{}", serde_json::to_string_pretty(&Value::Object(doc)).expect("JSON values serialize"));
}

/// A serializable value as JSON (non-finite floats become null).
pub fn value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("memwall's result types serialize")
}
