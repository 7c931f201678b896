"""Who may swap the served weights (``/admin/update_weights_from_disk``).

With ``--admin-api-key`` only that key works (the plain API key does not); without one, only
local clients (with the API key when set): a remote caller gets 403. The remote case is checked on
the decision function (the test namespace has only loopback); the key case on a real server.
"""

from __future__ import annotations

import httpx
import pytest

from openclaw_rl.models import resolve_model_path
from openclaw_rl.server.app import admin_check
from openclaw_rl.server.errors import APIError
from tests.support.server import running_server


@pytest.mark.parametrize("token,host,api_key,admin_key,status", [
    ("adm", "10.1.2.3", "k", "adm", None),      # the admin key works from anywhere
    ("k", "127.0.0.1", "k", "adm", 401),        # the API key is not the admin key
    ("", "127.0.0.1", None, "adm", 401),
    ("k", "127.0.0.1", "k", None, None),        # no admin key: local clients with the API key
    ("", "::1", None, None, None),
    ("nope", "127.0.0.1", "k", None, 401),
    ("k", "10.1.2.3", "k", None, 403),          # no admin key: remote clients never
    ("", "192.168.0.7", None, None, 403),
])
def test_admin_check(token, host, api_key, admin_key, status):
    if status is None:
        admin_check(token, host, api_key, admin_key)
    else:
        with pytest.raises(APIError) as info:
            admin_check(token, host, api_key, admin_key)
        assert info.value.status == status


def test_a_server_with_an_admin_key_takes_updates_only_with_it(tmp_path):
    folder = str(resolve_model_path("builtin:tiny-qwen3"))
    with running_server("builtin:tiny-qwen3", tmp_path / "buf", "--admin-api-key", "adm-secret") as server:
        url = server.base_url.replace("/v1", "") + "/admin/update_weights_from_disk"
        body = {"model_path": folder, "weight_version": 3}
        r = httpx.post(url, headers={"Authorization": "Bearer sk-test"}, json=body, timeout=120)
        assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
        r = httpx.post(url, headers={"Authorization": "Bearer adm-secret"}, json=body, timeout=120)
        assert r.status_code == 200 and r.json()["weight_version"] == 3
        health = httpx.get(server.base_url.replace("/v1", "/healthz")).json()
        assert health["weight_version"] == 3


def test_weight_updates_load_only_from_the_weights_dir(tmp_path):
    import shutil

    src = resolve_model_path("builtin:tiny-qwen3")
    allowed = tmp_path / "published"
    shutil.copytree(src, allowed / "version-1")
    (allowed / "escape").symlink_to(src)  # a link out of the folder does not count as inside
    with running_server("builtin:tiny-qwen3", tmp_path / "buf", "--weights-dir", str(allowed)) as server:
        url = server.base_url.replace("/v1", "") + "/admin/update_weights_from_disk"
        auth = {"Authorization": "Bearer sk-test"}
        for outside in (str(src), str(allowed / "escape"), str(allowed / ".." / "buf")):
            r = httpx.post(url, headers=auth, json={"model_path": outside, "weight_version": 9}, timeout=120)
            assert r.status_code == 403 and r.json()["error"]["code"] == "weights_path_not_allowed", outside
        r = httpx.post(url, headers=auth, json={"model_path": str(allowed / "version-1"), "weight_version": 1},
                       timeout=120)
        assert r.status_code == 200 and r.json()["weight_version"] == 1
