//! Where in the user's file an error points: the line of a dotted field path
//! (`base.sim.background[0].bytes`, `grid."weights.mix"[2]`), found in the spans of the
//! original text, so that every error about a file names the line the user wrote.

use memwall_catalog::locate::{line_of, line_of_field};

use crate::error::LabError;

/// The innermost field an error names.
fn field_of(e: &LabError) -> Option<&str> {
    match e {
        LabError::Spec(s) => s.field(),
        LabError::Sim(memwall_sim::SimError::Spec(s)) => s.field(),
        LabError::Point { source, .. } => field_of(source),
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
pub fn at_line(e: LabError, text: &str, origin: &str, prefixes: &[&str]) -> LabError {
    let Some(field) = field_of(&e) else { return e };
    let from_grid = if matches!(e, LabError::Point { .. }) { grid_axis_line(text, field) } else { None };
    let line =
        from_grid.or_else(|| prefixes.iter().chain([&""]).find_map(|p| line_of_field(text, &format!("{p}{field}"))));
    match line {
        Some(line) => LabError::At { origin: origin.to_string(), line, error: Box::new(e) },
        None => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grid_point_error_points_at_the_axis_that_set_the_value() {
        let text = "name = \"x\"\n[base]\nmodel = \"m\"\n[grid]\n\"kv.k+kv.v\" = [\"f16\"]\n\"workload.routing_skew\" = [1.0, 101.0]\n";
        let point = |field: &str| LabError::Point {
            index: 1,
            params: String::new(),
            source: Box::new(LabError::Spec(memwall_spec::SpecError::invalid(field, 101, "too big"))),
        };
        let line = |e: LabError| match at_line(e, text, "x.toml", &["base."]) {
            LabError::At { line, .. } => Some(line),
            _ => None,
        };
        assert_eq!(line(point("workload.routing_skew")), Some(6));
        assert_eq!(line(point("kv.v")), Some(5));
        // A field no axis sets: the base table that holds it.
        assert_eq!(line(point("workload.batch")), Some(2));
    }
}
