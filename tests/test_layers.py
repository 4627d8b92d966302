"""The layer contract (pyproject.toml [tool.importlinter], docs/architecture.md "Layers"): the tree
keeps it, and the real lint-imports fails on a copy of the tree with a forbidden import."""
from __future__ import annotations

import shutil
from pathlib import Path

from colocate import ROOT
from tests.helpers import VENV_BIN, run

#: What lint-imports reads: the packages' sources, the contract and its contract types.
_PACKAGES = ("colocate", "constructs", "charts", "policies")


def _lint_imports(root: Path):
    # From the root: lint-imports puts the working folder first on sys.path, so a copy's own
    # colocate package is the one analysed, and tools/layers_contracts.py is found there.
    # A wide console: lint-imports wraps its report at the terminal's width.
    proc = run([str(VENV_BIN / "lint-imports"), "--no-cache"], cwd=root, env={"COLUMNS": "200"})
    return proc.returncode, proc.stdout + proc.stderr


def _copy_sources(dest: Path) -> Path:
    for package in _PACKAGES:
        for source in (ROOT / package).rglob("*.py"):
            target = dest / source.relative_to(ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
    (dest / "tools").mkdir()
    shutil.copyfile(ROOT / "tools" / "layers_contracts.py", dest / "tools" / "layers_contracts.py")
    shutil.copyfile(ROOT / "pyproject.toml", dest / "pyproject.toml")
    return dest


def _add_import(path: Path, line: str) -> None:
    text = path.read_text()
    head, sep, rest = text.partition("from __future__ import annotations\n")
    assert sep, path
    path.write_text(head + sep + line + "\n" + rest)


def test_the_tree_keeps_the_contract():
    code, out = _lint_imports(ROOT)
    assert code == 0, out
    assert "Contracts: 5 kept, 0 broken." in out, out


def test_the_model_importing_the_simulation_breaks_the_layers(tmp_path):
    root = _copy_sources(tmp_path / "tree")
    # The unchanged copy passes: what fails below is the added import alone.
    assert _lint_imports(root)[0] == 0
    _add_import(root / "colocate" / "model" / "pods.py", "import colocate.simulate.observe  # noqa")
    code, out = _lint_imports(root)
    assert code == 1, out
    assert "colocate.model is not allowed to import colocate.simulate" in out, out
    assert "colocate.model.pods -> colocate.simulate.observe" in out, out


def test_a_check_importing_a_construct_breaks_the_generator_checker_split(tmp_path):
    root = _copy_sources(tmp_path / "tree")
    _add_import(root / "policies" / "checks" / "nodes.py", "from colocate.constructs import node_pool  # noqa")
    code, out = _lint_imports(root)
    assert code == 1, out
    assert "The checker does not import the generator BROKEN" in out, out
    assert "colocate.policies.checks.nodes -> colocate.constructs.node_pool" in out, out


def test_every_module_of_the_package_is_on_a_layer():
    """A module on no line of the contract is checked by nothing: each new one gets a line."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in config["contracts"] if c["type"] == "colocate_layers")["layers"]
    listed = {name.strip() for line in layers for name in line.replace("|", ":").split(":")}
    package = ROOT / "colocate"
    children = {f"colocate.{p.stem}" for p in package.glob("*.py") if p.stem != "__init__"}
    children |= {f"colocate.{p.parent.name}" for p in package.glob("*/__init__.py")}
    children |= {f"colocate.{folder}" for folder in ("constructs", "charts", "policies")}
    assert children - listed == set(), "add these to a line of [tool.importlinter]'s layers in pyproject.toml"
    assert listed - children == set(), "these layers name no module"


def test_a_new_module_takes_the_line_of_its_folder(tmp_path):
    """No contract edit for a new module: one added under base/ is held to base's line."""
    root = _copy_sources(tmp_path / "tree")
    (root / "colocate" / "base" / "new_helper.py").write_text(
        "from __future__ import annotations\n\nimport colocate.checker.formats  # noqa\n")
    code, out = _lint_imports(root)
    assert code == 1, out
    assert "colocate.base.new_helper -> colocate.checker.formats" in out, out


def _contract_lines() -> list[list[str]]:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in config["contracts"] if c["type"] == "colocate_layers")["layers"]
    return [[name.strip() for name in line.replace("|", ":").split(":")] for line in layers]


def _diagram() -> list[str]:
    text = (ROOT / "docs" / "architecture.md").read_text()
    block = text.split("## Layers", 1)[1].split("```", 2)[1]
    return block.splitlines()


def _diagram_path(module: str) -> str:
    tail = module.removeprefix("colocate.")
    if tail in ("constructs", "charts", "policies"):
        return f"{tail}/"
    return f"colocate/{tail}.py" if (ROOT / "colocate" / f"{tail}.py").is_file() else f"colocate/{tail}/"


def test_the_architecture_picture_is_the_contract():
    """docs/architecture.md's layer picture names every line's packages, top to bottom in the
    contract's order, and nothing the tree lacks."""
    diagram = _diagram()
    last = -1
    for line in _contract_lines():
        rows = set()
        for module in line:
            path = _diagram_path(module)
            found = [i for i, row in enumerate(diagram) if f" {path}" in f" {row}"]
            assert found, f"docs/architecture.md's layer picture does not name {path}"
            rows.add(found[0])
        assert min(rows) > last, f"docs/architecture.md puts {line} above a line the contract puts higher"
        last = max(rows)


def test_every_colocate_path_the_guides_name_exists():
    import re

    for guide in ("docs/architecture.md", "CONTRIBUTING.md"):
        for path in sorted(set(re.findall(r"colocate/[\w/.]*[\w/]", (ROOT / guide).read_text()))):
            assert (ROOT / path).exists(), f"{guide} names {path}, which is not in the tree"


def test_the_top_of_the_package_stays_small():
    entries = {p.name for p in (ROOT / "colocate").iterdir() if p.name != "__pycache__"}
    assert len(entries) <= 17, sorted(entries)
