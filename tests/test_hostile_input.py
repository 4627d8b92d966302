"""Hostile input: each case reproduced through the installed console script
in a scratch folder, as a user (or an attacker naming files) would run it. Bad input is a clear
error, exit 2, and nothing touched; no input prints a Python traceback or exits 3."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from colocate import ROOT
from tests.helpers import colocate, yaml_load

IMAGE = "harbor.example.com/library/busybox:1.36"
#: The scratch folders hold no colocate.yaml: synth there needs --config.
CONFIG = str(ROOT / "colocate.yaml")


def write(path: Path, content: str | list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else yaml.safe_dump_all(content, sort_keys=False))
    return path


def ran(proc: subprocess.CompletedProcess, code: int) -> subprocess.CompletedProcess:
    """Assert the exit code, and that no traceback leaked."""
    assert proc.returncode == code, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    return proc


def deployment(**spec) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "web", "image": IMAGE}]}}, **spec}}


# --- option injection into kubeconform ---------------------------------------------------------


def _schema_findings(proc: subprocess.CompletedProcess) -> list[dict]:
    return [f for f in json.loads(proc.stdout)["findings"] if f["rule"] == "SCHEMA"]


def test_a_file_named_like_a_kubeconform_option_does_not_switch_off_validation(tmp_path):
    write(tmp_path / "deploy.yaml", [deployment(replicas="three", unknownField=1)])
    for name in ("-ignore-filename-pattern=.yaml", "-skip=Deployment,x.yaml"):
        option = write(tmp_path / name, [{"apiVersion": "v1", "kind": "ConfigMap",
                                           "metadata": {"name": "x", "namespace": "default"}}])
        proc = ran(colocate("check", ".", "--format", "json", cwd=tmp_path), 1)
        schema = _schema_findings(proc)
        assert [f["file"] for f in schema] == ["deploy.yaml"], proc.stdout
        assert "replicas" in schema[0]["message"] or "unknownField" in schema[0]["message"], schema
        option.unlink()


def test_a_harmless_dash_file_is_checked_like_any_other(tmp_path):
    write(tmp_path / "-dash.yaml", [{"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"name": "x", "namespace": "default"}, "data": {"a": "b"}}])
    proc = ran(colocate("check", ".", cwd=tmp_path), 0)
    assert "kubeconform: 1 valid, 0 invalid" in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def test_objects_kubeconform_did_not_count_are_an_error(tmp_path):
    # A kubeconform that reports fewer resources than the files hold has skipped some: refuse.
    fake = write(tmp_path / "kubeconform", "#!/bin/sh\n"
                 "echo '{\"resources\": [], \"summary\": {\"valid\": 0, \"invalid\": 0, \"errors\": 0, \"skipped\": 0}}'\n")
    fake.chmod(0o755)
    write(tmp_path / "cm.yaml", [{"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "x", "namespace": "default"}}])
    proc = ran(colocate("check", "cm.yaml", cwd=tmp_path, env={"KUBECONFORM": str(fake)}), 2)
    assert "kubeconform judged 0 of the 1 objects" in proc.stderr, proc.stderr


# --- the labels every kubelet sets -------------------------------------------------------------


def _pool_findings(proc: subprocess.CompletedProcess) -> list[dict]:
    return [f for f in json.loads(proc.stdout)["findings"] if f["rule"] == "COL050"]


def test_the_well_known_node_labels_select_every_pool(tmp_path):
    # k8s.io/api v0.28.15 core/v1/well_known_labels.go and k8s.io/kubelet pkg/apis: the kubelet
    # sets kubernetes.io/os and kubernetes.io/arch, and the beta. forms, on every node.
    selectors = [{"kubernetes.io/os": "linux"}, {"kubernetes.io/arch": "amd64"},
                 {"beta.kubernetes.io/os": "linux"}, {"beta.kubernetes.io/arch": "amd64"}]
    for i, selector in enumerate(selectors):
        d = deployment()
        d["metadata"]["name"] = f"web{i}"
        d["spec"]["template"]["spec"]["nodeSelector"] = selector
        write(tmp_path / f"web{i}.yaml", [d])
    proc = ran(colocate("check", ".", "--cluster", str(_repo_nodes()), "--format", "json", cwd=tmp_path), 1)
    assert _pool_findings(proc) == [], proc.stdout
    # A value no kubelet sets still selects no pool.
    d = deployment()
    d["spec"]["template"]["spec"]["nodeSelector"] = {"kubernetes.io/os": "windows"}
    write(tmp_path / "web0.yaml", [d])
    proc = ran(colocate("check", "web0.yaml", "--cluster", str(_repo_nodes()), "--format", "json", cwd=tmp_path), 1)
    assert [f["file"] for f in _pool_findings(proc)] == ["web0.yaml"], proc.stdout


def _repo_nodes() -> Path:
    from colocate import ROOT

    return ROOT / "dist" / "nodes"


# --- a priority-tier inversion -----------------------------------------------------------------


def _dist_copy(dest: Path) -> Path:
    import shutil
    from colocate import ROOT

    shutil.copytree(ROOT / "dist", dest)
    return dest


def _set_value(dist: Path, name: str, value: int) -> None:
    path = dist / "apps" / "platform" / f"priorityclass.{name}.yaml"
    doc = yaml_load(path.read_text())
    doc["value"] = value
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


def _rules(proc: subprocess.CompletedProcess) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for f in json.loads(proc.stdout)["findings"]:
        out.setdefault(f["rule"], []).append(f)
    return out


def test_offline_above_online_is_an_error(tmp_path):
    dist = _dist_copy(tmp_path / "dist")
    _set_value(dist, "offline-batch", 10_000_000)
    found = _rules(ran(colocate("check", "dist", "--format", "json", cwd=tmp_path), 1))
    [inversion] = found["COL011"]
    assert inversion["name"] == "offline-batch", inversion
    assert "offline-batch=10000000 (offline tier) is not below online-high=1000000 (online tier)" in inversion["message"]
    # COL008 judges the pods against the checked offline class, not the model's value.
    assert [f["namespace"] for f in found["COL008"]] == ["online"], found.get("COL008")


def test_a_small_inversion_is_one_inversion_not_a_gap_to_widen(tmp_path):
    dist = _dist_copy(tmp_path / "dist")
    _set_value(dist, "offline-batch", 2_000_000)
    found = _rules(ran(colocate("check", "dist", "--format", "json", cwd=tmp_path), 1))
    assert [f["name"] for f in found["COL011"]] == ["offline-batch"], found
    assert "COL001" not in found, found["COL001"]


def test_pod_priority_reads_the_checked_offline_class(tmp_path):
    classes = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": name, "labels": {"colocate.io/tier": tier}}, "value": value}
               for name, tier, value in (("online-high", "online", 100_000_000), ("offline-batch", "offline", 1_000_000))]
    mid = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "mid"}, "value": 500_000}
    d = deployment()
    d["spec"]["template"]["spec"]["priorityClassName"] = "mid"
    write(tmp_path / "all.yaml", [*classes, mid, d])
    found = _rules(ran(colocate("check", "all.yaml", "--format", "json", cwd=tmp_path), 1))
    assert [f["message"] for f in found["COL008"]] == [found["COL008"][0]["message"]]
    assert "mid (500000) is not above offline-batch (1000000)" in found["COL008"][0]["message"], found["COL008"]


def test_diff_names_an_inversion_as_dangerous(tmp_path):
    from tests.helpers import git

    dist = _dist_copy(tmp_path / "dist")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "base")
    _set_value(dist, "offline-batch", 10_000_000)
    proc = ran(colocate("diff", "main", "--no-policy", "--no-capacity", cwd=tmp_path), 0)
    assert "tier inversion: offline-batch (offline, 10000000) now outranks online-high (online, 1000000)" \
        in proc.stdout, proc.stdout


def _relabel(dist: Path, rel: str, tier: str) -> None:
    path = dist / "apps" / "platform" / rel
    doc = yaml_load(path.read_text())
    doc["metadata"]["labels"]["colocate.io/tier"] = tier
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


def test_relabelling_the_training_namespace_online_is_an_error_and_switches_no_rule_off(tmp_path):
    dist = _dist_copy(tmp_path / "dist")
    _relabel(dist, "namespace.training.yaml", "online")
    sneaky = yaml_load((dist / "apps" / "online" / "deployment.online.recsys-inference.yaml").read_text())
    sneaky["metadata"].update(namespace="training", name="sneaky-trainer")
    write(dist / "apps" / "training" / "deployment.training.sneaky-trainer.yaml", [sneaky])
    found = _rules(ran(colocate("check", "dist", "--format", "json", cwd=tmp_path), 1))
    [label] = found["COL015"]
    assert "Namespace training is the configuration's offline namespace but is labelled colocate.io/tier: online" \
        in label["message"], label
    assert [f["name"] for f in found["COL004"]] == ["sneaky-trainer"] and [f["name"] for f in found["COL005"]] == ["sneaky-trainer"]


def test_a_tier_label_the_admission_policies_do_not_know_is_one_error(tmp_path):
    dist = _dist_copy(tmp_path / "dist")
    _relabel(dist, "namespace.training.yaml", "Offline")
    found = _rules(ran(colocate("check", "dist", "--format", "json", cwd=tmp_path), 1))
    assert sorted(found) == ["COL016"] and found["COL016"][0]["name"] == "training", found


def test_what_the_api_server_refuses_check_refuses(tmp_path):
    """hostile-3 R3-M7/M3/M10: names, a namespace with a newline, a schedule and a zone the API
    server cannot parse, a replica count outside int32, and a TFJob whose Services are too long."""
    cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "pause", "namespace": "colocate-system"},
            "spec": {"schedule": "50.0 7.0 * * *", "timeZone": "Mars/Olympus_Mons",
                     "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure",
                                                                    "containers": [{"name": "c", "image": IMAGE}]}}}}}}
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name!", "namespace": "argocd\n"}}
    web = deployment(replicas=-5)
    job = yaml_load((ROOT / "dist" / "apps" / "training" / "tfjob.training.tf-ps-mode.yaml").read_text())
    job["metadata"]["name"] = "a" * 60
    write(tmp_path / "all.yaml", [cron, cm, web, job])
    found = _rules(ran(colocate("check", "all.yaml", "--format", "json", cwd=tmp_path), 1))
    assert sorted(f["field"] for f in found["COL409"]) == ["spec.schedule", "spec.timeZone"]
    assert sorted((f["name"], f["field"]) for f in found["COL408"]) == [
        ("Bad_Name!", "metadata.name"), ("Bad_Name!", "metadata.namespace")]
    assert [f["field"] for f in found["COL410"]] == ["spec.replicas"]
    assert [f["name"] for f in found["COL119"]] == ["a" * 60]


def test_an_offline_class_relabelled_online_is_an_error_and_diff_calls_it_a_tier_inversion(tmp_path):
    from tests.helpers import git

    dist = _dist_copy(tmp_path / "dist")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "base")
    _relabel(dist, "priorityclass.offline-batch.yaml", "online")
    _set_value(dist, "offline-batch", 10_000_000)
    path = dist / "apps" / "platform" / "priorityclass.offline-batch.yaml"
    doc = yaml_load(path.read_text())
    del doc["preemptionPolicy"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    found = _rules(ran(colocate("check", "dist", "--format", "json", cwd=tmp_path), 1))
    assert sorted(f["field"] for f in found["COL015"]) == ["metadata.labels.colocate.io/tier", "value"]
    assert [f["name"] for f in found["COL011"]] == ["offline-batch"] and [f["name"] for f in found["COL012"]] == ["offline-batch"]
    proc = ran(colocate("diff", "main", "--no-policy", "--no-capacity", cwd=tmp_path), 0)
    assert "tier inversion: offline-batch (offline, 10000000) now outranks online-high (online, 1000000)" \
        in proc.stdout, proc.stdout


@pytest.mark.parametrize("name", ["online-high", "offline-batch"])
def test_deleting_a_tier_priority_class_from_dist_is_an_error_in_check_and_dangerous_in_diff(tmp_path, name):
    from tests.helpers import git

    dist = _dist_copy(tmp_path / "dist")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "base")
    (dist / "apps" / "platform" / f"priorityclass.{name}.yaml").unlink()
    found = _rules(ran(colocate("check", "dist", "--format", "json", cwd=tmp_path), 1))
    [missing] = found["COL014"]
    assert missing["kind"] == "DistIndex" and f"PriorityClass {name} " in missing["message"], missing
    assert "colocate synth" in missing["fix"]
    proc = ran(colocate("diff", "main", "--no-policy", "--no-capacity", cwd=tmp_path), 0)
    assert "1 dangerous" in proc.stdout and f"{name} is the " in proc.stdout and "prunes it" in proc.stdout, proc.stdout


# --- synth never deletes a user's files --------------------------------------------------------


def test_synth_refuses_a_dist_holding_user_files_and_touches_nothing(tmp_path):
    from colocate.synth import write as render

    out = tmp_path / "dist"
    ran(colocate("synth", "--config", CONFIG, "--outdir", str(out), cwd=tmp_path), 0)
    for rel in ("apps/online/NOTES.md", "nodes/mixed/containerd/harbor-ca.crt", "apps/online/extra/keep.txt"):
        write(out / rel, "mine\n")
        before = render.read_tree(out)
        proc = ran(colocate("synth", "--config", CONFIG, "--outdir", str(out), cwd=tmp_path), 2)
        assert f"holds files synth did not write ({rel})" in proc.stderr, proc.stderr
        assert render.read_tree(out) == before
        (out / rel).unlink()
    # Without them, synth replaces its own tree again.
    ran(colocate("synth", "--config", CONFIG, "--outdir", str(out), cwd=tmp_path), 0)


def test_an_index_written_before_it_listed_extra_files_keeps_only_containerds_files_ours(tmp_path):
    from colocate.synth import write as render

    out = tmp_path / "dist"
    ran(colocate("synth", "--config", CONFIG, "--outdir", str(out), cwd=tmp_path), 0)
    index = yaml_load((out / "index.yaml").read_text())
    for entry in index["folders"].values():
        entry.pop("files", None)
    (out / "index.yaml").write_text(yaml.safe_dump(index, sort_keys=False))
    # Synth of that age wrote no udev rule nor toolkit settings: one there now is not its own.
    udev = sorted(p.relative_to(out).as_posix() for p in [*out.glob("nodes/*/udev/*"),
                                                          *out.glob("nodes/*/nvidia-container-runtime/*")])
    assert udev and render.foreign_files(out) == udev
    for rule in udev:
        (out / rule).unlink()
        (out / rule).parent.rmdir()
    assert render.foreign_files(out) == []
    write(out / "nodes/mixed/containerd/harbor-ca.crt", "mine\n")
    write(out / "apps/online/NOTES.md", "mine\n")
    assert render.foreign_files(out) == ["apps/online/NOTES.md", "nodes/mixed/containerd/harbor-ca.crt"]


# --- no job files is a normal state ------------------------------------------------------------


def test_an_empty_jobs_folder_keeps_the_training_application_path(tmp_path):
    (tmp_path / "jobs").mkdir()
    out = tmp_path / "dist"
    ran(colocate("synth", "--config", CONFIG, "--jobs", "jobs", "--outdir", str(out), cwd=tmp_path), 0)
    app = yaml_load((out / "apps/argocd/application.argocd.colocate-training.yaml").read_text())
    path = app["spec"]["source"]["path"]
    assert path == "dist/apps/training"
    assert sorted(p.name for p in (out / "apps/training").glob("*.yaml")), "the Application's path must exist"
    assert not list((out / "apps/training").glob("tfjob.*"))
    ran(colocate("check", str(out), cwd=tmp_path), 0)


def test_a_jobs_folder_named_but_missing_is_bad_input_with_a_hint(tmp_path):
    proc = ran(colocate("synth", "--config", CONFIG, "--jobs", "nope", "--outdir", str(tmp_path / "dist"), cwd=tmp_path), 2)
    assert "nope: no such jobs folder" in proc.stderr and "leave --jobs out" in proc.stderr, proc.stderr
    assert not (tmp_path / "dist").exists()


def test_a_repository_without_a_jobs_folder_synthesizes_no_jobs(tmp_path):
    # git rm jobs/*.yaml removes the folder itself: git keeps no empty folder.
    from tests.helpers import VENV_BIN, repo_copy, run

    repo = repo_copy(tmp_path / "repo")
    import shutil
    shutil.rmtree(repo / "jobs")
    proc = ran(run([str(VENV_BIN / "python"), "-m", "colocate.cli", "synth"], cwd=repo), 0)
    assert (repo / "dist/apps/training").is_dir() and not list((repo / "dist/apps/training").glob("tfjob.*")), proc.stderr


def test_check_refuses_an_application_whose_path_holds_nothing(tmp_path):
    dist = _dist_copy(tmp_path / "dist")
    import shutil
    shutil.rmtree(dist / "apps/training")
    found = _rules(ran(colocate("check", "dist", "--format", "json", cwd=tmp_path), 1))
    [missing] = found["COL305"]
    assert missing["name"] == "colocate-training" and "dist/apps/training" in missing["message"], missing


# --- FIFOs and symbolic links in a jobs folder -------------------------------------------------


def test_a_fifo_in_the_jobs_folder_is_bad_input_not_a_hang(tmp_path):
    import os

    (tmp_path / "jobs").mkdir()
    os.mkfifo(tmp_path / "jobs" / "pipe.yaml")
    proc = colocate_timeout(tmp_path, "synth", "--config", CONFIG, "--jobs", "jobs", "--outdir", "out")
    ran(proc, 2)
    assert "jobs/pipe.yaml: not a regular file" in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


def colocate_timeout(cwd: Path, *args: str, seconds: float = 60) -> subprocess.CompletedProcess:
    from tests.helpers import VENV_BIN
    from colocate.base.go_builds import environment

    return subprocess.run([str(VENV_BIN / "colocate"), *args], cwd=cwd, env=environment(), capture_output=True,
                          text=True, timeout=seconds)


def test_a_symlink_loop_in_the_jobs_folder_is_bad_input(tmp_path):
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "loop.yaml").symlink_to("loop.yaml")
    proc = ran(colocate("synth", "--config", CONFIG, "--jobs", "jobs", "--outdir", "out", cwd=tmp_path), 2)
    assert "loop.yaml: symbolic link loop" in proc.stderr, proc.stderr


def test_a_job_link_out_of_the_folder_is_refused_and_its_content_never_shown(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("name: hunter2\nroot: $6$saltsalt$hashhashhash\n")
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "x.yaml").symlink_to(secret)
    proc = ran(colocate("synth", "--config", CONFIG, "--jobs", "jobs", "--outdir", "out", cwd=tmp_path), 2)
    assert "x.yaml: a symbolic link out of" in proc.stderr, proc.stderr
    assert "hunter2" not in proc.stderr and "hashhash" not in proc.stderr, proc.stderr


# --- synth outside any repository ----------------------------------------------------------------


def test_synth_outside_a_repository_refuses_and_writes_nothing(tmp_path):
    from colocate import ROOT
    from colocate.synth import write as render

    before = render.read_tree(ROOT / "dist")
    stamp = (ROOT / "dist" / "index.yaml").stat().st_mtime_ns
    proc = ran(colocate("synth", cwd=tmp_path), 2)
    assert f"no colocate.yaml in {tmp_path} or any folder above it" in proc.stderr, proc.stderr
    assert "colocate init" in proc.stderr, proc.stderr
    assert (ROOT / "dist" / "index.yaml").stat().st_mtime_ns == stamp and render.read_tree(ROOT / "dist") == before
    assert list(tmp_path.iterdir()) == []


def test_synth_with_a_config_outside_a_repository_writes_next_to_it(tmp_path):
    from colocate import ROOT

    (tmp_path / "colocate.yaml").write_text((ROOT / "colocate.yaml").read_text())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # Inside the folder that holds colocate.yaml: that is the repository; its jobs/ is missing (no job).
    ran(colocate("synth", cwd=tmp_path), 0)
    assert (tmp_path / "dist" / "index.yaml").is_file() and not list((tmp_path / "dist/apps/training").glob("tfjob.*"))


# --- an output folder that cannot be written -----------------------------------------------------


def test_an_unwritable_outdir_is_bad_input_before_the_build(tmp_path):
    (tmp_path / "afile").write_text("x")
    for outdir in ("/proc/colocate-dist", str(tmp_path / "afile" / "dist")):
        proc = ran(colocate("synth", "--config", CONFIG, "--outdir", outdir, "--jobs", "nope", cwd=tmp_path), 2)
        # The writability test comes first: the missing --jobs folder would only show after it.
        assert proc.stderr.startswith(f"colocate: error: {outdir}: cannot be written"), proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


# --- terminal and CI-log injection -----------------------------------------------------------------

FORGED = "\x1b]0;x\x07\n::error file=a.py,line=1::forged\x1b[2J"


def test_untrusted_strings_are_escaped_in_text_and_exact_in_json(tmp_path):
    d = deployment()
    d["metadata"]["annotations"] = {"colocate.io/ignore": f"COL008: because{FORGED}",
                                    "note": FORGED}
    d["metadata"]["name"] = "web"
    name = f"evil{FORGED}.yaml"
    write(tmp_path / name, [d])
    text = ran(colocate("check", ".", cwd=tmp_path), 1).stdout
    assert "\x1b" not in text and "\x07" not in text, repr(text)
    assert not [line for line in text.splitlines() if line.lstrip().startswith("::")], text
    assert "\\x1b]0" in text, text
    findings = json.loads(ran(colocate("check", ".", "--format", "json", cwd=tmp_path), 1).stdout)["findings"]
    assert {f["file"] for f in findings} == {name}
    # One finding per line: each finding line of the text names the (escaped) file once.
    assert sum(1 for line in text.splitlines() if line.startswith("  ERROR ") or line.startswith("  WARNING ")) \
        == len(findings), text


def test_an_error_message_quoting_a_file_name_is_escaped(tmp_path):
    name = "bad\x1b[2J\x07.yaml"
    write(tmp_path / name, "a: [\n")
    proc = ran(colocate("check", name, cwd=tmp_path), 2)
    assert "\x1b" not in proc.stderr and "bad\\x1b[2J\\x07.yaml" in proc.stderr, repr(proc.stderr)


# --- image references outside the distribution grammar -------------------------------------------

BAD_IMAGES = ("harbor.example.com/../evil.io/x:1", "harbor.example.com/ML/X:1", "harbor.example.com/ml/x:",
              "harbor.example.com/ml/x@sha256:abc")


def test_synth_refuses_a_job_image_that_is_no_reference(tmp_path):
    for image in BAD_IMAGES:
        write(tmp_path / "jobs" / "x.yaml", f"name: x\nimage: '{image}'\nroles:\n  Worker: {{cpu: 1, memory: 1Gi}}\n")
        proc = ran(colocate("synth", "--config", CONFIG, "--jobs", "jobs", "--outdir", "out", cwd=tmp_path), 2)
        # The job schema already refuses some forms; the grammar refuses the rest.
        assert "jobs/x.yaml:$.image:" in proc.stderr and ("not a valid image reference" in proc.stderr or
                                                          "is not <registry>/<project>/<image>:<tag>" in proc.stderr), proc.stderr
        assert not (tmp_path / "out").exists()


def test_check_reports_an_image_that_is_no_reference(tmp_path):
    for i, image in enumerate(BAD_IMAGES):
        d = deployment()
        d["metadata"]["name"] = f"web{i}"
        d["spec"]["template"]["spec"]["containers"][0]["image"] = image
        write(tmp_path / f"web{i}.yaml", [d])
    found = _rules(ran(colocate("check", ".", "--format", "json", cwd=tmp_path), 1))
    assert sorted(f["name"] for f in found["COL406"]) == [f"web{i}" for i in range(len(BAD_IMAGES))], found.get("COL406")


# --- Ctrl-C during synth -------------------------------------------------------------------------


@pytest.mark.slow
def test_ctrl_c_during_synth_says_which_tree_is_in_place(tmp_path):
    import os
    import signal
    import time
    from colocate.synth import write as render
    from colocate.base.go_builds import environment
    from tests.helpers import VENV_BIN

    out = tmp_path / "dist"
    (tmp_path / "none").mkdir()
    started = time.monotonic()
    ran(colocate("synth", "--config", CONFIG, "--outdir", str(out), cwd=tmp_path), 0)
    took = time.monotonic() - started  # on a loaded machine, seconds more than on a quiet one
    old = render.read_tree(out)
    seen = set()
    for step in range(12):
        # Ctrl-C in a terminal signals the whole foreground process group (Node's jsii runtime too).
        proc = subprocess.Popen([str(VENV_BIN / "colocate"), "synth", "--config", CONFIG, "--outdir", str(out),
                                 "--jobs", "none"], cwd=tmp_path, env=environment(), start_new_session=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5 + step * took / 6)  # from just after the start to about twice a whole synth
        try:
            os.killpg(proc.pid, signal.SIGINT)
        except ProcessLookupError:
            pass
        _, err = proc.communicate(timeout=120)
        state = render.read_tree(out)
        assert "Traceback" not in err and "    at " not in err, err
        if proc.returncode == 0:
            assert state != old and err.startswith(f"colocate: wrote {len(state)} files to {out}"), err
            seen.add("done")
        else:
            assert proc.returncode == 130, (proc.returncode, err)
            if state == old:
                assert err.strip() == f"colocate: interrupted: {out} is unchanged (the tree it held before, if any)", err
                seen.add("old")
            else:
                assert err.strip() == (f"colocate: interrupted: {out} holds the new tree (the signal came after it "
                                       "was swapped in)"), err
                seen.add("new")
        if {"old", "done"} <= seen:
            break  # later signals come later still: after the swap, or after the end
        if state != old:
            ran(colocate("synth", "--config", CONFIG, "--outdir", str(out), cwd=tmp_path), 0)
    assert "old" in seen and "done" in seen, seen


# --- two synths at once --------------------------------------------------------------------------

_WRITER = """
import sys
from colocate.synth import write as render
items = [render.Manifest(f"apps/a{i % 7}", {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": f"c{i}", "namespace": "a"}, "data": {"who": sys.argv[2]}}) for i in range(int(sys.argv[3]))]
render.write_tree(render.render(items, render.index(items, "1.0.0", "1.28.0", {})), __import__("pathlib").Path(sys.argv[1]))
"""


@pytest.mark.slow
def test_two_writers_at_once_both_finish_and_leave_one_whole_tree(tmp_path):
    import sys
    import time
    from colocate.synth import write as render

    out = tmp_path / "dist"
    def start(who: str, count: int) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", _WRITER, str(out), who, str(count)],
                                cwd=ROOT, stderr=subprocess.PIPE, text=True)

    for _round in range(2):
        # A big tree, whose staging folder lives for seconds; then a small one.
        procs = [start("first", 20000)]
        # The second starts while the first writes its staging folder (dist.tmp-*).
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob("dist.tmp-*")) and time.monotonic() < deadline:
            time.sleep(0.005)
        procs.append(start("second", 10))
        for proc in procs:
            _, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err
        state = render.read_tree(out)
        whos = {line for text in state.values() for line in text.splitlines() if line.strip().startswith("who:")}
        assert len(state) in (20001, 11) and len(whos) == 1, (len(state), whos)
        assert [p.name for p in tmp_path.iterdir()] == ["dist"]


# --- one file that is no manifest in a folder ----------------------------------------------------


def _folder_with_strays(root: Path) -> None:
    write(root / "deploy.yaml", [deployment(replicas="three")])
    write(root / "cm.yaml", [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"}}])
    write(root / "chart" / "templates" / "svc.yaml", "metadata:\n  name: {{ .Release.Name }}\n")
    write(root / "notes.yaml", "title: not a manifest\n")


def test_a_non_manifest_yaml_in_a_folder_is_reported_per_file_and_the_rest_checked(tmp_path):
    _folder_with_strays(tmp_path)
    write(tmp_path / ".github" / "workflows" / "ci.yml", "on: push\njobs: {}\n")
    report = json.loads(ran(colocate("check", ".", "--format", "json", cwd=tmp_path), 1).stdout)
    by_file = {}
    for f in report["findings"]:
        by_file.setdefault(f["file"], []).append(f["rule"])
    assert by_file["chart/templates/svc.yaml"] == ["INPUT"] and by_file["notes.yaml"] == ["INPUT"], by_file
    assert "SCHEMA" in by_file["deploy.yaml"], by_file  # the rest was checked, kubeconform included
    assert not [f for f in by_file if f.startswith(".github")], by_file  # hidden folders are skipped
    # Named, a hidden folder is checked; --exclude leaves paths out.
    report = json.loads(ran(colocate("check", ".", ".github", "--exclude", "chart", "--exclude", "notes.yaml",
                                     "--format", "json", cwd=tmp_path), 1).stdout)
    files = {f["file"] for f in report["findings"]}
    assert ".github/workflows/ci.yml" in files and "notes.yaml" not in files and not any("chart" in f for f in files), files


def test_a_non_manifest_file_named_explicitly_is_still_bad_input(tmp_path):
    write(tmp_path / "notes.yaml", "title: not a manifest\n")
    ran(colocate("check", "notes.yaml", cwd=tmp_path), 2)


# --- --cluster is never silently ignored ---------------------------------------------------------


def test_an_explicit_cluster_wins_over_node_pools_among_the_checked_files(tmp_path):
    proc = ran(colocate("check", str(ROOT / "dist"), "--cluster", str(tmp_path / "nonexistent"), cwd=tmp_path), 2)
    assert "nonexistent" in proc.stderr, proc.stderr
    # A cluster whose mixed nodes are too small for the reference jobs: its verdict is the one given.
    small = yaml_load((ROOT / "dist/nodes/mixed/nodepool.mixed.yaml").read_text())
    small["spec"]["allocatable"]["cpu"] = "500m"
    write(tmp_path / "small.yaml", [small])
    found = _rules(ran(colocate("check", str(ROOT / "dist"), "--cluster", "small.yaml", "--format", "json",
                                cwd=tmp_path), 1))
    assert found.get("COL050"), found.keys()


# --- duplicate keys in job files and colocate.yaml -----------------------------------------------


def test_a_duplicate_key_in_a_job_file_is_refused_with_both_lines(tmp_path):
    write(tmp_path / "jobs" / "x.yaml", "name: x\nimage: harbor.example.com/ml/x:1\nroles:\n"
                                        "  Worker: {cpu: 1, memory: 1Gi, gpus: 0}\n"
                                        "  Worker: {cpu: 1, memory: 1Gi, gpus: 12}\n")
    proc = ran(colocate("synth", "--config", CONFIG, "--jobs", "jobs", "--outdir", "out", cwd=tmp_path), 2)
    assert "x.yaml:5: key 'Worker' appears twice (lines 4 and 5)" in proc.stderr, proc.stderr


def test_a_duplicate_key_in_colocate_yaml_is_refused_with_both_lines(tmp_path):
    text = (ROOT / "colocate.yaml").read_text()
    (tmp_path / "colocate.yaml").write_text(text + "release: 9.9.9\n")
    first = next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith("release:"))
    last = len(text.splitlines()) + 1
    proc = ran(colocate("synth", "--outdir", "out", cwd=tmp_path), 2)
    assert f"colocate.yaml:{last}: key 'release' appears twice (lines {first} and {last})" in proc.stderr, proc.stderr


# --- synth refuses what its own check refuses ----------------------------------------------------


def _jobs(folder: Path, count: int, **worker: object) -> None:
    role = ", ".join(f"{k}: {v}" for k, v in {"cpu": "10m", "memory": "16Mi", **worker}.items())
    for i in range(count):
        write(folder / f"j{i}.yaml", f"name: j{i}\nimage: harbor.example.com/ml/x:1\nroles:\n  Worker: {{{role}}}\n")


def test_synth_refuses_more_claims_than_the_quota_allows_and_check_reports_it(tmp_path):
    _jobs(tmp_path / "jobs", 101)
    proc = ran(colocate("synth", "--config", CONFIG, "--jobs", "jobs", "--outdir", "out", cwd=tmp_path), 2)
    assert "not written: `colocate check` would refuse the tree" in proc.stderr, proc.stderr
    assert "COL051" in proc.stderr and "spec.hard[persistentvolumeclaims]" in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


def _unqueued_config(folder: Path) -> str:
    """The reference colocate.yaml without the queue (kueue.admitTraining: false)."""
    path = folder / "colocate.yaml"
    text = (ROOT / "colocate.yaml").read_text()
    assert "admitTraining: true" in text
    path.write_text(text.replace("admitTraining: true", "admitTraining: false"))
    return str(path)


def test_synth_refuses_a_job_beyond_the_gpu_quota(tmp_path):
    _jobs(tmp_path / "jobs", 1, replicas=13, gpus=1)
    proc = ran(colocate("synth", "--config", _unqueued_config(tmp_path), "--jobs", "jobs", "--outdir", "out",
                        cwd=tmp_path), 2)
    assert "COL051" in proc.stderr and "requests.nvidia.com/gpu" in proc.stderr, proc.stderr


def test_synth_refuses_a_job_the_queue_can_never_admit(tmp_path):
    _jobs(tmp_path / "jobs", 1, replicas=13, gpus=1)
    proc = ran(colocate("synth", "--config", CONFIG, "--jobs", "jobs", "--outdir", "out", cwd=tmp_path), 2)
    assert "COL120" in proc.stderr and "the job asks 13 nvidia.com/gpu in all, ClusterQueue 'training' holds 12" in proc.stderr, proc.stderr


def test_jobs_beyond_one_night_wait_in_the_queue(tmp_path):
    """14 one-GPU jobs on 12 GPUs: written, and the two that do not fit wait for admission."""
    _jobs(tmp_path / "jobs", 14, gpus=1)
    ran(colocate("synth", "--config", CONFIG, "--jobs", "jobs", "--outdir", "out", cwd=tmp_path), 0)
    assert len(list((tmp_path / "out" / "apps" / "training").glob("tfjob.*.yaml"))) == 14


# --- more file names than one command line holds -------------------------------------------------


def test_file_names_beyond_the_argument_limit_are_validated_in_batches(tmp_path):
    import os

    deep = tmp_path.joinpath(*(["d" * 250] * 14))  # 3500-byte paths: 700 of them exceed ARG_MAX (2 MiB)
    deep.mkdir(parents=True)
    count = 700
    for i in range(count):
        (deep / f"cm{i}.yaml").write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}, namespace: default}}\n")
    assert count * len(str(deep)) > os.sysconf("SC_ARG_MAX")
    proc = ran(colocate("check", str(tmp_path), cwd=tmp_path), 0)
    assert f"kubeconform: {count} valid, 0 invalid, 0 errors, 0 skipped" in proc.stdout, proc.stdout + proc.stderr


# --- Low: COL006 across separate Argo CD applications ---------------------------------------------


def test_objects_without_a_namespace_in_separate_application_folders_are_no_duplicates(tmp_path):
    # argoproj/argocd-example-apps: helm-hooks/ and sync-waves/ both hold Service frontend with no
    # namespace; each Application's destination gives its own.
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "frontend"},
               "spec": {"ports": [{"port": 80}], "selector": {"app": "frontend"}}}
    write(tmp_path / "helm-hooks" / "manifests.yaml", [service])
    write(tmp_path / "sync-waves" / "manifests.yaml", [service])
    found = _rules(ran(colocate("check", ".", "--format", "json", cwd=tmp_path), 1))
    assert "COL006" not in found, found.get("COL006")
    # Twice in one folder (one Application) is still a duplicate.
    write(tmp_path / "sync-waves" / "again.yaml", [service])
    found = _rules(ran(colocate("check", ".", "--format", "json", cwd=tmp_path), 1))
    assert [f["file"] for f in found["COL006"]] == ["sync-waves/manifests.yaml"], found.get("COL006")


# --- Low items -----------------------------------------------------------------------------------


def test_diff_with_a_dist_folder_in_neither_revision_is_bad_input_and_one_object_differs(tmp_path):
    from tests.helpers import git

    dist = _dist_copy(tmp_path / "dist")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "base")
    proc = ran(colocate("diff", "main", "--dist", "dsit", "--no-policy", "--no-capacity", cwd=tmp_path), 2)
    assert "dsit" in proc.stderr and "neither" in proc.stderr, proc.stderr
    _set_value(dist, "prepull-idle", 2000)
    proc = ran(colocate("diff", "main", "--no-policy", "--no-capacity", cwd=tmp_path), 0)
    assert "1 object differs in 1 Application" in proc.stdout, proc.stdout


def test_job_files_that_would_be_ignored_are_refused(tmp_path):
    for rel in ("sub/x.yaml", "x.YAML", "x.json"):
        folder = tmp_path / "jobs"
        import shutil
        shutil.rmtree(folder, ignore_errors=True)
        write(folder / rel, "name: x\nimage: harbor.example.com/ml/x:1\nroles:\n  Worker: {cpu: 1, memory: 1Gi}\n")
        proc = ran(colocate("synth", "--config", CONFIG, "--jobs", "jobs", "--outdir", "out", cwd=tmp_path), 2)
        assert "it would be ignored" in proc.stderr, (rel, proc.stderr)


def test_capacity_of_an_empty_folder_is_bad_input(tmp_path):
    (tmp_path / "empty").mkdir()
    proc = ran(colocate("capacity", "empty", cwd=tmp_path), 2)
    assert "no Kubernetes objects" in proc.stderr, proc.stderr


def test_a_list_whose_items_is_a_mapping_is_bad_input_not_unvalidated(tmp_path):
    write(tmp_path / "list.yaml", "apiVersion: v1\nkind: List\nitems:\n  a: {apiVersion: v1, kind: ConfigMap}\n")
    proc = ran(colocate("check", "list.yaml", cwd=tmp_path), 2)
    assert "items" in proc.stderr, proc.stderr


def test_a_target_revision_with_a_new_line_is_refused(tmp_path):
    data = yaml_load((ROOT / "colocate.yaml").read_text())
    data["gitops"]["targetRevision"] = "main\nevil"
    (tmp_path / "colocate.yaml").write_text(yaml.safe_dump(data))
    proc = ran(colocate("synth", "--outdir", "out", cwd=tmp_path), 2)
    assert "targetRevision" in proc.stderr, proc.stderr


def test_the_docs_list_exit_code_141():
    assert "| 141 |" in (ROOT / "docs" / "input-forms.md").read_text()


def test_diff_names_a_revisions_broken_file_by_its_path_and_refuses_an_absolute_link(tmp_path):
    import os
    from tests.helpers import git

    dist = _dist_copy(tmp_path / "dist")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "base")
    (dist / "apps/online/broken.yaml").write_text("a: [\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "broken")
    proc = ran(colocate("diff", "HEAD~1", "HEAD", "--no-policy", "--no-capacity", cwd=tmp_path), 2)
    assert "HEAD: dist/apps/online/broken.yaml:2: not valid YAML" in proc.stderr, proc.stderr
    (dist / "apps/online/broken.yaml").unlink()
    os.symlink("/etc/hostname", dist / "apps/online/abs.yaml")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "absolute link")
    proc = ran(colocate("diff", "HEAD~1", "HEAD", "--no-policy", "--no-capacity", cwd=tmp_path), 2)
    assert "absolute path" in proc.stderr, proc.stderr


def test_schema_messages_carry_no_cache_path_and_name_a_removed_api(tmp_path):
    write(tmp_path / "d.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a, namespace: default}\n"
                               "spec: {replicas: 'three'}\n---\napiVersion: policy/v1beta1\nkind: PodDisruptionBudget\n"
                               "metadata: {name: b, namespace: default}\nspec: {minAvailable: 1}\n")
    schema = {f["kind"]: f["message"] for f in json.loads(ran(colocate("check", "d.yaml", "--format", "json",
                                                                         cwd=tmp_path), 1).stdout)["findings"]
              if f["rule"] == "SCHEMA"}
    assert "file://" not in schema["Deployment"] and ".cache" not in schema["Deployment"], schema
    assert "/spec/replicas" in schema["Deployment"], schema
    assert "policy/v1beta1 is not served by Kubernetes 1.28.0" in schema["PodDisruptionBudget"], schema
    assert schema["PodDisruptionBudget"].endswith("it serves PodDisruptionBudget as policy/v1"), schema


def test_a_utf16_file_is_named_as_utf16_not_binary(tmp_path):
    (tmp_path / "u.yaml").write_bytes("apiVersion: v1\nkind: ConfigMap\n".encode("utf-16"))
    proc = ran(colocate("check", "u.yaml", cwd=tmp_path), 2)
    assert "UTF-16" in proc.stderr and "binary" not in proc.stderr, proc.stderr


def _config_with(tmp_path: Path, change) -> Path:
    data = yaml_load((ROOT / "colocate.yaml").read_text())
    change(data)
    path = tmp_path / "my-config.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _kubeconforms_on(folder: Path) -> list[str]:
    """kubeconform processes still running on files under ``folder``."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if args and args[0].endswith(b"kubeconform") and any(str(folder).encode() in a for a in args):
            found.append(proc.name)
    return found


@pytest.mark.parametrize("cache", [["--no-cache"], ["--cache", "empty-cache"]])
def test_a_bad_configuration_with_a_good_kubernetes_version_is_said_first(tmp_path, cache):
    """check starts kubeconform with kubernetesVersion before validating the rest of the configuration:
    a bad rest is still the error (before a missing path), and kubeconform does not outlive it."""
    zero = _config_with(tmp_path, lambda d: d["monitoring"].__setitem__("storageSize", "0Gi"))
    (tmp_path / "d.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\n")
    for args in (["d.yaml"], ["d.yaml", "missing.yaml"]):
        proc = ran(colocate("check", *args, "--config", str(zero), *cache, cwd=tmp_path), 2)
        assert f"{zero}:$.monitoring.storageSize" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not _kubeconforms_on(tmp_path)
    assert not (tmp_path / "empty-cache").exists() or not any((tmp_path / "empty-cache").rglob("file/*/*"))


def test_config_errors_name_the_file_and_key_in_synth(tmp_path):
    zero = _config_with(tmp_path, lambda d: d["monitoring"].__setitem__("storageSize", "0Gi"))
    proc = ran(colocate("--config", str(zero), "synth", "--outdir", "out", cwd=tmp_path), 2)
    assert f"{zero}:$.monitoring.storageSize" in proc.stderr and "prop" not in proc.stderr, proc.stderr
    future = _config_with(tmp_path, lambda d: d.__setitem__("kubernetesVersion", "1.99.0"))
    proc = ran(colocate("--config", str(future), "synth", "--outdir", "out", cwd=tmp_path), 2)
    assert f"{future}:$.kubernetesVersion" in proc.stderr and "1.99.0" in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


def test_a_chart_repository_key_of_an_older_colocate_yaml_says_it_is_no_longer_read(tmp_path):
    old = _config_with(tmp_path, lambda d: d["monitoring"].__setitem__(
        "prometheusChartRepoURL", "https://prometheus-community.github.io/helm-charts"))
    proc = ran(colocate("--config", str(old), "synth", "--outdir", "out", cwd=tmp_path), 2)
    assert f"{old}:$.monitoring.prometheusChartRepoURL" in proc.stderr and "no longer read" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "out").exists()


def test_prometheus_on_the_shared_nfs_class_is_refused_naming_the_key(tmp_path):
    nfs = _config_with(tmp_path, lambda d: d["monitoring"].__setitem__("storageClass", d["storage"]["sharedClass"]))
    proc = ran(colocate("--config", str(nfs), "synth", "--outdir", "out", cwd=tmp_path), 2)
    assert f"{nfs}:$.monitoring.storageClass" in proc.stderr and "NFS" in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


def test_a_yaml_boolean_where_a_name_belongs_gets_a_quote_it_hint(tmp_path):
    write(tmp_path / "jobs" / "yes.yaml", "name: yes\nimage: harbor.example.com/ml/x:1\nroles:\n  Worker: {cpu: 1, memory: 1Gi}\n")
    proc = ran(colocate("synth", "--config", CONFIG, "--jobs", "jobs", "--outdir", "out", cwd=tmp_path), 2)
    assert "quote it" in proc.stderr and "'yes'" in proc.stderr, proc.stderr


def test_check_reads_manifests_from_stdin(tmp_path):
    import subprocess as sp
    from tests.helpers import VENV_BIN
    from colocate.base.go_builds import environment

    text = yaml.safe_dump_all([deployment(replicas="three")])
    proc = sp.run([str(VENV_BIN / "colocate"), "check", "-", "--format", "json"], input=text, cwd=tmp_path,
                  env=environment(), capture_output=True, text=True)
    ran(proc, 1)
    findings = json.loads(proc.stdout)["findings"]
    assert findings and {f["file"] for f in findings} == {"-"}, findings
    assert any(f["rule"] == "SCHEMA" for f in findings), findings


def test_capacity_marks_over_commitment_exits_1_and_names_what_it_does_not_count(tmp_path):
    proc = ran(colocate("capacity", str(ROOT / "dist"), cwd=tmp_path), 0)
    assert "OVER" not in proc.stdout
    assert "not counted" in proc.stderr and "Prometheus monitoring/kube-prometheus-stack-prometheus" in proc.stderr, \
        proc.stderr
    dist = _dist_copy(tmp_path / "dist")
    quota = dist / "apps/platform/resourcequota.training.training-quota.yaml"
    quota.write_text(quota.read_text().replace("persistentvolumeclaims: '100'", "persistentvolumeclaims: '1'"))
    proc = ran(colocate("capacity", "dist", cwd=tmp_path), 1)
    line = next(text for text in proc.stdout.splitlines() if "persistentvolumeclaims" in text)
    assert line.rstrip().endswith("300% OVER"), line


def test_diff_lists_removing_a_tfjob_as_dangerous(tmp_path):
    from tests.helpers import git

    dist = _dist_copy(tmp_path / "dist")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "base")
    (dist / "apps/training/tfjob.training.tf-ps-mode.yaml").unlink()
    report = json.loads(ran(colocate("diff", "main", "--no-policy", "--no-capacity", "--format", "json",
                                     cwd=tmp_path), 0).stdout)
    text = json.dumps(report)
    assert "deleting a TFJob" in text, text[:2000]


def test_a_cpu_finer_than_a_millicore_is_refused_not_rounded(tmp_path):
    write(tmp_path / "jobs" / "x.yaml", "name: x\nimage: harbor.example.com/ml/x:1\nroles:\n  Worker: {cpu: 0.0001, memory: 1Gi}\n")
    proc = ran(colocate("synth", "--config", CONFIG, "--jobs", "jobs", "--outdir", "out", cwd=tmp_path), 2)
    assert "x.yaml:$.roles.Worker.cpu" in proc.stderr and "1m" in proc.stderr, proc.stderr


def test_diff_keeps_counting_a_claim_argo_cd_keeps(tmp_path):
    from tests.helpers import git

    dist = _dist_copy(tmp_path / "dist")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "base")
    # The job's file goes; its claim carries Prune=false, so Argo CD keeps it and the quota stays used.
    for name in ("tfjob.training.tf-ps-mode.yaml", "persistentvolumeclaim.training.tf-ps-mode-checkpoints.yaml"):
        (dist / "apps/training" / name).unlink()
    report = json.loads(ran(colocate("diff", "main", "--no-policy", "--format", "json", cwd=tmp_path), 0).stdout)
    rows = [q for q in report.get("quota") or [] if q.get("resource") == "persistentvolumeclaims"]
    assert rows == [], rows


def test_capacity_prints_memory_in_units_never_raw_bytes(tmp_path):
    d = deployment()
    d["metadata"]["namespace"] = "online"
    d["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1", "memory": "1G"},
                                                                   "limits": {"cpu": "1", "memory": "1G"}}
    write(tmp_path / "dist" / "d.yaml", [d])
    proc = ran(colocate("capacity", "dist", cwd=tmp_path), 0)
    assert "1000000000" not in proc.stdout and "1G" in proc.stdout, proc.stdout


def test_an_error_in_the_config_given_with_config_names_that_file(tmp_path):
    other = _config_with(tmp_path, lambda d: d["registry"]["proxyCacheProjects"].pop("quay.io"))
    proc = ran(colocate("--config", str(other), "synth", "--outdir", "out", cwd=tmp_path), 2)
    assert proc.stderr.startswith(f"colocate: error: {other}:$.registry.proxyCacheProjects"), proc.stderr
