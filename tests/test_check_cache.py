"""The verdict cache of `colocate check` (docs/check-cache.md): the same findings with and without
it, whatever changed between runs; a corrupt, foreign or misplaced cache is never trusted."""
from __future__ import annotations

import json
import mmap
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from colocate import checker
from colocate.checker import verdict_cache
from colocate.checker import formats as report
from colocate.errors import ColocateError
from colocate.model.names import IGNORE_ANNOTATION, TIER_LABEL
from tests.helpers import ROOT, colocate

DIST = ROOT / "dist"


def _outcome(folder: Path, cache: Path | None) -> tuple[str, str]:
    """The JSON report, or the error the check stopped with; and what the cache said."""
    try:
        result = checker.check([folder], cache=cache)
    except ColocateError as exc:
        return f"{type(exc).__name__}: {exc}", ""
    return report.to_json(result), result.cache


def _same(folder: Path, cache: Path) -> str:
    cached, said = _outcome(folder, cache)
    fresh, _ = _outcome(folder, None)
    assert cached == fresh
    return said


def _objects(path: Path) -> list:
    return [d for d in yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader) if d is not None]


def _copy_dist(tree: Path) -> None:
    """dist/ without the rendered charts' CRDs (6 MB of schema no rule reads beyond its identity):
    the same rules and cross-object reads, at a pace a property test can afford."""
    shutil.copytree(DIST, tree, ignore=shutil.ignore_patterns("customresourcedefinition.*.yaml"))


def _write(path: Path, objects: list) -> None:
    path.write_text(yaml.safe_dump_all(objects, sort_keys=False))


def _mutate(tree: Path, op: str, pick: int, value: int) -> None:
    """One edit of the kinds a user makes: a value, a namespace, a tier label, an annotation, an
    object copied or removed, a file that is not YAML, a file rewritten as it was."""
    files = sorted(tree.rglob("*.yaml"))
    if not files:
        return
    path = files[pick % len(files)]
    if op == "same":
        path.write_bytes(path.read_bytes())
        return
    if op == "garbage":
        path.write_text("kind: [unclosed\n" if value % 2 else "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
                        "data: {a: 1}\n---\n- a list, not an object\n")
        return
    if op == "remove":
        path.unlink()
        return
    try:
        objects = _objects(path)
    except yaml.YAMLError:
        return
    if not objects or not all(isinstance(o, dict) for o in objects):
        return
    obj = objects[value % len(objects)]
    meta = obj.setdefault("metadata", {}) if isinstance(obj.get("metadata", {}), dict) else {}
    if op == "copy":  # the same object twice (COL006), in another file
        other = files[(pick + 1 + value) % len(files)]
        try:
            _write(other, _objects(other) + [obj])
        except yaml.YAMLError:
            pass
        return
    if op == "namespace":
        meta["namespace"] = ("online", "training", "monitoring", "kube-system", "elsewhere")[value % 5]
    elif op == "tier":
        labels = meta.setdefault("labels", {})
        if value % 3 == 2:
            labels.pop(TIER_LABEL, None)
        else:
            labels[TIER_LABEL] = ("online", "offline")[value % 3]
    elif op == "ignore":
        rule = ("COL006", "COL001", "COL050", "COL051", "COL504", "COL999", "COL305")[value % 7]
        meta.setdefault("annotations", {})[IGNORE_ANNOTATION] = f"{rule}: tested" if value % 2 else f"{rule}:"
    elif op == "number":  # replicas, a PriorityClass value, a quota
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else obj
        spec["replicas" if "replicas" in spec or value % 2 else "value"] = value * 7 % 5000
    elif op == "image":
        text = json.dumps(obj).replace(":v", ":latest-v", 1)
        obj.clear()
        obj.update(json.loads(text))
    elif op == "rename":
        meta["name"] = f"renamed-{value % 4}"
    elif op == "drop":
        del objects[value % len(objects)]
    elif op == "add":  # a new object: object counts (COL051), duplicates (COL006)
        objects.append({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": f"added-{value % 3}", "namespace": ("online", "training")[value % 2]},
                        "data": {"n": str(value)}})
    elif op == "kind":  # another kind: what each cross-object rule reads of the file changes
        obj["kind"] = {"Deployment": "StatefulSet", "ConfigMap": "Secret", "PriorityClass": "PriorityClass",
                       "Namespace": "Namespace"}.get(obj.get("kind"), "ConfigMap")
    elif op == "first":  # the file's first object last (COL305 reads each file's first object)
        objects.append(objects.pop(0))
    _write(path, objects)


