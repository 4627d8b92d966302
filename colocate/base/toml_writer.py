"""A small TOML writer for the files colocate writes for containerd (TOML v1.0.0, toml.io).

Sorted keys and one layout, so the same document always gives the same bytes: a table's own
keys first, then its sub-tables, each under a ``[dotted.header]``. Only the value types those
files use: strings, booleans, integers, lists of them, and tables.
"""
from __future__ import annotations

import json
import re
from typing import Any, Mapping

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _string(value: str) -> str:
    # JSON's escapes (\" \\ \b \f \n \r \t \uXXXX) are all TOML basic-string escapes; TOML also
    # refuses a raw DEL, which JSON leaves alone.
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007F")


def _key(key: str) -> str:
    if not isinstance(key, str) or not key:
        raise TypeError(f"TOML keys are non-empty strings, not {key!r}")
    return key if _BARE_KEY.match(key) else _string(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):  # before int: bool is an int in Python
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(f"no TOML value for {value!r}")


def _table(table: Mapping[str, Any], path: tuple[str, ...], out: list[str]) -> None:
    own = [k for k in sorted(table) if not isinstance(table[k], Mapping)]
    subtables = [k for k in sorted(table) if isinstance(table[k], Mapping)]
    # A header only where the table has keys of its own, or would otherwise not exist at all.
    if path and (own or not subtables):
        if out:
            out.append("")
        out.append("[" + ".".join(_key(p) for p in path) + "]")
    out.extend(f"{_key(k)} = {_value(table[k])}" for k in own)
    for k in subtables:
        _table(table[k], (*path, k), out)


def dumps(document: Mapping[str, Any], comment: str = "") -> str:
    """``document`` as TOML text, after ``comment`` (one ``#`` line per line of it)."""
    out = [f"# {line}".rstrip() for line in comment.splitlines()]
    _table(document, (), out)
    return "\n".join(out) + "\n"
