"""Policy impact: ``colocate check`` on both trees; the findings the change introduces and resolves."""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from colocate import checker
from colocate.checker import Finding


@dataclass(frozen=True)
class PolicyImpact:
    introduced: tuple[Finding, ...]
    resolved: tuple[Finding, ...]


def findings(root: Path, config_path: Path | None) -> set[Finding]:
    """Findings with file paths relative to ``root`` (the two trees live in different folders)
    and no line numbers (an unrelated edit above an object moves them)."""
    if not root.is_dir():
        return set()
    result = checker.check([root], config_path)
    return {replace(f, file=Path(f.file).resolve().relative_to(root.resolve()).as_posix(), line=0,
                    field_line=0)
            for f in result.findings}


def impact(base_root: Path, head_root: Path, base_config: Path | None, head_config: Path | None) -> PolicyImpact:
    """Each tree checked against its own revision's colocate.yaml (tree.config_at)."""
    before, after = findings(base_root, base_config), findings(head_root, head_config)
    def order(f):
        return (f.severity != "error", f.rule, f.file, f.field)

    return PolicyImpact(tuple(sorted(after - before, key=order)), tuple(sorted(before - after, key=order)))
