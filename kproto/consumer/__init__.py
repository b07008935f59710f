"""The consumer: :class:`Consumer` (threads) and :class:`AIOConsumer` (asyncio).

Layout, bottom up: :mod:`~kproto.consumer.protocol` (the consumer protocol's subscription
and assignment bodies) and :mod:`~kproto.consumer.assignors` (range, roundrobin,
cooperative-sticky) and :mod:`~kproto.consumer.subscription` (what is consumed, and
positions) and :mod:`~kproto.consumer.membership` (a group member's state machine) are
sans-I/O; :mod:`~kproto.consumer.fetcher` fetches and decodes,
:mod:`~kproto.consumer.coordinator` talks to the group coordinator, and
:mod:`~kproto.consumer.consumer` is the client, whose jobs in poll are one module each:
:mod:`~kproto.consumer.positions`, :mod:`~kproto.consumer.rebalance`,
:mod:`~kproto.consumer.commits` and :mod:`~kproto.consumer.iteration`.
"""

from kproto.consumer.assignors import ASSIGNORS, Assignor, GroupMember, RebalanceProtocol
from kproto.consumer.consumer import AIOConsumer, Consumer
from kproto.consumer.errors import (
    CommitFailedError,
    NoOffsetForPartitionError,
    RecordDeserializationError,
)
from kproto.consumer.protocol import Assignment, Subscription
from kproto.consumer.structs import ConsumerRecord, OffsetAndTimestamp

__all__ = [
    "AIOConsumer",
    "ASSIGNORS",
    "Assignment",
    "Assignor",
    "CommitFailedError",
    "Consumer",
    "ConsumerRecord",
    "GroupMember",
    "NoOffsetForPartitionError",
    "OffsetAndTimestamp",
    "RebalanceProtocol",
    "RecordDeserializationError",
    "Subscription",
]
