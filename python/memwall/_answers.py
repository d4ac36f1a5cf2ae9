"""Questions asked of one design or a few (native `answers` module): footprint(),
estimate(), ops(), compare(), solve()."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, cast

if TYPE_CHECKING:
    import pyarrow

from . import _native
from ._errors import bad as _bad
from ._experiment import _experiment_text, _objects_to_values
from ._specs import design
from ._types import Answer, Estimate


class Footprint:
    """Where the bytes of one design go: ``weight_bytes``, ``kv_bytes``, ``state_bytes``,
    ``compute_bytes``, ``overhead_bytes``, ``total_bytes`` against the budget, component by
    component: ``ram_bytes`` less ``os_reserved_bytes`` (what the OS keeps) is
    ``app_limit_bytes``, what one app may hold (its rule and source in ``app_limit_source``),
    less ``other_apps_bytes`` is ``available_bytes``, less ``margin_bytes`` is ``budget_bytes``;
    ``fits``; and ``tensors``, one row per weight tensor (a pyarrow Table)."""

    def __init__(self, facts: dict, tensors):
        self._facts = facts
        self.tensors = tensors
        for k, v in facts.items():
            setattr(self, k, v)

    def to_dict(self) -> dict:
        return dict(self._facts)

    def __repr__(self) -> str:
        f = self._facts
        lines = [
            f"Footprint of {f['model']} on {f['device']} ({f['weights']}, KV {f['kv_k']}/{f['kv_v']}, "
            f"{f['kv_tokens']} tokens): {'fits' if f['fits'] else 'DOES NOT FIT'}"
        ]
        for label, key in (
            ("weights", "weight_bytes"),
            ("kv cache", "kv_bytes"),
            ("recurrent state", "state_bytes"),
            ("compute buffers", "compute_bytes"),
            ("runtime", "overhead_bytes"),
            ("total", "total_bytes"),
            ("RAM", "ram_bytes"),
            ("- OS keeps", "os_reserved_bytes"),
            ("= app limit", "app_limit_bytes"),
            ("- other apps", "other_apps_bytes"),
            ("= available", "available_bytes"),
            ("- margin", "margin_bytes"),
            ("= budget", "budget_bytes"),
            ("headroom", "headroom_bytes"),
        ):
            lines.append(f"  {label:<16} {f[key] / 1e9:9.3f} GB")
        lines.append(f"  {f['bits_per_weight']:.3f} bits/weight over {f['params'] / 1e9:.3f} B parameters")
        lines.append(f"  app limit: {f['app_limit_source']}")
        return "\n".join(lines)


def _native_experiment(base: Mapping[str, Any], grid: Mapping[str, Any] | None, name: str):

    text = _experiment_text(base, grid or {}, name)
    return _native.parse_experiment(text, "python"), text


def _strip_base(e: Exception) -> None:
    # The scenario was built here: name its fields as the caller wrote them.
    field = getattr(e, "field", None)
    if isinstance(field, str) and field.startswith("base."):
        e.field = field[len("base.") :]  # type: ignore[attr-defined]


def _on_design(what: str, model: Any, device: Any, weights: Any, kwargs: Mapping[str, Any], call: Callable[[Any], Any]):
    """``call`` on the native experiment of one design, its errors naming fields as the caller
    wrote them."""
    try:
        exp, _ = _native_experiment(design(model, device, weights, **kwargs), None, what)
        return call(exp)
    except _native.MemwallError as e:
        _strip_base(e)
        raise


def footprint(model: Any, device: Any, weights: Any = None, **kwargs: Any) -> Footprint:
    """Memory footprint of one design by component, whether it fits the device with the
    margin, and the bytes of every weight tensor. Arguments as ``design``."""
    import pyarrow as pa

    report, tensors = _on_design("footprint", model, device, weights, kwargs, _native.footprint)
    # The report `memwall footprint --json` prints, its design and components as attributes.
    r = json.loads(report)
    facts = {**r.pop("design"), **r.pop("components"), **r}
    return Footprint(facts, pa.table(tensors))


def estimate(
    model: Any, device: Any, weights: Any = None, *, depths: Sequence[int] | None = None, **kwargs: Any
) -> Estimate:
    """One design point: footprint, decode and prefill speed, energy and the binding term, as a
    dict of the columns a sweep has (``decode_depth_tokens`` is the depth its per-token figures
    are taken at: a reply decodes at depths ``history_tokens + prompt_tokens`` onwards; unset,
    ``history_tokens`` fills the context, so the reply ends at ``context_tokens``; pass
    ``history_tokens=0`` for a fresh conversation). ``depths=[0, 4096, 32768]`` adds ``at_depths``: the reply's decode
    rate started at each depth (llama-bench's ``tg@d``), with its 80 % range and binding term.
    Arguments as ``design`` (``kv="q8_0"``, ``engine="llama.cpp"``, workload fields such as
    ``context_tokens=8192``). Fast in a loop: a design's model, device and engine are built
    once and kept (64 designs) for later calls that vary the weights, KV formats or workload;
    a model or device named by a file path is read afresh each call."""
    if depths is not None and (
        isinstance(depths, (str, bytes))
        or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in depths)
    ):
        raise _bad("depths", repr(depths), "`depths`: a list of token counts")
    values = _objects_to_values(design(model, device, weights, **kwargs))
    try:
        if depths is None:
            # The design's specs are kept across calls: a design probed again under other
            # weights, KV formats or workload pays for its estimate only.
            fast = _native.estimate_row(values)
            if fast is not None:
                return cast(Estimate, fast)
        # One experiment for the row and the depths: the sweep's row of this one point.
        exp, _ = _native_experiment(values, None, "estimate")
        row = cast(Estimate, exp.row())
        if depths is not None:
            row["at_depths"] = json.loads(_native.at_depths(exp, list(depths)))
    except _native.MemwallError as e:
        _strip_base(e)
        raise
    return row


def ops(model: Any, device: Any, weights: Any = None, **kwargs: Any) -> "pyarrow.Table":
    """Where a token's time goes (``memwall estimate --ops``): a pyarrow Table of every operator
    of a decoded token at the estimate's mean context — ``layer``, ``op`` (attn_projections,
    attention, ffn, router, experts, lm_head, ...), ``weight_bytes``, ``kv_bytes``, ``macs``,
    ``time_s``, ``t_mem_s``, ``t_arith_s``, ``t_dequant_s``, ``binding`` — with that context in
    the schema metadata (``context_tokens``). Arguments as ``design``."""
    import pyarrow as pa

    ctx, stream = _on_design("ops", model, device, weights, kwargs, _native.ops)
    table = pa.table(stream)
    return table.replace_schema_metadata({"context_tokens": str(ctx)})


def compare(*designs: Mapping[str, Any]) -> "pyarrow.Table":
    """Two to eight designs (mappings from ``design``) side by side, as ``memwall compare``: a
    pyarrow Table with one row per design holding the input columns of a sweep and the
    estimate's (footprint, fit, decode and prefill rate, TTFT, energy, battery, binding term,
    quality), and for each numeric metric a ``delta_<column>`` column, its difference from the
    first design."""
    import pyarrow as pa

    if not 2 <= len(designs) <= 8:
        raise _bad("designs", len(designs), f"`compare`: give two to eight designs, not {len(designs)}")
    for i, d in enumerate(designs):
        if not isinstance(d, Mapping):
            raise _bad(f"designs[{i}]", repr(d), "expected a mapping from memwall.design()")

    try:
        exps = [_native_experiment(_objects_to_values(d), None, f"design {i + 1}")[0] for i, d in enumerate(designs)]
        return pa.table(_native.compare(exps))
    except _native.MemwallError as e:
        _strip_base(e)
        raise


def solve(
    question: str,
    model: Any,
    device: Any,
    weights: Any = None,
    *,
    target_tok_s: float | None = None,
    max_ppl_delta: float | None = None,
    max_ppl_increase_pct: float | None = None,
    **kwargs: Any,
) -> Answer:
    """Answer a design question directly, as ``memwall solve`` does: ``"max_context"`` (the
    longest context that fits, one dict per KV format f16, q8_0, q4_0), ``"min_ram"``,
    ``"min_bandwidth"`` (needs ``target_tok_s``), ``"cheapest_fit"`` (the weight mix × KV
    format with the best estimated quality that fits, reaching ``target_tok_s`` within
    ``max_ppl_delta`` and ``max_ppl_increase_pct``, % of the model's baseline perplexity) or ``"what_to_change"`` (for a design that does not fit: the nearest
    fitting design along each axis, best first; empty when it fits). Returns the answer as
    the ``answer`` of ``memwall solve --json`` (dicts and lists), each naming what binds it.
    Design arguments as ``design``."""
    for name, v in (
        ("target_tok_s", target_tok_s),
        ("max_ppl_delta", max_ppl_delta),
        ("max_ppl_increase_pct", max_ppl_increase_pct),
    ):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise _bad(name, repr(v), f"invalid `{name}` = {v!r}: expected a number")
    target = None if target_tok_s is None else float(target_tok_s)
    bound = None if max_ppl_delta is None else float(max_ppl_delta)
    pct = None if max_ppl_increase_pct is None else float(max_ppl_increase_pct)
    text = _on_design(
        "solve", model, device, weights, kwargs, lambda exp: _native.solve(exp, question, target, bound, pct)
    )
    return json.loads(text)
