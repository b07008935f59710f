"""Fetch v4-17.

Behaviour: whole batches from the one holding the fetch offset (clients drop the
records before it), at least one batch per response even above the size limits
(KIP-74), then as many as ``partition_max_bytes`` and ``max_bytes`` allow. A request
that finds fewer than ``min_bytes`` waits up to ``max_wait_ms`` and is woken by any
produce; an error in any partition answers at once. High watermark, last stable offset
and log start offset come with every partition answered without an error. Records are
not read here: each partition's are a :class:`~minibroker.log.segment.RecordSlices` over
its log, which the server sends from the segment files with ``os.sendfile`` (see
:mod:`minibroker.server`). A partition answered with an error carries empty records,
never null ones, and -1 for its offsets (Kafka's ``LogReadResult`` of an error, with
``MemoryRecords.EMPTY``; librdkafka refuses a whole response holding a null records
field, issue 10). ``aborted_transactions`` is null for read_uncommitted and a list for
read_committed, as Kafka's ``LocalLog.read`` gives it.
Version notes: v7+ sessions (KIP-227) are declined (session_id 0, every request is a
full fetch); v13+ names topics by id; v12+ flexible.
Not implemented yet: read_committed (no transactions yet, so LSO = HW and there is
nothing to filter), preferred read replicas, leader epoch fencing.
"""

import time

from kproto.errors import (
    FetchSessionIdNotFoundError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import FetchResponse
from minibroker.handlers import handles
from minibroker.log.store import RecordSlices

PartitionData = FetchResponse.PartitionData
TopicResponse = FetchResponse.FetchableTopicResponse

READ_COMMITTED = 1


def _collect(state, request, by_id):
    """One pass over the requested partitions: (topic responses, bytes found, any error)."""
    budget = request.max_bytes if request.max_bytes > 0 else 0x7FFFFFFF
    total = 0
    any_error = False
    responses = []
    aborted = [] if request.isolation_level == READ_COMMITTED else None
    for asked in request.topics:
        topic = state.topic_by_id(asked.topic_id) if by_id else state.topics.get(asked.topic)
        partitions = []
        for p in asked.partitions:
            if topic is None or not 0 <= p.partition < len(topic.partitions):
                code = UnknownTopicIdError.code if by_id and topic is None else UnknownTopicOrPartitionError.code
                partitions.append(PartitionData(partition_index=p.partition, error_code=code, high_watermark=-1, records=RecordSlices(())))
                any_error = True
                continue
            log = topic.partitions[p.partition]
            if log.offline:  # a storage error took it offline: nothing is served until a restart
                partitions.append(PartitionData(partition_index=p.partition, error_code=KafkaStorageError.code,
                                                high_watermark=-1, records=None))
                any_error = True
                continue
            if not log.log_start_offset <= p.fetch_offset <= log.log_end_offset:
                # As Kafka's LogReadResult for an error: no offsets (-1), empty records.
                partitions.append(PartitionData(partition_index=p.partition, error_code=OffsetOutOfRangeError.code,
                                                high_watermark=-1, records=RecordSlices(())))
                any_error = True
                continue
            # The first batch of the first partition with data comes whatever its size
            # (KIP-74), so a consumer can always make progress; the rest must fit.
            limit = min(p.partition_max_bytes, budget - total)
            records = RecordSlices(log.read_slices(p.fetch_offset, limit, at_least_one=total == 0))
            total += len(records)
            partitions.append(PartitionData(
                partition_index=p.partition, error_code=0, high_watermark=log.high_watermark,
                last_stable_offset=log.high_watermark, log_start_offset=log.log_start_offset,
                aborted_transactions=aborted, records=records,
            ))
        responses.append(TopicResponse(topic=asked.topic, topic_id=asked.topic_id, partitions=partitions))
    return responses, total, any_error


@handles(ApiKey.FETCH, 4, 17)
async def handle(state, header, request):
    if header.api_version >= 7 and request.session_id != 0:
        return FetchResponse(error_code=FetchSessionIdNotFoundError.code, session_id=0)
    by_id = header.api_version >= 13
    deadline = time.monotonic() + max(request.max_wait_ms, 0) / 1000
    while True:
        responses, total, any_error = _collect(state, request, by_id)
        remaining = deadline - time.monotonic()
        if any_error or total >= request.min_bytes or remaining <= 0:
            return FetchResponse(error_code=0, session_id=0, responses=responses)
        await state.wait_for_data(remaining)
