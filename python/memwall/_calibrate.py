"""Calibration from Python (native `calibrate` module): calibrate() and the ``Calibration``
it returns."""

from __future__ import annotations

import json
import os
from typing import Any

from . import _native
from ._errors import bad as _bad
from ._specs import Device, Engine, Model
from ._validate import _file_or_name


class Calibration:
    """A calibrated ``device`` and ``engine`` (use them together), ``table`` (a pyarrow Table:
    per llama-bench row the measured and predicted tok/s before and after, or per fitted
    figure its value and 95 % interval), for llama-bench rows ``not_fitted`` (the figures the
    file could not pin, each with why: a file without generation or prompt tests) and, for a
    host, ``measurements_csv``."""

    def __init__(self, profiles: dict, table):
        self.device = Device(json.loads(profiles["device_json"]))
        self.engine = Engine(json.loads(profiles["engine_json"]))
        self.table = table
        self.measurements_csv: str | None = profiles.get("measurements_csv")
        self.not_fitted: list[str] = list(profiles.get("not_fitted", []))
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
    ``device``, run by ``engine``): from its generation tests (``tgN``) fit the unit's
    bandwidth share and the engine's fixed costs and KV reads there, from its prompt tests
    (``ppN``) the engine's prefill efficiency; ``Calibration.not_fitted`` lists what the file
    could not pin (the residual table's ``phase`` tells the rows apart). With ``host=True``: probe this machine with memwall's kernels and
    engine (``quick``: about 2 minutes) and fit a device and an engine profile with 95 %
    intervals. ``Calibration.write(path)`` saves the profiles as ``memwall calibrate`` does.

    From llama-bench output, rows that cannot be ``model`` on ``device`` raise ``SpecError``
    naming the line and field: another model's parameter count or size, a rate that is 0,
    negative, not finite or above what the device's peak bandwidth (a prompt test: its peak
    arithmetic) allows, or a fit that ends
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
    assert llama_bench is not None  # checked above: a file unless `host`
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
