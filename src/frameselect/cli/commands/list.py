"""``frameselect list [KIND [PATTERN]]``: the kinds of registered parts, or the parts of one kind."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from frameselect.registry import Registry, get_registry

#: every registry the command lists, by kind, with a one-line description: the kinds of a run's
#: plan and the streaming selectors (``frameselect.registry.REGISTRIES``), then the registries that
#: live beside their parts; these are imported only when listed (tests/test_cli_list.py keeps this
#: table equal to the registries in the source)
KINDS: dict[str, str] = {
    "selectors": "pick k frames of one video (frameselect.selectors)",
    "encoders": "frame and text features (frameselect.encoders)",
    "evaluators": "metrics of a selection or an answer (frameselect.evaluators)",
    "datasets": "videos with questions and annotations (frameselect.datasets)",
    "answerers": "answer a question from the selected frames (frameselect.answerers)",
    "routers": "give each question its own frame budget (frameselect.routing)",
    "streaming": "select frames of a stream as it arrives (frameselect.streaming)",
    "budget_policies": "share a total budget among the videos of a cross-video question (frameselect.crossvideo)",
    "joint_selectors": "select frames across several videos at once (frameselect.crossvideo)",
    "token_models": "visual-token cost of frames for one VLM family (frameselect.tokens)",
    "budget_choosers": "how many frames a question gets, within a cap (frameselect.routing.chooser)",
}


def registry_of(kind: str) -> Registry[Any]:
    """The registry ``frameselect list KIND`` shows (importing a registry that lives beside its parts)."""
    if kind == "budget_policies":
        from frameselect.crossvideo._registry import budget_policies

        return budget_policies
    if kind == "joint_selectors":
        from frameselect.crossvideo._registry import joint_selectors

        return joint_selectors
    if kind == "token_models":
        from frameselect.tokens import token_models

        return token_models
    if kind == "budget_choosers":
        from frameselect.routing.chooser import budget_choosers

        return budget_choosers
    return get_registry(kind)


def run(args: argparse.Namespace) -> int:
    if args.kind is None:
        width = max(len(k) for k in KINDS)
        for kind, about in KINDS.items():
            print(f"{kind:<{width}}  {about}" if args.verbose else kind)
        return 0
    reg = registry_of(args.kind)
    names = reg.names(args.pattern)
    width = max((len(n) for n in names), default=0)
    for name in names:
        line = f"{name:<{width}}  {_summary(reg.get(name))}" if args.verbose else name
        print(line.rstrip())
    for name, error in reg.broken_plugins().items():  # listed, not silently dropped: the list itself still works
        print(f"frameselect: warning: {reg.singular} plug-in {name!r} failed to load and is not listed: {error}", file=sys.stderr)
    return 0


def _summary(obj: object) -> str:
    doc = (getattr(obj, "__doc__", None) or "").strip().splitlines()
    return doc[0] if doc else ""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "list",
        help="list the kinds of parts, or the registered parts of one kind",
        description="Without KIND: the kinds of parts. With KIND: its registered names.",
    )
    p.add_argument("kind", nargs="?", choices=list(KINDS), metavar="KIND", help="one of: " + ", ".join(KINDS))
    p.add_argument("pattern", nargs="?", default="*", help="wildcard filter, e.g. 'k*'")
    p.add_argument("-v", "--verbose", action="store_true", help="show each kind's or part's one-line summary")
    p.set_defaults(func=run)
