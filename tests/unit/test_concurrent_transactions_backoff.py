"""The binder shortens aiokafka's wait before it retries adding a partition to a transaction the
coordinator still calls busy. The setting is a module constant of aiokafka's sender: if an upgrade
renamed it or stopped reading it, assigning it would silently do nothing, so this checks that the
handler of that answer still returns it."""

import inspect

from aiokafka.producer import sender

from podsched_binder.service import CONCURRENT_TRANSACTIONS_BACKOFF


def test_aiokafka_reads_the_backoff_the_binder_sets() -> None:
    assert hasattr(sender, "BACKOFF_OVERRIDE"), "aiokafka.producer.sender.BACKOFF_OVERRIDE is gone"
    handler = inspect.getsource(sender.AddPartitionsToTxnHandler.handle_response)
    assert "ConcurrentTransactions" in handler and "return BACKOFF_OVERRIDE" in handler
    assert 0 < CONCURRENT_TRANSACTIONS_BACKOFF < 0.020  # shorter than aiokafka's own 20 ms
