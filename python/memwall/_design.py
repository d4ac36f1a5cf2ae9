"""Designs as Python objects (Model, Device, Engine, Quant, Workload) and the functions that
evaluate one design: footprint(), estimate(), simulate(), calibrate(), validate()."""

from __future__ import annotations

import copy
import json
import os
from typing import Any, Callable, Mapping, Sequence

from . import _native
from ._errors import bad as _bad

def _merge(into: dict, fields: Mapping[str, Any], path: str) -> None:
    """Set ``fields`` in ``into``; a mapping value merges into a table of the same name."""
    for k, v in fields.items():
        if not isinstance(k, str):
            raise _bad(path, k, f"`{path}`: field names are strings, not {k!r}")
        if isinstance(v, Mapping) and isinstance(into.get(k), dict):
            _merge(into[k], v, f"{path}.{k}")
        else:
            into[k] = copy.deepcopy(dict(v)) if isinstance(v, Mapping) else copy.deepcopy(v)


def _gb(b: float) -> str:
    return f"{b / 1e9:.2f} GB"


class _Spec:
    """A model, device or engine: a preset name, a file (TOML; for a model also GGUF or a
    Hugging Face config.json), a dict of its fields, or any of these with fields changed by
    keyword arguments. Checked when built: a wrong field raises ``SpecError`` naming it."""

    _kind = ""

    def __init__(self, source: Any = None, /, **fields: Any):
        self._source: str | None = None
        self._fields: dict | None = None
        if isinstance(source, _Spec):
            if type(source) is not type(self):
                raise _bad(self._kind, type(source).__name__, f"`{self._kind}`: a {type(source).__name__} is not a {type(self).__name__}")
            self._source, self._fields = source._source, copy.deepcopy(source._fields)
        elif isinstance(source, (str, os.PathLike)):
            self._source = os.fspath(source)
        elif isinstance(source, Mapping):
            self._fields = {}
            _merge(self._fields, source, self._kind)
        elif source is None:
            if not fields:
                raise _bad(self._kind, None, f"`{self._kind}`: give a preset name, a file, a dict or keyword fields")
            self._fields = {}
        else:
            raise _bad(
                self._kind, repr(source), f"`{self._kind}`: a preset name, a path or a dict, not a {type(source).__name__}"
            )
        self._changed: list[str] = list(source._changed) if isinstance(source, _Spec) else []
        if fields:
            if self._fields is None:
                self._fields = json.loads(_native.spec_json(self._kind, self._source))
                self._source = None
            _merge(self._fields, fields, self._kind)
            self._changed += [k for k in fields if k not in self._changed]
        self._info = json.loads(
            _native.describe(self._kind, source=self._source)
            if self._source is not None
            else _native.describe(self._kind, json=json.dumps(self._fields, allow_nan=False))
        )
        # Pairs read as tuples: (kind, layers) and (experts, top_k).
        if "layer_kinds" in self._info:
            self._info["layer_kinds"] = [tuple(k) for k in self._info["layer_kinds"]]
        if self._info.get("experts") is not None:
            self._info["experts"] = tuple(self._info["experts"])

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]):
        """The spec in a file."""
        p = os.fspath(path)
        if not os.path.exists(p):
            from ._native import MemwallIOError

            raise MemwallIOError(f"{p}: no such file")
        return cls(p)

    @classmethod
    def from_dict(cls, fields: Mapping[str, Any]):
        """A spec from all its fields."""
        return cls(dict(fields))

    @property
    def name(self) -> str:
        return self._info["name"]

    @property
    def info(self) -> dict:
        """The checked facts a repr shows (layers, parameters, RAM, bandwidth, ...)."""
        return dict(self._info)

    @property
    def spec(self) -> dict:
        """Every field, as the spec file has them (a copy: change it with ``replace``)."""
        if self._fields is not None:
            return copy.deepcopy(self._fields)
        return json.loads(_native.spec_json(self._kind, self._source))

    def replace(self, **fields: Any):
        """A copy with ``fields`` changed (a dict value merges into that table)."""
        return type(self)(self, **fields)

    def _value(self) -> Any:
        """What a scenario's ``model``/``device``/``engine`` entry holds: the name or path when
        unchanged (a GGUF model keeps its tensors), else the fields."""
        return self._source if self._source is not None else self._fields

    def _origin(self) -> str:
        if self._source is not None:
            return repr(self._source)
        changed = f" with {', '.join(self._changed)} changed" if self._changed else " from fields"
        return f"{self.name!r}{changed}"


