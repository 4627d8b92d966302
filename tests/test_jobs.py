"""Job files: every mistake is refused naming the file and the JSON path (or the prop), and a
bad file fails synth without touching dist/."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from colocate import ROOT, app, config as config_mod, jobs
from colocate.errors import InputError

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
    data = yaml.safe_load(SMALLEST)
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
    tfjob = yaml.safe_load(files["apps/training/tfjob.training.hello-tf.yaml"])
    worker = tfjob["spec"]["tfReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 1 and worker["restartPolicy"] == "OnFailure"
    assert worker["template"]["spec"]["priorityClassName"] == "offline-batch"
    claim = yaml.safe_load(files["apps/training/persistentvolumeclaim.training.hello-tf-checkpoints.yaml"])
    assert claim["spec"]["resources"]["requests"]["storage"] == "10Gi"
    assert claim["spec"]["storageClassName"] == config.shared_storage_class


@pytest.mark.parametrize("text, path, words", [
    (job(owner="me"), "$", "unknown key 'owner'; known keys: name, image"),
    (job(**{"roles.Workers": {"cpu": 1, "memory": "2Gi"}}), "$.roles", "unknown key 'Workers' (did you mean 'Worker'?)"),
    (job(**{"roles.Worker.memory": "2GB"}), "$.roles.Worker.memory", "'2GB' is not of the expected form (Binary size: 512Mi, 4Gi, 1Ti)"),
    (job(**{"roles.Worker.cpu": "two"}), "$.roles.Worker.cpu", "'two' is not of the expected form (CPU cores: 2, 0.5 or 500m)"),
    (job(**{"roles.Worker.cpu": None}), "$.roles.Worker", "'cpu' is a required property"),
    (job(**{"roles.Worker.replicas": "3"}), "$.roles.Worker.replicas", "'3' is not of type 'integer'"),
    (job(**{"roles.Worker.gpus": -1}), "$.roles.Worker.gpus", "less than the minimum of 0"),
    (job(**{"roles.Worker.restartPolicy": "Always"}), "$.roles.Worker", "unknown key 'restartPolicy'"),
    (job(restartPolicy="Always"), "$.restartPolicy", "'Always' is not one of"),
    (job(image="harbor.example.com/ml/hello-tf:latest"), "$.image", "with a pinned tag)"),
    (job(image="harbor.example.com/ml/hello-tf"), "$.image", "is not of the expected form (Training image"),
    (job(roles={}), "$.roles", "should be non-empty"),
    (job(name=None), "$", "'name' is a required property"),
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


@pytest.mark.parametrize("changes, prop", [
    ({"roles.PS": {"cpu": 1, "memory": "2Gi", "gpus": 1}}, "$.roles.PS.gpus"),
    ({"roles.Master": {"cpu": 1, "memory": "2Gi", "replicas": 2}}, "$.roles.Master.replicas"),
    ({"roles.Worker.memoryLimit": "1Gi"}, "$.roles.Worker.memory"),
    ({"roles.Worker.cpu": 64}, "$.roles.Worker.cpu/memory/gpus"),
])
def test_a_construct_refusal_names_the_file_and_the_prop(tmp_path, config, changes, prop):
    file = write(tmp_path, "hello-tf", job(**changes))
    with pytest.raises(InputError) as err:
        app.build(config, jobs_dir=tmp_path)
    # The job file's own path and key names (memoryLimit, not the construct's memory_limit).
    assert str(err.value).startswith(f"{file}:{prop}: "), str(err.value)


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
