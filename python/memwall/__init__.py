"""memwall from Python: sweeps of on-device LLM designs, computed in Rust, returned as Arrow.

    import memwall, pyarrow as pa
    r = memwall.sweep({"model": "llama-3.2-1b", "device": "raspberry-pi-5-16gb",
                       "weights": {"mix": "Q4_K_M"}},
                      grid={"workload.context_tokens": [1024, 4096, 16384]})
    pa.table(r)          # or polars.DataFrame(r), or r.to_pandas(): no copy of the columns

Every result has one row per design point with a column for each input parameter and each
metric, the same columns `memwall run` writes to Parquet.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

from ._native import (
    ArrowStream,
    ConfigError,
    GgufError,
    MemwallError,
    MemwallIOError,
    SpecError,
    parse_experiment,
    presets,
)

__all__ = [
    "ConfigError",
    "GgufError",
    "MemwallError",
    "MemwallIOError",
    "Results",
    "SpecError",
    "estimate",
    "presets",
    "sweep",
]


def _toml_value(v: Any, path: str) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            raise SpecError(f"invalid `{path}` = {v}: must be a finite number")
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x, f"{path}[{i}]") for i, x in enumerate(v)) + "]"
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{_key(k)} = {_toml_value(x, f'{path}.{k}')}" for k, x in v.items()) + "}"
    raise SpecError(f"`{path}`: a {type(v).__name__} cannot be a memwall value")


def _key(k: str) -> str:
    if not isinstance(k, str):
        raise SpecError(f"`{k!r}`: keys are strings")
    return k if k.replace("_", "").replace("-", "").isalnum() else _toml_value(k, k)


def _experiment_text(base: Mapping[str, Any], grid: Mapping[str, Sequence[Any]], name: str) -> str:
    lines = [f"name = {_toml_value(name, 'name')}", "[base]"]
    for k, v in base.items():
        lines.append(f"{_key(k)} = {_toml_value(v, k)}")
    lines.append("[grid]")
    for k, values in grid.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
            raise SpecError(f"invalid `grid.{k}`: a grid axis is a list of values")
        lines.append(f"{_toml_value(k, 'grid')} = {_toml_value(list(values), f'grid.{k}')}")
    return "\n".join(lines) + "\n"


class Results:
    """The rows of a sweep. Arrow consumers take it directly (``pyarrow.table(r)``,
    ``polars.DataFrame(r)``) through ``__arrow_c_stream__``; the columns move, not copy. A
    result is read once; ``to_pyarrow()`` keeps the table."""

    def __init__(self, stream: ArrowStream | None = None, table=None):
        self._stream = stream
        self._table = table

    def __len__(self) -> int:
        return self._table.num_rows if self._table is not None else len(self._stream)

    def __arrow_c_stream__(self, requested_schema=None):
        if self._table is not None:
            return self._table.__arrow_c_stream__(requested_schema)
        return self._stream.__arrow_c_stream__(requested_schema)

    def to_pyarrow(self):
        """The rows as a ``pyarrow.Table`` (read once, then kept)."""
        if self._table is None:
            import pyarrow as pa

            self._table = pa.table(self._stream)
        return self._table

    def to_pandas(self):
        """The rows as a pandas DataFrame (through pyarrow)."""
        return self.to_pyarrow().to_pandas()

    def __repr__(self) -> str:
        return f"<memwall.Results: {len(self)} rows>"


def _sweep_part(text: str, origin: str, start: int, end: int, out: str | None, part: int):
    """One partition of a distributed sweep, on a worker: a pyarrow Table, or the path of the
    Parquet file it was written to."""
    import pyarrow as pa

    from memwall._native import parse_experiment as parse

    table = pa.table(parse(text, origin).sweep(start, end))
    if out is None:
        return table
    import pyarrow.parquet as pq

    path = os.path.join(out, f"part-{part:05d}.parquet")
    tmp = path + ".tmp"
    pq.write_table(table, tmp)
    os.replace(tmp, path)
    return path


def _distributed(text: str, origin: str, client, partitions: int | None, out: str | None):
    n = len(parse_experiment(text, origin))
    workers = len(client.scheduler_info().get("workers", {})) or 1
    k = max(1, min(n, partitions or 2 * workers))
    starts = [i * n // k for i in range(k)]
    ends = [(i + 1) * n // k for i in range(k)]
    if out is not None:
        os.makedirs(out, exist_ok=True)
    futures = client.map(_sweep_part, [text] * k, [origin] * k, starts, ends, [out] * k, list(range(k)), pure=False)
    parts = client.gather(futures)
    if out is not None:
        return parts
    import pyarrow as pa

    return Results(table=pa.concat_tables(parts))


#: Points per call into Rust when a sweep is chunked (for progress, and so that Ctrl-C, which
#: Python sees when a call returns, stops a long sweep within a fraction of a second).
CHUNK_POINTS = 250_000


def _local(text: str, origin: str, progress: bool | None) -> Results:
    exp = parse_experiment(text, origin)
    n = len(exp)
    if n <= CHUNK_POINTS and not progress:
        return Results(exp.sweep())
    import pyarrow as pa

    bar = None
    if progress or progress is None:
        try:
            from tqdm.auto import tqdm

            bar = tqdm(total=n, unit="pt", desc="memwall sweep")
        except ImportError:
            bar = None
    parts = []
    try:
        for start in range(0, n, CHUNK_POINTS):
            end = min(n, start + CHUNK_POINTS)
            parts.append(pa.table(exp.sweep(start, end)))
            if bar is not None:
                bar.update(end - start)
    finally:
        if bar is not None:
            bar.close()
    return Results(table=pa.concat_tables(parts))


def sweep(
    base: Mapping[str, Any] | str | os.PathLike,
    grid: Mapping[str, Sequence[Any]] | None = None,
    *,
    name: str = "python",
    client=None,
    partitions: int | None = None,
    out: str | os.PathLike | None = None,
    progress: bool | None = None,
):
    """Evaluate every point of ``grid`` (dotted paths of the scenario to lists of values) over
    the ``base`` scenario with the analytic estimator; ``base`` may also be an experiment
    TOML file (then ``grid`` must be None). Model, device and engine take preset names or
    paths (TOML, a GGUF file or a config.json).

    With ``client`` (a ``dask.distributed.Client``) the grid is split into ``partitions``
    ranges of points (default: two per worker), each swept in Rust on a worker; the rows are
    those of the local sweep, in the same order. With ``out`` as well, each worker writes its
    part to ``out/part-NNNNN.parquet`` (a Parquet dataset) and the paths are returned.

    Grids beyond ``CHUNK_POINTS`` points are swept in chunks: a progress bar (tqdm, in a
    notebook too, when installed; ``progress=False`` hides it, ``True`` shows it for any
    size), and Ctrl-C stops the sweep after the chunk in flight."""
    if isinstance(base, (str, os.PathLike)) and not isinstance(base, Mapping):
        if grid is not None:
            raise SpecError("`grid`: give either an experiment file or a base scenario with a grid")
        path = os.fspath(base)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise MemwallIOError(f"{path}: {e}") from None
        origin = path
    elif isinstance(base, Mapping):
        text, origin = _experiment_text(base, grid or {}, name), "python"
    else:
        raise SpecError(f"`base`: a mapping or an experiment file, not a {type(base).__name__}")
    if client is not None:
        return _distributed(text, origin, client, partitions, None if out is None else os.fspath(out))
    if out is not None:
        raise SpecError("`out`: writing partitions needs a `client`; write a local result with pyarrow.parquet")
    return _local(text, origin, progress)


def estimate(model: str, device: str, weights: str = "Q4_K_M", **workload: Any) -> dict:
    """One design point: footprint, decode and prefill speed, energy and the binding term, as a
    dict of the same columns a sweep has. ``workload`` sets ``workload.*`` fields
    (``context_tokens``, ``prompt_tokens``, ``gen_tokens``, ``batch``, ``threads``, ...);
    ``kv`` sets the KV format of K and V (``"q8_0"``) and ``engine`` the engine profile."""
    base: dict[str, Any] = {"model": model, "device": device, "weights": {"mix": weights}}
    kv = workload.pop("kv", None)
    if kv is not None:
        base["kv"] = {"k": kv, "v": kv}
    engine = workload.pop("engine", None)
    if engine is not None:
        base["engine"] = engine
    if workload:
        base["workload"] = dict(workload)
    try:
        rows = sweep(base).to_pyarrow().to_pylist()
    except MemwallError as e:
        # The scenario was built here: name its fields as the caller wrote them.
        field = getattr(e, "field", None)
        if isinstance(field, str) and field.startswith("base."):
            e.field = field[len("base."):]
        raise
    return rows[0]
