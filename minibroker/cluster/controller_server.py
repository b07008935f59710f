"""The controller endpoint of ``MiniCluster(processes=True)``: the Quorum, served on a port.

In process mode the brokers run in processes of their own and the
:class:`~minibroker.cluster.quorum.Quorum` (the metadata log, the active controller, its
lease and failover) stays in the parent. :class:`ControllerServer` listens on
``127.0.0.1:0`` and answers, as a KRaft controller listener does:

- BrokerRegistration (62), BrokerHeartbeat (63), AlterPartition (56),
  AllocateProducerIds (67), and the CreateTopics, CreatePartitions, DeleteTopics,
  AlterConfigs (33), IncrementalAlterConfigs (44), ElectLeaders (43), CreateAcls (30) and
  DeleteAcls (31) that brokers
  forward, each by the Quorum's in-process channel for the sending broker (so the
  answers, NOT_CONTROLLER included, are the in-process ones; an ElectLeaders the
  controller refuses is ElectLeaders' top-level error code);
- Fetch of ``__cluster_metadata`` partition 0: the metadata log's records after the
  fetch offset, parked up to ``max_wait_ms`` while there are none and the fetcher knows
  the current controller epoch; ``current_leader`` names the active controller
  (:mod:`~minibroker.cluster.remote` has the record encoding);
- ApiVersions, naming exactly these APIs. A client listener never advertises them.

The controller lease: a broker's registration or heartbeat arriving renews its lease
(``Quorum.renew_lease``), as the in-process node's heartbeat task does, so the lowest live
node still hosts the active controller and a killed node's lease expires with it.

Each connection's requests are answered in order, one at a time (Kafka's rule); a broker
long-polls the metadata on a connection of its own.

Who may talk to it. Kafka's controller authorizes what brokers forward with the principal
they forward; this endpoint has no authorizer, so what it answers must come from the
cluster's own brokers only. Every connection authenticates first, with SASL PLAIN (the
broker's own authenticator, :class:`minibroker.sasl.Authenticator`, and its rules: before
authentication only ApiVersions and SaslHandshake; anything else closes the connection
unanswered; a wrong password is SASL_AUTHENTICATION_FAILED and closes it) as the one user
:data:`BROKER_USER`, whose password :attr:`ControllerServer.secret` is a random token made
per endpoint. The MiniCluster hands it to its broker processes in their environment
(:data:`SECRET_ENV`), not on their command line, which every local user can read. So a
local process of another user cannot use the endpoint to get round the brokers' ACLs
(CreateAcls, DeleteAcls, AlterClientQuotas, AlterUserScramCredentials...); a process of
the same user can read the brokers' environment (``/proc/<pid>/environ``), as it could
attach a debugger to them: that is the limit of this protection.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Sequence
from typing import Any

from kproto._loop import wait_for
from kproto.errors import (
    IllegalSaslStateError,
    KafkaCodeError,
    OffsetOutOfRangeError,
    ProtocolError,
    UnknownTopicIdError,
    UnsupportedVersionError,
)
from kproto.protocol import (
    ApiKey,
    FrameReader,
    UnsupportedApiVersionError,
    decode_request,
    encode_response,
)
from kproto.protocol import messages as m
from kproto.security.sasl import SaslClient
from minibroker.cluster import remote
from minibroker.cluster.metadata import Record
from minibroker.cluster.quorum import Quorum
from minibroker.config import BrokerConfig
from minibroker.faults import error_response
from minibroker.handlers.elections import elect_leaders_response, refused
from minibroker.sasl import Authenticator, SaslSettings

__all__ = ["BROKER_USER", "SECRET_ENV", "SERVED", "ControllerServer", "broker_sasl"]

#: The one user of the endpoint (SASL PLAIN): the MiniCluster's brokers.
BROKER_USER = "minicluster-broker"
#: The environment variable that hands a broker process the endpoint's secret.
SECRET_ENV = "MINIBROKER_CONTROLLER_SECRET"

log = logging.getLogger("minibroker.cluster")

#: What the endpoint serves, ``{api_key: (min_version, max_version)}``: what the wire
#: mapping of :mod:`~minibroker.cluster.remote` reads and writes.
SERVED: dict[int, tuple[int, int]] = {
    ApiKey.FETCH: (13, 17),
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.CREATE_TOPICS: (7, 7),
    ApiKey.DELETE_TOPICS: (6, 6),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.ALTER_PARTITION: (3, 3),
    ApiKey.BROKER_REGISTRATION: (0, 4),
    ApiKey.BROKER_HEARTBEAT: (0, 1),
    ApiKey.ALLOCATE_PRODUCER_IDS: (0, 0),
    ApiKey.ALTER_CONFIGS: (2, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (1, 1),
    ApiKey.ELECT_LEADERS: (2, 2),
    ApiKey.ALTER_CLIENT_QUOTAS: (1, 1),
    ApiKey.CREATE_ACLS: (3, 3),
    ApiKey.DELETE_ACLS: (3, 3),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.SASL_HANDSHAKE: (1, 1),  # v1: the tokens in SaslAuthenticate requests (KIP-152)
    ApiKey.SASL_AUTHENTICATE: (0, 2),
}

_WAKE = -1  # the endpoint's own subscription to the Quorum's commits (node ids are >= 0)


class ControllerServer:
    """The Quorum's endpoint (see the module docstring).

    Attributes:
        port: the port listened on (known after :meth:`start`).
        registered: ``{node_id: broker_epoch}`` of the last registration accepted per node;
            the parent's handle on a broker process reads its epoch and endpoint here.
        endpoints: ``{node_id: (host, port)}`` of those registrations.
        secret: the password of :data:`BROKER_USER`, made for this endpoint (see the
            module docstring); :attr:`client_sasl` is the brokers' way in.
    """

    def __init__(self, quorum: Quorum, config: BrokerConfig, host: str = "127.0.0.1", port: int = 0):
        self.quorum = quorum
        self.config = config
        self.host, self.port = host, port
        self.registered: dict[int, int] = {}
        self.endpoints: dict[int, tuple[str, int]] = {}
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._committed = asyncio.Event()
        self.secret = secrets.token_urlsafe(32)
        self._sasl = SaslSettings(mechanisms=("PLAIN",), plain_users={BROKER_USER: self.secret})

    @property
    def client_sasl(self) -> SaslClient:
        """How a broker authenticates to this endpoint (``Connection(sasl=...)``)."""
        return broker_sasl(self.secret)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        self.quorum.subscribe(_WAKE, self._on_commit, from_offset=self.quorum.log.end_offset)
        log.info("controller endpoint listening on %s:%d", self.host, self.port)

    async def stop(self) -> None:
        """Stop listening and close every connection."""
        self.quorum.unsubscribe(_WAKE)
        if self._server is None:
            return
        self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        await self._server.wait_closed()
        self._server = None

    def _on_commit(self, offset: int, records: Sequence[Record]) -> None:
        self._committed.set()
        self._committed = asyncio.Event()

    # -- connections -------------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        frames = FrameReader()
        authenticator = Authenticator(self._sasl, _no_scram_users)
        try:
            while data := await reader.read(256 * 1024):
                frames.receive_data(data)
                while (frame := frames.next_frame()) is not None:
                    step = authenticator.receive(frame, int(time.time() * 1000))
                    if step.failed:  # connection.failed.authentication.delay.ms, as the brokers
                        await asyncio.sleep(self._sasl.failed_delay_ms / 1000)
                    if step.reply is not None:
                        writer.write(step.reply)
                        await writer.drain()
                    if step.close is not None:
                        log.info("controller endpoint: closing a connection: %s", step.close)
                        return
                    if step.dispatch:
                        writer.write(await self._answer(frame))
                        await writer.drain()
        except ProtocolError as exc:
            log.info("controller endpoint: closing a connection: %s", exc)
        except ConnectionError:
            pass
        except Exception:  # a bug costs one connection, never the endpoint
            log.exception("controller endpoint: closing a connection after an internal error")
        finally:
            self._connections.discard(task)
            writer.close()

    async def _answer(self, frame: bytes) -> bytes:
        try:
            header, request = decode_request(frame, strict=False)
        except UnsupportedApiVersionError as exc:
            if exc.api_key == ApiKey.API_VERSIONS:
                return encode_response(ApiKey.API_VERSIONS, 0, exc.correlation_id,
                                       _api_versions(UnsupportedVersionError.code))
            raise ProtocolError(f"unsupported API key {exc.api_key} version {exc.api_version}") from None
        served = SERVED.get(header.api_key)
        if served is None or not served[0] <= header.api_version <= served[1]:
            if header.api_key == ApiKey.API_VERSIONS:
                return encode_response(ApiKey.API_VERSIONS, 0, header.correlation_id,
                                       _api_versions(UnsupportedVersionError.code))
            raise ProtocolError(f"API key {header.api_key} version {header.api_version} is not served "
                                "by the controller endpoint")
        if header.api_key in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE):
            # once authenticated (KafkaApis.handleSaslHandshakeRequest / handleSaslAuthenticateRequest)
            response = error_response(header.api_key, header.api_version, request, IllegalSaslStateError.code)
        else:
            response = await self._handle(header.api_key, request)
        return encode_response(header.api_key, header.api_version, header.correlation_id, response)

    # -- the APIs ----------------------------------------------------------------------------------

    async def _handle(self, api_key: int, w: Any) -> Any:
        quorum = self.quorum
        if api_key == ApiKey.API_VERSIONS:
            return _api_versions(0)
        if api_key == ApiKey.FETCH:
            return await self._fetch(w)
        if api_key == ApiKey.BROKER_REGISTRATION:
            request = remote.registration_from_wire(w)
            quorum.renew_lease(request.broker_id)  # alive from now on: it may host the controller
            reply = await quorum.channel_for(request.broker_id).register_broker(request)
            if reply.error_code == 0:
                self.registered[request.broker_id] = reply.broker_epoch
                self.endpoints[request.broker_id] = (request.host, request.port)
            return m.BrokerRegistrationResponse(error_code=reply.error_code, broker_epoch=reply.broker_epoch)
        if api_key == ApiKey.BROKER_HEARTBEAT:
            beat = remote.heartbeat_from_wire(w)
            if not beat.want_shut_down:
                quorum.renew_lease(beat.broker_id)
            answer = await quorum.channel_for(beat.broker_id).heartbeat(beat)
            return m.BrokerHeartbeatResponse(error_code=answer.error_code, is_caught_up=answer.is_caught_up,
                                             is_fenced=answer.is_fenced, should_shut_down=answer.should_shut_down)
        if api_key == ApiKey.ALTER_PARTITION:
            alter = remote.alter_partition_from_wire(w)
            return remote.alter_partition_reply_to_wire(
                alter, await quorum.channel_for(alter.broker_id).alter_partition(alter))
        if api_key == ApiKey.ALLOCATE_PRODUCER_IDS:
            try:
                first, count = await quorum.channel_for(w.broker_id).allocate_producer_ids(w.broker_id, w.broker_epoch)
            except KafkaCodeError as exc:
                return m.AllocateProducerIdsResponse(error_code=exc.code)
            return m.AllocateProducerIdsResponse(producer_id_start=first, producer_id_len=count)
        channel = quorum.channel_for(-1)
        if api_key == ApiKey.CREATE_TOPICS:
            return remote.topic_results_to_wire(await channel.create_topics(remote.create_topics_from_wire(w),
                                                                            validate_only=w.validate_only))
        if api_key == ApiKey.CREATE_PARTITIONS:
            results = [await channel.create_partitions(
                t.name, t.count, None if t.assignments is None else [tuple(a.broker_ids) for a in t.assignments],
                validate_only=w.validate_only) for t in w.topics]
            R = m.CreatePartitionsResponse
            return R(results=[R.CreatePartitionsTopicResult(name=r.name, error_code=r.error_code,
                                                            error_message=r.error_message) for r in results])
        if api_key in (ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS):
            return remote.config_results_to_wire(w, await channel.alter_configs(remote.alter_configs_from_wire(w),
                                                                                validate_only=w.validate_only))
        if api_key == ApiKey.ALTER_CLIENT_QUOTAS:
            return remote.quota_results_to_wire(await channel.alter_client_quotas(
                remote.alter_client_quotas_from_wire(w), validate_only=w.validate_only))
        if api_key == ApiKey.CREATE_ACLS:
            try:
                await channel.create_acls(remote.acls_from_wire(w))
                code, message = 0, None
            except KafkaCodeError as exc:  # NOT_CONTROLLER
                code, message = exc.code, Exception.__str__(exc)
            return m.CreateAclsResponse(results=[m.CreateAclsResponse.AclCreationResult(
                error_code=code, error_message=message) for _ in w.creations])
        if api_key == ApiKey.DELETE_ACLS:
            filters = remote.acl_filters_from_wire(w)
            try:
                return remote.deleted_acls_to_wire(await channel.delete_acls(filters))
            except KafkaCodeError as exc:  # NOT_CONTROLLER
                return remote.deleted_acls_to_wire([[] for _ in filters], exc.code, Exception.__str__(exc))
        if api_key == ApiKey.ALTER_USER_SCRAM_CREDENTIALS:
            R = m.AlterUserScramCredentialsResponse
            return R(results=[R.AlterUserScramCredentialsResult(user=user, error_code=code, error_message=message)
                              for user, code, message in await channel.alter_user_scram_credentials(w)])
        if api_key == ApiKey.ELECT_LEADERS:
            election_type, partitions = remote.elect_leaders_from_wire(w)
            try:
                return elect_leaders_response(await channel.elect_leaders(election_type, partitions))
            except KafkaCodeError as exc:  # NOT_CONTROLLER, INVALID_REQUEST: the whole request
                # The detail without the code's name: the broker raises it again as it came.
                detail = Exception.__str__(exc)
                return refused(partitions, exc.code, detail)
        assert api_key == ApiKey.DELETE_TOPICS
        return remote.deleted_to_wire(await channel.delete_topics([t.topic_id for t in w.topics]))

    async def _fetch(self, w: Any) -> Any:
        """A Fetch of the metadata log (see the module docstring)."""
        R = m.FetchResponse
        quorum = self.quorum
        [(topic_id, p)] = [(t.topic_id, p) for t in w.topics for p in t.partitions] or [(None, None)]
        if p is None or topic_id != remote.METADATA_TOPIC_ID or p.partition != 0:
            return R(error_code=UnknownTopicIdError.code)
        deadline = time.monotonic() + w.max_wait_ms / 1000
        tick = int(self.config["broker.heartbeat.interval.ms"]) / 1000
        code = 0
        while True:
            end = quorum.log.end_offset
            if p.fetch_offset > end:
                code = OffsetOutOfRangeError.code
                break
            remaining = deadline - time.monotonic()
            # Park while there is nothing new for a fetcher that knows the controller; an
            # election commits nothing, so the wait is also cut into heartbeat intervals.
            if p.fetch_offset < end or p.current_leader_epoch != quorum.controller_epoch or remaining <= 0:
                break
            try:
                await wait_for(self._committed.wait(), min(remaining, tick))
            except TimeoutError:
                pass
        entries = quorum.log.read(p.fetch_offset) if code == 0 else []
        end = quorum.log.end_offset
        part = R.PartitionData(
            partition_index=0, error_code=code, high_watermark=end, last_stable_offset=end, log_start_offset=0,
            current_leader=R.LeaderIdAndEpoch(leader_id=quorum.controller_id, leader_epoch=quorum.controller_epoch),
            records=remote.metadata_records(entries, quorum.controller_epoch))
        return R(responses=[R.FetchableTopicResponse(topic_id=remote.METADATA_TOPIC_ID, partitions=[part])])


def broker_sasl(secret: str) -> SaslClient:
    """How a broker process authenticates to the endpoint whose secret it was handed."""
    return SaslClient("PLAIN", BROKER_USER, secret)


def _no_scram_users(user: str, mechanism: str) -> None:
    return None  # the endpoint speaks PLAIN only


def _api_versions(error_code: int) -> Any:
    R = m.ApiVersionsResponse
    return R(error_code=error_code, api_keys=[R.ApiVersion(api_key=k, min_version=lo, max_version=hi)
                                              for k, (lo, hi) in sorted(SERVED.items())])
