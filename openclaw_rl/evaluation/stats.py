"""95% confidence intervals for evaluation scores.

* Proportions (pass@1, call accuracy): the Wilson score interval (Wilson 1927, "Probable
  inference, the law of succession, and statistical inference"), which stays inside [0, 1] and
  behaves at small n and at 0 or n successes, unlike the normal (Wald) interval.
* Means (1-5 ratings) and paired differences (after minus before, on the same items): Student's
  t interval, ``mean +/- t(0.975, n-1) * s / sqrt(n)``.
"""

from __future__ import annotations

import math
from statistics import NormalDist

Z95 = NormalDist().inv_cdf(0.975)  # 1.959963...


def wilson_interval(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a proportion ``successes / n``.

    Returns:
        ``(low, high)``; ``(0.0, 1.0)`` when ``n == 0``.

    Raises:
        ValueError: ``successes`` outside ``[0, n]``.
    """
    if n == 0:
        return 0.0, 1.0
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in [0, {n}], got {successes}")
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def t_quantile_975(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom.

    Exact for df 1 and 2, tabulated for 3 and 4; otherwise the Cornish-Fisher expansion around
    the normal quantile (Abramowitz & Stegun 26.7.5), within 5e-4 for df >= 5.

    Raises:
        ValueError: ``df < 1``.
    """
    if df < 1:
        raise ValueError("df must be >= 1")
    if df == 1:
        return math.tan(math.pi * 0.475)
    if df == 2:
        return 0.95 / math.sqrt(2 * 0.975 * 0.025)
    if df in (3, 4):
        return {3: 3.182446305, 4: 2.776445105}[df]
    z = Z95
    g1 = (z ** 3 + z) / 4
    g2 = (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96
    g3 = (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384
    g4 = (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160
    return z + g1 / df + g2 / df ** 2 + g3 / df ** 3 + g4 / df ** 4


def mean_interval(values: list[float]) -> tuple[float, float, float]:
    """``(mean, low, high)``: Student's t 95% interval for the mean of ``values``.

    With one value the interval is undefined: ``(v, nan, nan)``; an empty list gives
    ``(nan, nan, nan)``.
    """
    n = len(values)
    if n == 0:
        return math.nan, math.nan, math.nan
    mean = sum(values) / n
    if n == 1:
        return mean, math.nan, math.nan
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile_975(n - 1) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


def summarize(scores: list[float], kind: str, bounds: tuple[float, float] | None = None) -> dict:
    """Summary of per-item scores: ``{"value", "n", "ci95": [low, high]}``.

    Args:
        scores: one score per item (errors excluded).
        kind: ``"proportion"`` (scores 0/1: Wilson) or ``"mean"`` (t interval).
        bounds: the scale's ``(min, max)`` for ``"mean"`` (e.g. ``(1, 5)``); the t interval is
            clipped to it, since the mean cannot lie outside.

    Raises:
        ValueError: unknown ``kind``.
    """
    n = len(scores)
    if kind == "proportion":
        k = sum(scores)
        lo, hi = wilson_interval(k, n)
        return {"value": k / n if n else math.nan, "n": n, "ci95": [lo, hi]}
    if kind == "mean":
        mean, lo, hi = mean_interval(scores)
        if bounds is not None and not math.isnan(lo):
            lo, hi = max(bounds[0], lo), min(bounds[1], hi)
        return {"value": mean, "n": n, "ci95": [lo, hi]}
    raise ValueError(f"unknown kind {kind!r}")


def paired_delta(before: dict[str, float], after: dict[str, float]) -> dict:
    """Mean of ``after[id] - before[id]`` over the items both have, with its t 95% interval.

    Returns:
        ``{"delta", "n", "ci95": [low, high]}`` (nan where undefined).
    """
    ids = sorted(set(before) & set(after))
    diffs = [after[i] - before[i] for i in ids]
    mean, lo, hi = mean_interval(diffs)
    return {"delta": mean, "n": len(diffs), "ci95": [lo, hi]}


def mcnemar_exact(before: dict[str, bool], after: dict[str, bool]) -> dict:
    """Exact McNemar test of paired binary outcomes (McNemar 1947; the exact form is the two-sided
    binomial test of the discordant pairs with p = 1/2).

    Args:
        before / after: per-item outcome (True = success), keyed by item id; items in both are used.

    Returns:
        ``{"n", "improved": b, "worsened": c, "p_value"}`` where ``b`` counts items that went from
        failure to success, ``c`` the reverse, and ``p_value = min(1, 2 * P(X <= min(b, c)))`` for
        ``X ~ Binomial(b + c, 1/2)`` (1.0 when there is no discordant pair).
    """
    ids = sorted(set(before) & set(after))
    b = sum(1 for i in ids if not before[i] and after[i])
    c = sum(1 for i in ids if before[i] and not after[i])
    n = b + c
    if n == 0:
        return {"n": len(ids), "improved": 0, "worsened": 0, "p_value": 1.0}
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2 ** n
    return {"n": len(ids), "improved": b, "worsened": c, "p_value": min(1.0, 2.0 * tail)}
