"""Sweeps (native `experiment` module): experiments from a base scenario and a grid, the
``Results`` they return, local and distributed runs, and the Pareto column."""

from __future__ import annotations

import os
import html
from typing import TYPE_CHECKING, Any, Mapping, Sequence, overload

if TYPE_CHECKING:
    import pandas
    import pyarrow

from . import _native
from ._errors import bad
from ._native import ArrowStream, MemwallIOError, parse_experiment
from ._specs import Device, Engine, Model, _Spec


def _toml_value(v: Any, path: str) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        if not -(2**63) <= v < 2**63:
            raise bad(path, v, f"invalid `{path}` = {v}: must be from -2^63 to 2^63 - 1 (TOML integers are 64-bit)")
        return str(v)
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            raise bad(path, v, f"invalid `{path}` = {v}: must be a finite number")
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x, f"{path}[{i}]") for i, x in enumerate(v)) + "]"
    if isinstance(v, _Spec):
        # A Model, Device or Engine wherever a name goes (a grid axis of objects).
        return _toml_value(v._value(), path)
    if isinstance(v, Mapping):
        # None is "not set" (TOML has no null).
        items = [(k, x) for k, x in v.items() if x is not None]
        return "{" + ", ".join(f"{_key(k)} = {_toml_value(x, f'{path}.{k}')}" for k, x in items) + "}"
    raise bad(path, repr(v), f"`{path}`: a {type(v).__name__} cannot be a memwall value")


def _key(k: str) -> str:
    if not isinstance(k, str):
        raise bad(repr(k), repr(k), f"`{k!r}`: keys are strings")
    return k if k.replace("_", "").replace("-", "").isalnum() else _toml_value(k, k)


