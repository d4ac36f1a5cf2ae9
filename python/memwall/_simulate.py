"""The discrete-event simulator from Python (native `simulate` module): simulate() and the
``Simulation`` it returns."""

from __future__ import annotations

import os
from typing import Any, Callable, Mapping, Sequence

from . import _native
from ._arrow import _figure_size
from ._answers import _strip_base
from ._errors import bad as _bad
from ._experiment import Results, _bar, _experiment_text, _read_experiment
from ._specs import design


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
    labels: Mapping[str, Sequence[str]] | None = None,
    trace: bool = True,
    trace_limit: str = "2GB",
    progress: bool | None = None,
    plot: str | os.PathLike[str] | None = None,
    plot_size: tuple[int, int] = (1100, 1000),
    **kwargs: Any,
) -> Simulation:
    """Simulate a design through time with the discrete-event simulator: thermal throttling,
    memory pressure and background apps, the session's turns and pauses, policies.

    ``model`` and ``device`` as in ``design`` (``sim={...}`` sets ``sim.*``: ``session``,
    ``thermal``, ``policies``, ``background``, ``duration_s``, ...); or ``model`` is a whole
    base scenario (a mapping) or an experiment TOML file and ``device`` is None. ``grid``
    simulates every point, ``labels`` naming an axis's values as in ``sweep`` (the summary's label
    column). ``duration`` (seconds or ``"10m"``) overrides ``sim.duration_s`` and
    repeats the session's turns until then. A progress bar (tqdm) shows simulated time;
    Ctrl-C stops the run. ``plot="run.pdf"`` (or ``.svg``, ``.png``) draws the time figure
    ``memwall simulate --plot`` draws — generation rate, die and skin temperature, unit and
    DRAM power, clock, one colour per point, kills, policy actions and background events
    marked — ``plot_size`` (width, height) pixels (points in a PDF); the path is checked
    before the run and written whole after it."""
    import pyarrow as pa


    if device is None and isinstance(model, Mapping):
        base, text = dict(model), None
    elif device is None and isinstance(model, (str, os.PathLike)):
        if labels is not None:
            raise _bad("labels", repr(labels), "`labels`: an experiment file names its values in its [labels] table")
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
            assert base is not None  # a design or a base mapping, when no experiment file
            text = _experiment_text(base, grid or {}, "simulate", labels=labels)
            exp = _native.parse_experiment(text, "python")
        else:
            exp = _native.parse_experiment(text, os.fspath(model))
        limit_bytes = _bytes(trace_limit)
        size = _figure_size(plot_size, "plot_size")
        plot_path = None if plot is None else os.fspath(plot)
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
                exp,
                duration_s=duration_s,
                trace=trace,
                trace_limit_bytes=limit_bytes,
                progress=tick,
                plot=plot_path,
                plot_size=size,
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
