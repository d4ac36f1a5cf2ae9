"""Designs as Python objects: Model, Device, Engine (through the native `specs` module),
Quant, Workload, and ``design()`` that puts one together."""

from __future__ import annotations

import copy
import json
import os
from typing import TYPE_CHECKING, Any, Mapping, TypeVar, cast

if TYPE_CHECKING:
    import pyarrow

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


def _leaves(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Every non-table value of ``d`` by its dotted path."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.update(_leaves(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _variant_name(name: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """The name of a spec changed from one called ``name``: ``name[path=value, ...]`` over the
    values that differ (``qwen3-4b[n_layers=24]``), so that variants never share a label in a
    sweep's ``model``/``device`` column; ``name`` itself when nothing differs. A ``name=``
    given with the change replaces it."""
    old, new = _leaves(before), _leaves(after)
    missing = object()

    def text(v: Any) -> str:
        return v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))

    diff = [f"{p}={text(v)}" for p, v in new.items() if p != "name" and old.get(p, missing) != v]
    diff += [f"{p}=unset" for p in old if p not in new]
    return f"{name}[{', '.join(diff)}]" if diff else name


def _gb(b: float) -> str:
    return f"{b / 1e9:.2f} GB"


_S = TypeVar("_S", bound="_Spec")


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
                self._fields = json.loads(_native.spec_json(self._kind, cast(str, self._source)))
                self._source = None
            before = copy.deepcopy(self._fields)
            _merge(self._fields, fields, self._kind)
            self._changed += [k for k in fields if k not in self._changed]
            if "name" not in fields and isinstance(before.get("name"), str):
                self._fields["name"] = _variant_name(before["name"], before, self._fields)
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
    def from_file(cls: type[_S], path: str | os.PathLike[str]) -> _S:
        """The spec in a file."""
        p = os.fspath(path)
        if not os.path.exists(p):
            from ._native import MemwallIOError

            raise MemwallIOError(f"{p}: no such file")
        return cls(p)

    @classmethod
    def from_dict(cls: type[_S], fields: Mapping[str, Any]) -> _S:
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
        return json.loads(_native.spec_json(self._kind, cast(str, self._source)))

    def replace(self: _S, **fields: Any) -> _S:
        """A copy with ``fields`` changed (a dict value merges into that table), named after
        what changed (``qwen3-4b[n_layers=24]``) unless ``name=`` is among them."""
        return type(self)(self, **fields)

    def _value(self) -> Any:
        """What a scenario's ``model``/``device``/``engine`` entry holds: the name or path when
        unchanged (a GGUF model keeps its tensors), else the fields."""
        return self._source if self._source is not None else self._fields

    def _origin(self) -> str:
        if self._source is not None:
            return repr(self._source)
        if self._changed and self.name.endswith("]"):
            return repr(self.name)
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
        share = i["achievable_fraction"]
        share = f"{share:.2f}" if share is not None else "its CPU family's default share"
        return (
            f"Device({self._origin()}: {kind}{_gb(i['ram_bytes'])} RAM ({_gb(i['available_bytes'])} available), "
            f"{i['peak_gbps']:.1f} GB/s peak × {share}, {i['cores']} cores "
            f"({i['big_cores']} big, {i['max_ghz']:.2f} GHz){units}"
            f"{', own thermal network' if i['thermal'] else ''}{', ' + i['cooling'] + ' cooling' if i['cooling'] else ''}"
            f"{', power modes @' + ', @'.join(i['power_modes']) if i.get('power_modes') else ''})"
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


def _spec_value(cls: type[_Spec], v: Any, what: str) -> Any:
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


def devices(query: str | None = None) -> "pyarrow.Table":
    """The device database as a table: one row per chip of a phone, tablet, laptop, desktop,
    board or module, with what its spec sheet states (RAM options, memory type, peak GB/s,
    CPU clusters, GPU, NPU TOPS), whether memwall predicts it from that sheet (``predictable``,
    and ``why_not``), the names users type for it and the sources. ``query`` keeps the chips
    whose id, name or device names contain it (``"pixel"``, ``"m3 max"``). A device is
    ``"<id>-<N>gb"``, a chip id alone, or one of its names: ``Device("Galaxy S24 Ultra")``.
    ``.to_pandas()`` gives a DataFrame."""
    import json

    import pyarrow as pa

    from ._native import device_database

    return pa.Table.from_pylist(json.loads(device_database(query)))


def _facts_table(kind: str) -> "pyarrow.Table":
    import pyarrow as pa

    rows = json.loads(_native.preset_facts(kind))
    for r in rows:
        # Pairs as readable columns: "16 full + 4 sliding"; experts and top-k apart.
        if "layer_kinds" in r:
            r["layer_kinds"] = " + ".join(f"{n} {k}" for k, n in r["layer_kinds"])
        if "experts" in r:
            experts = r.pop("experts")
            r["experts"], r["experts_top_k"] = (experts[0], experts[1]) if experts else (None, None)
    # A key some rows omit (an engine's `version`) is a column of every row.
    keys = list(dict.fromkeys(k for r in rows for k in r))
    return pa.Table.from_pylist([{k: r.get(k) for k in keys} for r in rows])


def models() -> "pyarrow.Table":
    """The model presets with their figures, one row each (``memwall presets models --json``):
    ``name``, ``layers``, ``hidden``, ``heads``, ``kv_heads``, ``head_dim``, ``ffn``, ``vocab``,
    ``params``, ``active_params``, ``layer_kinds``, ``sliding_window``, ``experts`` and
    ``experts_top_k``, ``mla``, ``max_context``. ``.to_pandas()`` gives a DataFrame."""
    return _facts_table("models")


def device_presets() -> "pyarrow.Table":
    """The device presets with their figures, one row each (``memwall presets devices
    --json``): ``name``, ``kind``, ``os``, ``ram_bytes``, ``available_bytes``, ``peak_gbps``,
    ``achievable_fraction``, cores, clock, units, cooling, memory and power modes. The chips
    behind them, and the names users type, are ``devices()``."""
    return _facts_table("devices")


def engines() -> "pyarrow.Table":
    """The inference engine presets, one row each (``memwall presets engines --json``):
    ``name``, the compute ``units`` it runs on, the ``aliases`` it answers to, a
    ``description`` and, for a dated profile, the ``version`` of the builds it describes
    (None for current builds)."""
    return _facts_table("engines")
