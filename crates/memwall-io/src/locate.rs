//! Where in the user's file an error points: the line of a dotted field path
//! (`base.sim.background[0].bytes`, `grid."weights.mix"[2]`), found in the spans of the
//! original text, so that every error about a file names the line the user wrote.

use toml::de::DeValue;

use crate::error::IoError;

/// One step of a field path: a table key or an array index.
#[derive(Debug, PartialEq)]
enum Seg {
    Key(String),
    Index(usize),
}

/// Split `a.b[2]."c.d"` into `a`, `b`, `[2]`, `c.d`.
fn segments(path: &str) -> Vec<Seg> {
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

/// The innermost field an error names.
fn field_of(e: &IoError) -> Option<&str> {
    match e {
        IoError::Spec(s) => s.field(),
        IoError::Sim(memwall_sim::SimError::Spec(s)) => s.field(),
        IoError::Point { source, .. } => field_of(source),
        _ => None,
    }
}

/// Line of the `[grid]` axis that sets `field` (`"kv.k+kv.v"` sets `kv.v`), if any.
fn grid_axis_line(text: &str, field: &str) -> Option<usize> {
    let root = toml::de::DeTable::parse(text).ok()?;
    let grid = root.get_ref().get("grid")?.get_ref().as_table()?;
    let key = grid.keys().find(|k| k.get_ref().split('+').any(|p| p.trim() == field))?;
    line_of(text, &format!("grid.\"{}\"", key.get_ref()))
}

/// `e` with the line of the field it names in the user's file `text` (from `origin`): for a
/// grid point, the `[grid]` axis that sets the field; otherwise the field as written or under
/// each of `prefixes` (`base.` for scenario fields of an experiment).
pub fn at_line(e: IoError, text: &str, origin: &str, prefixes: &[&str]) -> IoError {
    let Some(field) = field_of(&e) else { return e };
    let from_grid = if matches!(e, IoError::Point { .. }) { grid_axis_line(text, field) } else { None };
    let line = from_grid.or_else(|| {
        prefixes.iter().chain([&""]).find_map(|p| {
            let path = format!("{p}{field}");
            // Only a hit on the field's own first segment counts, not an unrelated table.
            let first = segments(&path).into_iter().next()?;
            let Seg::Key(k) = first else { return None };
            toml::de::DeTable::parse(text).ok()?.get_ref().get(k.as_str())?;
            line_of(text, &path)
        })
    });
    match line {
        Some(line) => IoError::At { origin: origin.to_string(), line, error: Box::new(e) },
        None => e,
    }
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

    #[test]
    fn a_grid_point_error_points_at_the_axis_that_set_the_value() {
        let text = "name = \"x\"\n[base]\nmodel = \"m\"\n[grid]\n\"kv.k+kv.v\" = [\"f16\"]\n\"workload.routing_skew\" = [1.0, 101.0]\n";
        let point = |field: &str| IoError::Point {
            index: 1,
            params: String::new(),
            source: Box::new(IoError::Spec(memwall_spec::SpecError::invalid(field, 101, "too big"))),
        };
        let line = |e: IoError| match at_line(e, text, "x.toml", &["base."]) {
            IoError::At { line, .. } => Some(line),
            _ => None,
        };
        assert_eq!(line(point("workload.routing_skew")), Some(6));
        assert_eq!(line(point("kv.v")), Some(5));
        // A field no axis sets: the base table that holds it.
        assert_eq!(line(point("workload.batch")), Some(2));
    }
}