class Model(_Spec):
    """A model architecture: ``Model("llama-3.2-1b")``, ``Model("file.gguf")``,
    ``Model("config.json")``, ``Model({...})``, ``Model("qwen3-4b", n_layers=24)``."""

    _kind = "model"

    def __repr__(self) -> str:
        i = self._info
        kinds = ", ".join(f"{n} {k}" for k, n in i["layer_kinds"])
        moe = f", {i['experts'][0]} experts top-{i['experts'][1]}" if i["experts"] else ""
        params = f"{i['params'] / 1e9:.2f} B params" + (
            f" ({i['active_params'] / 1e9:.2f} B active)" if i["active_params"] < 0.9 * i["params"] else ""
        )
        return (
            f"Model({self._origin()}: {i['layers']} layers ({kinds}), hidden {i['hidden']}, "
            f"{i['heads']} heads / {i['kv_heads']} KV heads of {i['head_dim']}{moe}, {params}, vocab {i['vocab']})"
        )


class Device(_Spec):
    """A device: ``Device("raspberry-pi-5-16gb")``, ``Device("my-phone.toml")``, or a preset with
    fields changed, ``Device("pixel-8", memory={"ram_bytes": 12_000_000_000})``."""

    _kind = "device"

    def __repr__(self) -> str:
        i = self._info
        kind = f"{i['kind']}, " if i["kind"] else ""
        units = "".join(f" + {u.upper()}" for u in ("gpu", "npu") if i[u])
        return (
            f"Device({self._origin()}: {kind}{_gb(i['ram_bytes'])} RAM ({_gb(i['available_bytes'])} available), "
            f"{i['peak_gbps']:.1f} GB/s peak × {i['achievable_fraction']:.2f}, {i['cores']} cores "
            f"({i['big_cores']} big, {i['max_ghz']:.2f} GHz){units}"
            f"{', own thermal network' if i['thermal'] else ''}{', ' + i['cooling'] + ' cooling' if i['cooling'] else ''})"
        )


class Engine(_Spec):
    """An inference engine profile: ``Engine("llama.cpp")``, ``Engine("mlc-llm")``, a TOML file,
    or the profile a calibration wrote."""

    _kind = "engine"

    def __repr__(self) -> str:
        i = self._info
        return f"Engine({self._origin()}: units {', '.join(i['units']) or 'none'})"


class Quant:
    """Weight and KV-cache formats: ``Quant("Q4_K_M", kv="q8_0")``; ``kv_k``/``kv_v`` set K and V
    apart. ``weights`` is a llama.cpp file type (Q4_K_M, IQ4_XS, TQ1_0, ...), a format
    (q4_0, int4-g128, ...) or ``"stored"`` (a GGUF model's own types)."""

    def __init__(self, weights: str = "Q4_K_M", kv: str = "f16", *, kv_k: str | None = None, kv_v: str | None = None):
        for name, v in (("weights", weights), ("kv", kv), ("kv_k", kv_k), ("kv_v", kv_v)):
            if v is not None and not isinstance(v, str):
                raise _bad(name, repr(v), f"invalid `{name}` = {v!r}: a format name (a string)")
        self.weights = _native.parse_mix("weights", weights)
        both = _native.parse_format("kv", kv)
        self.kv_k = _native.parse_format("kv_k", kv_k) if kv_k is not None else both
        self.kv_v = _native.parse_format("kv_v", kv_v) if kv_v is not None else both

    def __repr__(self) -> str:
        kv = f"kv={self.kv_k!r}" if self.kv_k == self.kv_v else f"kv_k={self.kv_k!r}, kv_v={self.kv_v!r}"
        return f"Quant({self.weights!r}, {kv})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quant) and (self.weights, self.kv_k, self.kv_v) == (other.weights, other.kv_k, other.kv_v)