def _cross(tree: Path, op: str, pick: int, value: int) -> None:
    """An edit of an object a cross-object rule reads, found wherever the tree has one: a quota's
    limit, a PriorityClass's value, a recording rule's query, an Application's path, a dashboard's
    label, a Namespace's pod security level."""
    edits = {
        "quota": ("ResourceQuota", lambda o: o.setdefault("spec", {}).setdefault("hard", {}).update(
            {("pods", "count/configmaps", "requests.cpu")[value % 3]: str(value % 7)})),
        "priority": ("PriorityClass", lambda o: o.update(value=value * 1000 % 2_000_000)),
        "query": ("PrometheusRule", lambda o: o["spec"]["groups"][0]["rules"][0].update(
            expr=("sum(not_a_metric_%d)" % value, "rate(container_cpu_usage_seconds_total[5m])")[value % 2])),
        "path": ("Application", lambda o: o.setdefault("spec", {}).setdefault("source", {}).update(
            path=f"dist/apps/nowhere-{value % 2}")),
        "dashboard": ("ConfigMap", lambda o: o.setdefault("metadata", {}).setdefault("labels", {}).pop(
            "grafana_dashboard", None)),
        "podsecurity": ("Namespace", lambda o: o.setdefault("metadata", {}).setdefault("labels", {}).update(
            {"pod-security.kubernetes.io/enforce": ("restricted", "baseline", "privileged")[value % 3]})),
    }
    kind, edit = edits[op]
    found = []
    for path in sorted(tree.rglob("*.yaml")):
        try:
            objects = _objects(path)
        except yaml.YAMLError:
            continue
        found += [(path, objects, i) for i, o in enumerate(objects) if isinstance(o, dict) and o.get("kind") == kind]
    if not found:
        return
    path, objects, i = found[pick % len(found)]
    try:
        edit(objects[i])
    except (KeyError, IndexError, TypeError, AttributeError):
        return
    _write(path, objects)


OPS = ("same", "garbage", "remove", "copy", "namespace", "tier", "ignore", "number", "image", "rename", "drop", "add",
       "kind", "first")
CROSS_OPS = ("quota", "priority", "query", "path", "dashboard", "podsecurity")


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 200), st.integers(0, 10_000)),
                         min_size=1, max_size=3), min_size=1, max_size=3))
def test_findings_are_the_same_with_and_without_the_cache(steps):
    with tempfile.TemporaryDirectory(prefix="colocate-cache-test-") as tmp:
        tree, cache = Path(tmp) / "dist", Path(tmp) / "cache"
        _copy_dist(tree)
        _same(tree, cache)
        for step in steps:
            for op, pick, value in step:
                _mutate(tree, op, pick, value)
            _same(tree, cache)


@pytest.mark.slow
@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.sampled_from(CROSS_OPS + ("add", "kind", "first", "copy", "drop")), st.integers(0, 200),
                          st.integers(0, 10_000)), min_size=1, max_size=4))
def test_cross_object_findings_are_the_same_with_and_without_the_cache(steps):
    """Edits of what the cross-object rules read (quotas, PriorityClasses, queries, Applications,
    dashboards, Namespaces, object counts), one check after each: each rule re-run or reused
    must give what a check without the cache gives."""
    with tempfile.TemporaryDirectory(prefix="colocate-cache-test-") as tmp:
        tree, cache = Path(tmp) / "dist", Path(tmp) / "cache"
        _copy_dist(tree)
        _same(tree, cache)
        for op, pick, value in steps:
            if op in CROSS_OPS:
                _cross(tree, op, pick, value)
            else:
                _mutate(tree, op, pick, value)
            _same(tree, cache)


