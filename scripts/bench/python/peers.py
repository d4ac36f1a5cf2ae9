"""Peer analytic LLM performance models, timed on the bench's design grid.

`sweep_bench.py` passes a list of design points (dicts with keys `model`, `bits`, `kv_bits`,
`context`, `batch`) to each `time_*` function here and prints the returned points/s next to
memwall's, as a ratio. A function returns None when its peer is not installed, and the bench
reports it as "not installed".

Peers:

* GenZ (https://github.com/abhibambhaniya/GenZ-LLM-Analyzer), `pip install genz-llm`. It pulls
  in pandas, matplotlib, plotly, kaleido, seaborn, plotnine, ipywidgets and friends, and its
  import takes about 2 s (not counted in the timing). Each evaluation writes two small CSV
  files of the layer graph under /tmp/genz/data/model and reads them back; that I/O is part of
  GenZ's cost and is timed, and the files are removed after the timed loop.
* LLM-Viewer (https://github.com/hahnyuan/LLM-Viewer) is not on PyPI, so it is not timed.
"""

import importlib.metadata
import os
import time
import warnings

# Bench model name -> GenZ model. Strings are names from GenZ's built-in model table; GenZ
# 0.0.16 has no Qwen3, so Qwen3-30B-A3B is described by a ModelConfig built from its Hugging
# Face config.json (see `_qwen3_30b_a3b`).
GENZ_MODELS = {
    "llama-3.2-1b": "meta-llama/Llama-3.2-1B",
    "llama-3.2-3b": "meta-llama/Llama-3.2-3B",
    "llama-3.1-8b": "meta-llama/Llama-3.1-8B",
    "qwen2.5-7b": "Qwen/Qwen2.5-7B",
    "qwen3-30b-a3b": None,  # custom ModelConfig
}

# Bit width -> GenZ data type. GenZ has one data type for weights and activations (it also
# scales compute time: int8 0.5x, int4 0.25x of bf16). The KV cache gets its own width by
# overriding System.get_bit_multiplier for K and V tensors (see `time_genz`).
GENZ_WEIGHT_DTYPES = {16: "bf16", 8: "int8", 6: "fp6", 4: "int4", 2: "int2"}
GENZ_KV_DTYPES = {16: "bf16", 8: "int8", 4: "int4"}

# The phone-like device: LPDDR5X-4800 on a 64-bit bus (76.8 GB/s = 76.8e9 B/s), 16 GiB of
# memory, ~4 TFLOPS of dense fp16 for the accelerator. GenZ reads bandwidth in GiB/s, so the
# value is converted to keep the raw rate at 76.8e9 B/s. Efficiencies are left at GenZ's
# default of 1 (ideal roofline).
PHONE_MEM_BW_GBPS = 76.8
PHONE_MEM_GIB = 16
PHONE_TFLOPS = 4.0


def _qwen3_30b_a3b(ModelConfig):
    # https://huggingface.co/Qwen/Qwen3-30B-A3B/blob/main/config.json. As in GenZ's own MoE
    # configs (Mixtral), intermediate_size is the per-expert FFN width.
    return ModelConfig(
        model="Qwen/Qwen3-30B-A3B",
        hidden_size=2048, num_attention_heads=32, num_key_value_heads=4, head_dim=128,
        num_ffi=2, intermediate_size=768, num_decoder_layers=48,
        num_experts=128, expert_top_k=8,
        vocab_size=151936, max_model_len=40960, hidden_act="silu",
    )


def time_genz(points, budget_s=20.0):
    """Time GenZ's decode model (one generated token at the given context) point by point.

    Stops after `budget_s` seconds or when all points are done. Returns None when GenZ is not
    installed, else a dict: name, points (evaluated, failures included), failures, seconds,
    points_per_s, sample (decode tok/s of the first point that succeeded) and sample_point;
    first_error when a point failed, and error when every point failed. A point fails, for
    instance, when weights and KV cache do not fit in the device's memory; GenZ finds that out
    in its first pass, so such a point costs about a tenth of a full one.
    """
    try:
        import GenZ
        from GenZ import ModelConfig, System, Unit
        from GenZ.Models.get_language_model import DATA_PATH
    except ImportError:
        return None
    version = importlib.metadata.version("genz-llm")

    class KVSystem(System):
        """A GenZ System whose KV cache (K and V operands of attention) has its own width."""

        def __init__(self, kv_dtype, **kw):
            super().__init__(**kw)
            self.kv_dtype = kv_dtype

        def get_bit_multiplier(self, type="C", data="w", operators=None):
            if type == "M" and data in ("k", "v"):
                return self.mem_multiplier[self.kv_dtype]
            return super().get_bit_multiplier(type, data, operators)

    models = {k: v or _qwen3_30b_a3b(ModelConfig) for k, v in GENZ_MODELS.items()}
    systems = {}  # (bits, kv_bits) -> KVSystem

    def system(bits, kv_bits):
        key = (bits, kv_bits)
        if key not in systems:
            systems[key] = KVSystem(
                GENZ_KV_DTYPES[kv_bits],
                unit=Unit(),
                flops=PHONE_TFLOPS,
                offchip_mem_bw=PHONE_MEM_BW_GBPS * 1e9 / 2**30,
                off_chip_mem_size=PHONE_MEM_GIB * 1024,  # MiB
                frequency=1000,
                bits=GENZ_WEIGHT_DTYPES[bits],
            )
        return systems[key]

    model_dir = os.path.join(DATA_PATH, "model")
    before = set(os.listdir(model_dir)) if os.path.isdir(model_dir) else set()

    done = failures = 0
    sample = sample_point = first_error = None
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for p in points:
            try:
                out = GenZ.decode_moddeling(
                    model=models[p["model"]],
                    batch_size=p["batch"],
                    input_tokens=p["context"],
                    output_tokens=0,
                    Bb=1,  # no beam search (GenZ defaults to 4 beams)
                    system_name=system(p["bits"], p["kv_bits"]),
                    bits=GENZ_WEIGHT_DTYPES[p["bits"]],
                    tensor_parallel=1,
                )
                if sample is None:
                    sample, sample_point = float(out["Throughput"]), p
            except Exception as e:  # a failing point is counted, not fatal
                failures += 1
                if first_error is None:
                    msg = str(e).strip().splitlines()
                    first_error = f"{type(e).__name__}: {msg[0] if msg else ''}".strip()
            done += 1
            if time.perf_counter() - t0 >= budget_s:
                break
    elapsed = time.perf_counter() - t0

    # Remove the layer-graph CSVs GenZ wrote during the run.
    if os.path.isdir(model_dir):
        prefixes = tuple(m if isinstance(m, str) else m.model for m in models.values())
        prefixes = tuple(m.replace("/", "_") + "_decode_" for m in prefixes)
        for f in set(os.listdir(model_dir)) - before:
            if f.startswith(prefixes):
                try:
                    os.remove(os.path.join(model_dir, f))
                except OSError:
                    pass

    result = {
        "name": f"GenZ {version}",
        "points": done,
        "failures": failures,
        "seconds": elapsed,
        "points_per_s": done / elapsed if elapsed > 0 else 0.0,
        "sample": sample,
        "sample_point": sample_point,
    }
    if first_error is not None:
        result["first_error"] = first_error
    if done and failures == done:
        result["error"] = f"all {done} points failed; first: {first_error}"
    return result


def time_llm_viewer(points, budget_s=20.0):
    """LLM-Viewer (github.com/hahnyuan/LLM-Viewer) is not on PyPI (neither `llm-viewer` nor
    `llmviewer`), so it cannot be installed with pip: always returns None ("not installed")."""
    return None
