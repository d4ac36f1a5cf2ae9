//! Errors about a field of a user's file name its full dotted path, with array indices, and
//! the line it is on in that file, never a line of an internal copy.

use memwall_lab::{Experiment, load_model};

fn load(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("exp.toml");
    std::fs::write(&path, text).unwrap();
    Experiment::load(&path).unwrap_err().to_string()
}

const HEAD: &str = "name = \"x\"\n[base]\nmodel = \"llama-3.2-1b\"\ndevice = \"raspberry-pi-5-8gb\"\n\
                    weights = { mix = \"Q4_K_M\" }\n[base.sim]\nduration_s = 60\n";

#[test]
fn a_wrong_type_inside_an_array_of_tables_names_path_index_and_line() {
    let e = load(&format!("{HEAD}[[base.sim.background]]\ntype = \"alloc\"\nat_s = 1\nbytes = \"lots\"\n"));
    assert!(e.contains("`sim.background[0]`"), "{e}");
    assert!(e.contains("invalid type: string \"lots\""), "{e}");
    assert!(e.contains("exp.toml, line 8"), "{e}");
    // No snippet of a re-serialized section.
    assert!(!e.contains("[[background]]") && !e.contains("TOML parse error"), "{e}");
}

#[test]
fn a_wrong_type_in_a_nested_table_names_its_path_and_line() {
    let e = load(&format!("{HEAD}[base.workload]\nprompt_tokens = 16\ncontext_tokens = -4\n"));
    assert!(e.contains("`workload.context_tokens`") && e.contains("integer `-4`"), "{e}");
    assert!(e.contains("line 10"), "{e}");
    assert!(!e.contains("\nin `"), "{e}");
}

#[test]
fn an_impossible_value_names_its_line() {
    let e = load(&format!("{HEAD}[[base.sim.background]]\ntype = \"alloc\"\nat_s = 1\nbytes = 0\n"));
    assert!(e.contains("invalid `sim.background[0].bytes` = 0"), "{e}");
    assert!(e.contains("exp.toml, line 11"), "{e}");
}

#[test]
fn a_model_file_error_names_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.toml");
    let text = memwall_lab::presets::model_text("llama-3.2-1b").unwrap();
    let line = text.lines().position(|l| l.starts_with("vocab")).unwrap() + 1;
    std::fs::write(&path, text.replace("vocab = 128256", "vocab = 99999999999")).unwrap();
    let e = load_model(path.to_str().unwrap()).unwrap_err().to_string();
    assert!(e.contains("invalid `model.vocab` = 99999999999"), "{e}");
    assert!(e.ends_with(&format!("m.toml, line {line})")), "{e}");
}
