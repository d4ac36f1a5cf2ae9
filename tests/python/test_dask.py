"""A sweep split across the worker processes of a Dask cluster gives the local sweep's rows,
in order, returned as one table or written as a Parquet dataset; the package's type stubs
match its native module."""

import subprocess
import sys

import pytest

import memwall

BASE = {"model": "llama-3.2-1b", "device": "raspberry-pi-5-16gb", "weights": {"mix": "Q4_K_M"}}
GRID = {"workload.context_tokens": [1024, 2048, 4096, 8192], "kv.k+kv.v": ["f16", "q8_0", "q4_0"],
        "weights.mix": ["Q4_K_M", "Q8_0"]}


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def test_a_distributed_sweep_has_the_local_rows(client):
    local = memwall.sweep(BASE, grid=GRID).to_pyarrow()
    remote = memwall.sweep(BASE, grid=GRID, client=client, partitions=5).to_pyarrow()
    assert remote.num_rows == local.num_rows == 24
    assert remote.equals(local)


def test_a_distributed_simulation_has_the_local_summaries(client):
    base = dict(BASE, sim={"duration_s": 20.0})
    grid = {"workload.context_tokens": [1024, 4096, 8192]}
    local = memwall.sweep(base, grid=grid, method="des").to_pyarrow()
    remote = memwall.sweep(base, grid=grid, method="des", client=client, partitions=3).to_pyarrow()
    assert remote.num_rows == 3 and remote.equals(local)
    assert remote.column("point").to_pylist() == [0, 1, 2]


def test_partitions_can_go_to_a_parquet_dataset(client, tmp_path):
    import pyarrow.parquet as pq

    paths = memwall.sweep(BASE, grid=GRID, client=client, out=tmp_path / "ds")
    assert len(paths) == 4  # two per worker
    table = pq.read_table(tmp_path / "ds").sort_by("point")
    local = memwall.sweep(BASE, grid=GRID).to_pyarrow()
    # Each part marks the front of its own points; recomputed over the dataset, the front
    # is the local sweep's.
    assert memwall.pareto(table.select(local.column_names)).equals(local)


def test_the_stubs_match_the_native_module():
    pytest.importorskip("mypy")
    p = subprocess.run([sys.executable, "-m", "mypy.stubtest", "memwall._native"], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
