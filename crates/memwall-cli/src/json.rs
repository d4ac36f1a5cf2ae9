//! `--json`: one JSON document on stdout per command, in the versioned schema README.md
//! documents ("Machine-readable output"): `{"schema": "memwall.<command>", "version": N,
//! "design": {...}, ...}` ([`memwall_lab::report::document`], which the web page's answers
//! share).

use serde_json::Value;

/// Print a document: the schema name and version, then `fields` (an object) in order
/// ([`memwall_lab::report::document`]).
pub fn print(command: &str, fields: Value) {
    let doc = memwall_lab::report::document(command, fields);
    println!("{}", serde_json::to_string_pretty(&doc).expect("JSON values serialize"));
}
