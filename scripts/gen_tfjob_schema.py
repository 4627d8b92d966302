#!/usr/bin/env python3
"""Write policies/schemas/kubeflow.org/tfjob_v1.json, the strict kubeconform schema for TFJob.

Usage: .venv/bin/python scripts/gen_tfjob_schema.py [--check]

--check  write nothing; exit 1 if the committed file differs from a fresh generation.
The logic and its sources are documented in colocate/tfjob_schema.py.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from colocate import tfjob_schema  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the committed file is stale")
    args = parser.parse_args(argv)

    text = tfjob_schema.generate()
    target = tfjob_schema.SCHEMA_FILE
    rel = target.relative_to(tfjob_schema.ROOT)
    current = target.read_text(encoding="utf-8") if target.exists() else None
    if args.check:
        if current != text:
            print(f"{rel} is stale: run scripts/gen_tfjob_schema.py", file=sys.stderr)
            return 1
        print(f"{rel} is up to date")
        return 0
    if current == text:
        print(f"{rel} unchanged ({len(text.encode())} bytes)")
        return 0
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    print(f"wrote {rel} ({len(text.encode())} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
