"""`colocate check` on every input form kubectl and Argo CD accept, and on hostile input: the
exit code says what happened (0 clean, 1 findings, 2 bad input, 3 our bug, 130 interrupted) and
no input produces a Python traceback."""
from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from colocate import ROOT, cli
from colocate.base.go_builds import environment
from colocate.rules import files as rule_files
from tests.helpers import colocate, VENV_BIN, yaml_load_all
from tests.policies.rule_cases import cases

FIXTURES = ROOT / "tests" / "policies" / "fixtures"
IMAGE = "harbor.example.com/library/busybox:1.36"


def config_map(name: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
            "data": data}


def job(**metadata: str) -> dict:
    """A Job that passes every rule, with the metadata given."""
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"namespace": "training", **metadata},
            "spec": {"template": {"spec": {
                "restartPolicy": "Never", "priorityClassName": "offline-batch",
                "containers": [{"name": "main", "image": IMAGE,
                                "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}],
                                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                                              "limits": {"cpu": "100m", "memory": "64Mi"}}}]}}}}


def write(path: Path, content: str | bytes | list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, list):
        content = yaml.safe_dump_all(content, sort_keys=False)
    if isinstance(content, str):
        content = content.encode()
    path.write_bytes(content)
    return path


def checked(*args: str, code: int) -> subprocess.CompletedProcess:
    """Run the console script; assert the exit code and that nothing leaked a traceback."""
    proc = colocate("check", *args)
    assert proc.returncode == code, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    return proc


def findings(proc: subprocess.CompletedProcess) -> list[dict]:
    return json.loads(proc.stdout)["findings"]


# --- every input form ------------------------------------------------------------------------


def test_json_files_in_a_folder_are_checked_by_the_rules(tmp_path):
    bad = {**config_map("from-json"), "metadata": {"name": "from-json"}}
    write(tmp_path / "m" / "cm.json", json.dumps(bad, indent="\t"))
    proc = checked(str(tmp_path / "m"), "--format", "json", code=1)
    assert [(f["rule"], f["name"], f["line"]) for f in findings(proc)] == [("COL007", "from-json", 1)]


def test_a_second_object_in_a_json_file_exits_2(tmp_path):
    path = write(tmp_path / "two.json", json.dumps(config_map("a")) + "\n" + json.dumps(config_map("b")))
    proc = checked(str(path), code=2)
    assert f"{path}:2: a second JSON object: Argo CD reads one object per .json file" in proc.stderr


def test_list_items_are_checked_and_the_list_has_no_namespace_finding(tmp_path):
    items = [config_map("ok"), {**config_map("no-ns"), "metadata": {"name": "no-ns"}}]
    write(tmp_path / "list.yaml", [{"apiVersion": "v1", "kind": "List", "items": items}])
    proc = checked(str(tmp_path), "--format", "json", code=1)
    assert [(f["rule"], f["kind"], f["name"]) for f in findings(proc)] == [("COL007", "ConfigMap", "no-ns")]
    assert findings(proc)[0]["line"] == 10  # the second item's own line
    assert json.loads(proc.stdout)["summary"]["objects"] == 2


def test_typed_lists_are_expanded_too(tmp_path):
    items = [config_map("one"), config_map("one")]
    write(tmp_path / "list.yaml", [{"apiVersion": "v1", "kind": "ConfigMapList", "metadata": {}, "items": items}])
    proc = checked(str(tmp_path), "--format", "json", code=1)
    assert [(f["rule"], f["kind"], f["name"]) for f in findings(proc)] == [("COL006", "ConfigMap", "one")]


def test_any_object_with_items_is_a_list_and_null_items_an_empty_one(tmp_path):
    """As Argo CD reads them; kubeconform expands only kind: List, so it reports the unknown kind."""
    item = {**config_map("in"), "metadata": {"name": "in"}}
    write(tmp_path / "lists.yaml", [{"apiVersion": "example.com/v1", "kind": "Bundle", "items": [item]},
                                    {"apiVersion": "v1", "kind": "ConfigMapList", "items": None}])
    proc = checked(str(tmp_path), "--format", "json", code=1)
    assert [(f["rule"], f["kind"], f["name"]) for f in findings(proc)] == [
        ("SCHEMA", "Bundle", ""), ("COL007", "ConfigMap", "in")]
    assert json.loads(proc.stdout)["summary"]["objects"] == 1


