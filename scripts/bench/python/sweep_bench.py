"""Python sweep throughput: a million-point analytic sweep into a pyarrow Table.

    python scripts/bench/python/sweep_bench.py [--points-scale 1.0]

The grids of `cargo bench --bench sweep`: (a) fixed (model, mix) pairs, sweeping context,
KV formats, batch, prompt and generated tokens (1.2 M points); (b) an arbitrary grid of 5
models × 5 mixes × 4 KV formats × 100 contexts × 100 batch sizes (1 M points). Prints points/s (wall time from the call to a
pyarrow Table in hand) and the process's peak RSS. Then the peer models of scripts/bench/python/peers.py
(GenZ, `pip install genz-llm`; LLM-Viewer is not on PyPI) are timed on an even sample of grid
(b) for `--peer-budget` seconds each, and the ratio of points/s printed. Run with the package
installed (`pip install .`).
"""

import argparse
import os
import resource
import sys
import time

import pyarrow as pa

import memwall


def run(label, base, grid):
    n = 1
    for v in grid.values():
        n *= len(v)
    t0 = time.perf_counter()
    table = pa.table(memwall.sweep(base, grid=grid, progress=False))
    dt = time.perf_counter() - t0
    assert table.num_rows == n
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{label:<38} {n:>9} points  {dt:7.2f} s  {n / dt:>12,.0f} points/s  peak RSS {rss:,.0f} MiB")
    return n / dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--points-scale", type=float, default=1.0, help="shrink the grids (0.1: a tenth of the points)")
    ap.add_argument("--peer-budget", type=float, default=20.0, help="seconds each peer model is timed for")
    a = ap.parse_args()
    # Warm-up, untimed: pyarrow's first `pa.table()` of a stream loads modules (a quarter of
    # a second once per process), which is no part of a sweep.
    pa.table(memwall.sweep(memwall.design("llama-3.2-1b", "snapdragon-8-gen3-16gb"), progress=False))
    # The grids of `cargo bench --bench sweep`, so the two figures compare: the difference is
    # the crossing into Python.
    contexts = max(1, round(2000 * a.points_scale))
    base = {"model": "llama-3.1-8b", "device": "snapdragon-8-gen3-16gb", "weights": {"mix": "Q4_K_M"}}
    fixed = {
        "weights.mix": ["Q4_K_M", "Q8_0"],
        "kv.k+kv.v": ["f16", "q8_0", "q4_0"],
        "workload.batch": [1, 2, 4, 8],
        "workload.prompt_tokens": [128, 512, 1024, 2048, 4096],
        "workload.gen_tokens": [64, 256, 1024, 4096, 16384],
        "workload.context_tokens": [32_768 + 256 * i for i in range(contexts)],
    }
    run("fixed (model, mix) pairs", base, fixed)
    n = max(1, round(100 * a.points_scale ** 0.5))
    arbitrary = {
        "model": ["llama-3.2-1b", "llama-3.2-3b", "llama-3.1-8b", "qwen2.5-7b", "qwen3-30b-a3b"],
        "weights.mix": ["F16", "Q8_0", "Q6_K", "Q4_K_M", "Q2_K"],
        "kv.k+kv.v": ["f16", "q8_0", "q4_0", "q4_1"],
        "workload.context_tokens": [2048 + 256 * i for i in range(n)],
        "workload.batch": list(range(1, n + 1)),
    }
    memwall_rate = run("arbitrary grid (models and mixes)", base, arbitrary)
    peers(arbitrary, memwall_rate, a.peer_budget)


# Bits per weight and per KV element of the grid's formats, as the peers take them.
WEIGHT_BITS = {"F16": 16, "Q8_0": 8, "Q6_K": 6, "Q4_K_M": 4, "Q2_K": 2}
KV_BITS = {"f16": 16, "q8_0": 8, "q4_0": 4, "q4_1": 4}


def peers(grid, memwall_rate, budget_s):
    """Time the peer models on an evenly spread sample of the arbitrary grid's points for
    `budget_s` seconds each (a million points would take them hours) and print their points/s
    beside memwall's on the whole grid."""
    import itertools

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import peers as peer_models

    axes = [grid["model"], grid["weights.mix"], grid["kv.k+kv.v"], grid["workload.context_tokens"], grid["workload.batch"]]
    every = list(itertools.product(*axes))
    step = max(1, len(every) // 5000)
    points = [
        {"model": m, "bits": WEIGHT_BITS[w], "kv_bits": KV_BITS[kv], "context": c, "batch": b}
        for (m, w, kv, c, b) in every[::step]
    ]
    for name, fn in (("GenZ", peer_models.time_genz), ("LLM-Viewer", peer_models.time_llm_viewer)):
        r = fn(points, budget_s=budget_s)
        if r is None:
            print(f"{name:<38} not installed (see scripts/bench/python/peers.py)")
            continue
        rate = r["points_per_s"]
        failed = r.get("failures", 0)
        print(
            f"{r['name']:<38} {r['points']:>9} points  {r['seconds']:7.2f} s  {rate:>12,.1f} points/s  "
            f"({failed} did not fit)  memwall / {name}: {memwall_rate / rate:,.0f}x"
        )


if __name__ == "__main__":
    main()
