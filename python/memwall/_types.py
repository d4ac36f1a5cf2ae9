"""Types of what the one-design functions return, for type checkers and editors.

``Estimate`` is one row of a sweep as ``memwall.estimate`` returns it. Its keys and value
types are the sweep's columns (``memwall_lab::columns``, where they are defined); the tests
check the two agree (``tests/python/test_types.py``), so a column added in Rust fails them
until it is added here.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, TypedDict, Union

_EstimateColumns = TypedDict(
    "_EstimateColumns",
    {
        "point": int,
        "model": str,
        "device": str,
        "engine": str,
        "weights.mix": str,
        "kv.k": str,
        "kv.v": str,
        "workload.prompt_tokens": int,
        "workload.gen_tokens": int,
        "workload.history_tokens": int,
        "workload.context_tokens": int,
        "workload.context_policy": str,
        "workload.batch": int,
        "workload.threads": int,
        "workload.ubatch": int,
        "workload.backend": str,
        "workload.margin_bytes": int,
        "workload.routing_skew": float,
        "workload.flash_attention": bool,
        "assume_defaults": bool,
        "params": int,
        "active_params": int,
        "weight_bytes": int,
        "weight_bpw": float,
        "kv_bytes": int,
        "state_bytes": int,
        "compute_bytes": int,
        "overhead_bytes": int,
        "total_bytes": int,
        "budget_bytes": int,
        "headroom_bytes": int,
        "fits": bool,
        "assumed": str,
        "cpu_share": float,
        "context_beyond_max": bool,
        "resident_weight_bytes": int,
        "decode_tok_s": float,
        "decode_depth_tokens": int,
        "decode_tok_s_lo": Optional[float],
        "decode_tok_s_hi": Optional[float],
        "decode_s_per_step": float,
        "prefill_tok_s": float,
        "prefill_tok_s_lo": Optional[float],
        "prefill_tok_s_hi": Optional[float],
        "prefill_s": float,
        "ttft_s": float,
        "energy_j_per_token": float,
        "reply_energy_j": float,
        "battery_mah_per_reply": Optional[float],
        "battery_pct_per_hour": Optional[float],
        "dram_bytes_per_token": float,
        "weight_bytes_per_token": float,
        "kv_bytes_per_token": float,
        "flash_bytes_per_token": float,
        "macs_per_token": float,
        "t_mem_s": float,
        "t_arith_s": float,
        "t_dequant_s": float,
        "t_overhead_s": float,
        "t_storage_s": float,
        "binding": str,
        "prefill_binding": str,
        "ppl_delta_weights": Optional[float],
        "ppl_delta_kv": Optional[float],
        "ppl_increase_pct": Optional[float],
        "ppl_increase_pct_hi": Optional[float],
        "weights_quality_provenance": str,
        "kv_quality_provenance": str,
        "ptq_unusable": bool,
        "quality_verdict": str,
        "weights_quality_architecture": str,
        "model_mmlu": Optional[float],
        "model_mmlu_setup": str,
        "model_mmlu_source": str,
        "quality_source": str,
        "pareto": bool,
    },
)


class Estimate(_EstimateColumns, total=False):
    """One design point (``memwall.estimate``): the sweep's columns, and ``at_depths`` when
    ``depths`` were asked for: per depth the reply's decode rate, its 80 % range and the
    binding term (the ``at_depths`` of ``memwall estimate --depths --json``)."""

    at_depths: List[Dict[str, Any]]


#: What ``memwall.solve`` returns: the ``answer`` of ``memwall solve --json`` — a dict, or a
#: list of dicts for the questions with one answer per option (``max_context`` per KV format,
#: ``what_to_change`` per axis).
Answer = Union[Dict[str, Any], List[Dict[str, Any]]]
