"""Transactions on the wire between brokers: a coordinator's WriteTxnMarkers to another
broker, and a leader's AddPartitionsToTxn to another broker's coordinator (KIP-890).

In a MiniCluster the transaction coordinator of a transactional id (the leader of its
``__transaction_state`` partition) writes the COMMIT/ABORT markers of a transaction on the
leader of every partition in it. Those it leads itself go through
:meth:`~minibroker.state.BrokerState.write_txn_markers`; for the others it sends Kafka's
WriteTxnMarkers (API 27) to their leader, as Kafka's ``TransactionMarkerChannelManager``
does, over a kproto :class:`~kproto.io.connection.Connection` (the fetcher's way to reach
another broker, hence this module's place beside it; TLS and SASL as the inter-broker
listener has them, :mod:`minibroker.cluster.security`). One connection per call, closed
after the answer: markers are sent once per transaction end, and a connection left open
would outlive a broker that is killed.

Every error comes back as an error code per partition, never raised: a broker that cannot
be reached, or does not offer WriteTxnMarkers, is NETWORK_EXCEPTION for each of its
partitions, which the coordinator retries.

KIP-890 part 1: before a transactional append that would open a transaction, a leader asks
the transaction coordinator whether the partitions are in the transaction
(:class:`AddPartitionsToTxnSender`, Kafka's ``AddPartitionsToTxnManager``): AddPartitionsToTxn
v4+ with ``verify_only``, batched per coordinator: one request in flight per broker, the
transactions that arrive meanwhile go together in the next one, at most one entry per
transactional id (a newer one replaces the older, which gets NETWORK_EXCEPTION for the same
epoch, INVALID_PRODUCER_EPOCH for an older one). A coordinator that does not offer v4 is
not asked: the partitions count as verified (Kafka skips verification on a version
mismatch); an unreachable one is NETWORK_EXCEPTION.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from kproto.errors import InvalidProducerEpochError, KafkaError, NetworkError
from kproto.io.connection import Connection
from kproto.protocol import ApiKey
from kproto.protocol.messages import AddPartitionsToTxnRequest, WriteTxnMarkersRequest
from minibroker.faults import add_partitions_client_id, txn_markers_client_id

__all__ = ["AddPartitionsToTxnSender", "send_txn_markers"]

log = logging.getLogger("minibroker.transactions")

TopicPartition = tuple[str, int]

#: WriteTxnMarkers versions this sender speaks (v1: flexible).
_VERSIONS = (0, 1)


async def send_txn_markers(host: str, port: int, *, node_id: int, producer_id: int, producer_epoch: int,
                           coordinator_epoch: int, commit: bool, partitions: list[TopicPartition],
                           timeout_ms: int, connection: Mapping[str, Any] | None = None) -> dict[TopicPartition, int]:
    """Write one transaction's markers on ``partitions`` led by the broker at ``host:port``.

    Returns each partition's error code (0: written), the broker's answer or
    NETWORK_EXCEPTION when it could not be had. ``node_id`` is the sender's (its client id);
    ``connection``: the inter-broker listener's TLS and SASL (``Connection``'s ``ssl_context``
    and ``sasl``, :meth:`minibroker.cluster.security.InterBrokerClient.connection_settings`).
    """
    by_topic: dict[str, list[int]] = defaultdict(list)
    for topic, index in partitions:
        by_topic[topic].append(index)
    request = WriteTxnMarkersRequest(markers=[WriteTxnMarkersRequest.WritableTxnMarker(
        producer_id=producer_id, producer_epoch=producer_epoch, transaction_result=commit,
        topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=t, partition_indexes=i) for t, i in by_topic.items()],
        coordinator_epoch=coordinator_epoch)])
    conn = Connection(host, port, client_id=txn_markers_client_id(node_id), request_timeout_ms=timeout_ms,
                      connect_timeout_ms=5000, **(connection or {}))
    failed = dict.fromkeys(partitions, NetworkError.code)
    try:
        await conn.open()
        offered = conn.api_versions.get(ApiKey.WRITE_TXN_MARKERS)
        if offered is None or offered[1] < _VERSIONS[0] or offered[0] > _VERSIONS[1]:
            log.warning("%s:%d does not offer WriteTxnMarkers %s-%s (it offers %s): markers retried later",
                        host, port, *_VERSIONS, offered)
            return failed
        response = await conn.request_versioned(request, min(offered[1], _VERSIONS[1]))
    except (TimeoutError, KafkaError, OSError) as exc:
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


#: AddPartitionsToTxn versions a broker sends (v4: a broker's batch, v5: TRANSACTION_ABORTABLE).
_ADD_VERSIONS = (4, 5)


class AddPartitionsToTxnSender:
    """A broker's AddPartitionsToTxn to other brokers' transaction coordinators (see the
    module docstring); an instance is the broker's
    :attr:`~minibroker.state.BrokerState.remote_txn_verify`.

    Args:
        node_id: the sending broker's id (its client id).
        connection: the inter-broker listener's TLS and SASL (as :func:`send_txn_markers`).
    """

    def __init__(self, node_id: int, connection: Mapping[str, Any] | None = None) -> None:
        self.node_id = node_id
        self._connection = dict(connection or {})
        # coordinator (host, port) -> transactional id -> (transaction, its partitions, its answer)
        self._pending: dict[tuple[str, int], dict[str, tuple[Any, list[TopicPartition], asyncio.Future]]] = {}
        self._busy: set[tuple[str, int]] = set()  # coordinators with a request in flight

    async def __call__(self, host: str, port: int, *, transactional_id: str, producer_id: int, producer_epoch: int,
                       partitions: list[TopicPartition], verify_only: bool,
                       timeout_ms: int) -> dict[TopicPartition, int]:
        """Each partition's error code as the coordinator at ``host:port`` answers."""
        by_topic: dict[str, list[int]] = defaultdict(list)
        for topic, index in partitions:
            by_topic[topic].append(index)
        txn = AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction(
            transactional_id=transactional_id, producer_id=producer_id, producer_epoch=producer_epoch,
            verify_only=verify_only,
            topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=t, partitions=i) for t, i in by_topic.items()])
        node = (host, port)
        batch = self._pending.setdefault(node, {})
        older = batch.get(transactional_id)
        if older is not None:
            older_txn, older_partitions, older_answer = older
            if older_txn.producer_epoch > producer_epoch:  # this one is fenced already
                return dict.fromkeys(partitions, InvalidProducerEpochError.code)
            # AddPartitionsToTxnManager.addTxnData: the newer request replaces the older one.
            code = InvalidProducerEpochError.code if older_txn.producer_epoch < producer_epoch else NetworkError.code
            older_answer.set_result(dict.fromkeys(older_partitions, code))
        answer: asyncio.Future = asyncio.get_running_loop().create_future()
        batch[transactional_id] = (txn, list(partitions), answer)
        if node not in self._busy:
            self._busy.add(node)
            asyncio.ensure_future(self._drain(node, timeout_ms))
        return await answer

    async def _drain(self, node: tuple[str, int], timeout_ms: int) -> None:
        """Send what is pending for ``node``, one request at a time, until nothing is."""
        try:
            while batch := self._pending.pop(node, None):
                codes = await self._send(node, batch, timeout_ms)
                for transactional_id, (_, partitions, answer) in batch.items():
                    if not answer.done():
                        answer.set_result(codes.get(transactional_id, dict.fromkeys(partitions, NetworkError.code)))
        finally:
            self._busy.discard(node)
            for _, partitions, answer in self._pending.pop(node, {}).values():  # only if cancelled
                if not answer.done():
                    answer.set_result(dict.fromkeys(partitions, NetworkError.code))

    async def _send(self, node: tuple[str, int], batch: dict, timeout_ms: int) -> dict[str, dict[TopicPartition, int]]:
        host, port = node
        failed = {tid: dict.fromkeys(partitions, NetworkError.code) for tid, (_, partitions, _) in batch.items()}
        conn = Connection(host, port, client_id=add_partitions_client_id(self.node_id), request_timeout_ms=timeout_ms,
                          connect_timeout_ms=5000, **self._connection)
        try:
            await conn.open()
            offered = conn.api_versions.get(ApiKey.ADD_PARTITIONS_TO_TXN)
            if offered is None or offered[1] < _ADD_VERSIONS[0]:
                log.warning("%s:%d does not offer AddPartitionsToTxn v4+: partitions not verified", host, port)
                return {tid: {} for tid in batch}
            request = AddPartitionsToTxnRequest(transactions=[txn for txn, _, _ in batch.values()])
            response = await conn.request_versioned(request, min(offered[1], _ADD_VERSIONS[1]))
        except (TimeoutError, KafkaError, OSError) as exc:
            log.info("AddPartitionsToTxn to %s:%d failed: %s", host, port, exc)
            return failed
        finally:
            await conn.close(timeout=1.0)
        if response.error_code:
            return {tid: dict.fromkeys(partitions, response.error_code) for tid, (_, partitions, _) in batch.items()}
        codes: dict[str, dict[TopicPartition, int]] = {}
        for result in response.results_by_transaction:
            codes[result.transactional_id] = {(t.name, p.partition_index): p.partition_error_code
                                              for t in result.topic_results for p in t.results_by_partition}
        return codes
