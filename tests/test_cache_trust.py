"""Nothing in a working tree, nor anyone else, decides what colocate's caches hold
(docs/check-cache.md "Trust"): the compiled rules and the verdict cache live in the user's cache
folder, keyed and sealed with the user's key; links, FIFOs, oversized entries, other users' files
and folders others can write are ignored (said on stderr) and rebuilt."""
from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from colocate.base import compiled, private_cache
from colocate.checker import verdict_cache
from colocate.rules import files as rule_files
from tests.helpers import ROOT, colocate, repo_copy

COL107 = ROOT / "tests" / "policies" / "fixtures" / "COL107" / "fail.yaml"
NOBODY = 65534


def _bounded() -> None:
    """A check reading /dev/zero whole must fail here, not take the machine's memory."""
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def _check(*args: str, cwd: Path = ROOT, module: bool = False) -> subprocess.CompletedProcess:
    """colocate check, bounded in memory and time (a FIFO read hung it)."""
    command = [sys.executable, "-m", "colocate.cli"] if module else [str(Path(sys.executable).parent / "colocate")]
    from colocate.base.go_builds import environment

    return subprocess.run([*command, "check", *args], cwd=cwd, env=environment(), capture_output=True, text=True,
                          timeout=120, preexec_fn=_bounded)


