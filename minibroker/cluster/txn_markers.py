"""Transaction markers on the wire: a coordinator's WriteTxnMarkers to another broker.

In a MiniCluster the transaction coordinator of a transactional id (the leader of its
``__transaction_state`` partition) writes the COMMIT/ABORT markers of a transaction on the
leader of every partition in it. Those it leads itself go through
:meth:`~minibroker.state.BrokerState.write_txn_markers`; for the others it sends Kafka's
WriteTxnMarkers (API 27) to their leader, as Kafka's ``TransactionMarkerChannelManager``
does, over a kproto :class:`~kproto.io.connection.Connection` (the fetcher's way to reach
another broker, hence this module's place beside it). One connection per call, closed
after the answer: markers are sent once per transaction end, and a connection left open
would outlive a broker that is killed.

Every error comes back as an error code per partition, never raised: a broker that cannot
be reached, or does not offer WriteTxnMarkers, is NETWORK_EXCEPTION for each of its
partitions, which the coordinator retries.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict

from kproto.errors import KafkaError, NetworkError
from kproto.io.connection import Connection
from kproto.protocol import ApiKey
from kproto.protocol.messages import WriteTxnMarkersRequest

__all__ = ["send_txn_markers"]

log = logging.getLogger("minibroker.transactions")

TopicPartition = tuple[str, int]

#: WriteTxnMarkers versions this sender speaks (v1: flexible).
_VERSIONS = (0, 1)


async def send_txn_markers(host: str, port: int, *, node_id: int, producer_id: int, producer_epoch: int,
                           coordinator_epoch: int, commit: bool, partitions: list[TopicPartition],
                           timeout_ms: int) -> dict[TopicPartition, int]:
    """Write one transaction's markers on ``partitions`` led by the broker at ``host:port``.

    Returns each partition's error code (0: written), the broker's answer or
    NETWORK_EXCEPTION when it could not be had. ``node_id`` is the sender's (its client id).
    """
    by_topic: dict[str, list[int]] = defaultdict(list)
    for topic, index in partitions:
        by_topic[topic].append(index)
    request = WriteTxnMarkersRequest(markers=[WriteTxnMarkersRequest.WritableTxnMarker(
        producer_id=producer_id, producer_epoch=producer_epoch, transaction_result=commit,
        topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=t, partition_indexes=i) for t, i in by_topic.items()],
        coordinator_epoch=coordinator_epoch)])
    conn = Connection(host, port, client_id=f"broker-{node_id}-txn-markers", request_timeout_ms=timeout_ms,
                      connect_timeout_ms=5000)
    failed = dict.fromkeys(partitions, NetworkError.code)
    try:
        await conn.open()
        offered = conn.api_versions.get(ApiKey.WRITE_TXN_MARKERS)
        if offered is None or offered[1] < _VERSIONS[0] or offered[0] > _VERSIONS[1]:
            log.warning("%s:%d does not offer WriteTxnMarkers %s-%s (it offers %s): markers retried later",
                        host, port, *_VERSIONS, offered)
            return failed
        response = await conn.request_versioned(request, min(offered[1], _VERSIONS[1]))
    except (KafkaError, OSError, asyncio.TimeoutError) as exc:
        log.info("WriteTxnMarkers to %s:%d failed: %s", host, port, exc)
        return failed
    finally:
        await conn.close(timeout=1.0)
    codes = dict(failed)
    for marker in response.markers:
        if marker.producer_id != producer_id:
            continue
        for topic in marker.topics:
            for result in topic.partitions:
                if (topic.name, result.partition_index) in codes:
                    codes[(topic.name, result.partition_index)] = result.error_code
    return codes
