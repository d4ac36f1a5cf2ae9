//! Where in the user's file an error points: the line of a dotted field path
//! (`base.sim.background[0].bytes`, `grid."weights.mix"[2]`), found in the spans of the
//! original text, so that every error about a file names the line the user wrote.

use toml::de::DeValue;

/// One step of a field path: a table key or an array index.
#[derive(Debug, PartialEq)]
pub enum Seg {
    /// A table key.
    Key(String),
    /// An array index.
    Index(usize),
}

/// Split `a.b[2]."c.d"` into `a`, `b`, `[2]`, `c.d`.
pub fn segments(path: &str) -> Vec<Seg> {
    let mut out = Vec::new();
    let mut chars = path.chars().peekable();
    let mut key = String::new();
    let flush = |key: &mut String, out: &mut Vec<Seg>| {
        if !key.is_empty() {
            out.push(Seg::Key(std::mem::take(key)));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '.' => flush(&mut key, &mut out),
            '"' => {
                for q in chars.by_ref() {
                    if q == '"' {
                        break;
                    }
                    key.push(q);
                }
            }
            '[' => {
                flush(&mut key, &mut out);
                let digits: String = chars.by_ref().take_while(|d| *d != ']').collect();
                match digits.parse() {
                    Ok(i) => out.push(Seg::Index(i)),
                    Err(_) => return out,
                }
            }
            c => key.push(c),
        }
    }
    flush(&mut key, &mut out);
    out
}

/// 1-based line of the deepest part of `path` present in the TOML `text`: the value itself
/// when it exists, else the nearest table or array that holds it. `None` when the text does
/// not parse or not even the first segment is there.
pub fn line_of(text: &str, path: &str) -> Option<usize> {
    let root = toml::de::DeTable::parse(text).ok()?;
    let mut span = None;
    let mut cur: Option<&DeValue> = None;
    for (i, seg) in segments(path).iter().enumerate() {
        let next = match (seg, cur) {
            (Seg::Key(k), None) if i == 0 => root.get_ref().get(k.as_str()),
            (Seg::Key(k), Some(v)) => v.get(k.as_str()),
            (Seg::Index(n), Some(v)) => v.get(*n),
            _ => None,
        };
        let Some(next) = next else { break };
        span = Some(next.span());
        cur = Some(next.get_ref());
    }
    span.map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1)
}

/// The line of `field` in `text` when the field's first key is present at the top of the
/// text (a hit on an unrelated table of the same name further down does not count).
pub fn line_of_field(text: &str, field: &str) -> Option<usize> {
    let Seg::Key(k) = segments(field).into_iter().next()? else { return None };
    toml::de::DeTable::parse(text).ok()?.get_ref().get(k.as_str())?;
    line_of(text, field)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "name = \"x\"\n[base]\nmodel = \"m\"\n[base.sim]\nduration_s = 60\n\
                        [[base.sim.background]]\ntype = \"alloc\"\nbytes = 0\n[grid]\n\
                        \"weights.mix\" = [\"Q4_K_M\",\n  \"Q8_0\",\n  \"Q9_9\"]\n";

    #[test]
    fn paths_split_on_dots_outside_quotes_and_on_indices() {
        assert_eq!(
            segments("grid.\"weights.mix\"[2]"),
            vec![Seg::Key("grid".into()), Seg::Key("weights.mix".into()), Seg::Index(2)]
        );
        assert_eq!(segments("sim.background[0].bytes").len(), 4);
    }

    #[test]
    fn a_field_is_found_on_the_line_the_user_wrote() {
        assert_eq!(line_of(TEXT, "base.sim.background[0].bytes"), Some(8));
        assert_eq!(line_of(TEXT, "grid.\"weights.mix\"[2]"), Some(12));
        assert_eq!(line_of(TEXT, "base.sim.duration_s"), Some(5));
        // Absent: the nearest table that would hold it.
        assert_eq!(line_of(TEXT, "base.sim.thermal.enabled"), Some(4));
        assert_eq!(line_of(TEXT, "nothing.here"), None);
    }
}
