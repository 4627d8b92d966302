"""GitHub Actions workflows: actionlint finds nothing, and every action is pinned to a commit."""
from __future__ import annotations

import re


from colocate import ROOT
from tests.helpers import run, yaml_load

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ACTIONLINT = ROOT / "bin" / "actionlint"
INSTALL_HINT = "run `make bootstrap` (builds actionlint into bin/ with go install)"
#: ``owner/repo[/path]@<commit> # vX.Y.Z``: the commit runs, the tag says which release it is.
_PINNED = re.compile(r"^\s*(?:-\s+)?uses:\s+[\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+$")
#: Actions whose release commit could not be verified offline; pin them when it can be.
UNPINNED = {"azure/setup-kubectl@v4"}


def test_there_are_workflows():
    assert WORKFLOWS, "no .github/workflows/*.yml"


def test_actionlint_finds_nothing():
    assert ACTIONLINT.is_file(), f"bin/actionlint is missing: {INSTALL_HINT}"
    # shellcheck and pyflakes are optional in actionlint; off, so every machine lints alike.
    proc = run([str(ACTIONLINT), "-oneline", "-shellcheck=", "-pyflakes=", *map(str, WORKFLOWS)])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_action_is_pinned_to_a_commit_with_its_tag_in_a_comment():
    loose = []
    for path in WORKFLOWS:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.match(r"^\s*(?:-\s+)?uses:", line) and not _PINNED.match(line) \
                    and line.split("uses:", 1)[1].strip() not in UNPINNED:
                loose.append(f"{path.name}:{number}: {line.strip()}")
    assert not loose, "pin each action to a release commit, `uses: owner/repo@<sha> # vX.Y.Z`:\n" + "\n".join(loose)


def test_ci_checks_dist_runs_the_tests_and_comments_the_diff():
    steps = yaml_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())["jobs"]["synth-and-test"]["steps"]
    runs = [s.get("run", "") for s in steps]
    assert any("colocate synth --check" in r for r in runs)
    assert any(r.strip() == "make test" for r in runs)
    assert any("colocate diff" in r and "--format markdown" in r for r in runs)
    script = next(s["with"]["script"] for s in steps if "github-script" in s.get("uses", ""))
    assert "updateComment" in script and "<!-- colocate-diff -->" in script