class Workload:
    """What is run: ``Workload(context_tokens=8192, prompt_tokens=512, gen_tokens=256, batch=1)``
    and any other ``workload.*`` field (``threads``, ``backend``, ``context_policy``,
    ``margin_bytes``, ...). Checked when a design using it is evaluated."""

    def __init__(self, **fields: Any):
        for k, v in fields.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v < 0:
                raise _bad(f"workload.{k}", v, f"invalid `workload.{k}` = {v}: must be >= 0")
        self.fields = dict(fields)
        if isinstance(self.fields.get("backend"), str):
            self.fields["backend"] = _native.parse_backend("workload.backend", self.fields["backend"])

    def __repr__(self) -> str:
        return "Workload(" + ", ".join(f"{k}={v!r}" for k, v in self.fields.items()) + ")"


def _spec_value(cls: type, v: Any, what: str) -> Any:
    if isinstance(v, cls):
        return v._value()
    if isinstance(v, _Spec):
        raise _bad(what, type(v).__name__, f"`{what}`: a {type(v).__name__} is not a {cls.__name__}")
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    if isinstance(v, (str, Mapping)):
        return v
    raise _bad(what, repr(v), f"`{what}`: a preset name, a path, a dict or a {cls.__name__}, not a {type(v).__name__}")


def design(
    model: Any,
    device: Any,
    weights: Any = None,
    *,
    kv: Any = None,
    engine: Any = None,
    workload: Workload | Mapping[str, Any] | None = None,
    sim: Mapping[str, Any] | None = None,
    assume_defaults: bool = False,
    **fields: Any,
) -> dict:
    """The scenario of one design, as the mapping ``sweep`` takes as its base: ``model``,
    ``device`` and ``engine`` are objects, preset names, paths or dicts; ``weights`` a mix name
    or a ``Quant`` (which sets the KV formats too); ``kv`` a format for K and V; the other
    keywords are ``workload`` fields (``context_tokens=8192``)."""
    base: dict[str, Any] = {"model": _spec_value(Model, model, "model"), "device": _spec_value(Device, device, "device")}
    if isinstance(weights, Quant):
        if kv is not None:
            raise _bad("kv", kv, "`kv`: the Quant given as `weights` sets the KV formats already")
        base["weights"] = {"mix": weights.weights}
        base["kv"] = {"k": weights.kv_k, "v": weights.kv_v}
    else:
        if weights is None:
            stored = isinstance(model, Model) and model.info.get("stored_tensors") is not None
            stored = stored or (isinstance(model, (str, os.PathLike)) and os.fspath(model).lower().endswith(".gguf"))
            weights = "stored" if stored else "Q4_K_M"
        base["weights"] = dict(weights) if isinstance(weights, Mapping) else {"mix": weights}
        if kv is not None:
            base["kv"] = dict(kv) if isinstance(kv, Mapping) else {"k": kv, "v": kv}
    if engine is not None:
        base["engine"] = _spec_value(Engine, engine, "engine")
    w: dict[str, Any] = {}
    if workload is not None:
        w.update(workload.fields if isinstance(workload, Workload) else dict(workload))
    w.update(Workload(**fields).fields)
    if w:
        base["workload"] = w
    if sim is not None:
        base["sim"] = dict(sim)
    if assume_defaults:
        base["assume_defaults"] = True
    return base


class Footprint:
    """Where the bytes of one design go: ``weight_bytes``, ``kv_bytes``, ``state_bytes``,
    ``compute_bytes``, ``overhead_bytes``, ``total_bytes`` against ``available_bytes`` less
    ``margin_bytes``; ``fits``; and ``tensors``, one row per weight tensor (a pyarrow Table)."""

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
            ("available", "available_bytes"),
            ("margin", "margin_bytes"),
            ("headroom", "headroom_bytes"),
        ):
            lines.append(f"  {label:<16} {f[key] / 1e9:9.3f} GB")
        lines.append(f"  {f['bits_per_weight']:.3f} bits/weight over {f['params'] / 1e9:.3f} B parameters")
        return "\n".join(lines)


def _experiment(base: Mapping[str, Any], grid: Mapping[str, Any] | None, name: str):
    from . import _experiment_text

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
        exp, _ = _experiment(design(model, device, weights, **kwargs), None, what)
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


def estimate(model: Any, device: Any, weights: Any = None, **kwargs: Any) -> dict:
    """One design point: footprint, decode and prefill speed, energy and the binding term, as a
    dict of the columns a sweep has. Arguments as ``design`` (``kv="q8_0"``,
    ``engine="llama.cpp"``, workload fields such as ``context_tokens=8192``)."""
    from . import sweep

    try:
        rows = sweep(design(model, device, weights, **kwargs)).to_pyarrow().to_pylist()
    except _native.MemwallError as e:
        _strip_base(e)
        raise
    return rows[0]


