"""Where the launch scripts submit their Ray job: the job API address of the cluster the user names.

``ray job submit`` talks to a cluster's job API (its dashboard, ``http://<head>:8265``), not to
its GCS (``<head>:6379``, what ``ray.init`` and ``ray start --address`` take). Users set
``RAY_ADDRESS`` to either (Ray's own docs use both forms), so the launch scripts ask this module::

    python -m openclaw_rl.launch.job_address            # reads RAY_ADDRESS

and it prints one line, the job API URL to submit to:

* ``RAY_ADDRESS`` is an ``http://`` / ``https://`` URL: that URL, after checking that a job API
  answers there (``GET /api/version``: 200, or 401 with token authentication);
* ``RAY_ADDRESS`` is a GCS address ``host:port``: connects to that cluster
  (``ray.init(address=...)``) and prints its dashboard URL (``ray.init(...).dashboard_url``);
* ``ray://`` (Ray Client) cannot submit jobs: an error.

Exit codes: 0 with the URL on stdout; 3 when no Ray cluster answers at a GCS address (the launch
scripts then start a local head, only for this machine's default address; this one connection is
their check that a cluster runs there); 2 with a one-line message on stderr for anything else. Spec: https://docs.ray.io/en/latest/cluster/running-applications/job-submission/quickstart.html
"""

from __future__ import annotations

import os
import sys

#: nothing answers at the GCS address (the caller may start a head there)
NO_CLUSTER = 3


class JobAddressError(Exception):
    """``RAY_ADDRESS`` cannot be turned into a job API address (the message says why)."""


def _check_job_api(url: str, timeout: float = 5.0) -> str:
    """Return ``url`` without a trailing slash if a Ray job API answers there.

    Raises:
        JobAddressError: nothing answers, or what answers is not a Ray dashboard.
    """
    import httpx

    url = url.rstrip("/")
    try:
        r = httpx.get(f"{url}/api/version", timeout=timeout)
    except httpx.HTTPError as exc:
        raise JobAddressError(f"no Ray job API answers at RAY_ADDRESS={url} ({exc})") from exc
    if r.status_code not in (200, 401):
        raise JobAddressError(f"RAY_ADDRESS={url} answered {r.status_code} to /api/version: not a Ray dashboard")
    return url


def dashboard_of(gcs_address: str) -> str | None:
    """The job API URL (``http://host:port``) of the cluster whose GCS is ``gcs_address``.

    Returns:
        The URL, or None when no cluster answers at ``gcs_address``.

    Raises:
        JobAddressError: the cluster runs without a dashboard (no job API to submit to).
    """
    import ray

    try:
        ctx = ray.init(address=gcs_address, logging_level="ERROR", log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError):
        return None
    try:
        url = ctx.dashboard_url
    finally:
        ray.shutdown()
    if not url:
        raise JobAddressError(f"the Ray cluster at {gcs_address} runs without a dashboard, so it cannot take jobs "
                              "(start its head with the dashboard, or set RAY_ADDRESS to its job API URL)")
    return url if url.startswith(("http://", "https://")) else f"http://{url}"


def job_api_address(ray_address: str) -> str | None:
    """Turn ``RAY_ADDRESS`` (job API URL or GCS address) into the URL ``ray job submit`` needs.

    Returns:
        The URL, or None when ``ray_address`` is a GCS address where no cluster answers.

    Raises:
        JobAddressError: empty, a Ray Client (``ray://``) address, or a URL where no job API answers.
    """
    address = ray_address.strip()
    if not address:
        raise JobAddressError("RAY_ADDRESS is empty")
    if address.startswith("ray://"):
        raise JobAddressError(f"RAY_ADDRESS={address} is a Ray Client address; jobs are submitted to the "
                              "cluster's job API (http://<head>:8265) or its GCS address (<head>:6379)")
    if address.startswith(("http://", "https://")):
        return _check_job_api(address)
    return dashboard_of(address)


def main() -> int:
    """CLI: print the job API URL for ``$RAY_ADDRESS``; see the module docstring for exit codes."""
    try:
        url = job_api_address(os.environ.get("RAY_ADDRESS", ""))
    except JobAddressError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if url is None:
        return NO_CLUSTER
    print(url)
    return 0


if __name__ == "__main__":
    sys.exit(main())
