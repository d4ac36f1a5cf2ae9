"""Fixtures the Python tests share."""

import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def memwall_binary() -> pathlib.Path:
    """The `memwall` binary (debug build), built once per session: the command line the
    Python package is compared with."""
    subprocess.run(["cargo", "build", "-q", "-p", "memwall-cli"], cwd=ROOT, check=True)
    return ROOT / "target" / "debug" / "memwall"
