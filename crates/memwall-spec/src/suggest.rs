//! "Did you mean": the valid names closest to a name that is not one.
//!
//! Closeness is the edit distance (insertions, deletions, substitutions and swaps of two
//! neighbours, one each), case-insensitive, so `llama-3.2-1B` is 0 from `llama-3.2-1b` and
//! `Q4_KM` is 1 from `Q4_K_M`. A name is suggested when its distance is at most a third of
//! the longer name's length (at least 1, at most 4): close enough to be a typo, not a
//! different word. Everything that reports an unknown name (presets, formats, mixes, units,
//! fields of a file) goes through [`did_you_mean`], so every front end says the same thing.

/// Edit distance between `a` and `b`, ignoring ASCII case: the fewest insertions, deletions,
/// substitutions and swaps of two adjacent characters (optimal string alignment) that turn
/// one into the other. `O(|a|·|b|)` time.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().map(|c| c.to_ascii_lowercase()).collect();
    let b: Vec<char> = b.chars().map(|c| c.to_ascii_lowercase()).collect();
    // d[i][j]: distance between the first i characters of a and the first j of b.
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    d[0] = (0..=b.len()).collect();
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

/// The candidates within typo distance of `name` ([module docs](self)) that are closest to it
/// (all at the smallest distance, in the candidates' order), at most three.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut scored: Vec<(usize, usize, &str)> = candidates
        .into_iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let d = edit_distance(name, c);
            let limit = (name.chars().count().max(c.chars().count()) / 3).clamp(1, 4);
            (d <= limit && !c.is_empty()).then_some((d, i, c))
        })
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.2 == b.2);
    let best = scored.first().map_or(0, |s| s.0);
    scored.into_iter().filter(|s| s.0 == best).take(3).map(|(_, _, c)| c).collect()
}

/// `; did you mean `a` or `b`?` for the candidates closest to `name`, or an empty string.
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    let close = closest(name, candidates);
    match close.as_slice() {
        [] => String::new(),
        [one] => format!("; did you mean `{one}`?"),
        [init @ .., last] => format!(
            "; did you mean {} or `{last}`?",
            init.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// A parser's message about an unknown field or variant (serde's "unknown field `x`,
/// expected one of `a`, `b`" and "unknown variant `x`, expected `a` or `b`") with the closest
/// expected names added; any other message unchanged.
pub fn annotate(message: &str) -> String {
    for what in ["unknown field `", "unknown variant `"] {
        let Some(start) = message.find(what) else { continue };
        let rest = &message[start + what.len()..];
        let Some(end) = rest.find('`') else { continue };
        let name = &rest[..end];
        let tail = &rest[end + 1..];
        // The expected names: every backquoted word after "expected" on the same line.
        let Some(exp) = tail.find("expected") else { continue };
        let line_end = tail[exp..].find('\n').map_or(tail.len(), |n| exp + n);
        let expected: Vec<&str> = tail[exp..line_end].split('`').skip(1).step_by(2).collect();
        let hint = did_you_mean(name, expected.iter().copied());
        if hint.is_empty() {
            return message.to_string();
        }
        let at = start + what.len() + end + 1 + line_end;
        return format!("{}{}{}", &message[..at], hint, &message[at..]);
    }
    message.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_single_character_edits() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("Q4_K_M", "q4_k_m"), 0);
        assert_eq!(edit_distance("Q4_KM", "Q4_K_M"), 1);
        assert_eq!(edit_distance("phnoe", "phone"), 1);
    }

    #[test]
    fn close_names_are_suggested_and_far_ones_not() {
        let presets = ["llama-3.2-1b", "llama-3.2-3b", "llama-3.1-8b", "qwen3-30b-a3b"];
        assert_eq!(closest("llama-3.2-1", presets), vec!["llama-3.2-1b"]);
        assert_eq!(closest("llama-3.2-b", presets), vec!["llama-3.2-1b", "llama-3.2-3b"]);
        assert_eq!(did_you_mean("lama-3.1-8b", presets), "; did you mean `llama-3.1-8b`?");
        assert_eq!(did_you_mean("spaceship", presets), "");
        assert_eq!(did_you_mean("x", ["y", "xx"]), "; did you mean `y` or `xx`?");
    }

    #[test]
    fn parser_messages_get_the_closest_expected_name() {
        let m = "unknown field `n_layer`, expected one of `name`, `n_layers`, `hidden`\n";
        assert_eq!(
            annotate(m),
            "unknown field `n_layer`, expected one of `name`, `n_layers`, `hidden`; did you mean `n_layers`?\n"
        );
        let m = "unknown variant `phnoe`, expected one of `phone`, `laptop`";
        assert!(annotate(m).ends_with("; did you mean `phone`?"), "{}", annotate(m));
        assert_eq!(annotate("missing field `name`"), "missing field `name`");
    }
}