def test_a_change_no_cross_object_rule_reads_reruns_none_of_them(tmp_path):
    """A Service's port: no cross-object rule reads Services beyond their identity. A quota's
    limit: COL051 reads it, and runs again."""
    tree, cache = tmp_path / "dist", tmp_path / "cache"
    _copy_dist(tree)
    for path in tree.rglob("*.yaml"):  # written as the edits below write, so that no line moves
        _write(path, _objects(path))
    _same(tree, cache)
    path, objects, i = next((p, objs, i) for p in sorted(tree.rglob("*.yaml")) for objs in [_objects(p)]
                            for i, o in enumerate(objs) if o.get("kind") == "Service")
    objects[i]["spec"]["ports"][0]["port"] += 1
    _write(path, objects)
    said = _same(tree, cache)
    assert "1 read afresh" in said and "cross-object rules: 0 of " in said, said
    _cross(tree, "quota", 0, 1)
    said = _same(tree, cache)
    assert "cross-object rules: 0 of " not in said, said


def test_an_unchanged_tree_is_answered_from_the_cache_and_one_change_rereads_one_file(tmp_path):
    tree, cache = tmp_path / "dist", tmp_path / "cache"
    _copy_dist(tree)
    files = len(list(tree.rglob("*.yaml")))
    assert "0 of" in _same(tree, cache)
    assert _same(tree, cache) == f"{cache}: unchanged, the whole result reused ({files} files)"
    _mutate(tree, "number", 30, 3)
    assert f"{files - 1} of {files} files reused, 1 read afresh" in _same(tree, cache)


def test_a_write_through_a_memory_mapping_is_seen(tmp_path):
    """Two writes through one shared mapping to the same page: Linux updates the times when a
    clean page is first written, not at the second write, so the file's whole stat signature
    (size, times, inode) is the one the check after the first write saw. The check reads every
    file's bytes, so it still judges what the file says."""
    tree, cache = tmp_path / "dist", tmp_path / "cache"
    _copy_dist(tree)
    path = next(p for p in sorted(tree.rglob("*.yaml")) if "replicas: " in p.read_text())
    with path.open("r+b") as f, mmap.mmap(f.fileno(), 0) as mapped:
        at = mapped.find(b"replicas: ") + len(b"replicas: ")
        mapped[at:at + 1] = b"7"  # the first write dirties the page and moves the times
        time.sleep(2.2)  # well past any racy margin: a stat taken now would be trusted
        _same(tree, cache)
        signature = [(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino) for st in [path.stat()]]
        mapped[at:at + 1] = b"8"
        said = _same(tree, cache)
        if [(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino) for st in [path.stat()]] == signature:
            assert "1 read afresh" in said, said  # the case this test is for: the stat did not move
        assert b"replicas: 8" in path.read_bytes()


def test_a_same_size_edit_that_keeps_the_modification_time_is_seen(tmp_path):
    """A digit changed, its size and modification time set back (os.utime)."""
    tree, cache = tmp_path / "dist", tmp_path / "cache"
    _copy_dist(tree)
    _same(tree, cache)
    path = next(p for p in sorted(tree.rglob("*.yaml")) if "replicas: " in p.read_text())
    st = path.stat()
    text = path.read_text()
    at = next(i for i, c in enumerate(text) if c.isdigit() and text[i - 1] == " ")
    path.write_text(text[:at] + str((int(text[at]) + 1) % 10) + text[at + 1:])
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    assert "1 read afresh" in _same(tree, cache)


