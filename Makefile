# colocate entry points. Day to day: `make synth` (regenerate dist/) and `make test`.
# Every target that runs the toolchain calls scripts/bootstrap first; after the first run it only
# checks stamps (well under a second), so a fresh clone needs nothing else.

ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
SHELL := bash
.SHELLFLAGS := -euo pipefail -c

# jsii (under cdk8s) runs its kernel on `node`; the machine's Node 20 makes it print an end-of-life
# banner, so use the Node 22 that package.json installs. Also first on PATH for npx/cdk8s-cli,
# and bin/ for kubeconform.
export JSII_NODE := $(ROOT)/node_modules/.bin/node
export PATH := $(ROOT)/node_modules/.bin:$(ROOT)/bin:$(PATH)

PY := $(ROOT)/.venv/bin/python
# Extra arguments, e.g. `make test ARGS='-k policies -x'`.
ARGS ?=
# pytest-xdist workers, each test module on one (tests/conftest.py keeps the simulation modules
# together on one); WORKERS=0 runs the suite in this process, e.g. for a debugger.
WORKERS ?= 2
XDIST := $(if $(filter 0,$(WORKERS)),-p no:xdist,-n $(WORKERS) --dist loadscope)

.PHONY: help bootstrap synth lint test test-fast check simulate cdk8s-synth bench render-tools vendor-verify

help:
	@echo 'make bootstrap    install .venv, node_modules, bin/ (kubeconform, actionlint, amtool, alertmanager), promtool/prometheus'
	@echo 'make synth        regenerate dist/ (colocate synth); installs only .venv and Node for jsii'
	@echo 'make lint         the layer contract (lint-imports, pyproject [tool.importlinter]) and ruff check'
	@echo 'make test         lint, then the test suite (pytest)'
	@echo 'make test-fast    lint, then the suite without the simulation and the slow tests (-m "not simulate and not slow")'
	@echo 'make check        policy + schema checks on dist/'
	@echo 'make simulate     sync dist/ into the real Kubernetes components on loopback (ARGS=--scenario peak)'
	@echo 'make cdk8s-synth  synth through the cdk8s CLI (cdk8s.yaml)'
	@echo 'make bench        synth/check/simulate benchmarks (check vs its floor and checkov)'
	@echo 'make render-tools build bin/helm and bin/kustomize at the versions Argo CD v2.10.15 bundles (make test does too)'
	@echo 'make vendor-verify recompute the checksums of the vendored upstream trees (vendor/sources.yaml)'

bootstrap:
	@$(ROOT)/scripts/bootstrap

# Installs only what synth needs (scripts/bootstrap synth): no Go tools, no Prometheus, no dev
# dependencies of node_modules.
synth:
	@$(ROOT)/scripts/bootstrap synth
	$(ROOT)/.venv/bin/colocate synth $(ARGS)

# The dependency rule between the packages (docs/architecture.md "Layers") and ruff, both configured
# in pyproject.toml; seconds, so make test and test-fast run them first. From the root: lint-imports
# reads pyproject.toml and imports tools/layers_contracts.py from the working folder.
lint: bootstrap
	cd $(ROOT) && $(ROOT)/.venv/bin/lint-imports
	cd $(ROOT) && $(ROOT)/.venv/bin/ruff check .

# The simulation's components (Kubernetes, etcd, kwok, training-operator) and the renderers (helm,
# kustomize) are built before the tests: minutes cold, a stamp check warm. `make synth` never waits
# for them.
test: bootstrap lint
	$(PY) -m colocate.synth.renderers
	$(PY) -m colocate.simulate.toolchain
	$(PY) -m pytest $(XDIST) $(ARGS)

# The edit loop: every test but the simulation's (nothing waits for its components) and those
# marked slow (pyproject.toml markers), which make test and CI run.
test-fast: bootstrap lint
	$(PY) -m colocate.synth.renderers
	$(PY) -m pytest $(XDIST) -m 'not simulate and not slow' $(ARGS)

check: bootstrap
	$(ROOT)/.venv/bin/colocate check dist/ $(ARGS)

# --no-check-upgrade: otherwise cdk8s-cli asks the npm registry for a newer version on each run.
simulate: bootstrap
	$(ROOT)/.venv/bin/colocate simulate $(ARGS)

cdk8s-synth: bootstrap
	npx --no cdk8s synth --no-check-upgrade $(ARGS)

# Synth + check of N generated jobs, then check (cold, one file changed, unchanged) against its floor and checkov 3.3.30
# (scripts/bench_check.py installs checkov into .bench/ on first use), and colocate simulate warm
# (scripts/bench_simulate.py). Figures, not tests.
bench: bootstrap
	$(PY) scripts/bench.py $(ARGS)
	$(PY) scripts/bench_check.py
	$(PY) scripts/bench_simulate.py

# Helm 3.14.4 and kustomize 5.2.1, the renderers Argo CD v2.10.15's repo server bundles, built from
# the Go module proxy into bin/ (about 5 min cold on 2 cores; docs/third-party.md). make test and
# test-fast build them first (tests/test_vendor_render.py, tests/test_upstream_render.py need them);
# synth needs them only when a rendered folder's inputs changed (docs/gitops.md "Rendered manifests").
render-tools: bootstrap
	$(PY) -m colocate.synth.renderers

# The vendored upstream trees against vendor/sources.yaml; re-vendor one with
# scripts/vendor_refresh.py NAME --git-dir DIR [--tag TAG] (docs/third-party.md).
vendor-verify: bootstrap
	$(PY) scripts/vendor_refresh.py --verify