def ops(model: Any, device: Any, weights: Any = None, **kwargs: Any):
    """Where a token's time goes (``memwall estimate --ops``): a pyarrow Table of every operator
    of a decoded token at the estimate's mean context — ``layer``, ``op`` (attn_projections,
    attention, ffn, router, experts, lm_head, ...), ``weight_bytes``, ``kv_bytes``, ``macs``,
    ``time_s``, ``t_mem_s``, ``t_arith_s``, ``t_dequant_s``, ``binding`` — with that context in
    the schema metadata (``context_tokens``). Arguments as ``design``."""
    import pyarrow as pa

    ctx, stream = _on_design("ops", model, device, weights, kwargs, _native.ops)
    table = pa.table(stream)
    return table.replace_schema_metadata({"context_tokens": str(ctx)})


def compare(*designs: Mapping[str, Any]):
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
    from . import _objects_to_values

    try:
        exps = [_experiment(_objects_to_values(d), None, f"design {i + 1}")[0] for i, d in enumerate(designs)]
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
    **kwargs: Any,
) -> Any:
    """Answer a design question directly, as ``memwall solve`` does: ``"max_context"`` (the
    longest context that fits, one dict per KV format f16, q8_0, q4_0), ``"min_ram"``,
    ``"min_bandwidth"`` (needs ``target_tok_s``), ``"cheapest_fit"`` (the weight mix × KV
    format with the best estimated quality that fits, reaching ``target_tok_s`` within
    ``max_ppl_delta``) or ``"what_to_change"`` (for a design that does not fit: the nearest
    fitting design along each axis, best first; empty when it fits). Returns the answer as
    the ``answer`` of ``memwall solve --json`` (dicts and lists), each naming what binds it.
    Design arguments as ``design``."""
    for name, v in (("target_tok_s", target_tok_s), ("max_ppl_delta", max_ppl_delta)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise _bad(name, repr(v), f"invalid `{name}` = {v!r}: expected a number")
    target = None if target_tok_s is None else float(target_tok_s)
    bound = None if max_ppl_delta is None else float(max_ppl_delta)
    text = _on_design(
        "solve", model, device, weights, kwargs, lambda exp: _native.solve(exp, question, target, bound)
    )
    return json.loads(text)


def seconds(duration: float | int | str) -> float:
    """A duration in seconds: a number, or text with a unit (``"90s"``, ``"10m"``, ``"1.5h"``)."""
    if isinstance(duration, str):
        return _native.parse_duration(duration)
    if isinstance(duration, bool) or not isinstance(duration, (int, float)):
        raise _bad("duration", repr(duration), f"invalid `duration` = {duration!r}: seconds, or text such as '10m'")
    return _native.parse_duration(repr(float(duration)))


class Simulation:
    """A simulated run: ``summary`` (one row per design point: burst and sustained tok/s,
    throttling times, J/token, peak memory, temperatures, kills, policy actions) and ``trace``
    (one row per decoded token, prefill chunk and pause: time, phase, latency, clock and
    bandwidth scales, die and skin temperature, power, resident and free memory, events), both
    ``memwall.Results``; ``metadata`` as memwall writes it into Parquet files."""

    def __init__(self, summary, trace, metadata: Callable[[], dict]):
        self.summary = summary
        self.trace = trace
        self._metadata = metadata

    @property
    def metadata(self) -> dict:
        return self._metadata()

    def __repr__(self) -> str:
        t = f", trace of {len(self.trace)} rows" if self.trace is not None else ""
        return f"<memwall.Simulation: {len(self.summary)} points{t}>"


def simulate(
    model: Any,
    device: Any = None,
    weights: Any = None,
    *,
    duration: float | str | None = None,
    grid: Mapping[str, Any] | None = None,
    trace: bool = True,
    trace_limit: str = "2GB",
    progress: bool | None = None,
    **kwargs: Any,
) -> Simulation:
    """Simulate a design through time with the discrete-event simulator: thermal throttling,
    memory pressure and background apps, the session's turns and pauses, policies.

    ``model`` and ``device`` as in ``design`` (``sim={...}`` sets ``sim.*``: ``session``,
    ``thermal``, ``policies``, ``background``, ``duration_s``, ...); or ``model`` is a whole
    base scenario (a mapping) or an experiment TOML file and ``device`` is None. ``grid``
    simulates every point. ``duration`` (seconds or ``"10m"``) overrides ``sim.duration_s`` and
    repeats the session's turns until then. A progress bar (tqdm) shows simulated time;
    Ctrl-C stops the run."""
    import pyarrow as pa

    from . import Results, _bar, _experiment_text, _read_experiment

    if device is None and isinstance(model, Mapping):
        base, text = dict(model), None
    elif device is None and isinstance(model, (str, os.PathLike)):
        base, text = None, _read_experiment(model, grid)
    else:
        base, text = design(model, device, weights, **kwargs), None
    duration_s = None if duration is None else seconds(duration)
    if duration_s is not None and base is not None:
        # The run's length belongs to the scenario too, so that a session repeated until the
        # end (`repeat = 0`) is valid as written.
        base["sim"] = dict(base.get("sim") or {}, duration_s=duration_s)
    try:
        if text is None:
            text = _experiment_text(base, grid or {}, "simulate")
            exp = _native.parse_experiment(text, "python")
        else:
            exp = _native.parse_experiment(text, os.fspath(model))
        limit_bytes = _bytes(trace_limit)
        n = len(exp)
        total = n * duration_s if duration_s else None
        # Shown only for runs that last (after half a second), unless asked for.
        bar = None if progress is False else _bar(total, "memwall simulate", "s" if total else "pt", 0.0 if progress else 0.5)
        done = [0.0]

        def tick(point: int, t: float) -> None:
            if bar is not None and duration_s:
                pos = point * duration_s + min(t, duration_s)
                bar.update(max(0.0, pos - done[0]))
                done[0] = max(done[0], pos)

        try:
            summary, tr = _native.simulate(
                exp, duration_s=duration_s, trace=trace, trace_limit_bytes=limit_bytes, progress=tick
            )
            if bar is not None and duration_s:
                bar.update(max(0.0, n * duration_s - done[0]))
        finally:
            if bar is not None:
                bar.close()
    except _native.MemwallError as e:
        _strip_base(e)
        raise
    meta_cache: dict = {}

    def metadata() -> dict:
        if not meta_cache:
            meta_cache.update(dict(_native.metadata(exp)))
            if duration_s is not None:
                meta_cache["duration_s"] = repr(duration_s)
        return meta_cache

    return Simulation(
        Results(table=pa.table(summary), metadata=metadata),
        None if tr is None else Results(table=pa.table(tr), metadata=metadata),
        metadata,
    )


def _bytes(text: str | int) -> int:
    """A trace limit: bytes, or a size as text (parsed as the command line parses it)."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text <= 0:
            raise _bad("trace_limit", text, f"invalid `trace_limit` = {text}: must be > 0")
        return text
    if not isinstance(text, str):
        raise _bad("trace_limit", repr(text), f"invalid `trace_limit` = {text!r}: bytes, or text such as '2GB'")
    return _native.parse_bytes("trace_limit", text)


class Calibration:
    """A calibrated ``device`` and ``engine`` (use them together), ``table`` (a pyarrow Table:
    per llama-bench row the measured and predicted tok/s before and after, or per fitted
    figure its value and 95 % interval) and, for a host, ``measurements_csv``."""

    def __init__(self, profiles: dict, table):
        self.device = Device(json.loads(profiles["device_json"]))
        self.engine = Engine(json.loads(profiles["engine_json"]))
        self.table = table
        self.measurements_csv: str | None = profiles.get("measurements_csv")
        self._toml = (profiles["device_toml"], profiles["engine_toml"])
        # The files the calibration read, which `write` must never replace.
        self._inputs: list[str] = []

    def write(self, device_path: str | os.PathLike[str], engine_path: str | os.PathLike[str] | None = None) -> None:
        """Write the device profile and the engine profile beside it (``NAME.engine.toml``) as
        ``memwall calibrate`` does; each file appears whole or not at all, and none may be a
        file the calibration read (its llama-bench table, device, model or engine) or another
        of the outputs: those are refused before anything is written."""
        d = os.fspath(device_path)
        e = os.fspath(engine_path) if engine_path is not None else _native.beside(d, ".engine.toml")
        outputs = [("device_path", d, self._toml[0]), ("engine_path", e, self._toml[1])]
        if self.measurements_csv is not None:
            outputs.append(("measurements", _native.beside(d, ".measurements.csv"), self.measurements_csv))
        _native.write_texts(outputs, self._inputs)

    def __repr__(self) -> str:
        return f"<memwall.Calibration: {self.device.name} with {self.engine.name}, {self.table.num_rows} rows>"


def calibrate(
    llama_bench: str | os.PathLike[str] | None = None,
    *,
    device: Any = None,
    model: Any = None,
    engine: str = "llama.cpp",
    host: bool = False,
    quick: bool = True,
    threads: int | None = None,
    name: str = "host",
    progress: bool = True,
) -> Calibration:
    """Calibrate a device. With ``llama_bench`` (a file of llama-bench output of ``model`` on
    ``device``, run by ``engine``): fit the unit's bandwidth share and the engine's fixed
    costs and KV reads there. With ``host=True``: probe this machine with memwall's kernels and
    engine (``quick``: about 2 minutes) and fit a device and an engine profile with 95 %
    intervals. ``Calibration.write(path)`` saves the profiles as ``memwall calibrate`` does.

    From llama-bench output, rows that cannot be ``model`` on ``device`` raise ``SpecError``
    naming the line and field: another model's parameter count or size, a rate that is 0,
    negative, not finite or above what the device's peak bandwidth allows, or a fit that ends
    at a bound or does not reproduce its rows."""
    import pyarrow as pa

    if (llama_bench is None) == (not host):
        raise _bad("llama_bench", llama_bench, "`calibrate`: give either `llama_bench` (a file) or `host=True`")
    if host:
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)):
            raise _bad("threads", repr(threads), f"invalid `threads` = {threads!r}: a number of threads")
        cb = (lambda line: print(line, flush=True)) if progress else None
        profiles, table = _native.calibrate_host(name=name, quick=quick, threads=threads, progress=cb)
        return Calibration(profiles, pa.table(table))
    for what, v in (("device", device), ("model", model)):
        if v is None:
            raise _bad(what, None, f"`{what}`: calibrating from llama-bench output needs the {what} it ran")
    dev = _file_or_name(Device, device, "device")
    mod = _file_or_name(Model, model, "model")
    eng = _file_or_name(Engine, engine, "engine")
    profiles, table = _native.calibrate_llama_bench(os.fspath(llama_bench), dev, mod, eng)
    c = Calibration(profiles, pa.table(table))
    c._inputs = [os.fspath(llama_bench), dev, mod, eng]
    return c


def _file_or_name(cls: type[_Spec], v: Any, what: str) -> str:
    if isinstance(v, cls) and v._source is not None:
        return v._source
    if isinstance(v, (str, os.PathLike)):
        return os.fspath(v)
    raise _bad(what, repr(v), f"`{what}`: a preset name, a file or an unchanged {cls.__name__} read from one")


def validate(
    *,
    devices: bool = False,
    host: str | os.PathLike[str] | None = None,
    table: str | os.PathLike[str] | None = None,
    tokens: int = 8,
    only: str | Sequence[str] | None = None,
):
    """Check predictions against measurements. ``devices=True``: leave-one-device-out over
    the published decode measurements (``table``, default the shipped one); the report has
    per row the measured, cross-validated predicted, in-sample and roofline tok/s, and
    ``.excluded`` lists the rows set aside. ``host=PATH``: run memwall's engine here on the
    validation designs (those whose id contains ``only``, or one of a list of substrings)
    and predict each with the host
    profile at PATH (``PATH.engine.toml`` beside it). Returns ``memwall.Results``."""
    import pyarrow as pa

    from . import Results

    if devices == (host is not None):
        raise _bad("host", host, "`validate`: give either `devices=True` or `host` (a host profile)")
    if devices:
        report, excluded = _native.validate_devices(None if table is None else os.fspath(table))
        r = Results(table=pa.table(report))
        r.excluded = excluded
        return r
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
        raise _bad("tokens", repr(tokens), f"invalid `tokens` = {tokens!r}: time at least one token")
    if only is None or isinstance(only, str):
        return Results(table=pa.table(_native.validate_host(os.fspath(host), tokens=tokens, only=only)))
    parts = [pa.table(_native.validate_host(os.fspath(host), tokens=tokens, only=o)) for o in only]
    return Results(table=pa.concat_tables(parts))
