"""``frameselect list KIND [PATTERN]``: the registered parts of one kind."""

from __future__ import annotations

import argparse
import sys

from frameselect.registry import REGISTRIES, get_registry


def _summary(obj: object) -> str:
    doc = (getattr(obj, "__doc__", None) or "").strip().splitlines()
    return doc[0] if doc else ""


def run(args: argparse.Namespace) -> int:
    reg = get_registry(args.kind)
    names = reg.names(args.pattern)
    width = max((len(n) for n in names), default=0)
    for name in names:
        line = f"{name:<{width}}  {_summary(reg.get(name))}" if args.verbose else name
        print(line.rstrip())
    for name, error in reg.broken_plugins().items():  # listed, not silently dropped: the list itself still works
        print(f"frameselect: warning: {reg.singular} plug-in {name!r} failed to load and is not listed: {error}", file=sys.stderr)
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("list", help="list registered selectors, encoders, evaluators, datasets, answerers or routers")
    p.add_argument("kind", choices=sorted(REGISTRIES))
    p.add_argument("pattern", nargs="?", default="*", help="wildcard filter, e.g. 'k*'")
    p.add_argument("-v", "--verbose", action="store_true", help="show each part's one-line summary")
    p.set_defaults(func=run)
