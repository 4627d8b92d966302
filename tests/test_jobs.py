"""Job files: every mistake is refused naming the file and the JSON path (or the prop), and a
bad file fails synth without touching dist/."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from colocate import ROOT, app, config as config_mod
from colocate.synth import jobs
from colocate.errors import InputError
from colocate.model import names
from tests.helpers import colocate, yaml_load

DIST = ROOT / "dist"
#: The smallest valid job file (docs/training.md shows it).
SMALLEST = """\
name: hello-tf
image: harbor.example.com/ml/hello-tf:1.0.0
roles:
  Worker: {cpu: 1, memory: 2Gi}
"""


@pytest.fixture(scope="module")
def config() -> config_mod.Config:
    return config_mod.load()


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(text)
    return path


def job(**changes) -> str:
    data = yaml_load(SMALLEST)
    for dotted, value in changes.items():
        *parents, key = dotted.split(".")
        target = data
        for part in parents:
            target = target[part]
        if value is None:
            del target[key]
        else:
            target[key] = value
    return yaml.safe_dump(data)


def test_the_smallest_job_file_becomes_a_tfjob_with_every_default(tmp_path, config):
    write(tmp_path, "hello-tf", SMALLEST)
    files = app.render_files(app.build(config, jobs_dir=tmp_path))
    tfjob = yaml_load(files["apps/training/tfjob.training.hello-tf.yaml"])
    worker = tfjob["spec"]["tfReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 1 and worker["restartPolicy"] == "OnFailure"
    assert worker["template"]["spec"]["priorityClassName"] == "offline-batch"
    claim = yaml_load(files["apps/training/persistentvolumeclaim.training.hello-tf-checkpoints.yaml"])
    assert claim["spec"]["resources"]["requests"]["storage"] == "10Gi"
    assert claim["spec"]["storageClassName"] == config.shared_storage_class


@pytest.mark.parametrize("text, path, words", [
    (job(owner="me"), "$", "unknown key 'owner'; known keys: name, image"),
    (job(**{"roles.Workers": {"cpu": 1, "memory": "2Gi"}}), "$.roles", "unknown key 'Workers' (did you mean 'Worker'?)"),
    (job(**{"roles.Worker.memory": "2GB"}), "$.roles.Worker.memory", "'2GB' is not a size: write a whole number above 0 "
     "and Ki, Mi, Gi or Ti, such as 512Mi, 4Gi or 1Ti (not G or GB); did you mean '2Gi'?"),
    (job(**{"roles.Worker.memory": "500m"}), "$.roles.Worker.memory", "did you mean '500Mi'?"),
    (job(**{"roles.Worker.cpu": "two"}), "$.roles.Worker.cpu", "'two' is not a CPU amount: write cores above 0 as a "
     "number such as 2 or 0.5 (at most 3 decimals, below a million cores), or millicores such as 500m (at most 12 "
     "characters)"),
    # Absurd sizes are refused in words before any arithmetic (a 5000-digit size crashed int-to-text).
    (job(**{"roles.Worker.memory": "99999999999999999999999999Ti"}), "$.roles.Worker.memory",
     "'99999999999999999999999999Ti' is longer than 12 characters, more than any node has"),
    (job(**{"roles.Worker.memory": "9" * 5000 + "Gi"}), "$.roles.Worker.memory", "is longer than 12 characters"),
    (job(**{"roles.Worker.cpu": "1" + "0" * 20 + "m"}), "$.roles.Worker.cpu", "is not a CPU amount"),
    (job(**{"roles.Worker.cpu": 10**7}), "$.roles.Worker.cpu", "10000000 is not a CPU amount"),
    (job(**{"roles.Worker.cpu": 0}), "$.roles.Worker.cpu", "0 is not a CPU amount"),
    (job(**{"roles.Worker.cpu": None}), "$.roles.Worker", "'cpu' is a required property"),
    (job(**{"roles.Worker.replicas": "3"}), "$.roles.Worker.replicas", "'3' is not of type 'integer'; did you mean 3?"),
    (job(command="train.py"), "$.command", "'train.py' is not of type 'array'; did you mean [\"train.py\"]?"),
    (job(**{"roles.Worker.gpus": -1}), "$.roles.Worker.gpus", "less than the minimum of 0"),
    (job(**{"roles.Worker.restartPolicy": "Always"}), "$.roles.Worker", "unknown key 'restartPolicy'"),
    (job(restartPolicy="Always"), "$.restartPolicy", "'Always' is not one of OnFailure, Never, ExitCode"),
    (job(cleanPodPolicy="None"), "$", "unknown key 'cleanPodPolicy'"),
    (job(terminationGracePeriodSeconds=10), "$.terminationGracePeriodSeconds", "10 is less than the minimum of 30"),
    (job(activeDeadlineSeconds=10), "$.activeDeadlineSeconds", "10 is less than the minimum of 60"),
    (job(terminationGracePeriodSeconds=120), "$.terminationGracePeriodSeconds", "120 is greater than the maximum of 60"),
    (job(image="harbor.example.com/ml/hello-tf:latest"), "$.image", "'harbor.example.com/ml/hello-tf:latest' is not "
     "pinned: latest can name a different image on each node and each restart; use the image's version tag, e.g. :2.11.0"),
    (job(image="harbor.example.com/ml/hello-tf"), "$.image", "'harbor.example.com/ml/hello-tf' is not "
     "<registry>/<project>/<image>:<tag>; write the registry, the repository and a pinned tag"),
    (job(name="Hello_TF"), "$.name", "'Hello_TF' is not a TFJob name: use lower-case letters, digits and '-'"),
    # The API server would take it; training-operator v1.7.0 refuses it (DNS-1035, tensorflow_validation.go).
    (job(name="1abc"), "$.name", "'1abc' is not a TFJob name: use lower-case letters, digits and '-', starting with "
     "a letter"),
    (job(roles={}), "$.roles", "should be non-empty"),
    (job(name=None), "$", "'name' is a required property"),
    ("", "$", "the file is empty; it must map keys to values, at least name, image, roles"),
    ("- name: hello-tf\n", "$", "the file holds a list; it must map keys to values"),
    (job(name="other-name"), "$.name", "must equal the file name 'hello-tf'"),
    (job(image="docker.io/tensorflow/tensorflow:2.11.0"), "$.image", "not on the cluster's registry mirror"),
])
def test_a_schema_mistake_names_the_file_and_the_json_path(tmp_path, config, text, path, words):
    file = write(tmp_path, "hello-tf", text)
    with pytest.raises(InputError) as err:
        jobs.load(tmp_path, config)
    assert str(err.value).startswith(f"{file}:{path}: "), str(err.value)
    assert words in str(err.value)


def test_broken_yaml_names_the_file_and_line(tmp_path, config):
    file = write(tmp_path, "hello-tf", "name: hello-tf\nroles: [\n")
    with pytest.raises(InputError, match=rf"^{file}:3: not valid YAML"):
        jobs.load(tmp_path, config)


def test_a_yml_file_is_refused_rather_than_ignored(tmp_path, config):
    (tmp_path / "hello-tf.yml").write_text(SMALLEST)
    with pytest.raises(InputError, match="job files end in .yaml"):
        jobs.load(tmp_path, config)


def test_a_file_in_the_repository_is_named_relative_to_it(config):
    folder = ROOT / "jobs"
    assert {j.file for j in jobs.load(folder, config)} == {f"jobs/{p.name}" for p in folder.glob("*.yaml")}


@pytest.mark.parametrize("changes, prop, words", [
    ({"roles.PS": {"cpu": 1, "memory": "2Gi", "gpus": 1}}, "$.roles.PS.gpus", "set gpus on Worker instead"),
    ({"roles.Master": {"cpu": 1, "memory": "2Gi", "replicas": 2}}, "$.roles.Master.replicas", "exactly one Master"),
    ({"roles.Worker.memoryLimit": "1Gi"}, "$.roles.Worker.memory", "request 2Gi is above the limit 1Gi; raise "
                                                                  "memoryLimit or lower the request"),
    ({"roles.Worker.cpuLimit": "500m"}, "$.roles.Worker.cpu", "raise cpuLimit or lower the request"),
    ({"roles.Worker.memoryLimit": "8Gi"}, "$.roles.Worker.memoryLimit", "8Gi is more than 2x the request 2Gi"),
    ({"roles.Worker.cpu": 64}, "$.roles.Worker.cpu/memory/gpus", "lower the request or split the work"),
])
def test_a_construct_refusal_names_the_file_and_the_prop(tmp_path, config, changes, prop, words):
    file = write(tmp_path, "hello-tf", job(**changes))
    with pytest.raises(InputError) as err:
        app.build(config, jobs_dir=tmp_path)
    # The job file's own path and key names (memoryLimit, not the construct's memory_limit).
    assert str(err.value).startswith(f"{file}:{prop}: ") and words in str(err.value), str(err.value)
    assert not re.search(r"[a-z]_[a-z]", str(err.value).replace(str(file), "")), str(err.value)


def test_the_job_file_sets_the_grace_period_within_the_construct_bounds(tmp_path, config):
    bounds = jobs.SCHEMA["properties"]["terminationGracePeriodSeconds"]
    assert (bounds["minimum"], bounds["maximum"]) == (names.TFJOB_MIN_GRACE_SECONDS, names.OFFLINE_MAX_GRACE_SECONDS)
    write(tmp_path, "hello-tf", job(terminationGracePeriodSeconds=55))
    files = app.render_files(app.build(config, jobs_dir=tmp_path))
    tfjob = yaml_load(files["apps/training/tfjob.training.hello-tf.yaml"])
    assert tfjob["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["terminationGracePeriodSeconds"] == 55
    assert tfjob["spec"]["runPolicy"]["cleanPodPolicy"] == "All"


def test_the_construct_keys_map_to_the_files_own():
    assert jobs.file_path("roles.Worker.memory_limit") == "$.roles.Worker.memoryLimit"
    assert jobs.file_path("roles.Chief.restart_policy") == "$.restartPolicy"  # one key for every role
    assert jobs.file_path("checkpoint_size") == "$.checkpointSize"
    assert jobs.file_words("raise cpu_limit, memory_limit or backoff_limit") == "raise cpuLimit, memoryLimit or backoffLimit"


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_one_bad_job_file_fails_synth_and_leaves_dist_untouched(tmp_path):
    out = tmp_path / "dist"
    shutil.copytree(DIST, out)
    before = _tree(out)
    jobs_dir = tmp_path / "jobs"
    shutil.copytree(ROOT / "jobs", jobs_dir)
    bad = write(jobs_dir, "zz-broken", job(name="zz-broken", **{"roles.Worker.memory": "lots"}))
    with pytest.raises(InputError, match=rf"^{bad}:\$\.roles\.Worker\.memory: "):
        app.synth(out, jobs_dir=jobs_dir)
    assert _tree(out) == before
    assert not list(tmp_path.glob("dist.tmp-*")), "staging folder left behind"


def test_a_missing_jobs_folder_is_bad_input(tmp_path, config):
    with pytest.raises(InputError, match="no such jobs folder"):
        jobs.load(tmp_path / "nope", config)


def test_every_schema_error_is_listed_unknown_keys_first(tmp_path, config):
    file = write(tmp_path, "hello-tf", "name: hello-tf\nimage: harbor.example.com/ml/hello-tf:latest\n"
                                        "roles:\n  Worker: {cpu: 1, memroy: 2Gi, memory: 4GB, replicas: 0}\n"
                                        "checkpointSize: 10G\nbackofLimit: 3\n")
    with pytest.raises(InputError) as err:
        jobs.load(tmp_path, config)
    lines = str(err.value).splitlines()
    assert lines == [
        f"{file}:$: unknown key 'backofLimit' (did you mean 'backoffLimit'?); known keys: name, image, command, args, "
        "roles, checkpointSize, backoffLimit, terminationGracePeriodSeconds, activeDeadlineSeconds, expectedHours, "
        "restartPolicy",
        f"  {file}:$.roles.Worker: unknown key 'memroy' (did you mean 'memory'?); known keys: replicas, cpu, cpuLimit, "
        "memory, memoryLimit, gpus",
        f"  {file}:$.checkpointSize: '10G' is not a size: write a whole number above 0 and Ki, Mi, Gi or Ti, such as "
        "512Mi, 4Gi or 1Ti (not G or GB); did you mean '10Gi'?",
        f"  {file}:$.image: 'harbor.example.com/ml/hello-tf:latest' is not pinned: latest can name a different image on "
        "each node and each restart; use the image's version tag, e.g. :2.11.0",
        f"  {file}:$.roles.Worker.memory: '4GB' is not a size: write a whole number above 0 and Ki, Mi, Gi or Ti, such "
        "as 512Mi, 4Gi or 1Ti (not G or GB); did you mean '4Gi'?",
        f"  {file}:$.roles.Worker.replicas: 0 is less than the minimum of 1",
    ]


def _walk(node, path=""):
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            if key not in ("not", "oneOf", "anyOf", "errorMessage"):  # their branches are explained by the parent
                yield from _walk(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk(value, f"{path}/{i}")


@pytest.mark.parametrize("schema", ["job.schema.json", "config.schema.json"])
def test_no_regular_expression_reaches_a_user(schema):
    """Every keyword whose own message would show a regular expression or a sub-schema carries an
    errorMessage in words: users of the job file and colocate.yaml never read a pattern."""
    doc = yaml_load((ROOT / "colocate" / "base" / "data" / "schemas" / schema).read_text())
    missing = []
    for path, node in _walk(doc):
        explained = node.get("errorMessage")
        for keyword in ("pattern", "anyOf", "oneOf", "not"):
            if keyword in node and not (isinstance(explained, str) or (isinstance(explained, dict) and keyword in explained)):
                missing.append(f"{path}: {keyword}")
    assert not missing


def test_a_job_file_in_the_repository_is_named_relative_to_it_in_every_message(tmp_path):
    shutil.copy(ROOT / "colocate.yaml", tmp_path / "colocate.yaml")
    jobs_dir = tmp_path / "jobs"
    write(jobs_dir, "hello-tf", job(**{"roles.Worker.memory": "2GB"}))
    write(jobs_dir, "broken", "name: broken\nroles: [\n")
    (jobs_dir / "latin1.yaml").write_bytes(b"name: caf\xe9\n")
    proc = colocate("synth", "--jobs", str(jobs_dir), "--outdir", str(tmp_path / "dist"), cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith("colocate: error: jobs/broken.yaml:3: not valid YAML"), proc.stderr
    (jobs_dir / "broken.yaml").unlink()
    proc = colocate("synth", "--jobs", str(jobs_dir), "--outdir", str(tmp_path / "dist"), cwd=tmp_path)
    assert proc.stderr.startswith("colocate: error: jobs/hello-tf.yaml:$.roles.Worker.memory: '2GB'"), proc.stderr
    write(jobs_dir, "hello-tf", SMALLEST)
    proc = colocate("synth", "--jobs", str(jobs_dir), "--outdir", str(tmp_path / "dist"), cwd=tmp_path)
    assert proc.stderr.strip() == "colocate: error: jobs/latin1.yaml: not UTF-8 text (byte 0xe9 at offset 9)", proc.stderr
    assert not (tmp_path / "dist").exists()


def test_colocate_yaml_messages_are_in_words_and_relative(tmp_path):
    text = (ROOT / "colocate.yaml").read_text()
    data = yaml_load(text)
    data["monitoring"]["storageSize"] = "50GB"
    data["kubernetesVersion"] = "v1.28.0"
    (tmp_path / "colocate.yaml").write_text(yaml.safe_dump(data))
    proc = colocate("synth", "--outdir", str(tmp_path / "dist"), cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.splitlines() == [
        "colocate: error: colocate.yaml:$.kubernetesVersion: 'v1.28.0' is not a Kubernetes version: write 1.MINOR.PATCH "
        "without a v, such as 1.28.0",
        "  colocate.yaml:$.monitoring.storageSize: '50GB' is not a size: write a whole number above 0 and Mi, Gi or Ti, such as "
        "50Gi (not G or GB); did you mean '50Gi'?"], proc.stderr


@pytest.mark.parametrize("changes, path, words", [
    ({"args": ["--step"] * 1001}, "$.args", "has 1,001 items, more than 1,000; pass long inputs in a file"),
    ({"command": ["python"] * 1001}, "$.command", "has 1,001 items, more than 1,000"),
    # 2 x 17 KiB: each key alone fits, together they pass 32 KiB (the TFJob repeats both per role).
    ({"command": ["c" * 17 * 1024], "args": ["a" * 17 * 1024]}, "$.args", "more than 32,768 bytes of JSON"),
    # Escapes count as the object stores them: 6,000 quotes are 12,002 bytes of JSON, three times over.
    ({"args": ['"' * 6000] * 3}, "$.args", "more than 32,768 bytes of JSON"),
])
def test_command_and_args_are_capped_before_validation(tmp_path, config, changes, path, words):
    file = write(tmp_path, "hello-tf", job(**changes))
    with pytest.raises(InputError) as err:
        jobs.load(tmp_path, config)
    assert str(err.value).startswith(f"{file}:{path}: ") and words in str(err.value), str(err.value)[:300]


def test_command_and_args_up_to_the_caps_build(tmp_path, config):
    """At the caps the TFJob of every role still fits client-side apply's 256 KiB of annotations."""
    write(tmp_path, "hello-tf", job(command=["x"] * 1000, args=["a" * (32 * 1024 - 6000 - 2)],
                                    **{"roles.Chief": {"cpu": 1, "memory": "2Gi"}, "roles.PS": {"cpu": 1, "memory": "2Gi"},
                                       "roles.Evaluator": {"cpu": 1, "memory": "2Gi"}}))
    files = app.render_files(app.build(config, jobs_dir=tmp_path))
    tfjob = yaml_load(files["apps/training/tfjob.training.hello-tf.yaml"])
    assert len(tfjob["spec"]["tfReplicaSpecs"]) == 4
    # kubectl's last-applied annotation holds the object as compact JSON (docs/gitops.md).
    assert len(json.dumps(tfjob, separators=(",", ":")).encode()) < 256 * 1024 - 4096


def test_a_huge_job_file_is_exit_2_before_it_is_parsed(tmp_path):
    """A 97 MB file of a million args loaded in 16 s and 700 MB; the size alone refuses it now."""
    jobs_dir = tmp_path / "jobs"
    text = job(args=[f"--x{i}" for i in range(40_000)])
    file = write(jobs_dir, "hello-tf", text)
    assert file.stat().st_size > 256 * 1024
    proc = colocate("synth", "--check", "--jobs", str(jobs_dir))
    assert proc.returncode == 2, proc.stderr[-500:]
    assert proc.stderr.startswith(f"colocate: error: {file}: the file is {file.stat().st_size:,} bytes, more than "
                                  "262,144; a job file is a short request"), proc.stderr[:500]
