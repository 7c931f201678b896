"""One TLS context per process for the HTTP clients the project makes.

httpx builds a new :class:`ssl.SSLContext` for every ``httpx.Client`` and ``httpx.AsyncClient``,
and so for every module-level call such as ``httpx.get(url)`` and every ``openai.OpenAI(...)``
that is not given an ``http_client``. Building one loads certifi's CA bundle: about 30-40 ms of
CPU each time (``python benchmarks/http_clients.py``), also for a plain ``http://`` URL where it is
never used. The loops that made a client per call paid that on every call: a server start's
``/healthz`` poll every 0.3 s, the default generate's one client per sample, an agent episode's
one client per turn, a publish per step. They now pass ``verify=tls_context()`` (or
``http_client=openai.DefaultHttpxClient(verify=tls_context())``), which builds it once.

The context is the one httpx itself would build (:func:`httpx.create_ssl_context`: certifi's
bundle, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when set), so what a client trusts is unchanged.
An :class:`ssl.SSLContext` may be shared by connections in several threads and event loops.
"""

from __future__ import annotations

import functools
import ssl

import httpx

__all__ = ["tls_context"]


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The process's TLS client context, built on the first call (the environment's
    ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` are read then), the same object after.

    Returns:
        What ``httpx.create_ssl_context()`` returns: verification on, certifi's CA bundle unless
        ``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` names another.
    """
    return httpx.create_ssl_context()
