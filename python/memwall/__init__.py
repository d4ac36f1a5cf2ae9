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

from ._native import (
    ArrowStream,
    CalibrationError,
    ConfigError,
    GgufError,
    MemwallError,
    MemwallIOError,
    SimulationError,
    SpecError,
    parse_experiment,
    presets,
)

# Every memwall error names the field and value it is about, or None.
MemwallError.field = None  # type: ignore[attr-defined]
MemwallError.value = None  # type: ignore[attr-defined]

__all__ = [
    "Answer",
    "CalibrationError",
    "Calibration",
    "ConfigError",
    "Device",
    "Engine",
    "Estimate",
    "Footprint",
    "GgufError",
    "MemwallError",
    "MemwallIOError",
    "Model",
    "Quant",
    "Results",
    "SimulationError",
    "Simulation",
    "SpecError",
    "Workload",
    "calibrate",
    "compare",
    "design",
    "device_presets",
    "devices",
    "engines",
    "estimate",
    "footprint",
    "models",
    "ops",
    "pareto",
    "plot_sweep",
    "presets",
    "seconds",
    "simulate",
    "solve",
    "sweep",
    "validate",
    "write_parquet",
]


# One private module per native one (`crates/memwall-py/src/<module>.rs`).
from ._answers import Footprint, compare, estimate, footprint, ops, solve  # noqa: E402
from ._arrow import plot_sweep, write_parquet  # noqa: E402
from ._calibrate import Calibration, calibrate  # noqa: E402
from ._experiment import PROGRESS_POINTS, Results, pareto, sweep  # noqa: E402
from ._simulate import Simulation, seconds, simulate  # noqa: E402
from ._specs import (  # noqa: E402
    Device,
    Engine,
    Model,
    Quant,
    Workload,
    design,
    device_presets,
    devices,
    engines,
    models,
)
from ._types import Answer, Estimate  # noqa: E402
from ._validate import validate  # noqa: E402
