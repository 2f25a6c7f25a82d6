"""The ``frameselect`` command line. It parses arguments and calls the Python API.

Sub-commands live in :mod:`frameselect.cli.commands`, one module each, every
module exposing ``add_parser(subparsers)``; they are found automatically.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import frameselect.cli.commands as commands_pkg
from frameselect._version import __version__
from frameselect.errors import FrameselectError

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="frameselect", description="Video frame selection: run, compare and replay selectors.")
    parser.add_argument("--version", action="version", version=f"frameselect {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for info in sorted(pkgutil.iter_modules(commands_pkg.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{commands_pkg.__name__}.{info.name}")
        module.add_parser(sub)
    return parser


#: the exit status when the reader of our output went away (128 + SIGPIPE, as a shell reports it)
EXIT_BROKEN_PIPE = 141


def _silence_stdout() -> None:
    """Point standard output at the null device, so the interpreter's last flush finds no closed pipe."""
    if sys.stdout is not sys.__stdout__ or sys.stdout is None:
        return  # output redirected inside this process (a test's capture): nothing of ours to silence
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill PID``), unwound like Ctrl-C: transactions roll back, workers end, the interrupt is reported."""


def _on_sigterm(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    raise Terminated()


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """While a command runs, SIGTERM raises :class:`Terminated` in the main thread (then the previous handler returns)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    finally:
        if previous is not None:  # None: a handler not installed from Python, which cannot be restored from here
            signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        with _sigterm_as_interrupt():
            return int(args.func(args) or 0)
    except BrokenPipeError:  # `frameselect list | head`: the reader has gone; stop quietly (stored results are whole)
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except FrameselectError as exc:
        print(f"frameselect: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        print("frameselect: interrupted; stored samples are kept, run the same command to resume", file=sys.stderr)
        return 128 + signal.SIGTERM if isinstance(exc, Terminated) else 130


if __name__ == "__main__":
    sys.exit(main())
