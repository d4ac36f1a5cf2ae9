"""Errors raised on the Python side, shaped like those raised in Rust."""

from __future__ import annotations

from typing import Any

from ._native import SpecError


def bad(field: str, value: Any, message: str) -> SpecError:
    """A SpecError naming ``field`` and ``value`` (None when there is none)."""
    e = SpecError(message)
    e.field = field  # type: ignore[attr-defined]
    e.value = None if value is None else str(value)  # type: ignore[attr-defined]
    return e
