"""Type stubs of memwall's native module (checked against it by mypy's stubtest)."""

from typing import Any, Callable, Sequence, final

__all__ = [
    "calibrate_host",
    "calibrate_llama_bench",
    "describe",
    "footprint",
    "metadata",
    "parse_duration",
    "parse_experiment",
    "beside",
    "write_texts",
    "parse_backend",
    "parse_bytes",
    "parse_format",
    "ops",
    "parse_mix",
    "pareto_mask",
    "presets",
    "simulate",
    "solve",
    "spec_json",
    "validate_devices",
    "validate_host",
    "ArrowStream",
    "Experiment",
    "MemwallError",
    "SpecError",
    "GgufError",
    "ConfigError",
    "MemwallIOError",
    "CalibrationError",
    "SimulationError",
]

class MemwallError(Exception):
    field: str | None
    value: str | None

class SpecError(MemwallError): ...
class GgufError(MemwallError): ...
class ConfigError(MemwallError): ...
class MemwallIOError(MemwallError): ...
class CalibrationError(MemwallError): ...
class SimulationError(MemwallError): ...

@final
class ArrowStream:
    def __arrow_c_stream__(self, requested_schema: Any | None = None) -> Any: ...
    def __len__(self) -> int: ...
    def buffer_address(self, column: str) -> int: ...

@final
class Experiment:
    def __len__(self) -> int: ...
    def sweep(
        self, start: int | None = None, end: int | None = None, progress: Callable[[int], object] | None = None
    ) -> ArrowStream: ...

def parse_experiment(text: str, origin: str) -> Experiment: ...
def presets(kind: str) -> list[str]: ...
def parse_duration(text: str) -> float: ...
def parse_mix(field: str, text: str) -> str: ...
def parse_format(field: str, text: str) -> str: ...
def parse_backend(field: str, text: str) -> str: ...
def parse_bytes(field: str, text: str) -> int: ...
def beside(path: str, suffix: str) -> str: ...
def write_texts(outputs: list[tuple[str, str, str]], inputs: list[str]) -> None: ...
def solve(
    experiment: Experiment, question: str, target_tok_s: float | None = None, max_ppl_delta: float | None = None
) -> str: ...
def pareto_mask(
    point: Sequence[int],
    fits: Sequence[bool],
    total_bytes: Sequence[int],
    decode_tok_s: Sequence[float],
    ppl_delta_weights: Sequence[float | None],
    ppl_delta_kv: Sequence[float | None],
    energy_j_per_token: Sequence[float],
) -> list[bool]: ...
def spec_json(kind: str, source: str) -> str: ...
def describe(kind: str, source: str | None = None, json: str | None = None) -> dict[str, Any]: ...
def footprint(experiment: Experiment) -> tuple[str, ArrowStream]: ...
def ops(experiment: Experiment) -> tuple[int, ArrowStream]: ...
def simulate(
    experiment: Experiment,
    start: int | None = None,
    end: int | None = None,
    duration_s: float | None = None,
    trace: bool = True,
    trace_limit_bytes: int = 2000000000,
    progress: Callable[[int, float], object] | None = None,
) -> tuple[ArrowStream, ArrowStream | None]: ...
def metadata(experiment: Experiment) -> list[tuple[str, str]]: ...
def validate_devices(table: str | None = None) -> tuple[ArrowStream, list[tuple[str, str]]]: ...
def validate_host(host: str, tokens: int = 8, only: str | None = None) -> ArrowStream: ...
def calibrate_llama_bench(
    path: str, device: str, model: str, engine: str
) -> tuple[dict[str, str], ArrowStream]: ...
def calibrate_host(
    name: str = "host",
    quick: bool = True,
    threads: int | None = None,
    progress: Callable[[str], object] | None = None,
) -> tuple[dict[str, str], ArrowStream]: ...
