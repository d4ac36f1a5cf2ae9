//! `--json`: one JSON document on stdout per command, in the versioned schema README.md
//! documents ("Machine-readable output"): `{"schema": "memwall.<command>", "version": N,
//! "design": {...}, ...}`. A field is added within a version; renaming or removing one, or
//! changing its meaning, raises the version.

use memwall_spec::Scenario;
use serde_json::Value;

/// The schema version of every `--json` document. 2: `footprint`'s `weights_bytes` and
/// `weights_on_flash_bytes` are `weight_bytes` and `on_flash_bytes`, as in the sweep columns and
/// the Python API (one report serves all), and it adds `padded_tensors`.
pub const VERSION: u32 = 2;

/// The design a document describes ([`memwall_lab::report::Design`]).
pub fn design(s: &Scenario) -> Value {
    value(&memwall_lab::report::Design::of(s))
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