def test_compiled_data_and_the_verdict_cache_live_in_the_users_cache_folder(own_cache, monkeypatch):
    assert compiled.folder() == own_cache / "compiled"
    assert verdict_cache.default_dir() == own_cache / "check"
    monkeypatch.delenv("COLOCATE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(own_cache.parent / "xdg"))
    assert compiled.folder() == own_cache.parent / "xdg" / "colocate" / "compiled"
    assert not compiled.folder().is_relative_to(ROOT)


def test_a_compiled_rule_set_committed_in_a_checkout_replaces_no_rule(tmp_path, own_cache):
    """A `.cache/compiled/rules-<hash>.json` whose name and checksum anyone can compute
    from the repository, with COL107 made to pass everything, is not what runs, --no-cache or not."""
    clone = repo_copy(tmp_path / "clone", with_dist=False)
    files = sorted((clone / rule_files.RULES_DIR.relative_to(ROOT)).glob("*.yaml"))
    readers = [clone / p.relative_to(ROOT) for p in rule_files._READERS]
    name = hashlib.blake2b(b"colocate-compiled 1\n", digest_size=16)  # how the entry was named
    for path in (*files, *readers):
        data = path.read_bytes()
        name.update(f"{path.name}\0{len(data)}\0".encode())
        name.update(data)
    rows = rule_files._parse_rules(files)
    for row in rows:
        if row["id"] == "COL107":
            row["schema"] = {"type": "object"}
    body = json.dumps(rows, separators=(",", ":")).encode()
    forged = clone / ".cache" / "compiled" / f"rules-{name.hexdigest()}.json"
    forged.parent.mkdir(parents=True)
    forged.write_bytes(b"colocate-compiled 1\n" + hashlib.blake2b(body, digest_size=16).hexdigest().encode()
                       + b"\n" + body)
    for option in ("--no-cache", "--timings"):
        proc = _check(option, str(COL107), cwd=clone, module=True)
        assert proc.returncode == 1 and "ERROR COL107" in proc.stdout, proc.stdout + proc.stderr
    assert not (clone / ".cache").joinpath("check").exists()


def _loads(value):
    calls = []

    def parse():
        calls.append(1)
        return value
    return parse, calls


def test_a_kept_form_not_sealed_with_the_users_key_is_parsed_afresh(tmp_path, own_cache):
    source = tmp_path / "data.yaml"
    source.write_text("a: 1\n")
    parse, calls = _loads({"a": 1})
    compiled.load("data", [source], [], parse, bool)
    (entry,) = (own_cache / "compiled").glob("data-*.json")
    body = b'{"a":2}'
    entry.write_bytes(compiled.FORMAT + hashlib.blake2b(body, digest_size=16).hexdigest().encode() + b"\n" + body)
    assert compiled.load("data", [source], [], parse, bool) == {"a": 1} and len(calls) == 2


def test_each_checkout_uses_only_a_form_it_parsed_itself(tmp_path, own_cache):
    """The same bytes in another folder are parsed again once (a kept form is checked against a
    fresh parse the first time a checkout uses it), and neither replaces the other's entry."""
    one, two = tmp_path / "one", tmp_path / "two"
    for folder in (one, two):
        folder.mkdir()
        (folder / "data.yaml").write_text("a: 1\n")
    parse, calls = _loads({"a": 1})
    for folder in (one, two, one, two):
        assert compiled.load("data", [folder / "data.yaml"], [], parse, bool) == {"a": 1}
    assert len(calls) == 2


def test_the_entry_names_and_seals_depend_on_the_users_key(tmp_path, monkeypatch):
    source = tmp_path / "data.yaml"
    source.write_text("a: 1\n")
    names, seals = set(), set()
    for user in ("alice", "bob"):
        monkeypatch.setenv("COLOCATE_CACHE_DIR", str(tmp_path / user))
        names.add(compiled._name("data", [source], [])[1])
        seals.add(compiled.seal(compiled.FORMAT, b"{}"))
    assert len(names) == len(seals) == 2
    secret = tmp_path / "alice" / "secret"
    assert secret.stat().st_mode & 0o777 == 0o600 and len(secret.read_bytes()) == 32


def _filled_cache(tmp_path: Path) -> tuple[Path, Path]:
    """A --cache folder after one check of COL107's failing fixture, and its tree entry."""
    cache = tmp_path / "verdicts"
    proc = _check("--cache", str(cache), str(COL107))
    assert proc.returncode == 1, proc.stderr
    (tree,) = [p for p in (cache / f"v{verdict_cache.FORMAT}" / "tree").rglob("*") if p.is_file()]
    return cache, tree


@pytest.mark.parametrize("kind", ["symlink to /dev/zero", "fifo", "sparse file over the cap"])
def test_an_entry_that_is_a_link_a_fifo_or_too_large_is_ignored_and_rebuilt(tmp_path, own_cache, kind):
    """Each was exit 3 with gigabytes of memory, or a hang."""
    cache, tree = _filled_cache(tmp_path)
    rules = next(compiled.folder().glob("rules-*.json"))
    for entry in (tree, rules):
        entry.unlink()
        if kind == "fifo":
            os.mkfifo(entry)
        elif kind.startswith("symlink"):
            entry.symlink_to("/dev/zero")
        else:
            with entry.open("wb") as out:
                out.truncate(private_cache.MAX_ENTRY + 1)
    said = {"fifo": "is not a regular file", "symlink to /dev/zero": "is a symbolic link",
            "sparse file over the cap": f"is larger than {private_cache.MAX_ENTRY} bytes"}[kind]
    for option, entry in (("--no-cache", rules), (f"--cache={cache}", tree)):  # the compiled rules, the verdict
        proc = _check(option, str(COL107))
        assert proc.returncode == 1 and "ERROR COL107" in proc.stdout, proc.stdout + proc.stderr
        assert f"cache entry {entry} {said}: ignored and rebuilt" in proc.stderr, proc.stderr
    assert tree.is_file() and not tree.is_symlink() and tree.stat().st_size < 1 << 20  # rewritten


def _forge_zero_rules(tree: Path) -> None:
    """The tree entry rewritten to say "nothing found, with 0 rules", sealed with the user's own
    key: what a tool running as the user could do."""
    data = tree.read_bytes()
    body = compiled.unseal(verdict_cache.MAGIC, data, verdict_cache._DIGEST)
    kind, key, value = json.loads(body)
    value.update(findings=[], rules=[])
    tree.write_bytes(compiled.seal(verdict_cache.MAGIC, json.dumps([kind, key, value]).encode(),
                                   verdict_cache._DIGEST))


def test_a_tree_entry_under_other_rules_is_never_reused(tmp_path, own_cache):
    """ "0 rules" is never right, even sealed with the right key."""
    cache, tree = _filled_cache(tmp_path)
    _forge_zero_rules(tree)
    proc = _check("--cache", str(cache), "--timings", str(COL107))
    assert proc.returncode == 1 and "ERROR COL107" in proc.stdout, proc.stdout + proc.stderr
    assert "with 0 rules" not in proc.stdout and "whole result reused" not in proc.stderr, proc.stderr


def test_an_entry_of_another_user_is_ignored_and_rebuilt(tmp_path, own_cache):
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user takes root")
    cache, tree = _filled_cache(tmp_path)
    _forge_zero_rules(tree)
    os.chown(tree, NOBODY, NOBODY)
    proc = _check("--cache", str(cache), str(COL107))
    assert proc.returncode == 1 and f"cache entry {tree} is owned by user {NOBODY}, not by you" in proc.stderr, \
        proc.stdout + proc.stderr


@pytest.mark.parametrize("who", ["writable by others", "owned by another user"])
def test_a_cache_folder_others_can_write_is_not_used(tmp_path, own_cache, who):
    cache, tree = _filled_cache(tmp_path)
    _forge_zero_rules(tree)
    if who == "writable by others":
        cache.chmod(0o777)
        said = "is writable by other users"
    else:
        if os.geteuid() != 0:
            pytest.skip("giving a folder to another user takes root")
        os.chown(cache, NOBODY, NOBODY)
        said = f"is owned by user {NOBODY}, not by you"
    before = sorted(cache.rglob("*"))
    proc = _check("--cache", str(cache), str(COL107))
    assert proc.returncode == 1 and "ERROR COL107" in proc.stdout, proc.stdout + proc.stderr
    assert f"cache folder {cache} {said}: not used" in proc.stderr, proc.stderr
    assert sorted(cache.rglob("*")) == before  # nothing written there either
    own_cache.chmod(0o770)
    proc = _check("--no-cache", str(COL107))
    assert proc.returncode == 1 and f"cache folder {own_cache} is writable by other users" in proc.stderr


def test_a_secret_others_can_read_is_replaced(tmp_path, own_cache):
    first = private_cache.secret()
    (own_cache / "secret").chmod(0o644)
    proc = _check("--no-cache", str(COL107))
    assert f"cache entry {own_cache / 'secret'} can be read or written by other users" in proc.stderr, proc.stderr
    assert (own_cache / "secret").read_bytes() != first and (own_cache / "secret").stat().st_mode & 0o777 == 0o600


def test_an_edit_that_keeps_size_and_mtime_changes_the_installations_digest(tmp_path, own_cache):
    """colocate's own files are known by their bytes, kept by a stat signature that holds
    the change time (which os.utime cannot set back); a file changed within the racy margin is
    not remembered by its stat at all."""
    package = tmp_path / "package"
    package.mkdir()
    rule = package / "COL107.yaml"
    rule.write_text("maximum: 99\n")
    assert verdict_cache._tree_digest([package]) != "", "a just-written file is hashed, not remembered"
    time.sleep(verdict_cache.RACY_NS / 1e9 + 0.2)
    before = verdict_cache._tree_digest([package])
    st = rule.stat()
    with rule.open("r+b") as out:
        out.write(b"maximum: 60\n")
    os.utime(rule, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (rule.stat().st_size, rule.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    assert verdict_cache._tree_digest([package]) != before


def test_the_environment_holds_jsonschemas_and_pyyamls_versions():
    versions = verdict_cache.library_versions()
    for project in ("jsonschema", "PyYAML"):
        version = importlib.metadata.version(project)
        assert f"-{version}.dist-info" in versions, (project, version, versions)


def test_a_cache_option_naming_a_folder_that_holds_other_things_is_refused(tmp_path):
    """`--cache /` or `--cache ~` wrote `v3/` there."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("")
    (home / "notes").mkdir()
    proc = colocate("check", "--cache", str(home), str(COL107))
    assert proc.returncode == 2 and "no CACHEDIR.TAG" in proc.stderr, proc.stderr
    assert sorted(p.name for p in home.iterdir()) == [".bashrc", "notes"]
    new = tmp_path / "new"
    for _ in range(2):
        proc = colocate("check", "--cache", str(new), "--timings", str(COL107))
        assert proc.returncode == 1, proc.stderr
    assert "whole result reused" in proc.stderr and (new / private_cache.TAG_NAME).read_bytes().startswith(
        b"Signature: 8a477f597d28d172789f06886806bc55")
    assert new.stat().st_mode & 0o777 == 0o700


def test_a_user_cache_folder_that_holds_other_things_is_not_used(tmp_path, monkeypatch):
    """COLOCATE_CACHE_DIR=/ (or ~) would fill that folder with colocate's."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("")
    monkeypatch.setenv("COLOCATE_CACHE_DIR", str(home))
    proc = _check(str(COL107))
    assert proc.returncode == 1 and "ERROR COL107" in proc.stdout, proc.stdout + proc.stderr
    assert f"cache folder {home} holds other files and no CACHEDIR.TAG" in proc.stderr, proc.stderr
    assert [p.name for p in home.iterdir()] == [".bashrc"]


def test_a_cache_folder_that_cannot_be_made_costs_only_time(tmp_path, monkeypatch):
    """An unwritable default (a read-only home) still checks correctly."""
    monkeypatch.setenv("COLOCATE_CACHE_DIR", "/proc/colocate-nonexistent")
    proc = _check("--timings", str(COL107))
    assert proc.returncode == 1 and "ERROR COL107" in proc.stdout, proc.stdout + proc.stderr
    assert "not writable" in proc.stderr, proc.stderr
