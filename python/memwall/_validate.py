"""Validation from Python (native `validate` module): validate()."""

from __future__ import annotations

import os
from typing import Any, Sequence

from . import _native
from ._errors import bad as _bad
from ._experiment import Results
from ._specs import _Spec


def _file_or_name(cls: type[_Spec], v: Any, what: str) -> str:
    if isinstance(v, cls) and v._source is not None:
        return v._source
    if isinstance(v, (str, os.PathLike)):
        return os.fspath(v)
    raise _bad(what, repr(v), f"`{what}`: a preset name, a file or an unchanged {cls.__name__} read from one")


def validate(
    *,
    devices: bool = False,
    energy: bool = False,
    sustained: bool = False,
    host: str | os.PathLike[str] | None = None,
    table: str | os.PathLike[str] | None = None,
    tokens: int = 8,
    repeats: int = 3,
    only: str | Sequence[str] | None = None,
):
    """Check predictions against measurements. ``devices=True``: leave-one-device-out over
    the published decode and prefill measurements (``table``, default the shipped one); the
    report has per row its ``phase`` (``decode`` or ``prefill``: prefill rows are predicted
    with the decode figures fitted without their device), the measured, cross-validated
    predicted, in-sample and roofline tok/s, and ``.excluded`` lists the rows set aside. ``host=PATH``: run memwall's engine here on the
    validation designs (those whose id contains ``only``, or one of a list of substrings)
    and predict each with the host
    profile at PATH (``PATH.engine.toml`` beside it); each design is timed ``repeats`` times,
    interleaved with the others in rounds, and reported as the median with ``noise`` (the
    relative half-range of its runs) and ``measured_min_tok_s``/``measured_max_tok_s``. ``energy=True``: published power and
    energy per token (``table``, default the shipped ``energy_measurements.csv``) against
    memwall's, each at the boundary its source measured (``boundary``: ``battery_above_idle``,
    ``board``, ``package``, ``units``), with ``.excluded`` the rows set aside.
    ``sustained=True``: published sustained runs (``table``, default the shipped
    ``sustained_validation.csv``) simulated on the presets' thermal networks or their class
    networks: retained fraction, time to -25 %, early ends, hottest die and the OS thermal
    status reached, with ``.excluded`` the rows set aside. Returns ``memwall.Results``."""
    import pyarrow as pa

    if sum([bool(devices), bool(energy), bool(sustained), host is not None]) != 1:
        raise _bad(
            "validate",
            None,
            "`validate`: give one of `devices=True`, `energy=True`, `sustained=True` or `host` (a host profile)",
        )
    if energy or sustained:
        native = _native.validate_energy if energy else _native.validate_sustained
        report, excluded = native(None if table is None else os.fspath(table))
        r = Results(table=pa.table(report))
        r.excluded = excluded
        return r
    if devices:
        report, excluded = _native.validate_devices(None if table is None else os.fspath(table))
        r = Results(table=pa.table(report))
        r.excluded = excluded
        return r
    assert host is not None  # one of the four was given, checked above
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
        raise _bad("tokens", repr(tokens), f"invalid `tokens` = {tokens!r}: time at least one token")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise _bad("repeats", repr(repeats), f"invalid `repeats` = {repeats!r}: time every design at least once")
    if only is None or isinstance(only, str):
        return Results(
            table=pa.table(_native.validate_host(os.fspath(host), tokens=tokens, repeats=repeats, only=only))
        )
    parts = [pa.table(_native.validate_host(os.fspath(host), tokens=tokens, repeats=repeats, only=o)) for o in only]
    return Results(table=pa.concat_tables(parts))
