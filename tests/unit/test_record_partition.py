"""The producers' partitioner (`record_partition`) chooses exactly what aiokafka's default
partitioner chooses: keyed records stay in their partition (one pod's changes in order), whether a
topic has one partition (no hash computed) or several (murmur2, as the Java client)."""

from __future__ import annotations

from aiokafka.partitioner import DefaultPartitioner
from hypothesis import given, settings
from hypothesis import strategies as st

from podsched_service.codec import record_partition

KEYS = st.one_of(st.binary(max_size=80), st.text(max_size=40).map(str.encode))


@settings(max_examples=500, deadline=None)
@given(key=KEYS, count=st.integers(min_value=1, max_value=64), data=st.data())
def test_a_keyed_record_goes_where_the_default_partitioner_sends_it(
    key: bytes, count: int, data: st.DataObject
) -> None:
    partitions = list(range(count))
    available = data.draw(st.lists(st.sampled_from(partitions), unique=True))
    assert record_partition(key, partitions, available) == DefaultPartitioner()(key, partitions, available)


def test_a_topic_of_one_partition_takes_every_record_keyed_or_not() -> None:
    for key in (None, b"", b"Pod/default/web"):
        assert record_partition(key, [0], [0]) == 0
        assert record_partition(key, [0], []) == 0