def test_objects_with_generate_name_are_not_duplicates(tmp_path):
    write(tmp_path / "jobs.yaml", [job(generateName="migrate-"), job(generateName="migrate-")])
    proc = checked(str(tmp_path), code=0)
    assert "checked 2 objects" in proc.stdout


def test_a_path_given_twice_is_checked_once(tmp_path):
    path = write(tmp_path / "m" / "cm.yaml", [config_map("once")])
    proc = checked(str(tmp_path / "m"), str(path), str(tmp_path / "m" / ".." / "m" / "cm.yaml"), code=0)
    assert "checked 1 objects" in proc.stdout and "kubeconform: 1 valid" in proc.stdout


def test_yaml_1_1_oddities_load_as_kubectl_reads_them(tmp_path):
    """A bare `=` (as in an AlertmanagerConfig matcher), a base-60 looking time and a date are
    strings for go-yaml v2; PyYAML's defaults aborted the run or turned them into numbers and dates."""
    write(tmp_path / "odd.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: odd, namespace: default}\n"
                                 "data:\n  op: =\n  at: 10:30\n  day: 2024-01-31\n")
    checked(str(tmp_path), code=0)
    # kubectl reads `y` as true, which the API server rejects in a string field: so does the schema check.
    write(tmp_path / "odd.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: odd, namespace: default}\n"
                                 "data:\n  flag: y\n")
    proc = checked(str(tmp_path), "--format", "json", code=1)
    assert [f["rule"] for f in findings(proc)] == ["SCHEMA"]


def test_helm_and_kustomize_folders_are_reported_and_the_rest_is_checked(tmp_path):
    write(tmp_path / "plain" / "cm.yaml", [config_map("plain")])
    write(tmp_path / "chart" / "Chart.yaml", "apiVersion: v2\nname: c\nversion: 0.1.0\n")
    write(tmp_path / "chart" / "templates" / "cm.yaml", "data: {{ .Values.x }}\n")
    write(tmp_path / "overlay" / "kustomization.yaml", "resources: [cm.yaml]\n")
    write(tmp_path / "overlay" / "cm.yaml", [{**config_map("overlay"), "metadata": {"name": "overlay"}}])
    proc = checked(str(tmp_path), code=0)
    lines = [line.strip() for line in proc.stdout.splitlines() if line.strip().startswith("WARNING INPUT")]
    assert len(lines) == 2, proc.stdout
    assert f"{tmp_path / 'chart'}" in lines[0] and "not plain manifests: a Helm chart (Chart.yaml)" in lines[0]
    assert f"helm template {tmp_path / 'chart'}" in lines[0]
    assert "not plain manifests: a Kustomize folder (kustomization.yaml)" in lines[1]
    assert f"kustomize build {tmp_path / 'overlay'}" in lines[1]
    assert "checked 1 objects" in proc.stdout and "kubeconform: 1 valid, 0 invalid, 0 errors" in proc.stdout


def test_only_a_kustomize_folder_is_bad_input_with_the_hint(tmp_path):
    write(tmp_path / "kustomization.yaml", "resources: []\n")
    proc = checked(str(tmp_path), code=2)
    assert "no Kubernetes objects found" in proc.stderr and f"kustomize build {tmp_path}" in proc.stderr


# --- hostile input --------------------------------------------------------------------------


def test_a_binary_file_exits_2_with_file_and_line(tmp_path):
    path = write(tmp_path / "x.yaml", b"apiVersion: v1\nkind: ConfigMap\n\x00\x01\x02\xff")
    proc = checked(str(path), code=2)
    assert f"{path}:3: NUL byte: a binary file" in proc.stderr


def test_a_non_utf8_file_exits_2_with_file_and_line(tmp_path):
    path = write(tmp_path / "x.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: caf\xe9}\n".encode("latin-1"))
    proc = checked(str(path), code=2)
    assert f"{path}:3: not UTF-8 text (byte 0xe9)" in proc.stderr


