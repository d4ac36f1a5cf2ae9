//! Helpers shared by the top-level tests.

/// Read a CSV file of `datasets/` into rows of fields (quoted fields may hold commas). The
/// tests read the published data independently of memwall-lab's parser.
pub fn dataset_csv(name: &str) -> Vec<Vec<String>> {
    let path = format!("{}/datasets/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .map(|line| {
            let mut fields = Vec::new();
            let mut cur = String::new();
            let mut quoted = false;
            for ch in line.chars() {
                match (ch, quoted) {
                    ('"', _) => quoted = !quoted,
                    (',', false) => fields.push(std::mem::take(&mut cur)),
                    _ => cur.push(ch),
                }
            }
            fields.push(cur);
            fields
        })
        .collect()
}
