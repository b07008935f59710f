"""OffsetFetch in either of its forms: one group's committed offsets.

Versions 0-7 ask for one group at the top level of the request and answer with a
top-level ``topics`` list and error; version 8 and later (KIP-709) ask for a list of
groups and answer per group. kproto asks for one group either way, at the highest version
both sides support, as Java's clients do. Both the consumer and the admin client use
these two functions, so neither knows which form went over the wire.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kproto.protocol.messages import OffsetFetchRequest
from kproto.structs import TopicPartition, by_topic

__all__ = ["offset_fetch_request", "offset_fetch_topics"]

_GROUPS_FORM = 8


def offset_fetch_request(version: int, group_id: str, partitions: Iterable[TopicPartition] | None = None, *,
                         require_stable: bool = False) -> OffsetFetchRequest:
    """The request for ``group_id``'s offsets of ``partitions`` (None: of every partition;
    version 2 or later)."""
    wanted = None if partitions is None else by_topic(partitions)
    if version >= _GROUPS_FORM:
        group_topics = None if wanted is None else [
            OffsetFetchRequest.OffsetFetchRequestTopics(name=t, partition_indexes=p) for t, p in wanted.items()]
        return OffsetFetchRequest(require_stable=require_stable, groups=[
            OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group_id, topics=group_topics)])
    topics = None if wanted is None else [
        OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=p) for t, p in wanted.items()]
    return OffsetFetchRequest(group_id=group_id, topics=topics, require_stable=require_stable)


def offset_fetch_topics(response: Any) -> tuple[int, list[Any]]:
    """The group's error code and its topics (each has ``name`` and ``partitions`` whose
    items have ``partition_index``, ``committed_offset``, ``committed_leader_epoch``,
    ``metadata`` and ``error_code``), from a response to :func:`offset_fetch_request`."""
    if response.groups:  # the v8+ form (older versions have no groups: the list stays empty)
        (group,) = response.groups
        return group.error_code, group.topics
    return response.error_code, response.topics