def test_a_control_character_exits_2_with_file_and_line(tmp_path):
    path = write(tmp_path / "x.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\x07b\n")
    proc = checked(str(path), code=2)
    assert f"{path}:4: control character U+0007 is not allowed in YAML" in proc.stderr


def test_a_symlink_loop_exits_2(tmp_path):
    (tmp_path / "a.yaml").symlink_to(tmp_path / "b.yaml")
    (tmp_path / "b.yaml").symlink_to(tmp_path / "a.yaml")
    proc = checked(str(tmp_path), code=2)
    assert f"{tmp_path / 'a.yaml'}: symbolic link loop" in proc.stderr


def test_a_folder_linking_to_itself_is_walked_once(tmp_path):
    write(tmp_path / "cm.yaml", [config_map("once")])
    (tmp_path / "again").symlink_to(tmp_path)
    proc = checked(str(tmp_path), code=0)
    assert "checked 1 objects" in proc.stdout


def test_an_unreadable_file_exits_2(tmp_path):
    path = write(tmp_path / "x.yaml", [config_map("secret")])
    path.chmod(0)
    if os.access(path, os.R_OK):
        # root reads any mode; a procfs file with no read operation is unreadable even for root.
        path.unlink()
        path.symlink_to("/proc/sys/vm/compact_memory")
    proc = checked(str(tmp_path), code=2)
    assert f"{path}: cannot read the file: Permission denied" in proc.stderr


def test_deep_nesting_and_yaml_bombs_exit_2(tmp_path):
    # Below libyaml's own depth limit, above Python's recursion limit.
    deep = write(tmp_path / "deep.yaml", "a: " + "[" * 900 + "]" * 900 + "\n")
    assert f"{deep}:1: nested too deeply" in checked(str(deep), code=2).stderr
    deeper = write(tmp_path / "deeper.yaml", "a: " + "[" * 5000 + "]" * 5000 + "\n")
    assert f"{deeper}:1: not valid YAML: exceeded maximum nesting depth" in checked(str(deeper), code=2).stderr
    deep_json = write(tmp_path / "deep.json", '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert f"{deep_json}:1: nested too deeply" in checked(str(deep_json), code=2).stderr
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
    path = write(tmp_path / "bomb.yaml", bomb)
    assert f"{path}:1: aliases expand the document too much" in checked(str(path), code=2).stderr


def _run_with(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(VENV_BIN / "colocate"), *args], cwd=ROOT, env={**environment(), **env},
                          capture_output=True, text=True)


def test_kubeconform_that_cannot_start_exits_2(tmp_path):
    broken = write(tmp_path / "kubeconform", b"\x7fELF not really")
    broken.chmod(0o755)
    proc = _run_with({"KUBECONFORM": str(broken)}, "check", "dist")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{broken}: kubeconform did not start: Exec format error; colocate runs kubeconform v0.7.0" in proc.stderr
    assert "make" not in proc.stderr


def test_kubeconform_that_fails_exits_2(tmp_path):
    failing = write(tmp_path / "kubeconform", "#!/bin/sh\necho 'fatal: out of memory' >&2\nexit 7\n")
    failing.chmod(0o755)
    proc = _run_with({"KUBECONFORM": str(failing)}, "check", "dist")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{failing}: kubeconform failed (exit 7): fatal: out of memory" in proc.stderr


_BROKEN_CHECK = ("import sys; from colocate import checker, cli\n"
                 "def broken(*args): raise KeyError('oops')\n"
                 "checker.check = broken\n"
                 "sys.exit(cli.main(sys.argv[1:]))\n")


