"""Data source contract (:class:`slime.plugins.hooks.DataSource`): the store-backed source hands out
judged samples and keeps exactly-once bookkeeping through ``release`` and ``mark_trained``."""

from __future__ import annotations

from openclaw_rl.rollout.data_source import StoreDataSource
from tests.plugin_contracts.contracts import assert_data_source_contract


def test_the_store_data_source_meets_the_contract(judged_store):
    ds = StoreDataSource(judged_store)
    taken = ds.take(2, timeout_s=5)
    assert_data_source_contract(ds, taken)
    assert all(s.source_id is not None for s in taken)
    ds.release(taken)  # a failed step: back to the queue, handed out again
    again = ds.take(4, timeout_s=5)
    assert {s.source_id for s in taken} <= {s.source_id for s in again}
    ds.mark_trained(again, 1)
    assert {t.status for t in judged_store.turns()} == {"trained"}