def _read_experiment(path: str | os.PathLike, grid: Any) -> str:
    """The text of an experiment file (a grid comes with it, never beside it)."""
    if grid is not None:
        raise bad("grid", None, "`grid`: give either an experiment file or a base scenario with a grid")
    p = os.fspath(path)
    try:
        with open(p, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise MemwallIOError(f"{p}: {e}") from None


def _experiment_text(
    base: Mapping[str, Any],
    grid: Mapping[str, Sequence[Any]],
    name: str,
    pareto: Mapping[str, Any] | None = None,
    labels: Mapping[str, Sequence[str]] | None = None,
) -> str:
    lines = [f"name = {_toml_value(name, 'name')}", "[base]"]
    for k, v in base.items():
        lines.append(f"{_key(k)} = {_toml_value(v, k)}")
    lines.append("[grid]")
    for k, values in grid.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
            raise bad(f"grid.{k}", repr(values), f"invalid `grid.{k}`: a grid axis is a list of values")
        lines.append(f"{_toml_value(k, 'grid')} = {_toml_value(list(values), f'grid.{k}')}")
    if labels is not None:
        # An experiment's [labels]: display names of an axis's values, one per value (the
        # label columns of sweeps and summaries; memwall checks them against the grid).
        if not isinstance(labels, Mapping):
            raise bad("labels", repr(labels), "`labels`: a mapping of grid keys to one name per value")
        lines.append("[labels]")
        for k, names in labels.items():
            if isinstance(names, (str, bytes)) or not isinstance(names, Sequence):
                raise bad(f"labels.{k}", repr(names), f"invalid `labels.{k}`: a list of names, one per value")
            lines.append(f"{_toml_value(k, 'labels')} = {_toml_value(list(names), f'labels.{k}')}")
    if pareto is not None:
        if not isinstance(pareto, Mapping):
            raise bad("pareto", repr(pareto), "`pareto`: a mapping with `by` and/or `objectives`")
        lines.append("[pareto]")
        for k, v in pareto.items():
            v = [v] if isinstance(v, str) else v
            lines.append(f"{_key(k)} = {_toml_value(v, f'pareto.{k}')}")
    return "\n".join(lines) + "\n"


class Results:
    """The rows of a sweep, simulation or validation. Arrow consumers take it directly
    (``pyarrow.table(r)``, ``polars.DataFrame(r)``) through ``__arrow_c_stream__``; the columns
    move from Rust into one pyarrow Table on first use (no copy), which every later read
    shares: a result can be read any number of times. ``metadata`` is what memwall writes
    into Parquet files beside the rows (version, commit, the experiment's TOML and seed, the
    specs it resolved to); ``write_parquet`` writes both. In a notebook it shows its first
    rows; ``head(n)`` gives them as a table."""

    def __init__(self, stream: ArrowStream | None = None, table: "pyarrow.Table | None" = None, metadata: Any = None):
        self._stream = stream
        self._table = table
        self._metadata = metadata
        self.excluded: list = []

    @property
    def metadata(self) -> dict[str, str]:
        """Key-value metadata of these rows (computed on first use)."""
        m = self._metadata
        if callable(m):
            m = self._metadata = dict(m())
        return dict(m or {})

    def __len__(self) -> int:
        return self._table.num_rows if self._table is not None else len(self._stream)  # type: ignore[arg-type]

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self.to_pyarrow().__arrow_c_stream__(requested_schema)

    def to_pyarrow(self) -> "pyarrow.Table":
        """The rows as a ``pyarrow.Table`` (moved from Rust once, then kept)."""
        if self._table is None:
            import pyarrow as pa

            self._table = pa.table(self._stream)
            self._stream = None
        return self._table

    def to_pandas(self) -> "pandas.DataFrame":
        """The rows as a pandas DataFrame (through pyarrow; needs pandas)."""
        return self.to_pyarrow().to_pandas()

    @property
    def columns(self) -> list[str]:
        """The column names."""
        return list(self.to_pyarrow().column_names)

    def head(self, n: int = 5) -> "pyarrow.Table":
        """The first ``n`` rows."""
        return self.to_pyarrow().slice(0, n)

    def __repr__(self) -> str:
        t = self.to_pyarrow()
        shown = ", ".join(t.column_names[:6]) + (", ..." if t.num_columns > 6 else "")
        return f"<memwall.Results: {t.num_rows} rows × {t.num_columns} columns ({shown})>"

    def _repr_html_(self, rows: int = 10) -> str:
        """The first ``rows`` rows as an HTML table (a notebook's display), scrollable sideways."""
        t = self.to_pyarrow()

        def cell(v: Any) -> str:
            if isinstance(v, float):
                return f"{v:.4g}"
            return html.escape("" if v is None else str(v))

        head = "".join(f"<th>{html.escape(c)}</th>" for c in t.column_names)
        body = "".join(
            "<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row.values()) + "</tr>"
            for row in t.slice(0, rows).to_pylist()
        )
        more = f"<p>{t.num_rows - rows} more rows</p>" if t.num_rows > rows else ""
        return (
            f"<p><b>memwall.Results</b>: {t.num_rows} rows × {t.num_columns} columns</p>"
            f'<div style="overflow-x:auto"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>{more}'
        )


def _sweep_part(text: str, origin: str, start: int, end: int, out: str | None, part: int, method: str = "analytic"):
    """One partition of a distributed sweep, on a worker: a pyarrow Table, or the path of the
    Parquet file it was written to."""
    import pyarrow as pa

    from memwall._native import parse_experiment as parse
    from memwall._native import simulate

    exp = parse(text, origin)
    if method == "des":
        table = pa.table(simulate(exp, start, end, trace=False)[0])
    else:
        table = pa.table(exp.sweep(start, end))
    if out is None:
        return table
    from ._arrow import write_parquet

    path = os.path.join(out, f"part-{part:05d}.parquet")
    write_parquet(table, path)
    return path


def _distributed(text: str, origin: str, client, partitions: int | None, out: str | None, method: str):
    n = len(parse_experiment(text, origin))
    workers = len(client.scheduler_info().get("workers", {})) or 1
    k = max(1, min(n, partitions or 2 * workers))
    starts = [i * n // k for i in range(k)]
    ends = [(i + 1) * n // k for i in range(k)]
    if out is not None:
        os.makedirs(out, exist_ok=True)
    futures = client.map(
        _sweep_part, [text] * k, [origin] * k, starts, ends, [out] * k, list(range(k)), [method] * k, pure=False
    )
    parts = client.gather(futures)
    if out is not None:
        return parts
    import pyarrow as pa

    exp = parse_experiment(text, origin)
    table = pa.concat_tables(parts)
    if method != "des":
        by, objectives, max_pct = exp.pareto_rule()
        table = pareto(table, by, objectives, max_ppl_increase_pct=max_pct)
    return Results(table=table, metadata=lambda: _native.metadata(exp))


def pareto(
    table,
    by: str | Sequence[str] | None = None,
    objectives: Sequence[str] | None = None,
    max_ppl_increase_pct: float | None = None,
) -> "pyarrow.Table":
    """``table`` (a pyarrow Table, ``Results``, anything with ``__arrow_c_stream__``) with its
    ``pareto`` column set (appended, or replaced) to the Pareto fronts of one question, as
    ``memwall run`` marks them (README, "Pareto front"): ``by`` names the columns whose values
    make a group, each group its own front (``by="workload.context_tokens"``: a front per
    context); ``objectives`` the numeric columns compared (``"max:decode_tok_s"``,
    ``"min:total_bytes"``, a bare name: more is better for ``_tok_s`` rates, less otherwise;
    ``"ppl_delta"`` adds the weights' and the KV cache's perplexity increase; a column you
    added serves too). Default: one front over memory, decode tok/s, quality and energy.
    ``max_ppl_increase_pct`` (the seed's thresholds: +5 acceptable, above +10 reconsider) makes
    only designs whose perplexity increase, % of the model's baseline, is known and within it
    eligible.

    Designs that do not fit (``fits``) are never on a front. A quality unknown on every design
    of a group that fits is left out of that group's front, and said: the fronts, with what
    each left out and how many designs could not be compared, are JSON in the schema metadata
    under ``pareto`` (``json.loads(t.schema.metadata[b"pareto"])``)."""
    import pyarrow as pa

    if isinstance(table, Results):
        table = table.to_pyarrow()
    by_list = [by] if isinstance(by, str) else list(by or [])
    objectives_list = [objectives] if isinstance(objectives, str) else list(objectives or [])
    if max_ppl_increase_pct is not None and (
        isinstance(max_ppl_increase_pct, bool) or not isinstance(max_ppl_increase_pct, (int, float))
    ):
        raise bad(
            "max_ppl_increase_pct",
            repr(max_ppl_increase_pct),
            f"invalid `max_ppl_increase_pct` = {max_ppl_increase_pct!r}: expected a number",
        )
    pct = None if max_ppl_increase_pct is None else float(max_ppl_increase_pct)
    stream, fronts = _native.pareto(table, by_list, objectives_list, pct)
    t = pa.table(stream)
    meta = dict(t.schema.metadata or {})
    meta[b"pareto"] = fronts.encode()
    return t.replace_schema_metadata(meta)


#: Grids of more points than this show a progress bar unless ``progress=False``.
PROGRESS_POINTS = 250_000


def _bar(total: float | None, desc: str, unit: str, delay: float):
    """A tqdm progress bar (in a notebook too) shown after `delay` seconds, or None without tqdm."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit=unit, delay=delay)


def _local(text: str, origin: str, progress: bool | None) -> Results:
    exp = parse_experiment(text, origin)
    n = len(exp)
    meta = lambda: _native.metadata(exp)  # noqa: E731
    shown = progress or (progress is None and n > PROGRESS_POINTS)
    bar = _bar(n, "memwall sweep", "pt", 0.0) if shown else None
    if bar is None:
        return Results(exp.sweep(), metadata=meta)
    try:
        stream = exp.sweep(progress=lambda done: bar.update(done - bar.n))
        bar.update(n - bar.n)
    finally:
        bar.close()
    return Results(stream, metadata=meta)


@overload
def sweep(
    base: Mapping[str, Any] | str | os.PathLike[str],
    grid: Mapping[str, Sequence[Any]] | None = None,
    *,
    name: str = "python",
    client: Any = None,
    partitions: int | None = None,
    out: None = None,
    progress: bool | None = None,
    method: str = "analytic",
    pareto: Mapping[str, Any] | None = None,
    engine: Any = None,
    labels: Mapping[str, Sequence[str]] | None = None,
) -> Results: ...


@overload
def sweep(
    base: Mapping[str, Any] | str | os.PathLike[str],
    grid: Mapping[str, Sequence[Any]] | None = None,
    *,
    name: str = "python",
    client: Any = None,
    partitions: int | None = None,
    out: str | os.PathLike[str],
    progress: bool | None = None,
    method: str = "analytic",
    pareto: Mapping[str, Any] | None = None,
    engine: Any = None,
    labels: Mapping[str, Sequence[str]] | None = None,
) -> list[str]: ...


def sweep(
    base: Mapping[str, Any] | str | os.PathLike[str],
    grid: Mapping[str, Sequence[Any]] | None = None,
    *,
    name: str = "python",
    client: Any = None,
    partitions: int | None = None,
    out: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    method: str = "analytic",
    pareto: Mapping[str, Any] | None = None,
    engine: Any = None,
    labels: Mapping[str, Sequence[str]] | None = None,
) -> Results | list[str]:
    """Evaluate every point of ``grid`` (dotted paths of the scenario to lists of values) over
    the ``base`` scenario (a mapping, e.g. from ``design()``) with the analytic estimator, or
    with ``method="des"`` the discrete-event simulator (one summary row per point: sustained
    tok/s under throttling, kills, ...); ``base`` may also be an experiment TOML file (then
    ``grid`` must be None). Model, device and inference engine (``base["engine"]``) take
    preset names, paths (TOML, a GGUF file or a config.json) or ``Model``/``Device``/``Engine``
    objects. Analytic results carry a ``pareto`` column: the designs no other design beats on
    memory, decode tok/s, estimated quality and J/token at once, among those that fit and
    whose quality is known (README, "Pareto front"); ``pareto={"by": [...], "objectives":
    [...]}`` asks another question (a front per group; see ``memwall.pareto``).
    ``labels={"workload.context_tokens": ["4K", "32K"]}`` names an axis's values (an
    experiment's ``[labels]``): the rows, analytic or simulated, carry them in a label column.

    With ``client`` (a ``dask.distributed.Client``) the grid is split into ``partitions``
    ranges of points (default: two per worker), each swept in Rust on a worker; the rows are
    those of the local sweep, in the same order. With ``out`` as well, each worker writes its
    part to ``out/part-NNNNN.parquet`` (a Parquet dataset) and the paths are returned; the
    ``pareto`` column of such a part marks the front of that part's points only
    (``memwall.pareto(table)`` recomputes it over the whole dataset).

    Grids beyond ``PROGRESS_POINTS`` points show a progress bar (tqdm, in a notebook too,
    when installed; ``progress=False`` hides it, ``True`` shows it for any size); Ctrl-C
    stops a sweep within a batch of points (``KeyboardInterrupt``)."""
    if engine is not None:
        raise bad(
            "engine",
            engine,
            f"`engine` = {engine!r} is not an argument of sweep: the inference engine is part of the design "
            "(base['engine'], or design(..., engine=...)); the evaluator is `method` ('analytic' or 'des')",
        )
    if method not in ("analytic", "des"):
        hint = _native.did_you_mean(str(method), ["analytic", "des"])
        raise bad("method", method, f"unknown `method` = {method!r}: the evaluator is 'analytic' or 'des'{hint}")
    if isinstance(base, (str, os.PathLike)) and not isinstance(base, Mapping):
        if pareto is not None:
            raise bad("pareto", repr(pareto), "`pareto`: an experiment file sets its front in its [pareto] table")
        if labels is not None:
            raise bad("labels", repr(labels), "`labels`: an experiment file names its values in its [labels] table")
        text, origin = _read_experiment(base, grid), os.fspath(base)
    elif isinstance(base, Mapping):
        text, origin = _experiment_text(_objects_to_values(base), grid or {}, name, pareto, labels), "python"
    else:
        raise bad("base", repr(base), f"`base`: a mapping or an experiment file, not a {type(base).__name__}")
    if client is not None:
        return _distributed(text, origin, client, partitions, None if out is None else os.fspath(out), method)
    if out is not None:
        raise bad("out", out, "`out`: writing partitions needs a `client`; write a local result with write_parquet")
    if method == "des":
        import pyarrow as pa

        exp = parse_experiment(text, origin)
        summary, _ = _native.simulate(exp, trace=False)
        return Results(table=pa.table(summary), metadata=lambda: _native.metadata(exp))
    return _local(text, origin, progress)


def _objects_to_values(base: Mapping[str, Any]) -> dict:
    """A base scenario whose model, device and engine may be objects, as plain values."""
    out = dict(base)
    for key, cls in (("model", Model), ("device", Device), ("engine", Engine)):
        if isinstance(out.get(key), cls):
            out[key] = out[key]._value()
    return out