def test_an_internal_error_exits_3_with_one_line_and_debug_shows_the_trace():
    proc = subprocess.run([sys.executable, "-c", _BROKEN_CHECK, "check", "dist"], cwd=ROOT, env=environment(),
                          capture_output=True, text=True)
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.splitlines() == ["colocate: internal error: KeyError: 'oops' (a bug in colocate; "
                                        "rerun with --debug for the trace)"]
    for argv in (["--debug", "check", "dist"], ["check", "--debug", "dist"]):
        proc = subprocess.run([sys.executable, "-c", _BROKEN_CHECK, *argv], cwd=ROOT, env=environment(),
                              capture_output=True, text=True)
        assert proc.returncode == 3 and "Traceback (most recent call last)" in proc.stderr, proc.stderr
        assert "in broken\nKeyError: 'oops'" in proc.stderr


def _children(pid: int) -> list[str]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return path.read_text().split() if path.exists() else []


def test_ctrl_c_prints_interrupted_and_exits_130(tmp_path):
    # Enough objects that kubeconform is still running when the signal comes.
    write(tmp_path / "many.yaml", [config_map(f"cm-{i}", a="b" * 100) for i in range(20000)])
    # A test run started in the background (`make test &`, nohup) inherits SIGINT ignored, and
    # Python then installs no handler: give the child the default disposition, as a terminal does.
    proc = subprocess.Popen([str(VENV_BIN / "colocate"), "check", str(tmp_path)], cwd=ROOT, env=environment(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.default_int_handler))
    deadline = time.monotonic() + 30
    while not _children(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    kubeconform = _children(proc.pid)
    assert kubeconform, "kubeconform never started"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert err.strip() == "colocate: interrupted" and "Traceback" not in err
    # Killed (by colocate, or by the kernel as colocate exits): gone, or a zombie, within moments.
    child = Path(f"/proc/{kubeconform[0]}")

    def alive() -> bytes | None:
        try:
            return None if (child / "stat").read_text().split()[2] == "Z" else (child / "cmdline").read_bytes()[:200]
        except OSError:
            return None
    deadline = time.monotonic() + 5
    while alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(), f"left running: {alive()!r}"


def test_check_help_lists_the_exit_codes():
    proc = colocate("check", "--help")
    assert proc.returncode == 0
    for code, meaning in (("0", "no finding at or above --fail-on"), ("1", "at least one finding at or above --fail-on"),
                          ("2", "unusable input"), ("3", "internal error"), ("130", "interrupted")):
        assert any(line.split()[:1] == [code] and meaning in line for line in proc.stdout.splitlines()), code



def test_simulate_help_names_every_shipped_scenario():
    """A scenario added to colocate/simulate/scenarios/ shows in --help without editing the CLI."""
    from colocate.simulate import scenario
    proc = colocate("simulate", "--help")
    assert proc.returncode == 0
    assert f"a shipped scenario ({', '.join(scenario.shipped())}; default night)" in " ".join(proc.stdout.split())

# --- property: mutated manifests never crash the checker --------------------------------------

PASSING = cases(rule_files.read_rules(), "pass")  # fixture files and rule files' examples
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                     st.text(max_size=12), st.sampled_from(["=", "y", "10:30", "2024-01-01", "~", "<<", "0o17",
                                                            "1e3", "{{ .Values.x }}", "\x07", "*a"]))
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                          st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                       max_leaves=6)


