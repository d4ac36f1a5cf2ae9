//! Numbers and tables as the commands print them.

use memwall_spec::units::{GB, to_gb};

/// Bytes as GB with three decimals.
pub(crate) fn gb(bytes: u64) -> String {
    format!("{:.3}", to_gb(bytes))
}

/// Signed bytes as GB with a sign and three decimals.
pub(crate) fn signed_gb(bytes: i64) -> String {
    format!("{:+.3}", bytes as f64 / GB as f64)
}

/// Print a table with columns padded to their widest cell.
pub(crate) fn print_table(header: &[String], lines: &[Vec<String>]) {
    let widths: Vec<usize> = (0..header.len())
        .map(|c| lines.iter().map(|l| l[c].chars().count()).chain([header[c].chars().count()]).max().unwrap_or(0))
        .collect();
    let fmt_line = |l: &[String]| {
        l.iter().zip(&widths).map(|(v, w)| format!("{v:<w$}")).collect::<Vec<_>>().join("  ").trim_end().to_string()
    };
    println!("{}", fmt_line(header));
    for l in lines {
        println!("{}", fmt_line(l));
    }
}
