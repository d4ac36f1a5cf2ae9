"""The ``memwall`` command that ``pip install`` puts on the PATH: the command line the Rust
binary has (``memwall --help``), run in this process from the package's native module."""

from __future__ import annotations

import os
import pathlib
import sys
from typing import Sequence

# The web page the package ships (scripts/build-web puts it there before a wheel is built):
# what `memwall ui` serves unless --dir or MEMWALL_WEB names another.
_PAGE = pathlib.Path(__file__).resolve().parent / "web"


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``memwall`` with ``argv`` (default: this process's arguments) and return its exit
    status; as a console command, exit with it. SIGINT and SIGTERM are the command line's to
    handle (temporary outputs removed, exit 130/143), as in the binary."""
    from ._native import cli

    args = ["memwall", *(sys.argv[1:] if argv is None else list(argv))]
    if (_PAGE / "index.html").is_file():
        os.environ.setdefault("MEMWALL_WEB", str(_PAGE))
    # Python's own output first, so that the native writes land after it.
    sys.stdout.flush()
    sys.stderr.flush()
    return cli(args, handle_signals=argv is None)


def _console() -> None:
    sys.exit(main())
