"""One design at a time: calls per second of `memwall.estimate()` on designs that differ from
call to call (model, device, weight mix, KV format, context), beside llm-analysis's `infer()`
per-call rate when it is installed (`pip install llm-analysis`), alternating the two for
`--rounds` rounds in this one process and reporting medians and their ratio.

    python scripts/bench/python/estimate_bench.py [--calls 2000] [--rounds 5]

llm-analysis (https://github.com/cli99/llm-analysis) models GPU training and inference; its
`infer()` on Llama-2-7B (its bundled config, so no download) with an A100 profile is the
per-call rate of a peer analytic model, not the same question: the comparison is of what one
call costs a notebook or a web page that probes a design at a time.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import statistics
import time

import memwall

MODELS = ["qwen3-0.6b", "llama-3.2-1b", "llama-3.1-8b", "qwen3-30b-a3b", "gemma-3-4b"]
DEVICES = ["raspberry-pi-5-16gb", "pixel-8", "snapdragon-8-gen3-16gb", "apple-m2-pro-32gb"]
MIXES = ["Q4_K_M", "Q8_0", "Q3_K_M", "IQ4_XS"]
KVS = ["f16", "q8_0", "q4_0"]


def designs(n: int) -> list[dict]:
    """`n` designs, consecutive ones differing in every axis (no two calls alike in a row)."""
    axes = itertools.product(MODELS, DEVICES, MIXES, KVS)
    out = []
    for i, (m, d, w, kv) in zip(range(n), itertools.cycle(axes)):
        out.append({"model": m, "device": d, "weights": w, "kv": kv, "context_tokens": 1024 + 64 * (i % 500)})
    return out


def time_memwall(points: list[dict]) -> float:
    t = time.perf_counter()
    for p in points:
        memwall.estimate(p["model"], p["device"], p["weights"], kv=p["kv"], context_tokens=p["context_tokens"])
    return len(points) / (time.perf_counter() - t)


def llm_analysis():
    try:
        from llm_analysis.analysis import infer
    except ImportError:
        return None
    logging.getLogger("llm_analysis").setLevel(logging.ERROR)
    return infer


def time_llm_analysis(infer, points: list[dict]) -> float:
    t = time.perf_counter()
    for p in points:
        infer(
            model_name="NousResearch_Llama-2-7b-hf",
            gpu_name="a100-sxm-40gb",
            dtype_name="w4a16e16",
            seq_len=min(p["context_tokens"], 3968),  # its Llama-2 config allows 4096
            num_tokens_to_generate=128,
            log_level="ERROR",
        )
    return len(points) / (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    points = designs(args.calls)
    infer = llm_analysis()
    # Warm-up: presets parsed once per process, the quality tables loaded.
    time_memwall(points[:50])
    if infer is not None:
        time_llm_analysis(infer, points[:50])
    mw, la = [], []
    for r in range(args.rounds):
        mw.append(time_memwall(points))
        if infer is not None:
            la.append(time_llm_analysis(infer, points))
        peer = f", llm-analysis {la[-1]:,.0f}" if la else ""
        print(f"round {r + 1}: memwall.estimate {mw[-1]:,.0f} calls/s{peer}")
    m = statistics.median(mw)
    print(f"memwall.estimate: median {m:,.0f} calls/s (range {min(mw):,.0f}-{max(mw):,.0f}) over {args.calls} designs x {args.rounds} rounds")
    if la:
        p = statistics.median(la)
        print(f"llm-analysis infer: median {p:,.0f} calls/s; memwall / llm-analysis {m / p:.2f}")
    else:
        print("llm-analysis: not installed (pip install llm-analysis)")


if __name__ == "__main__":
    main()
