"""memwall's Parquet files as pyarrow and polars readers see them: the metadata (version,
commit, experiment, seed, resolved specs) is on the Arrow schema, and `run` and `simulate`
files name and type their input columns alike.
"""

import pathlib
import subprocess
import tomllib

import pyarrow.parquet as pq
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

EXPERIMENT = """
name = "py"
seed = 11
[base]
model = "llama-3.2-1b"
device = "snapdragon-8-gen3-16gb"
weights = { mix = "Q4_K_M" }
[base.sim]
duration_s = 20
[base.sim.session]
turns = [{ prompt_tokens = 64, gen_tokens = 64 }]
repeat = 0
[grid]
"weights.mix" = ["Q8_0", "Q4_K_M"]
"workload.context_tokens" = [2048, 200000]
"""


@pytest.fixture(scope="session")
def files(tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    exp = out / "py.toml"
    exp.write_text(EXPERIMENT)

    def memwall(*args):
        subprocess.run(["cargo", "run", "-q", "--manifest-path", str(ROOT / "Cargo.toml"), "-p", "memwall-cli", "--",
                        *args], cwd=out, check=True)

    memwall("run", str(exp), "--out", str(out / "run.parquet"))
    memwall("simulate", str(exp), "--summary", str(out / "sim.parquet"), "--trace", str(out / "trace.parquet"))
    return out


@pytest.mark.parametrize("name", ["run", "sim", "trace"])
def test_metadata_is_on_the_arrow_schema(files, name):
    meta = pq.read_table(files / f"{name}.parquet").schema.metadata
    assert meta is not None, "no schema metadata"
    get = lambda k: meta[k.encode()].decode()
    assert get("seed") == "11"
    assert get("experiment_name") == "py"
    assert "llama-3.2-1b" in get("experiment_toml")
    assert get("memwall_version")
    resolved = tomllib.loads(get("resolved"))
    assert [m["name"] for m in resolved["model"]] == ["llama-3.2-1b"]
    assert {w["mix"] for w in resolved["weights"]} == {"Q8_0", "Q4_K_M"}
    assert resolved["device"][0]["memory"]["ram_bytes"] > 0


def test_run_and_simulate_share_input_columns(files):
    run = pq.read_table(files / "run.parquet")
    sim = pq.read_table(files / "sim.parquet")
    for f in run.schema:
        if f.name == "point" or f.name.startswith(("workload.", "kv.", "weights.")) or f.name in ("model", "device"):
            assert sim.schema.field(f.name).type == f.type, f.name
    assert run.schema.field("workload.context_tokens").type == "uint64"
    assert run.column("context_beyond_max").to_pylist() == [False, True, False, True]
    assert sim.column("sim.seed").to_pylist() == [11] * 4


def test_polars_reads_the_sweep(files):
    pl = pytest.importorskip("polars")
    df = pl.read_parquet(files / "run.parquet")
    assert df.height == 4 and "decode_tok_s" in df.columns
