"""The consumer's group traffic: finding the coordinator, joining (driving
:class:`~kproto.consumer.membership.Membership`), heartbeats, leaving, and committed offsets.

Theory of operation. Group requests travel on connections of their own (a second
:class:`~kproto.io.Cluster`): a broker answers one connection's requests in order, and a
coordinator holds JoinGroup until the rebalance completes, which would stall the fetches
of a cooperative member that keeps consuming meanwhile (Java connects to the coordinator
under a separate node id for the same reason).

- :meth:`GroupCoordinator.join` runs the membership's join generator against the
  coordinator, retrying retriable failures (finding the coordinator again when it moved
  or vanished) until the join succeeds or fails for good. JoinGroup and SyncGroup may be
  held up to the rebalance timeout, so they wait that long plus 5 s (Java's margin).
- :meth:`GroupCoordinator.heartbeat_loop` runs on the loop for the consumer's whole life:
  every ``heartbeat.interval.ms`` while the member is STABLE, so a slow application
  between polls does not stop heartbeats. When ``max.poll.interval.ms`` passes without a
  poll, it leaves the group as Java's heartbeat thread does (a static member only stops;
  its session timeout removes it), and the member's partitions count as lost.
- Commits go to the coordinator one at a time, in the order they were made, so an older
  commit never lands after a newer one and a committed offset never moves backwards.
  A sync commit retries retriable errors with its own offsets until its deadline (holding
  the line meanwhile); an async or auto-commit makes one attempt, as Java's
  ConsumerCoordinator does: the next auto-commit sends the current positions instead.
  A member commits with the generation it had when the commit was made, and fails it with
  CommitFailedError rather than send it once the generation changed (the partitions may
  belong to another member now); an assign()-only consumer commits as a "simple" one
  (generation -1, no member id). Committed-offset lookups retry until their deadline.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from typing import Any, TypeVar

from kproto._loop import wait_for
from kproto.consumer.errors import CommitFailedError
from kproto.consumer.membership import Membership, MemberState, NeedPartitions
from kproto.consumer.protocol import Assignment
from kproto.errors import (
    ClientClosedError,
    CoordinatorNotAvailableError,
    IllegalGenerationError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NotCoordinatorError,
    RebalanceInProgressError,
    UnknownMemberIdError,
    for_code,
)
from kproto.group_offsets import offset_fetch_request, offset_fetch_topics
from kproto.io import Cluster, Connection
from kproto.io.retry import Backoff, retrying
from kproto.protocol import ApiKey, Message
from kproto.protocol.messages import OffsetCommitRequest, OffsetFetchRequest
from kproto.structs import OffsetAndMetadata, TopicPartition, by_topic

__all__ = ["GroupCoordinator"]

log = logging.getLogger("kproto.consumer")

T = TypeVar("T")

_JOIN_MARGIN_S = 5.0  # Java's JOIN_GROUP_TIMEOUT_LAPSE
# After these the coordinator must be found again.
_COORDINATOR_GONE = (NotCoordinatorError, CoordinatorNotAvailableError, KafkaConnectionError, KafkaTimeoutError)


class GroupCoordinator:
    """Talks to one group's coordinator for a consumer.

    Args:
        config: the consumer's settings.
        membership: the member's state machine.
        metadata: the consumer's cluster (partition counts for the leader).
        wakeup: called when poll has something to act on (a rejoin, a failure).
    """

    # observability: called with (offsets, seconds) after each successful commit (the consumer sets it)
    on_commit: Callable[[dict, float], None] | None = None

    def __init__(self, config: Mapping[str, Any], membership: Membership, metadata: Cluster,
                 wakeup: Callable[[], None]) -> None:
        self.membership = membership
        self._cluster = Cluster(config)  # connections for group traffic only
        self._metadata = metadata
        self._wakeup = wakeup
        self._node: int | None = None
        self._backoff = Backoff.retry(config)
        self._request_timeout = config["request.timeout.ms"] / 1000
        self._heartbeat_interval = config["heartbeat.interval.ms"] / 1000
        self._max_poll_interval = config["max.poll.interval.ms"] / 1000
        self._join_timeout = membership.rebalance_timeout_ms / 1000 + _JOIN_MARGIN_S
        self._stable = asyncio.Event()  # set while heartbeats are due
        self._commit_line = asyncio.Lock()  # one commit at a time, in the order they were made
        self.failure: KafkaError | None = None  # fatal, from the heartbeat loop: raised by poll

    # -- plumbing -----------------------------------------------------------------------------

    async def _connection(self) -> Connection:
        if self._node is None:
            self._node = await self._cluster.find_coordinator(self.membership.group_id)
        return await self._cluster.connection(self._node)

    async def _send(self, api_key: int, body: Message | Callable[[int], Message], *, timeout: float | None = None) -> Any:
        """Send to the coordinator at the best version (``body`` may depend on it)."""
        try:
            conn = await self._connection()
            version = conn.version_for(api_key, self.membership.min_version(api_key))  # caps: kproto.io.versions
            request = body(version) if callable(body) else body
            return await conn.request_versioned(request, version, timeout=timeout)
        except _COORDINATOR_GONE:
            self._node = None
            raise

    async def _retrying(self, attempt: Callable[[], Awaitable[T]], deadline: float) -> T:
        """``attempt()`` until it does not raise a retriable error, or ``deadline`` passes."""
        async def forget(exc: KafkaError) -> None:
            if isinstance(exc, _COORDINATOR_GONE):
                self._node = None
            log.debug("group %r: retrying after %s", self.membership.group_id, exc)
        return await retrying(attempt, deadline=deadline, backoff=self._backoff,
                              on_retry=forget)

    # -- joining ------------------------------------------------------------------------------

    async def join(self, topics: Collection[str], owned: Collection[TopicPartition]) -> Assignment:
        """Join the group and return this member's assignment; retries until done.

        Raises:
            KafkaError: a failure no retry can fix (authorization, a fenced instance id,
                an inconsistent protocol...).
        """
        failures = 0
        while True:
            flow = self.membership.join(topics, owned)
            try:
                step = next(flow)
                while True:
                    if isinstance(step, NeedPartitions):
                        answer = await self._partition_counts(step.topics)
                    else:
                        answer = await self._send(step.API_KEY, step, timeout=self._join_timeout)
                    step = flow.send(answer)
            except StopIteration as done:
                self._stable.set()
                return done.value
            except KafkaError as exc:
                if not exc.retriable:
                    raise
                if isinstance(exc, _COORDINATOR_GONE):
                    self._node = None
                log.info("group %r: join failed (%s); retrying", self.membership.group_id, exc)
            finally:
                flow.close()
            failures += 1
            await asyncio.sleep(self._backoff.delay(failures))

    async def _partition_counts(self, topics: Iterable[str]) -> dict[str, int]:
        topics = list(topics)
        await self._metadata.refresh(topics)
        counts = {t: self._metadata.partitions_for(t) for t in topics}
        return {t: n for t, n in counts.items() if n}

    # -- heartbeats and leaving ---------------------------------------------------------------

    async def heartbeat_loop(self, since_poll: Callable[[], float]) -> None:
        """Heartbeat while STABLE; leave the group when polls stop for ``max.poll.interval.ms``
        (``since_poll()``: seconds since the application last polled)."""
        membership = self.membership
        while True:
            if membership.state is not MemberState.STABLE:
                self._stable.clear()
                await self._stable.wait()
                continue
            if since_poll() > self._max_poll_interval:
                log.warning("group %r: no poll for max.poll.interval.ms (%.0f ms); leaving the group",
                            membership.group_id, self._max_poll_interval * 1000)
                await self.leave("consumer poll timeout has expired")
                membership.reset(lost=True)
                self._wakeup()
                continue
            try:
                generation = membership.generation_id
                response = await self._send(ApiKey.HEARTBEAT, membership.heartbeat_request())
                membership.on_heartbeat(response.error_code, generation)
            except ClientClosedError:
                return
            except KafkaError as exc:
                if not exc.retriable:
                    self.failure = exc
                    self._wakeup()
                    return
                if isinstance(exc, _COORDINATOR_GONE):
                    self._node = None
                log.debug("group %r: heartbeat failed: %s", membership.group_id, exc)
            if membership.rejoin_reason is not None:
                self._wakeup()
            await asyncio.sleep(self._heartbeat_interval)

    async def leave(self, reason: str, deadline: float | None = None) -> None:
        """Leave the group (one attempt, as Java makes, for ``request.timeout.ms`` and until
        ``deadline`` at most) and forget the generation."""
        membership = self.membership
        if membership.member_id and membership.group_instance_id is None and membership.generation_id >= 0:
            wait = self._request_timeout
            if deadline is not None:
                wait = max(min(wait, deadline - time.monotonic()), 0)
            try:
                response = await wait_for(
                    self._send(ApiKey.LEAVE_GROUP, lambda version: membership.leave_request(version, reason)), wait)
                if response.error_code:
                    log.info("group %r: LeaveGroup answered %s", membership.group_id, for_code(response.error_code).name)
            except (TimeoutError, KafkaError) as exc:
                log.info("group %r: LeaveGroup failed: %s", membership.group_id, exc)
        membership.reset()

    async def close(self, timeout: float | None = None) -> None:
        """Close the group's connections (see :meth:`Cluster.close` for ``timeout``)."""
        await self._cluster.close(timeout)

    # -- offsets ------------------------------------------------------------------------------

    def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata], deadline: float, *,
               as_member: bool, retry: bool = True) -> asyncio.Task[None]:
        """Commit ``offsets``; ``as_member``: with the member's generation (subscribe()).

        Takes its place in line now and returns the task that commits once the commits
        made before it are done (await it). ``retry``: retry retriable failures with
        these offsets until ``deadline`` (a sync commit); otherwise one attempt (an async
        or auto-commit, whose offsets a later commit supersedes).

        The task raises:
            CommitFailedError: the group went on without this member, or rebalanced since
                the commit was made (its partitions may have moved).
            RebalanceInProgressError: the group is rebalancing; poll, then commit again.
            KafkaTimeoutError: retriable failures until ``deadline``.
            KafkaCodeError: another error (the first retriable one, when not retrying).
        """
        membership = self.membership
        # The generation the offsets belong to, pinned now: a commit that waited or was
        # retried across a rebalance is never sent under the next generation, for partitions
        # the member may no longer own (issue 10, item 7).
        generation, member_id = (membership.generation_id, membership.member_id) if as_member else (-1, "")
        return asyncio.get_running_loop().create_task(
            self._commit_in_line(dict(offsets), deadline, as_member, retry, generation, member_id))

    async def _commit_in_line(self, offsets: dict[TopicPartition, OffsetAndMetadata], deadline: float,
                              as_member: bool, retry: bool, generation: int, member_id: str) -> None:
        """One commit, after every commit made before it (see the class docstring)."""
        membership = self.membership
        try:
            await wait_for(self._commit_line.acquire(), max(deadline - time.monotonic(), 0))
        except TimeoutError:
            raise KafkaTimeoutError(f"group {membership.group_id!r}: an earlier commit was still running") from None

        async def attempt() -> None:
            # As Java: a member commits only while STABLE. While it rejoins, its JoinGroup
            # holds the coordinator connection and the generation is about to change.
            if as_member and (membership.generation_id, membership.member_id) != (generation, member_id):
                raise CommitFailedError(f"group {membership.group_id!r} rebalanced since these offsets were "
                                        "committed (their partitions may have moved)")
            if as_member and membership.state is not MemberState.STABLE:
                if membership.generation_id < 0:
                    raise CommitFailedError(f"group {membership.group_id!r}: this consumer is not in an active "
                                            "generation of the group; its partitions may have moved")
                raise RebalanceInProgressError(f"group {membership.group_id!r} is rebalancing: poll, then commit again")
            instance = membership.group_instance_id if as_member else None
            request = OffsetCommitRequest(
                group_id=membership.group_id, generation_id_or_member_epoch=generation, member_id=member_id,
                group_instance_id=instance, topics=[
                    OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=[
                        OffsetCommitRequest.OffsetCommitRequestPartition(
                            partition_index=p, committed_offset=offsets[TopicPartition(t, p)].offset,
                            committed_leader_epoch=offsets[TopicPartition(t, p)].leader_epoch,
                            committed_metadata=offsets[TopicPartition(t, p)].metadata)
                        for p in ps])
                    for t, ps in by_topic(offsets).items()])
            response = await self._send(ApiKey.OFFSET_COMMIT, request)
            codes = [p.error_code for t in response.topics for p in t.partitions if p.error_code]
            if not codes:
                return
            code = codes[0]
            error = for_code(code)(f"committing offsets of group {membership.group_id!r}")
            if code in (IllegalGenerationError.code, UnknownMemberIdError.code):
                if as_member and membership.is_current(generation):
                    membership.reset(lost=True, keep_member_id=code == IllegalGenerationError.code)
                    self._wakeup()
                raise CommitFailedError(f"group {membership.group_id!r} rebalanced without this member "
                                        "(its partitions may have moved)") from error
            if code == RebalanceInProgressError.code:
                membership.request_rejoin("a commit found the group rebalancing")
                self._wakeup()
            raise error

        started = time.monotonic()
        try:
            if retry:
                await self._retrying(attempt, deadline)
            else:
                try:
                    await attempt()
                except _COORDINATOR_GONE:
                    self._node = None  # the next commit looks for the coordinator again
                    raise
        finally:
            self._commit_line.release()
        if self.on_commit is not None:  # observability: commit metrics, interceptors' on_commit
            self.on_commit(offsets, time.monotonic() - started)

    async def committed(self, partitions: Collection[TopicPartition], deadline: float
                        ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets of ``partitions`` (None where there is none)."""
        group_id = self.membership.group_id

        def request(version: int) -> OffsetFetchRequest:
            return offset_fetch_request(version, group_id, partitions, require_stable=version >= 7)

        async def attempt() -> dict[TopicPartition, OffsetAndMetadata | None]:
            response = await self._send(ApiKey.OFFSET_FETCH, request)
            error_code, topics = offset_fetch_topics(response)
            if error_code:
                raise for_code(error_code)(f"committed offsets of group {group_id!r}")
            found: dict[TopicPartition, OffsetAndMetadata | None] = {}
            for t in topics:
                for p in t.partitions:
                    if p.error_code:
                        raise for_code(p.error_code)(f"committed offset of {t.name}-{p.partition_index}")
                    found[TopicPartition(t.name, p.partition_index)] = OffsetAndMetadata(
                        p.committed_offset, p.metadata or "", p.committed_leader_epoch) if p.committed_offset >= 0 else None
            return found

        return await self._retrying(attempt, deadline)