def _nodes(value, path=()):
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _nodes(item, path + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _nodes(item, path + (i,))


def _mutate(docs: list, data) -> list:
    for _ in range(data.draw(st.integers(1, 4), label="mutations")):
        paths = [p for p in _nodes(docs) if p]
        path = data.draw(st.sampled_from(paths), label="path")
        parent = docs
        for key in path[:-1]:
            parent = parent[key]
        action = data.draw(st.sampled_from(["replace", "delete", "wrap"]), label="action")
        if action == "replace":
            parent[path[-1]] = data.draw(_VALUES, label="value")
        elif action == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = [parent[path[-1]]]
    return docs


def _text_mutation(text: str, data) -> str:
    at = data.draw(st.integers(0, len(text)), label="at")
    how = data.draw(st.sampled_from(["insert", "truncate"]), label="how")
    if how == "truncate":
        return text[:at]
    return text[:at] + data.draw(st.text(max_size=4), label="inserted") + text[at:]


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(st.data())
def test_mutated_manifests_never_crash_the_checker(data):
    fixture = data.draw(st.sampled_from(PASSING), label="fixture")
    docs = [d for d in yaml_load_all(fixture.manifest()) if d is not None]
    text = yaml.safe_dump_all(_mutate(docs, data), sort_keys=False, allow_unicode=True)
    if data.draw(st.booleans(), label="text mutation"):
        text = _text_mutation(text, data)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / fixture.name
        path.write_text(text)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(["check", str(path)])
        out, err = out.getvalue(), err.getvalue()
    assert code in (0, 1, 2), f"exit {code} on {fixture.where}:\n{text}\n{err}"
    assert "Traceback" not in out + err and "internal error" not in err, err


@pytest.mark.parametrize("count", [[2], "two", True, {"n": 2}])
def test_a_replica_count_of_the_wrong_type_is_a_schema_error_not_a_crash(tmp_path, count):
    """Found by the mutation test above: capacity arithmetic read ``replicas: [2]`` with int()."""
    docs = [d for d in yaml_load_all((ROOT / "tests/policies/fixtures/COL051/pass.yaml").read_text()) if d]
    for doc in docs:
        if doc["kind"] == "Deployment":
            doc["spec"]["replicas"] = count
    path = tmp_path / "deployment.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["check", str(path)])
    assert code == 1 and "SCHEMA" in out.getvalue() and "internal error" not in err.getvalue(), err.getvalue()


@pytest.mark.parametrize("kind", ["PriorityClass", "Namespace", "ConfigMap"])
def test_labels_that_are_not_a_mapping_are_a_schema_finding_not_a_crash(tmp_path, kind):
    """Found by test_mutated_manifests_never_crash_the_checker: metadata.labels wrapped in a list
    reached COL011's tier lookup (and the namespace tiers, the dashboard sidecar label, Pod
    Security) as a list, and check stopped with an internal error (exit 3)."""
    obj = {"apiVersion": "v1", "kind": kind, "metadata": {"name": "x", "labels": [{"colocate.io/tier": "online"}]}}
    if kind == "PriorityClass":
        obj = {**obj, "apiVersion": "scheduling.k8s.io/v1", "value": 1000}
    if kind == "ConfigMap":
        obj["metadata"]["namespace"] = "monitoring"
        obj["data"] = {"d.json": json.dumps({"panels": []})}
    proc = checked(str(write(tmp_path / "x.yaml", [obj])), code=1)
    assert "SCHEMA" in proc.stdout and "internal error" not in proc.stderr


@pytest.mark.parametrize("fixture, mutate, culprit, partner", [
    # capacity's LimitRange rule reads the max of the pods' namespace: a string there breaks it
    # only when a pod meets it.
    ("COL052/pass.yaml", lambda docs: docs[1]["spec"]["limits"][0].update(max="2"), "Deployment/", "LimitRange/"),
    # A Prometheus whose monitor selector is a list selects no monitor (the API server refuses it).
    ("COL220/pass.rendered-prometheus.yaml", lambda docs: docs[0]["spec"].update(serviceMonitorSelector=[]), None, None),
])
def test_a_field_that_breaks_a_rule_only_with_another_object_is_an_error_naming_both(tmp_path, fixture, mutate,
                                                                                     culprit, partner):
    """Found by the property test above: each object reads well alone, and together they raised
    (exit 3). The rule now names the pair and judges the rest; kubeconform names the bad field."""
    docs = [d for d in yaml_load_all((ROOT / "tests/policies/fixtures" / fixture).read_text()) if d is not None]
    mutate(docs)
    path = tmp_path / "objects.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    proc = colocate("check", str(path))
    assert proc.returncode == 1 and "internal error" not in proc.stderr, proc.stdout + proc.stderr
    assert "INVALID" in proc.stdout or "schema" in proc.stdout.lower(), proc.stdout
    lines = [line for line in proc.stdout.splitlines() if "cannot judge" in line]
    if culprit:
        assert len(lines) == 1 and culprit in lines[0] and f"together with {partner}" in lines[0], proc.stdout
    else:
        assert not lines, proc.stdout
