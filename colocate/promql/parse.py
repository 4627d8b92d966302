"""Parse one expression with ``promql_parser`` (a Rust port of the Prometheus parser): its
selectors and AST, cached per process."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import promql_parser as pp

from colocate.promql.grafana import as_written


@dataclass(frozen=True)
class Selector:
    """A vector selector: its metric name ("" when chosen by regex) and its matchers."""

    name: str
    #: (label, op, value) with op one of = != =~ !~.
    matchers: tuple[tuple[str, str, str], ...]

    def __str__(self) -> str:
        inner = ",".join(f'{label}{op}"{as_written(value)}"' for label, op, value in self.matchers)
        return f"{self.name}{{{inner}}}" if inner else self.name


@dataclass(frozen=True)
class Analysis:
    """What one expression reads. ``error`` is the parser's message when it does not parse."""

    error: str = ""
    selectors: tuple[Selector, ...] = ()
    ast: Any = None


# promql_parser's enums are unhashable; key by their str() ("MatchOp.Equal").
_OPS = {str(pp.MatchOp.Equal): "=", str(pp.MatchOp.NotEqual): "!=", str(pp.MatchOp.Re): "=~",
        str(pp.MatchOp.NotRe): "!~"}


def selector_of(node: pp.VectorSelector) -> Selector:
    matchers = tuple((m.name, _OPS[str(m.op)], m.value) for m in node.matchers.matchers)
    name = node.name or next((v for label, op, v in matchers if label == "__name__" and op == "="), "")
    return Selector(name, tuple(m for m in matchers if m[0] != "__name__"))


@lru_cache(maxsize=8192)
def analyse(expr: str) -> Analysis:
    """Parse one expression (cached: the same query is analysed once per process)."""
    try:
        ast = pp.parse(expr)
    except ValueError as exc:
        return Analysis(error=str(exc))
    selectors: list[Selector] = []
    error = ""

    def visit(node: Any) -> None:
        nonlocal error
        if isinstance(node, pp.VectorSelector):
            if node.matchers.or_matchers:
                error = "'or' inside a label selector needs Prometheus 3; the pinned Prometheus is 2.48"
            selectors.append(selector_of(node))

    pp.walk(ast, visit)
    return Analysis(error, tuple(selectors), ast)


def matches_empty(op: str, value: str) -> bool | None:
    """Does the matcher ``label<op>"value"`` accept a series that lacks the label (value "")?
    ``None`` when the regex is not one Python can judge (then no claim is made)."""
    if op in ("=", "!="):
        return (value == "") == (op == "=")
    try:
        full = re.fullmatch(value, "") is not None
    except re.error:
        return None
    return full == (op == "=~")
