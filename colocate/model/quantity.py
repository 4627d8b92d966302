"""Kubernetes resource quantities: parse to integers, print in canonical form.

Canonical output matters: the API server rewrites ``1000m`` to ``1`` and ``1024Mi`` to
``1Gi``, and Argo CD then shows the object as OutOfSync forever (docs/gitops.md).
"""
from __future__ import annotations

import re
from decimal import MAX_PREC, Decimal, InvalidOperation, localcontext
from functools import lru_cache

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
            "k": Decimal(10**3), "M": Decimal(10**6), "G": Decimal(10**9), "T": Decimal(10**12),
            "P": Decimal(10**15), "E": Decimal(10**18)}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")


def parse(value: str | int | float) -> Decimal:
    """Return the quantity as a Decimal in base units (cores, bytes, devices)."""
    if type(value) in (str, int, float):  # the same few spellings, in every pod of a tree
        return _parsed(value)
    return _parse(value)


@lru_cache(maxsize=4096, typed=True)
def _parsed(value: str | int | float) -> Decimal:
    return _parse(value)


def _parse(value: str | int | float) -> Decimal:
    text = str(value).strip()
    match = _QUANTITY.match(text)
    if not match:
        raise ValueError(f"{value!r} is not a Kubernetes quantity (e.g. 500m, 2, 4Gi)")
    try:
        number = Decimal(match.group(1))
    except InvalidOperation as exc:
        raise ValueError(f"{value!r} is not a Kubernetes quantity") from exc
    suffix = match.group(2) or ""
    return _exact_product(number, _BINARY[suffix] if suffix in _BINARY else _DECIMAL[suffix])


def _exact_product(number: Decimal, factor: Decimal | int) -> Decimal:
    """``number * factor`` without rounding: the default context keeps 28 digits, so
    99999999999999999999999999Ti came out as 107374182399999999999999998925781250Ki."""
    with localcontext() as context:
        context.prec = MAX_PREC  # a product of two finite decimals is exact at any precision
        return number * factor


def is_quantity(value: object) -> bool:
    try:
        parse(value)  # type: ignore[arg-type]
    except ValueError:
        return False
    return True


def millicores(value: str | int | float) -> int:
    """CPU quantity in millicores, rounded up as the kubelet does."""
    return _millicores(value) if type(value) in (str, int, float) else _to_millicores(value)


def to_bytes(value: str | int | float) -> int:
    return _bytes(value) if type(value) in (str, int, float) else _to_bytes(value)


def _to_millicores(value: str | int | float) -> int:
    milli = _exact_product(parse(value), 1000)
    return int(milli.to_integral_value(rounding="ROUND_CEILING"))


def _to_bytes(value: str | int | float) -> int:
    return int(parse(value).to_integral_value(rounding="ROUND_CEILING"))


# The same few spellings in every pod of a tree, as for parse.
_millicores = lru_cache(maxsize=4096, typed=True)(_to_millicores)
_bytes = lru_cache(maxsize=4096, typed=True)(_to_bytes)


def format_cpu(milli: int) -> str:
    """``1000`` -> ``"1"``, ``500`` -> ``"500m"``: the form the API server keeps."""
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def format_bytes(count: int) -> str:
    """Largest exact binary suffix: ``4294967296`` -> ``"4Gi"``."""
    for suffix, factor in sorted(_BINARY.items(), key=lambda item: -item[1]):
        if count and count % factor == 0:
            return f"{count // factor}{suffix}"
    return str(count)


def format_bytes_readable(count: int) -> str:
    """For tables people read: the largest exact binary suffix, else the largest exact decimal one
    (``1000000000`` -> ``"1G"``), else binary rounded to one decimal (``"~1.4Gi"``); never raw bytes
    past 1 Ki."""
    exact = format_bytes(count)
    if not exact.isdigit() or count < 1024:
        return exact
    for suffix, factor in (("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if count % factor == 0:
            return f"{count // factor}{suffix}"
    for suffix, factor in sorted(_BINARY.items(), key=lambda item: -item[1]):
        if count >= factor:
            return f"~{count / factor:.1f}{suffix}"
    return exact


def canonical(value: str | int | float, kind: str) -> str:
    """Canonical text of a quantity: kind ``cpu`` uses cores/millicores, others binary bytes."""
    if kind == "cpu":
        return format_cpu(millicores(value))
    number = parse(value)
    if number != number.to_integral_value():
        raise ValueError(f"{value!r} is not a whole number of {kind}")
    return format_bytes(int(number)) if kind == "memory" else str(int(number))
