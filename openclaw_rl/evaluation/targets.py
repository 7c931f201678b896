"""What to evaluate: a ``--model-path`` (served here) or a ``--server-url`` (already running).

A model path is a ``builtin:`` name, a Hugging Face model folder, a run's ``checkpoint-latest``
(or ``checkpoint-<step>``), a run's save folder (its ``checkpoint-latest`` is used), or a LoRA
adapter folder (``adapter_config.json``: the server starts on the adapter's base model and loads
the adapter through ``/admin/update_weights_from_disk``, as the trainer publishes it). Each model
gets its own intercept server (:mod:`openclaw_rl.server.launcher`) with capture on, so its
evaluation traffic is recorded as side turns in ``<out>/servers/<key>/rl_buffer``.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from openclaw_rl.models import BUILTIN_MODELS, BUILTIN_PREFIX

LATEST = "checkpoint-latest"


@dataclass(frozen=True)
class Target:
    """One model to evaluate.

    spec: what was given. label: shown in tables. key: file-system-safe unique name. kind:
    ``builtin``, ``folder``, ``adapter`` or ``server``. model_path: what the server starts on
    (the base model for an adapter). adapter: the LoRA adapter folder. url: ``--server-url``.
    fingerprint: identifies the weights (a resumed run must match it).
    """

    spec: str
    label: str
    key: str
    kind: str
    model_path: str | None = None
    adapter: str | None = None
    url: str | None = None
    fingerprint: str = ""


def _label_of(path: Path) -> str:
    return f"{path.parent.name}/{path.name}" if path.parent.name else path.name


def _weights_stamp(path: Path) -> str:
    files = sorted(p for p in path.glob("*.safetensors")) or sorted(path.glob("*.bin"))
    return ",".join(f"{p.name}:{p.stat().st_size}:{int(p.stat().st_mtime)}" for p in files)


def resolve_target(spec: str, base_model: str | None = None) -> Target:
    """Turn a ``--model-path`` value into a :class:`Target` (key not yet made unique).

    Raises:
        ValueError: unknown ``builtin:`` name, a path that is no model, adapter or save folder, or
            an adapter whose base model cannot be found (pass ``base_model``).
    """
    if spec.startswith(BUILTIN_PREFIX):
        if spec[len(BUILTIN_PREFIX):] not in BUILTIN_MODELS:
            raise ValueError(f"unknown built-in model {spec!r}; choose one of "
                             + ", ".join(BUILTIN_PREFIX + n for n in BUILTIN_MODELS))
        return Target(spec, spec, spec, "builtin", model_path=spec, fingerprint=spec)
    path = Path(spec).expanduser()
    if path.is_dir() and (path / LATEST).exists() and not (path / "config.json").is_file():
        path = path / LATEST  # a run's save folder
    if not path.exists():
        raise ValueError(f"--model-path {spec!r} does not exist")
    path = Path(os.path.realpath(path))  # checkpoint-latest -> checkpoint-<step>
    if (path / "config.json").is_file():
        return Target(spec, _label_of(path), _label_of(path), "folder", model_path=str(path),
                      fingerprint=f"{path}|{_weights_stamp(path)}")
    if (path / "adapter_config.json").is_file():
        base = base_model or json.loads((path / "adapter_config.json").read_text()).get("base_model_name_or_path")
        if not base or not (str(base).startswith(BUILTIN_PREFIX) or (Path(base) / "config.json").is_file()):
            raise ValueError(f"LoRA adapter {spec!r}: its base model {base!r} is not available here; "
                             "pass --base-model (a builtin: name or model folder)")
        return Target(spec, _label_of(path), _label_of(path), "adapter", model_path=str(base), adapter=str(path),
                      fingerprint=f"{base}+{path}|{_weights_stamp(path)}")
    raise ValueError(f"--model-path {spec!r} is neither a builtin: name, a model folder (config.json), a LoRA "
                     "adapter folder (adapter_config.json) nor a run's save folder (checkpoint-latest)")


def server_target(url: str) -> Target:
    """A :class:`Target` for an already running OpenAI-compatible server (``http://host:port[/v1]``).

    Raises:
        ValueError: not an http(s) URL.
    """
    if not re.match(r"^https?://[^/\s]+", url):
        raise ValueError(f"--server-url {url!r} is not an http(s) URL")
    base = url.rstrip("/")
    base = base if base.endswith("/v1") else base + "/v1"
    label = "server:" + re.sub(r"^https?://", "", base)[: -len("/v1")]
    return Target(url, label, label, "server", url=base, fingerprint=base)


def unique_keys(targets: list[Target]) -> list[Target]:
    """The targets with file-system-safe, distinct ``key`` values (``-2``, ``-3`` ... on clashes)."""
    seen: dict[str, int] = {}
    out = []
    for t in targets:
        key = re.sub(r"[^A-Za-z0-9._-]+", "_", t.label).strip("_") or "model"
        n = seen.get(key, 0) + 1
        seen[key] = n
        out.append(Target(**{**t.__dict__, "key": key if n == 1 else f"{key}-{n}"}))
    return out


@dataclass(frozen=True)
class Endpoint:
    """Where a target is served: ``base_url`` (``.../v1``), its API key, and the server log (if ours)."""

    base_url: str
    api_key: str | None
    log_path: Path | None = None


@contextmanager
def serving(target: Target, workdir: Path, *, api_key: str | None = None, torch_threads: int = 0,
            device: str = "cpu", start_timeout: float = 900.0):
    """Yield an :class:`Endpoint` for ``target``: the given URL, or a server started here (and stopped after).

    Raises:
        RuntimeError: the server did not start, or the adapter could not be loaded (with the log).
    """
    if target.kind == "server":
        yield Endpoint(target.url, api_key)
        return
    import httpx

    from openclaw_rl.server.launcher import running_server

    key = secrets.token_hex(12)
    extra = ["--served-model-name", target.label, "--device", device]
    if torch_threads:
        extra += ["--torch-threads", str(torch_threads)]
    with running_server(target.model_path, workdir / "rl_buffer", *extra, api_key=key, log_dir=workdir,
                        timeout=start_timeout) as server:
        if target.adapter:
            r = httpx.post(f"http://127.0.0.1:{server.port}/admin/update_weights_from_disk",
                           json={"model_path": target.adapter, "weight_version": 1},
                           headers={"Authorization": f"Bearer {key}"}, timeout=start_timeout)
            if r.status_code != 200:
                raise RuntimeError(f"could not load the adapter {target.adapter}: {r.text}")
        yield Endpoint(server.base_url, key, server.log_path)
