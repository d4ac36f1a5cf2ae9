//! One design at a time: a kept design's row is the row a sweep gives for that design,
//! whatever was probed before it; a probe's error is a fresh build's; a design that names a
//! file, or whose bare name a file in the working directory now shadows, is not kept.

use arrow::array::{Array, AsArray};
use arrow::datatypes::{DataType, Float64Type, Int64Type, UInt32Type, UInt64Type};
use memwall_lab::columns::Cell;
use memwall_lab::{Designs, Experiment, Prepared, Sweep};

type Row = Vec<(String, Cell<'static>)>;

fn owned(cells: &[(&'static str, Cell<'_>)]) -> Row {
    cells
        .iter()
        .map(|(n, c)| {
            let c = match c {
                Cell::Str(s) => Cell::Str(std::borrow::Cow::Owned(s.to_string())),
                Cell::U64(v) => Cell::U64(*v),
                Cell::I64(v) => Cell::I64(*v),
                Cell::F64(v) => Cell::F64(*v),
                Cell::Bool(v) => Cell::Bool(*v),
                Cell::Null => Cell::Null,
            };
            (n.to_string(), c)
        })
        .collect()
}

/// Equal values, floats bit for bit.
fn same(a: &Cell, b: &Cell) -> bool {
    match (a, b) {
        (Cell::F64(x), Cell::F64(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

/// Row `i` of `col` as a cell.
fn cell_at(col: &dyn Array, i: usize) -> Cell<'static> {
    if col.is_null(i) {
        return Cell::Null;
    }
    match col.data_type() {
        DataType::UInt64 => Cell::U64(col.as_primitive::<UInt64Type>().value(i)),
        DataType::UInt32 => Cell::U64(col.as_primitive::<UInt32Type>().value(i).into()),
        DataType::Int64 => Cell::I64(col.as_primitive::<Int64Type>().value(i)),
        DataType::Float64 => Cell::F64(col.as_primitive::<Float64Type>().value(i)),
        DataType::Boolean => Cell::Bool(col.as_boolean().value(i)),
        DataType::Utf8 => Cell::Str(col.as_string::<i32>().value(i).to_string().into()),
        other => panic!("a row holds no {other}"),
    }
}

fn table(text: &str) -> toml::Table {
    text.parse().unwrap()
}

fn kept(designs: &mut Designs, design: &toml::Table) -> memwall_lab::Result<Row> {
    designs.row(design.clone(), &mut |cells| owned(cells))
}

fn fresh(design: &toml::Table) -> memwall_lab::Result<Row> {
    Prepared::new(Experiment::of_design("estimate", design.clone())?)?.row(None, &mut |cells| owned(cells))
}

fn assert_same(a: &Row, b: &Row, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    for ((na, ca), (nb, cb)) in a.iter().zip(b) {
        assert_eq!(na, nb, "{what}");
        assert!(same(ca, cb), "{what}: {na} = {ca:?} against {cb:?}");
    }
}

const GRID: &str = r#"
name = "probes"
[base]
model = "llama-3.2-3b"
device = "snapdragon-8-elite-12gb"
weights = { mix = "Q4_K_M" }
[grid]
"weights.mix" = ["Q8_0", "Q4_K_M", "IQ2_XS"]
"kv.k" = ["f16", "q8_0"]
"kv.v" = ["f16", "q4_0"]
"workload.context_tokens" = [2048, 65536]
"workload.backend" = ["cpu", "gpu"]
"workload.batch" = [1, 3]
"#;

/// Every point of a grid probed one at a time, in a scrambled order and between probes of
/// another model, through one set of kept designs: each row is the sweep's row of that point
/// (its `pareto` what a table of that row alone marks) and a fresh build's.
#[test]
fn a_kept_design_gives_the_sweeps_row_whatever_was_probed_before() {
    let exp = Experiment::parse(GRID, "probes.toml").unwrap();
    let all = Sweep::new(&exp).unwrap().table().unwrap();
    let rule = &exp.pareto;
    let mut designs = Designs::new();
    let n = exp.len();
    let other = table(
        "model = \"qwen3-30b-a3b\"\ndevice = \"snapdragon-8-elite-12gb\"\nweights = { mix = \"Q3_K_M\" }\n[workload]\ncontext_tokens = 4096\n",
    );
    for k in 0..n {
        let i = (k * 37) % n;
        let c = exp.choice(i);
        let value = |a: usize| exp.axes[a].values[c[a]].clone();
        let design = table(&format!(
            "model = \"llama-3.2-3b\"\ndevice = \"snapdragon-8-elite-12gb\"\nweights = {{ mix = {} }}\nkv = {{ k = {}, v = {} }}\n[workload]\ncontext_tokens = {}\nbackend = {}\nbatch = {}\n",
            value(0),
            value(1),
            value(2),
            value(3),
            value(4),
            value(5)
        ));
        let row = kept(&mut designs, &design).unwrap();
        assert_same(&row, &fresh(&design).unwrap(), &format!("point {i}"));
        let (_, alone, _) = memwall_lab::pareto::with_column(&all.schema(), vec![all.slice(i, 1)], rule).unwrap();
        for (name, cell) in &row {
            let col = alone[0].column_by_name(name).unwrap_or_else(|| panic!("the sweep has no {name}"));
            let want = if name == "point" { Cell::U64(0) } else { cell_at(col.as_ref(), 0) };
            assert!(same(cell, &want), "point {i}: {name} = {cell:?}, the sweep's {want:?}");
        }
        if k % 5 == 0 {
            assert_same(&kept(&mut designs, &other).unwrap(), &fresh(&other).unwrap(), "the other model");
        }
    }
    // One design per model and unit (the unit picks the default engine): the grid's model on
    // the CPU and on the GPU, and the other model.
    assert_eq!(designs.len(), 3);
}

/// A probe that fails fails as a fresh build of the design does, and the design is still kept
/// for the next probe.
#[test]
fn a_failing_probe_gives_the_fresh_builds_error() {
    let mut designs = Designs::new();
    let good = table("model = \"llama-3.2-1b\"\ndevice = \"pixel-8\"\nweights = { mix = \"Q4_K_M\" }\n");
    kept(&mut designs, &good).unwrap();
    for bad in [
        "model = \"llama-3.2-1b\"\ndevice = \"pixel-8\"\nweights = { mix = \"Q4_K_M\" }\n[workload]\ncontext_tokens = 0\n",
        "model = \"llama-3.2-1b\"\ndevice = \"pixel-8\"\nweights = { mix = \"Q9_X\" }\n",
        "model = \"llama-3.2-1b\"\ndevice = \"pixel-8\"\n",
        "model = \"llama-3.2-1b\"\ndevice = \"pixel-8\"\nweights = { mix = \"Q4_K_M\" }\nkv = { k = \"q9\" }\n",
        "model = \"llama-3.2-1b\"\ndevice = \"pixel-8\"\nweights = { mix = \"Q4_K_M\" }\n[workload]\nbatch = 0\n",
        "model = \"llama-3.2-1b\"\ndevice = \"pixel-8\"\nweights = { mix = \"Q4_K_M\" }\n[workload]\nno_such_field = 1\n",
    ] {
        let bad = table(bad);
        let e = kept(&mut designs, &bad).unwrap_err().to_string();
        assert_eq!(e, fresh(&bad).unwrap_err().to_string());
    }
    assert_eq!(designs.len(), 1);
    assert_same(&kept(&mut designs, &good).unwrap(), &fresh(&good).unwrap(), "after the errors");
}

/// Removes a file when dropped (a test that fails leaves no file behind).
struct Remove(std::path::PathBuf);

impl Drop for Remove {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A bare name is checked again on every use: once a file of a kept device's name appears in
/// the working directory, the probe fails as a fresh build does (a name that is both a preset
/// and a file is refused), and works again once the file is gone. A model read from a file is
/// never kept, so a changed file is read again.
#[test]
fn a_design_is_kept_only_while_its_names_mean_what_they_meant() {
    let mut designs = Designs::new();
    let design = table("model = \"qwen3-0.6b\"\ndevice = \"raspberry-pi-5-16gb\"\nweights = { mix = \"Q8_0\" }\n");
    let before = kept(&mut designs, &design).unwrap();
    assert_eq!(designs.len(), 1);
    {
        let shadow = Remove(std::path::PathBuf::from("raspberry-pi-5-16gb"));
        std::fs::write(&shadow.0, "name = \"a file\"\n").unwrap();
        let e = kept(&mut designs, &design).unwrap_err().to_string();
        assert!(e.contains("is both a device preset and a file"), "{e}");
        assert_eq!(e, fresh(&design).unwrap_err().to_string());
        assert_eq!(designs.len(), 0);
    }
    assert_same(&kept(&mut designs, &design).unwrap(), &before, "once the file is gone");

    let dir = std::env::temp_dir().join(format!("memwall-prepared-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("model.toml");
    let _cleanup = Remove(path.clone());
    let text = memwall_lab::presets::model_text("qwen3-0.6b").unwrap();
    let on_file = table(&format!(
        "model = {:?}\ndevice = \"raspberry-pi-5-16gb\"\nweights = {{ mix = \"Q8_0\" }}\n",
        path.display().to_string()
    ));
    let name = |row: &Row| row.iter().find(|(n, _)| n == "model").map(|(_, c)| c.clone()).unwrap();
    std::fs::write(&path, text).unwrap();
    let first = kept(&mut designs, &on_file).unwrap();
    assert_eq!(name(&first), Cell::Str("qwen3-0.6b".into()));
    assert_eq!(designs.len(), 1, "the design by path is not kept");
    let renamed = text.replacen("name = \"qwen3-0.6b\"", "name = \"edited\"", 1);
    assert_ne!(renamed, text, "the preset names itself");
    std::fs::write(&path, renamed).unwrap();
    assert_eq!(name(&kept(&mut designs, &on_file).unwrap()), Cell::Str("edited".into()));
}
