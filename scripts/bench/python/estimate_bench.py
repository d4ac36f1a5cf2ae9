"""One design at a time: calls per second of `memwall.estimate()` in three loops, beside
llm-analysis's `infer()` per-call rate when it is installed (`pip install llm-analysis`),
alternating the sides for `--rounds` rounds in this one process and reporting medians and
their ratio:

- *varied*: designs that differ from call to call in every axis (5 models x 4 devices x 4
  weight mixes x 3 KV formats, contexts 1024 + 64 k): a notebook or page probing designs;
- *contexts*: one design over contexts;
- *cold*: every call a model no earlier call used (a `Model` variant of its own), so nothing
  built for one call serves another: the cost of a first look at a design.

    python scripts/bench/python/estimate_bench.py [--calls 2000] [--rounds 5]

memwall keeps what a design's model, device and engine resolve to across calls (see
`memwall_lab::prepared`), so the first two loops pay for each design's estimate and row; the
third pays for building the design as well.

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


def contexts(n: int) -> list[dict]:
    """`n` calls of one design over contexts."""
    return [
        {"model": "llama-3.1-8b", "device": "snapdragon-8-gen3-16gb", "weights": "Q4_K_M", "kv": "q8_0",
         "context_tokens": 1024 + 16 * i}
        for i in range(n)
    ]


def cold(n: int, round_: int) -> list[dict]:
    """`n` designs whose models no other call uses (variants named apart)."""
    base = memwall.Model("llama-3.2-1b")
    return [
        {"model": base.replace(name=f"llama-3.2-1b-r{round_}-{i}"), "device": "pixel-8", "weights": "Q4_K_M",
         "kv": "f16", "context_tokens": 4096}
        for i in range(n)
    ]


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
    loops = {"varied": designs(args.calls), "contexts": contexts(args.calls)}
    n_cold = max(1, args.calls // 4)
    infer = llm_analysis()
    # Warm-up: presets parsed once per process, the quality tables loaded.
    time_memwall(loops["varied"][:50])
    if infer is not None:
        time_llm_analysis(infer, loops["varied"][:50])
    rates: dict[str, list[float]] = {"varied": [], "contexts": [], "cold": [], "llm-analysis": []}
    for r in range(args.rounds):
        for name, points in loops.items():
            rates[name].append(time_memwall(points))
        # The variants are made before the clock starts (a Model's construction is not the call).
        rates["cold"].append(time_memwall(cold(n_cold, r)))
        if infer is not None:
            rates["llm-analysis"].append(time_llm_analysis(infer, loops["varied"]))
        line = ", ".join(f"{k} {v[-1]:,.0f}" for k, v in rates.items() if v)
        print(f"round {r + 1} (calls/s): {line}")
    for name in ("varied", "contexts", "cold"):
        v = rates[name]
        calls = n_cold if name == "cold" else args.calls
        print(f"memwall.estimate {name}: median {statistics.median(v):,.0f} calls/s "
              f"(range {min(v):,.0f}-{max(v):,.0f}) over {calls} calls x {args.rounds} rounds")
    if rates["llm-analysis"]:
        p = statistics.median(rates["llm-analysis"])
        m = statistics.median(rates["varied"])
        print(f"llm-analysis infer: median {p:,.0f} calls/s; memwall varied / llm-analysis {m / p:.2f}")
    else:
        print("llm-analysis: not installed (pip install llm-analysis)")


if __name__ == "__main__":
    main()
