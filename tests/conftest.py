"""Shared fixtures: real servers on the tiny models (session-scoped, stopped by PID)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest



def _pin_worker_to_its_cores() -> None:
    """One pytest-xdist worker's share of the cores: the usable cores split into one contiguous
    block per worker (``make test``: 2 workers on 2 cores, a core each), set as this process's CPU
    affinity (every thread; its children inherit it) before anything imports torch. Each worker is
    then a machine of its own size: torch, the trainer (``--train-threads``) and vLLM size their
    threads by :func:`slime.omp.usable_cores`, as on a user's machine of that size. Unpinned, two
    workers' tests each ran torch with a thread per core of the whole machine, twice the cores:
    tests/test_opd_learning.py, run twice at once, took 180 s with 2 threads each and 69 s with one
    (alone, with both cores: 57 s); ten of the longest modules on two workers took 451 CPU-s pinned
    and 502 unpinned (270 s and 281 s). Nothing when there are fewer cores than workers."""
    worker, count = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not worker or not count or not hasattr(os, "sched_setaffinity"):
        return
    cores, n, i = sorted(os.sched_getaffinity(0)), int(count), int(worker.removeprefix("gw"))
    if len(cores) < n:
        return
    share = len(cores) // n
    mine = set(cores[i * share:(i + 1) * share])
    for tid in os.listdir("/proc/self/task"):
        os.sched_setaffinity(int(tid), mine)


_pin_worker_to_its_cores()

# The servers the tests start skip the grammar warm-up (~4 s of CPU each on 2 cores); forced tool
# calls then take the lazy path, and tests/test_grammar_off_loop.py covers the warm-up itself.
os.environ.setdefault("OPENCLAW_GRAMMAR_WARMUP", "0")

from tests.support.ray_head import SharedRayHead
from tests.support.server import running_server
from tests.support.tool_model import EXEC_WORKDIR


@pytest.fixture(scope="session")
def tiny_server(tmp_path_factory):
    """The intercept server on ``builtin:tiny-qwen3`` with capture on and an API key."""
    buf = tmp_path_factory.mktemp("tiny") / "rl_buffer"
    with running_server("builtin:tiny-qwen3", buf, "--default-max-tokens", "16") as handle:
        yield handle


@pytest.fixture(scope="session")
def tiny_classifier(tmp_path_factory):
    """Folder of a tiny random 2-label sequence classifier (tiny-qwen3 config and tokenizer)."""
    from tests.support.tiny_classifier import build_tiny_classifier

    return build_tiny_classifier(tmp_path_factory.mktemp("tiny_classifier"))


_RAY_HEAD = pytest.StashKey[SharedRayHead]()


@pytest.fixture
def ray_head(request, tmp_path_factory):
    """A private Ray head on loopback (token auth), one per test process (each xdist worker): the
    tests submit their jobs to it one after another (each job its own driver, runtime env and
    actors, gone when the job ends), so no test pays the head's start (~15 s on 2 cores) again;
    returns ``(gcs_port, dashboard_port)``. The head stops once the process has no Ray test left
    (:func:`pytest_runtest_teardown`). Tests that need their own cluster use
    :func:`tests.support.ray_head.private_ray_head` directly."""
    return request.config.stash[_RAY_HEAD].ports(tmp_path_factory.mktemp("ray_head"))


_RAY_MODULES = pytest.StashKey[frozenset]()


def _module_of(item) -> str:
    """The module part of a test's node id: the unit ``--dist loadscope`` hands to a worker."""
    return item.nodeid.split("::", 1)[0]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After a test's own teardown: stop the shared Ray head when the next test of this process is
    in a module without Ray tests. Modules with Ray tests run first
    (:func:`pytest_collection_modifyitems`), so no Ray test follows. A module's tests after its
    own Ray tests keep the head: stopping it there (~4 s) only to start it again for the next Ray
    module (~7 s on one core) cost ~11 s per module with both kinds of test."""
    yield
    if nextitem is None or _module_of(nextitem) not in item.config.stash.get(_RAY_MODULES, frozenset()):
        item.config.stash[_RAY_HEAD].stop()


def pytest_unconfigure(config):
    """Stop the shared Ray head if a run ended early (an interrupt, ``-x``)."""
    if _RAY_HEAD in config.stash:
        config.stash[_RAY_HEAD].stop()


@pytest.fixture(scope="session")
def tool_model():
    """Path of the tiny Qwen3 model trained to call the ``read`` tool (cached)."""
    from tests.support.tool_model import tool_model_path

    return tool_model_path()


@pytest.fixture(scope="session")
def tool_server(tmp_path_factory, tool_model):
    """The intercept server on the tool-using tiny model, greedy by default."""
    buf = tmp_path_factory.mktemp("tools") / "rl_buffer"
    with running_server(str(tool_model), buf, "--served-model-name", "tiny-tools",
                        "--default-temperature", "0") as handle:
        yield handle


def pytest_collection_modifyitems(config, items):
    """The tests that start a Ray cluster (the longest ones) go first, then the other ``slow``
    ones (each a minute or more). ``make test`` hands whole modules to its two pytest-xdist
    workers in this order (``--dist loadscope --no-loadscope-reorder``), the next one to whichever
    worker is nearly done, so both start on the long modules and the short ones fill in at the
    end. (``--dist load`` sent each worker a quarter of the suite at once: the first quarter held
    every Ray test, and at the end one worker ran them alone for ~10 minutes while the other had
    nothing left.) Two workers' Ray clusters never meet: each worker runs in its own network
    namespace (tests/support/netns_python) with its own ``RAY_TMPDIR`` (below)."""
    # stable: Ray tests first, then slow ones, each group in collection order
    items.sort(key=lambda item: (item.get_closest_marker("ray") is None, item.get_closest_marker("slow") is None))
    config.stash[_RAY_MODULES] = frozenset(_module_of(i) for i in items if i.get_closest_marker("ray"))


def pytest_configure(config):
    """Per pytest-xdist worker: a Ray temp dir of its own (Ray's default, /tmp/ray, holds the
    ``ray_current_cluster`` address file and ``session_latest`` that two clusters would share).
    In the controller: the Ray auth token is created once before the workers start, so two
    workers' first ``ray get-auth-token --generate`` cannot write two different tokens."""
    config.stash[_RAY_HEAD] = SharedRayHead()
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        import tempfile

        os.environ.setdefault("RAY_TMPDIR", tempfile.mkdtemp(prefix=f"ray-{worker}-"))
    elif getattr(config.option, "dist", "no") != "no":
        import subprocess
        import sys
        from pathlib import Path

        ray_cli = Path(sys.executable).parent / "ray"
        if ray_cli.exists():
            subprocess.run([str(ray_cli), "get-auth-token", "--generate"], check=False, capture_output=True,
                           env={**os.environ, "RAY_AUTH_MODE": "token"})


@pytest.fixture
def work():
    """The OpenClaw agent tests' fixed work dir (``EXEC_WORKDIR`` with ``workspace/hello.txt``):
    OpenClaw writes its paths into the prompt, and the tiny tool model was trained on prompts with
    exactly these paths. Removed afterwards."""
    path = Path(EXEC_WORKDIR)
    shutil.rmtree(path, ignore_errors=True)
    (path / "workspace").mkdir(parents=True)
    (path / "workspace" / "hello.txt").write_text("secret-value-42\n")
    yield path
    shutil.rmtree(path, ignore_errors=True)
