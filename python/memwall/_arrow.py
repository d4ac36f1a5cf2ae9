"""Parquet files and figures from Python through memwall's writers (native `arrow` module)."""

from __future__ import annotations

import os
from typing import Any, Mapping

from . import _native
from ._errors import bad
from ._experiment import Results


def write_parquet(results: Any, path: str | os.PathLike, metadata: Mapping[str, str] | None = None) -> str:
    """Write ``results`` (``Results``, a ``Simulation``'s ``summary``/``trace``, a pyarrow
    Table or anything with ``__arrow_c_stream__``) to a Parquet file with memwall's metadata
    (``results.metadata``) and ``metadata`` on the Arrow schema, where
    ``pyarrow.parquet.read_table(path).schema.metadata`` finds it. Written by the writer ``memwall
    run`` uses: the file appears whole or not at all (written beside the target, then renamed),
    and a path that is a directory, a FIFO or another non-regular file is refused. Returns the
    path."""
    import pyarrow as pa

    table = results.to_pyarrow() if isinstance(results, Results) else pa.table(results)
    old = table.schema.metadata or {}
    meta: dict[str, str] = {k.decode(errors="replace"): v.decode(errors="replace") for k, v in old.items()}
    if isinstance(results, Results):
        meta.update(results.metadata)
    for k, v in (metadata or {}).items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise bad("metadata", repr(k), f"invalid `metadata` entry {k!r}: keys and values are strings")
        meta[k] = v
    p = os.fspath(path)
    _native.write_parquet(table, p, list(meta.items()), [])
    return p


def plot_sweep(
    results: Any,
    path: str | os.PathLike[str],
    *,
    title: str = "memory vs decode rate",
    size: tuple[int, int] = (1000, 700),
) -> str:
    """Draw sweep results (``Results``, a pyarrow Table, anything with ``__arrow_c_stream__``
    holding ``point``, ``total_bytes``, ``decode_tok_s``, ``ppl_delta_weights``,
    ``ppl_delta_kv``, ``fits``, ``budget_bytes`` and ``pareto``) as the figure ``memwall run
    --plot`` draws: memory against decode tok/s, filled where a design fits, coloured by
    estimated dPPL, the Pareto front ringed and named by point, the budget marked when every
    design shares it. ``path`` ends in ``.pdf`` (vector, font embedded), ``.svg`` or ``.png``;
    ``size`` is (width, height) in pixels (points in a PDF), 200 to 8000 each. Written whole or
    not at all. Returns the path."""
    import pyarrow as pa

    table = results.to_pyarrow() if isinstance(results, Results) else pa.table(results)
    p = os.fspath(path)
    _native.plot_sweep(table, p, title, _figure_size(size, "size"))
    return p


def _figure_size(size: Any, field: str) -> str:
    """A figure's ``(width, height)`` as the ``WIDTHxHEIGHT`` text the native side parses
    (and bounds, naming ``field``); anything but a pair of whole numbers is refused here."""
    if (
        not isinstance(size, tuple)
        or len(size) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in size)
    ):
        raise bad(field, repr(size), f"invalid `{field}` = {size!r}: (width, height) in pixels")
    return f"{size[0]}x{size[1]}"
