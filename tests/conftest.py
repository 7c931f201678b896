"""Shared fixtures: real servers on the tiny models (session-scoped, stopped by PID)."""

from __future__ import annotations

import os

import pytest

# The servers the tests start skip the grammar warm-up (~4 s of CPU each on 2 cores); forced tool
# calls then take the lazy path, and tests/test_grammar_off_loop.py covers the warm-up itself.
os.environ.setdefault("OPENCLAW_GRAMMAR_WARMUP", "0")

from tests.support.server import running_server


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


@pytest.fixture
def ray_head(tmp_path):
    """A private Ray head on loopback (token auth); yields ``(gcs_port, dashboard_port)``."""
    from tests.support.ray_head import private_ray_head

    with private_ray_head(tmp_path) as ports:
        yield ports


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


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    """Under ``pytest -n 2 --dist loadgroup`` (``make test``), every test that starts a Ray
    cluster runs in one worker, one after another: Ray clusters on one machine share /tmp/ray and
    the dashboard agent's default port. The other tests spread over the workers. The Ray tests are
    the longest chain (about 15 min), so they come first: one worker starts them at once."""
    for item in items:
        if item.get_closest_marker("ray") is not None:
            item.add_marker(pytest.mark.xdist_group("ray"))
    items.sort(key=lambda item: item.get_closest_marker("ray") is None)  # stable: Ray tests first


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    """Fail at once, instead of by colliding Ray clusters, when xdist did not group the Ray tests.

    pytest-xdist's ``loadgroup`` marks a grouped test by appending ``@<group>`` to its node id; a
    pytest that ignores that rename (9.2 with xdist 3.8) silently spreads the group over workers.
    Raises:
        pytest.UsageError: a ``ray`` test on an xdist worker under loadgroup lacks the suffix.
    """
    if not getattr(session.config.option, "loadgroup", False):
        return
    lost = [item.nodeid for item in session.items
            if item.get_closest_marker("ray") is not None and not item.nodeid.endswith("@ray")]
    if lost:
        raise pytest.UsageError(f"pytest-xdist did not group {len(lost)} Ray tests on one worker "
                                f"(e.g. {lost[0]}); check the pytest / pytest-xdist versions")
