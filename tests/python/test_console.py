"""The installed package: the `memwall` command `pip install` puts beside the interpreter is
the binary's command line (same output, same exit statuses), callable in-process without
taking over the session's Ctrl-C, and the wheel declares the pyarrow its API returns."""

import importlib.metadata
import os
import pathlib
import signal
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONSOLE = pathlib.Path(sys.prefix) / ("Scripts" if os.name == "nt" else "bin") / "memwall"


@pytest.fixture(scope="session")
def binary(memwall_binary):
    return memwall_binary


def run(exe, *args):
    return subprocess.run([str(exe), *args], capture_output=True, text=True, cwd=ROOT)


def test_the_console_command_is_installed_with_the_package():
    assert CONSOLE.is_file(), f"no memwall command at {CONSOLE}"
    requires = importlib.metadata.requires("memwall") or []
    assert any(r.startswith("pyarrow") for r in requires), requires


@pytest.mark.parametrize(
    "args",
    [
        ["presets", "devices"],
        ["estimate", "--model", "qwen3-0.6b", "--device", "raspberry-pi-5-16gb", "--weights", "Q8_0", "--json"],
        ["footprint", "--model", "llama-3.2-1b", "--device", "pixel-8", "--context", "8192"],
        # Errors: exit 2 with the field and value named, the same words.
        ["estimate", "--model", "lama-3.2-1b", "--device", "pixel-8"],
        ["estimate", "--model", "llama-3.2-1b", "--device", "pixel-8", "--context", "-1"],
        ["no-such-command"],
    ],
)
def test_the_console_command_is_the_binarys_command_line(binary, args):
    a, b = run(CONSOLE, *args), run(binary, *args)
    assert (a.returncode, a.stdout, a.stderr) == (b.returncode, b.stdout, b.stderr)
    if args[0] == "no-such-command" or "lama-3.2-1b" in args or "-1" in args:
        assert a.returncode == 2 and a.stderr
    else:
        assert a.returncode == 0 and a.stdout


def test_the_command_line_runs_in_process_and_leaves_ctrl_c_alone(tmp_path, capfd):
    from memwall._cli import main

    before = signal.getsignal(signal.SIGINT)
    assert main(["presets", "engines"]) == 0
    assert "llama.cpp" in capfd.readouterr().out
    assert main(["estimate", "--model", "nope", "--device", "pixel-8"]) == 2
    assert "nope" in capfd.readouterr().err
    assert signal.getsignal(signal.SIGINT) is before
