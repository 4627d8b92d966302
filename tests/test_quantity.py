from __future__ import annotations

import pytest

from colocate.model import quantity


@pytest.mark.parametrize("text, milli", [("1", 1000), ("500m", 500), ("1.5", 1500), ("0.1", 100), ("2k", 2_000_000)])
def test_millicores(text, milli):
    assert quantity.millicores(text) == milli


@pytest.mark.parametrize("text, count", [("4Gi", 4 * 2**30), ("500Mi", 500 * 2**20), ("1G", 10**9), ("128", 128)])
def test_bytes(text, count):
    assert quantity.to_bytes(text) == count


@pytest.mark.parametrize("value, kind, expected", [
    ("1000m", "cpu", "1"), ("1500m", "cpu", "1500m"), ("1024Mi", "memory", "1Gi"), ("4096Mi", "memory", "4Gi"),
    ("1000", "count", "1000"),
])
def test_canonical_is_what_the_api_server_keeps(value, kind, expected):
    assert quantity.canonical(value, kind) == expected


@pytest.mark.parametrize("bad", ["", "abc", "1.2.3", "5 Gi", "Gi"])
def test_rejects_non_quantities(bad):
    with pytest.raises(ValueError, match="quantity"):
        quantity.parse(bad)


_HUGE = "99999999999999999999999999"  # 26 digits: with a Ti factor, past Decimal's default 28 digits


@pytest.mark.parametrize("text, kind, exact", [
    (f"{_HUGE}Ti", "memory", int(_HUGE) * 2**40), (f"{_HUGE}Ei", "memory", int(_HUGE) * 2**60),
    (f"{_HUGE}9999", "cpu", int(_HUGE + "9999") * 1000), (f"{_HUGE}.999", "cpu", int(_HUGE + "999")),
])
def test_large_quantities_are_exact_integers(text, kind, exact):
    """The default 28-digit context printed 99999999999999999999999999Ti as
    107374182399999999999999998925781250Ki in a job file's message."""
    if kind == "cpu":
        assert quantity.millicores(text) == exact
    else:
        assert quantity.to_bytes(text) == exact
        assert quantity.format_bytes(quantity.to_bytes(text)) == text
    assert quantity.canonical(text, kind) == (text if kind == "memory" else quantity.format_cpu(exact))