def test_an_object_appended_to_a_file_is_the_only_one_judged_again(tmp_path):
    tree, cache = tmp_path / "dist", tmp_path / "cache"
    _copy_dist(tree)
    _same(tree, cache)
    path = max(sorted(tree.rglob("*.yaml")), key=lambda p: len(_objects(p)))
    with path.open("a") as out:
        out.write("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: appended, namespace: online}\n")
    said = _same(tree, cache)
    assert "1 read afresh; per-object rules on 1 files (1 objects judged)" in said, said


def _entries(cache: Path) -> list[Path]:
    return sorted(p for p in cache.rglob("*") if p.is_file() and not p.name.startswith(".tmp-"))


@pytest.mark.parametrize("damage", ["flip", "truncate", "foreign", "shape", "format"])
def test_a_damaged_or_foreign_entry_is_ignored(tmp_path, damage):
    tree, cache = tmp_path / "dist", tmp_path / "cache"
    _copy_dist(tree)
    _mutate(tree, "ignore", 5, 1)  # some findings, so that the entries hold some
    _mutate(tree, "copy", 9, 2)
    _same(tree, cache)
    entries = [p for p in _entries(cache) if p.parent.parent.name in ("file", "tree")]
    assert len(entries) > 10
    store = verdict_cache.Store(cache)
    for i, path in enumerate(entries):
        data = path.read_bytes()
        if damage == "flip":
            data = data[:-3] + bytes([data[-3] ^ 0x20]) + data[-2:]
        elif damage == "truncate":
            data = data[:len(data) // 2]
        elif damage == "foreign":  # a whole, valid entry, under another entry's name
            data = entries[(i + 1) % len(entries)].read_bytes()
        elif damage == "shape":  # valid JSON of its key, not the shape written
            kind, key = path.parent.parent.name, path.name
            store.put(kind, key, {"docs": "none", "findings": [["COL001"]]})
            continue
        elif damage == "format":  # another format's header
            data = data.replace(verdict_cache.MAGIC, b"colocate-check-cache 0\n", 1)
        path.write_bytes(data)
    store.flush()
    cached, said = _outcome(tree, cache)
    assert cached == _outcome(tree, None)[0]
    files = len(list(tree.rglob("*.yaml")))
    assert f"0 of {files} files reused" in said
    assert f"{files + 1} entries ignored (corrupt or foreign)" in said, said
    # Rewritten whole: the next run takes the result from the cache.
    assert _outcome(tree, cache)[1].endswith(f"unchanged, the whole result reused ({files} files)")


@pytest.mark.parametrize("damage", ["flip", "truncate", "foreign"])
def test_a_damaged_docs_entry_is_parsed_again(tmp_path, damage):
    """A re-run rule reads the objects it reads whole from their files' docs entries, each decoded
    on its own: an entry that does not hold what was written is ignored, its file parsed again."""
    tree, cache = tmp_path / "dist", tmp_path / "cache"
    _copy_dist(tree)
    _same(tree, cache)
    docs = [p for p in _entries(cache) if p.parent.parent.name == "docs"]
    for i, path in enumerate(docs):
        data = path.read_bytes()
        if damage == "flip":
            data = data[:len(data) // 2] + bytes([data[len(data) // 2] ^ 0x01]) + data[len(data) // 2 + 1:]
        elif damage == "truncate":
            data = data[:len(data) // 2]
        else:  # a whole, valid entry, under another file's name
            data = docs[(i + 1) % len(docs)].read_bytes()
        path.write_bytes(data)
    _cross(tree, "quota", 0, 1)  # COL051 runs again: it reads every ClusterQueue and LocalQueue whole
    said = _same(tree, cache)
    assert re.search(r"\(\d+ objects of [1-9][0-9]* files read back\)", said), said
    assert re.search(r"; [1-9][0-9]* entries ignored", said), said


def test_the_key_holds_the_configuration_the_kubeconform_binary_and_the_cluster(tmp_path, monkeypatch):
    config = tmp_path / "colocate.yaml"
    shutil.copy(ROOT / "colocate.yaml", config)
    base = verdict_cache.environment(config, None, ())
    assert verdict_cache.environment(config, None, ()) == base
    config.write_text(config.read_text() + "\n")
    assert verdict_cache.environment(config, None, ()) != base
    shutil.copy(ROOT / "colocate.yaml", config)
    binary = tmp_path / "kubeconform"
    shutil.copy(ROOT / "bin" / "kubeconform", binary)
    monkeypatch.setenv("KUBECONFORM", str(binary))
    copied = verdict_cache.environment(config, None, ())
    assert copied != base  # another binary (its path)
    with binary.open("ab") as out:
        out.write(b"\0")
    assert verdict_cache.environment(config, None, ()) != copied  # other bytes, same path
    monkeypatch.delenv("KUBECONFORM")
    assert verdict_cache.environment(config, DIST / "nodes" / "mixed", ()) != base
    assert verdict_cache.environment(config, None, ("*.json",)) != base


def test_a_cache_option_that_cannot_be_a_folder_is_bad_input_and_touches_nothing(tmp_path):
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("keep me\n")
    proc = colocate("check", "--cache", str(not_a_folder), str(DIST))
    assert proc.returncode == 2, proc.stderr
    assert "--cache cannot be the verdict cache's folder: exists and is not a folder" in proc.stderr
    assert "Traceback" not in proc.stderr and not proc.stdout
    assert not_a_folder.read_text() == "keep me\n" and sorted(tmp_path.iterdir()) == [not_a_folder]
    below = colocate("check", "--cache", str(not_a_folder / "sub"), str(DIST))
    assert below.returncode == 2 and "is not a folder" in below.stderr, below.stderr


def test_timings_say_what_the_cache_did_and_no_cache_uses_none(tmp_path):
    cache = tmp_path / "cache"
    first = colocate("check", "--timings", "--cache", str(cache), str(DIST))
    second = colocate("check", "--timings", "--cache", str(cache), str(DIST))
    assert first.returncode == second.returncode == 0 and first.stdout == second.stdout
    assert f"cache: {cache}: 0 of " in first.stderr
    assert f"cache: {cache}: unchanged, the whole result reused" in second.stderr
    before = _entries(cache)
    off = colocate("check", "--timings", "--no-cache", str(DIST))
    assert off.stdout == first.stdout and "cache: not used" in off.stderr
    assert _entries(cache) == before


def test_concurrent_runs_share_one_cache(tmp_path):
    """Entries are written whole (a temporary file renamed into place): runs side by side read
    only whole entries and agree."""
    from colocate.base.go_builds import environment
    from tests.helpers import VENV_BIN

    tree, cache = tmp_path / "dist", tmp_path / "cache"
    _copy_dist(tree)
    _mutate(tree, "copy", 3, 1)
    procs = [subprocess.Popen([str(VENV_BIN / "colocate"), "check", "--format", "json", "--timings",
                               "--cache", str(cache), str(tree)], cwd=ROOT, env=environment(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outs = [p.communicate(timeout=300) for p in procs]
    fresh = colocate("check", "--format", "json", "--no-cache", str(tree))
    for proc, (out, err) in zip(procs, outs):
        assert proc.returncode == fresh.returncode == 1, err
        assert out == fresh.stdout and "ignored (corrupt" not in err.replace("0 entries ignored (corrupt", "")
    assert not [p for p in cache.rglob(".tmp-*")]


def test_the_suite_keeps_the_default_cache_out_of_the_users_home():
    """tests/conftest.py points XDG_CACHE_HOME at a folder of the run for every process it starts."""
    suite_cache = Path(os.environ["XDG_CACHE_HOME"])
    assert not suite_cache.is_relative_to(Path.home() / ".cache"), suite_cache
    proc = colocate("check", "--timings", str(DIST / "nodes"))
    assert proc.returncode == 0, proc.stderr
    assert f"cache: {suite_cache / 'colocate' / 'check'}: " in proc.stderr, proc.stderr
