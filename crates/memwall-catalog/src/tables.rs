//! Reading the CSV tables memwall ships: the header checked against the columns the reader
//! expects, then each record with its row number (the header is row 1), errors naming the
//! table and row.

/// The records of `text` (the table `what`, for errors) after checking that its header is
/// exactly `columns` (comma-separated): (row number, record).
pub fn records(what: &str, text: &str, columns: &str) -> Result<Vec<(usize, csv::StringRecord)>, String> {
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let head = r.headers().map_err(|e| format!("{what}: {e}"))?.iter().collect::<Vec<_>>().join(",");
    if head != columns {
        return Err(format!("{what}: columns `{head}`, expected `{columns}`"));
    }
    r.records()
        .enumerate()
        .map(|(i, rec)| rec.map(|rec| (i + 2, rec)).map_err(|e| format!("{what} row {}: {e}", i + 2)))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn rows_are_numbered_from_the_header_and_a_wrong_header_is_named() {
        let r = super::records("t.csv", "a,b\n1,2\n3,4\n", "a,b").unwrap();
        assert_eq!(
            r.iter().map(|(n, rec)| (*n, rec[0].to_string())).collect::<Vec<_>>(),
            [(2, "1".into()), (3, "3".into())]
        );
        let e = super::records("t.csv", "a,c\n1,2\n", "a,b").unwrap_err();
        assert!(e.contains("t.csv") && e.contains("`a,c`") && e.contains("`a,b`"), "{e}");
        assert!(super::records("t.csv", "a,b\n1,2,3\n", "a,b").unwrap_err().contains("row 2"));
    }
}
