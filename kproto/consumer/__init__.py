"""The consumer: group membership, assignors, the consumer protocol, fetching.

Layout: :mod:`~kproto.consumer.protocol` (the consumer protocol's subscription and
assignment bodies) and :mod:`~kproto.consumer.assignors` (range, roundrobin,
cooperative-sticky) are sans-I/O.
"""

from kproto.consumer.assignors import ASSIGNORS, Assignor, GroupMember, RebalanceProtocol
from kproto.consumer.protocol import Assignment, Subscription

__all__ = ["ASSIGNORS", "Assignment", "Assignor", "GroupMember", "RebalanceProtocol", "Subscription"]
