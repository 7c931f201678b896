"""GPU placement (issue 15, "GPUs are used at all"), for real on a Ray head that declares logical
GPUs (``ray.init(num_gpus=4)``, as ``ray start --num-gpus 4``; no hardware needed): the train
actors and the rollout manager ask Ray for their GPUs, and each gets the devices it was given (``--actor-gpu-ids``,
``--rollout-gpu-ids``, ``--prm-gpu-ids``, the launch scripts' ``TRAIN_GPUS`` / ``ROLLOUT_GPUS`` /
``PRM_GPUS`` id lists) or, without ids, distinct ones Ray assigns, as ``CUDA_VISIBLE_DEVICES``.
torch sees no CUDA here, so every model still runs on CPU (float32).

Real Ray (a private local head on loopback, inside the suite's ``unshare -n``), real train actors on
``builtin:tiny-qwen3`` and the real rollout manager (offline sessions, no server)."""

from __future__ import annotations

import json
import time

import pytest

from slime.config.run_args import parse_run_args

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def gpu_head():
    """A private Ray head on loopback that declares 4 logical GPUs (``ray.init(num_gpus=4)``, the
    in-process form of ``ray start --head --num-gpus 4``); the test process is its driver."""
    import ray

    ray.init(address="local", _node_ip_address="127.0.0.1", include_dashboard=False, num_cpus=2, num_gpus=4,
             log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


def _free_gpus(ray, want: float, timeout: float = 30.0) -> float:
    """The head's free GPUs once they equal ``want`` (Ray frees a killed actor's GPUs soon after)."""
    deadline = time.time() + timeout
    while True:
        free = ray.available_resources().get("GPU", 0.0)
        if free == want or time.time() > deadline:
            return free
        time.sleep(0.5)


def _cfg(tmp_path, *extra):
    return parse_run_args(["--model-path", "builtin:tiny-qwen3", "--rollout-batch-size", "2",
                           "--save", str(tmp_path / "ckpt"), "--log-dir", str(tmp_path / "logs"), *extra])


def test_train_actors_get_the_listed_gpus(gpu_head, tmp_path):
    from slime.orchestration.train_group import TrainGroup

    group = TrainGroup(_cfg(tmp_path, "--actor-num-gpus-per-node", "2", "--actor-gpu-ids", "2,3"))
    try:
        where = group.placements()
        assert [(p["rank"], p["CUDA_VISIBLE_DEVICES"]) for p in where] == [(0, "2"), (1, "3")]
        assert all(len(p["gpu_ids"]) == 1 for p in where)  # each holds one GPU in Ray's accounting
        assert _free_gpus(gpu_head, 2.0) == 2.0
        assert {(p["device"], p["dtype"]) for p in where} == {("cpu", "float32")}  # no CUDA in torch here
    finally:
        group.shutdown()
    assert _free_gpus(gpu_head, 4.0) == 4.0


@pytest.mark.slow  # ~10 s alone, up to a minute on a loaded machine
def test_train_actors_without_ids_get_distinct_ray_gpus(gpu_head, tmp_path):
    from slime.orchestration.train_group import TrainGroup

    group = TrainGroup(_cfg(tmp_path, "--actor-num-gpus-per-node", "2"))
    try:
        where = group.placements()
        assert [p["CUDA_VISIBLE_DEVICES"] for p in where] == [",".join(p["gpu_ids"]) for p in where]
        assert len({p["CUDA_VISIBLE_DEVICES"] for p in where}) == 2
        assert _free_gpus(gpu_head, 2.0) == 2.0
    finally:
        group.shutdown()
    _free_gpus(gpu_head, 4.0)


@pytest.mark.slow  # ~10 s alone, up to a minute on a loaded machine
def test_rollout_manager_gets_engine_then_prm_gpus(gpu_head, tmp_path):
    from slime.orchestration.ray_actors import RolloutManager
    from slime.train import rollout_manager_options

    sessions = tmp_path / "sessions.jsonl"
    sessions.write_text(json.dumps({"session_id": "s0", "turns": [
        {"prompt": [{"role": "user", "content": "hi"}], "response": "hello", "next_state": "thanks"}]}) + "\n")
    cfg = _cfg(tmp_path, "--data-path", str(sessions), "--custom-rm-path", "tests/plugins/low_ids_reward.py",
               "--rollout-num-gpus", "1", "--rollout-gpu-ids", "1", "--prm-num-gpus", "1", "--prm-gpu-ids", "0")
    options = rollout_manager_options(cfg)
    assert options["num_gpus"] == 2
    manager = RolloutManager.options(**options).remote(cfg)
    try:
        where = gpu_head.get(manager.placement.remote())
        assert where["CUDA_VISIBLE_DEVICES"] == "1,0"  # the engine's GPU first, then the PRM's
        assert _free_gpus(gpu_head, 2.0) == 2.0
    finally:
        gpu_head.get(manager.shutdown.remote())
        gpu_head.kill(manager)
    _free_gpus(gpu_head, 4.0)


def test_server_and_prm_devices_from_the_managers_gpus(monkeypatch, tmp_path):
    from openclaw_rl.rollout.devices import prm_device, server_device_args, server_env

    cfg = _cfg(tmp_path, "--rollout-num-gpus", "2", "--prm-num-gpus", "1")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6")
    assert server_env(cfg) == {"CUDA_VISIBLE_DEVICES": "4,5"}
    assert server_device_args(cfg) == ()  # torch sees no CUDA here: the server stays on CPU
    assert prm_device(cfg) is None
    monkeypatch.setattr("openclaw_rl.rollout.devices._cuda", lambda: True)  # as on a GPU machine
    assert server_device_args(cfg) == ("--device", "cuda")
    assert prm_device(cfg) == "cuda:2"  # the first PRM GPU in the manager's numbering
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert server_env(cfg) == {} and server_device_args(cfg) == () and prm_device(cfg) is None


def test_vllm_engines_of_the_jobs_server_get_the_rollout_gpus(monkeypatch, tmp_path):
    """``--backend vllm`` in a job: the server it starts gets the rollout engine's ids as an id
    list (one id stays an id, not a count), replicas of ``--rollout-num-gpus-per-engine``."""
    from openclaw_rl.engine.engine_servers import parse_rollout_gpus, replica_devices
    from openclaw_rl.rollout.devices import server_backend_args

    assert server_backend_args(_cfg(tmp_path), str(tmp_path)) == ()  # transformers: no engine flags
    cfg = _cfg(tmp_path, "--backend", "vllm", "--rollout-num-gpus", "4", "--rollout-num-gpus-per-engine", "2",
               "--engine-args", "--max-model-len 4096")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7,0")
    args = server_backend_args(cfg, str(tmp_path))
    flags = dict(zip(args[::2], args[1::2]))
    assert flags["--backend"] == "vllm" and flags["--engine-args"] == "--max-model-len 4096"
    assert replica_devices(parse_rollout_gpus(flags["--rollout-gpus"]), int(flags["--rollout-num-gpus-per-engine"])) \
        == [["4", "5"], ["6", "7"]]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "6")
    one = dict(zip(*[iter(server_backend_args(_cfg(tmp_path, "--backend", "sglang", "--rollout-num-gpus", "1"),
                                              str(tmp_path)))] * 2))
    assert parse_rollout_gpus(one["--rollout-gpus"]) == ["6"]  # GPU 6, not six GPUs
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert "--rollout-gpus" not in server_backend_args(cfg, str(tmp_path))  # CPU: one replica on the CPU
    kv = dict(zip(*[iter(server_backend_args(_cfg(tmp_path, "--backend", "vllm", "--engine-kv-cache-gib", "3"),
                                             str(tmp_path)))] * 2))
    assert kv["--engine-kv-cache-gib"] == "3" and kv["--engine-log-dir"] == str(tmp_path / "engines")
    assert "--engine-kv-cache-gib" not in flags  # not given: the server sizes it


def test_backend_without_its_environment_is_a_one_line_error(tmp_path):
    from openclaw_rl.rollout.service import OpenClawRolloutService
    from slime.config.flags import ConfigError

    cfg = _cfg(tmp_path, "--backend", "sglang", "--engine-python", str(tmp_path / "no-python"))
    with pytest.raises(ConfigError, match="--backend sglang: no engine interpreter at"):
        OpenClawRolloutService.check(cfg)
