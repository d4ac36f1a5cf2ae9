"""What a notebook user touches: variants with their own labels, objects wherever a name goes,
the presets as tables, and type hints a type checker can hold the API to (the `Estimate`
TypedDict is the sweep's columns, checked here against the Rust schema)."""

import subprocess
import sys
import typing

import pyarrow as pa
import pytest

import memwall



def test_variants_are_named_after_what_changed():
    base = memwall.Model("qwen3-4b")
    deeper = base.replace(n_layers=48)
    assert deeper.name == "qwen3-4b[n_layers=48]" and deeper.info["layers"] == 48
    assert deeper.replace(n_layers=48).name == deeper.name
    # A change to a table names its path; a change to nothing keeps the name.
    moe = memwall.Model("qwen3-30b-a3b", moe={"top_k": 4})
    assert moe.name == "qwen3-30b-a3b[moe.top_k=4]"
    assert memwall.Model("qwen3-4b", n_layers=base.info["layers"]).name == "qwen3-4b"
    # A name given with the change is the caller's.
    assert base.replace(n_layers=24, name="qwen3-4b-short").name == "qwen3-4b-short"
    small = memwall.Device("raspberry-pi-5-16gb", memory={"ram_bytes": 8 * 2**30})
    assert small.name.endswith("[memory.ram_bytes=8589934592]")


def test_objects_go_wherever_a_name_goes_and_variants_keep_apart():
    a, b = memwall.Model("qwen3-0.6b"), memwall.Model("qwen3-0.6b", n_layers=14)
    pi = memwall.Device("raspberry-pi-5-16gb")
    r = memwall.sweep(
        memwall.design(a, pi),
        grid={"model": [a, b], "device": [pi, pi.replace(memory={"ram_bytes": 4 * 2**30})]},
    )
    t = pa.table(r)
    names = list(zip(t.column("model").to_pylist(), t.column("device").to_pylist()))
    assert len(set(names)) == 4, names
    by_model = {m: tok for m, tok in zip(t.column("model").to_pylist(), t.column("decode_tok_s").to_pylist())}
    # Half the layers: about half the weight bytes a token reads, so faster.
    assert by_model["qwen3-0.6b[n_layers=14]"] > by_model["qwen3-0.6b"]
    with pytest.raises(memwall.MemwallError, match="cannot be a memwall value"):
        memwall.sweep(memwall.design(a, pi), grid={"model": [object()]})


def test_names_the_python_layer_checks_say_what_was_meant():
    with pytest.raises(memwall.SpecError, match="did you mean `analytic`"):
        memwall.sweep(memwall.design("qwen3-0.6b", "pixel-8"), method="analytc")
    with pytest.raises(memwall.SpecError, match="did you mean `Pixel 8`"):
        memwall.Device("pixl-8")
    with pytest.raises(memwall.SpecError, match="did you mean `context_tokens`"):
        memwall.estimate("qwen3-0.6b", "pixel-8", contxt_tokens=1024)


def test_presets_come_as_tables_with_their_figures(memwall_binary):
    m = memwall.models()
    row = {r["name"]: r for r in m.to_pylist()}["llama-3.2-1b"]
    assert (row["layers"], row["kv_heads"], row["head_dim"], row["layer_kinds"]) == (16, 8, 64, "16 full")
    moe = {r["name"]: r for r in m.to_pylist()}["qwen3-30b-a3b"]
    assert (moe["experts"], moe["experts_top_k"]) == (128, 8)
    e = memwall.engines()
    assert "llama.cpp" in e.column("name").to_pylist() and "version" in e.column_names
    d = memwall.device_presets()
    assert set(memwall.presets("devices")) == set(d.column("name").to_pylist())
    # The same facts as `memwall presets --json`.
    out = subprocess.run(
        [str(memwall_binary), "presets", "models", "--json"], capture_output=True, text=True, check=True
    ).stdout
    import json

    doc = json.loads(out)
    assert doc["schema"] == "memwall.presets" and len(doc["models"]) == m.num_rows


def test_the_estimate_type_is_the_sweeps_columns():
    row = memwall.sweep(memwall.design("qwen3-0.6b", "raspberry-pi-5-16gb")).to_pyarrow()
    hints = typing.get_type_hints(memwall.Estimate)
    required = memwall.Estimate.__required_keys__
    assert set(required) == set(row.column_names), set(required) ^ set(row.column_names)
    assert set(hints) - set(required) == {"at_depths"}
    kinds = {"int": pa.types.is_integer, "float": pa.types.is_floating, "bool": pa.types.is_boolean,
             "str": pa.types.is_string}
    for f in row.schema:
        hint = hints[f.name]
        optional = type(None) in typing.get_args(hint)
        base = next(a for a in typing.get_args(hint) if a is not type(None)) if optional else hint
        assert optional == f.nullable, f"{f.name}: nullable {f.nullable}, hint {hint}"
        assert kinds[base.__name__](f.type), f"{f.name}: {f.type} is not {base.__name__}"


def test_a_type_checker_holds_code_to_the_api(tmp_path):
    good = tmp_path / "good.py"
    good.write_text(
        "import memwall\n"
        "e = memwall.estimate('qwen3-0.6b', 'raspberry-pi-5-16gb')\n"
        "tok: float = e['decode_tok_s']\n"
        "fits: bool = e['fits']\n"
        "m: memwall.Model = memwall.Model('qwen3-4b').replace(n_layers=24)\n"
        "r: memwall.Results = memwall.sweep(memwall.design(m, 'pixel-8'))\n"
        "n: int = r.to_pyarrow().num_rows\n"
        "a: memwall.Answer = memwall.solve('max_context', m, 'pixel-8')\n"
    )
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import memwall\n"
        "e = memwall.estimate('qwen3-0.6b', 'raspberry-pi-5-16gb')\n"
        "name: int = e['model']\n"
        "x = e['no_such_column']\n"
        "d: memwall.Device = memwall.Model('qwen3-4b').replace(n_layers=2)\n"
    )
    args = [sys.executable, "-m", "mypy", "--ignore-missing-imports", "--no-incremental"]
    ok = subprocess.run([*args, str(good)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    no = subprocess.run([*args, str(bad)], capture_output=True, text=True)
    assert no.returncode == 1, no.stdout
    for line in ("bad.py:3", "bad.py:4", "bad.py:5"):
        assert line in no.stdout, no.stdout


def test_the_package_itself_type_checks(tmp_path):
    # As a package found on the path (`-p`): the installed one, wherever it lies.
    p = subprocess.run(
        [sys.executable, "-m", "mypy", "--ignore-missing-imports", "--no-incremental", "-p", "memwall"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stdout + p.stderr
