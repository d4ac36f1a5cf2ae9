"""Parquet files from Python through memwall's writer (native `arrow` module)."""

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
