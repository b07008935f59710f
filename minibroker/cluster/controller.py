"""The active controller: broker registrations and liveness, topics, elections, ISR changes.

One :class:`Controller` is active at a time (the :class:`~minibroker.cluster.quorum.Quorum`
picks it, with an epoch). It answers the brokers' requests by appending records to the
:class:`~minibroker.cluster.metadata.MetadataLog` and applying them to its own image; a
request that changes nothing appends nothing. Every rule below is KRaft's
(``ClusterControlManager``, ``ReplicationControlManager``, ``PartitionChangeBuilder``,
``ProducerIdControlManager``; KIP-631, KIP-903):

- **Registration** (BrokerRegistration): the broker epoch is the offset of its
  ``RegisterBrokerRecord``; the broker starts fenced. A second registration of a broker id
  with another incarnation id while the first one's session is alive is
  DUPLICATE_BROKER_REGISTRATION (the restarted broker retries after the old session
  expires); an expired one is fenced first (below).
- **Heartbeats**: an unknown broker, or an epoch other than its registration's →
  STALE_BROKER_EPOCH (``ClusterControlManager.checkBrokerEpoch``). A fenced broker is unfenced by the first heartbeat
  whose ``current_metadata_offset`` reaches its registration's offset (it has caught up);
  unfencing elects it for the leaderless partitions it may lead. ``want_shut_down`` fences
  it and answers ``should_shut_down`` (controlled shutdown's ISR handover, KIP-841, is not
  modelled).
- **Session expiry** (:meth:`Controller.tick`): no heartbeat for ``broker.session.timeout.ms``
  → the broker leaves every ISR (never the last member: the ISR keeps it and the partition
  gets leader -1), the partitions it led get the first replica (in ``replicas`` order)
  that is in the ISR and unfenced; with none, and ``unclean.leader.election.enable`` (the
  topic's, else the broker's), the first unfenced replica with ISR = just it (logged as a
  WARNING: records may be lost); else leader -1. Leaderless partitions are retried at
  every tick (Kafka's periodic unclean election check).
- **Epochs**: a leader change bumps the leader epoch; any change the partition epoch
  (:func:`~minibroker.cluster.metadata.merge_partition_change`).
- **Preferred leaders** (:meth:`Controller.elect_leaders`, KIP-183/KIP-460, Kafka's
  ``ReplicationControlManager.electLeaders`` and ``PartitionChangeBuilder.Election``): the
  preferred leader is the first replica. ElectLeaders PREFERRED moves leadership to it when
  it is unfenced and in the ISR (ELECTION_NOT_NEEDED if it leads already,
  PREFERRED_LEADER_NOT_AVAILABLE if it cannot); UNCLEAN, only for a partition without a
  leader, takes an unfenced ISR member, else any unfenced replica with ISR = just it,
  whatever ``unclean.leader.election.enable`` (ELECTION_NOT_NEEDED with a leader,
  ELIGIBLE_LEADERS_NOT_AVAILABLE with nobody). Unknown partitions are
  UNKNOWN_TOPIC_OR_PARTITION; no partitions named means all, and only those where an
  election was needed are answered. With ``auto.leader.rebalance.enable``, every
  ``leader.imbalance.check.interval.seconds`` the tick moves partitions back to their
  preferred replica when it is unfenced and in the ISR, for each broker whose share of
  preferred partitions led by others is above ``leader.imbalance.per.broker.percentage``
  (ZooKeeper-mode Kafka's rule; KRaft moves them all, as percentage 0 does).
- **AlterPartition**, checks in Kafka's order: the sender's broker epoch
  (STALE_BROKER_EPOCH), the topic id (UNKNOWN_TOPIC_ID) and partition
  (UNKNOWN_TOPIC_OR_PARTITION); a leader or partition epoch *newer* than the controller's
  → NOT_CONTROLLER (the controller is behind); an older leader epoch →
  FENCED_LEADER_EPOCH; a sender that is not the leader → INVALID_REQUEST; an older
  partition epoch → INVALID_UPDATE_VERSION; an ISR with a non-replica, a duplicate, or
  without the leader → INVALID_REQUEST; an ISR member not registered, fenced, or with a
  broker epoch other than its registration's (-1 skips that check) → INELIGIBLE_REPLICA.
- **CreateTopics**: the name by Kafka's rule (:func:`kproto.structs.validate_topic_name`),
  TOPIC_ALREADY_EXISTS for a taken one (earlier in the same request included);
  -1 partitions / replication factor take ``num.partitions`` / ``default.replication.factor``;
  assignments together with a count or factor → INVALID_REQUEST; a bad assignment
  → INVALID_REPLICA_ASSIGNMENT (a replica on a fenced broker is fine, all of them fenced
  is not: ``validateManualPartitionAssignment``); a replication factor above the registered
  brokers, or no unfenced broker → INVALID_REPLICATION_FACTOR, "Unable to replicate the
  partition N time(s): " and the placer's reason (fenced brokers take followers once
  the unfenced ones run out: :mod:`~minibroker.cluster.placement`);
  configs through minibroker's one validator (:func:`minibroker.topic_configs.validate_all`),
  INVALID_CONFIG with the single broker's message. A new partition's ISR is its unfenced
  replicas and its leader the first of them. Records: TopicRecord, the topic's
  ConfigRecords, its PartitionRecords (Kafka writes the ConfigRecords first; the image
  here keeps configs on the topic, so the topic comes first). All topics of one request
  are one append.
- **Config changes** (AlterConfigs, IncrementalAlterConfigs, forwarded by the brokers;
  Kafka's ``ConfigurationControlManager``). BROKER resources (a broker id, or "" for the
  cluster-wide default; KIP-226): the ops apply to the resource's dynamic configs in the
  image, which must pass ``BrokerConfig.check_dynamic`` and the rules across values on
  the configs then in force, else INVALID_REQUEST (KAFKA-13609); every broker applies
  the cluster default's and its own. TOPIC resources: an unknown topic →
  UNKNOWN_TOPIC_OR_PARTITION; the ops are applied (:func:`minibroker.topic_configs.apply_ops`)
  and the topic's whole new set validated by the single broker's rules
  (:func:`~minibroker.topic_configs.validate_all`) → INVALID_CONFIG with its message;
  ``validate_only`` stops there. One ConfigRecord per config whose value changes (None:
  removed); a resource that changes nothing appends nothing; each resource stands alone
  (one failing does not stop the others), all records of one request are one append. A
  change of ``unclean.leader.election.enable`` retries the elections of leaderless
  partitions at once, so enabling it elects an out-of-sync replica right away (KRaft runs
  that check periodically, KAFKA-12670; ZooKeeper mode's controller ran it on the change,
  KAFKA-6526; the tick here does both).
- **ACLs** (``AclControlManager``): CreateAcls commits an ``AccessControlEntryRecord``, with
  a new id, per ACL the cluster does not have; DeleteAcls a ``RemoveAccessControlEntryRecord``
  per ACL a filter matches. Every broker's authorizer takes the image's ACLs.
- **Producer ids**: blocks of 1000 (``ProducerIdControlManager.PRODUCER_ID_BLOCK_SIZE``),
  each recorded as a ``ProducerIdsRecord`` with the next block's start.
- **Client quotas** (AlterClientQuotas, forwarded by the brokers; Kafka's
  ``ClientQuotaControlManager``): each entity checked and answered as
  :func:`minibroker.quotas.plan_alter` does (a single broker's rules and texts), one
  ``ClientQuotaRecord`` per key whose value changes or goes, all in one append; every
  broker enforces the image's quotas.
- **SCRAM users** (AlterUserScramCredentials, forwarded by the brokers; Kafka's
  ``ScramControlManager``): checked by :func:`minibroker.scram_users.plan_alter`
  (a single broker's rules and texts), committed as ``UserScramCredentialRecord`` and
  ``RemoveUserScramCredentialRecord`` in one append; every broker authenticates against
  its image's credentials.
"""

from __future__ import annotations

import enum
import logging
import random
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kproto.errors import (
    DuplicateBrokerRegistrationError,
    ElectionNotNeededError,
    EligibleLeadersNotAvailableError,
    FencedLeaderEpochError,
    IneligibleReplicaError,
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidTopicError,
    InvalidUpdateVersionError,
    NotControllerError,
    PreferredLeaderNotAvailableError,
    StaleBrokerEpochError,
    TopicAlreadyExistsError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)
from kproto.structs import validate_topic_name
from minibroker.authorizer import AclBinding, AclBindingFilter
from minibroker.cluster.api import (
    AlterConfigsResource,
    AlterPartitionReply,
    AlterPartitionRequest,
    BrokerHeartbeatReply,
    BrokerHeartbeatRequest,
    BrokerRegistrationReply,
    BrokerRegistrationRequest,
    ConfigResult,
    ElectionResult,
    ElectionType,
    NewTopic,
    TopicResult,
)
from minibroker.cluster.metadata import (
    BROKER_RESOURCE,
    NO_LEADER,
    TOPIC_RESOURCE,
    AccessControlEntryRecord,
    BrokerRegistrationChangeRecord,
    ClientQuotaRecord,
    ConfigRecord,
    MetadataImage,
    MetadataLog,
    PartitionChangeRecord,
    PartitionRecord,
    PartitionRegistration,
    ProducerIdsRecord,
    Record,
    RegisterBrokerRecord,
    RemoveAccessControlEntryRecord,
    RemoveTopicRecord,
    RemoveUserScramCredentialRecord,
    TopicImage,
    TopicRecord,
    UserScramCredentialRecord,
)
from minibroker.cluster.placement import place_replicas, validate_assignments
from minibroker.config import BrokerConfig
from minibroker.quotas import AlterEntry, AlterResult, plan_alter
from minibroker.scram_users import plan_alter as plan_scram_alter
from minibroker.topic_configs import apply_ops, as_text, default_of, effective, validate_all

__all__ = ["Controller", "Election", "PRODUCER_ID_BLOCK_SIZE"]

log = logging.getLogger("minibroker.cluster")

PRODUCER_ID_BLOCK_SIZE = 1000  # Kafka's ProducerIdControlManager.PRODUCER_ID_BLOCK_SIZE


class Election(enum.Enum):
    """How a leader is chosen (Kafka's ``PartitionChangeBuilder.Election``)."""

    PREFERRED = "PREFERRED"  # the first replica if valid, else keep a valid leader, else any valid
    ONLINE = "ONLINE"  # keep a valid leader, else the first valid replica (in the ISR, unfenced)
    UNCLEAN = "UNCLEAN"  # as ONLINE, then any live replica outside the ISR


class Controller:
    """The active controller of epoch ``epoch``, hosted by node ``node_id``.

    Built from the log (every record replayed into :attr:`image`), so a new controller
    after a failover knows every registration and partition. Its appends carry its epoch:
    once a newer controller claimed the log they raise
    :class:`~kproto.errors.NotControllerError`. ``on_commit(offset, records)`` is called
    after each append (the Quorum delivers the records to the brokers).
    """

    def __init__(self, *, node_id: int, epoch: int, log: MetadataLog, config: BrokerConfig,
                 clock_ms: Callable[[], int], rng: random.Random | None = None,
                 on_commit: Callable[[int, Sequence[Record]], None] | None = None):
        self.node_id = node_id
        self.epoch = epoch
        self.log = log
        self.config = config
        self.clock_ms = clock_ms
        self.rng = rng or random.Random()
        self.on_commit = on_commit
        self.image = MetadataImage()
        entries = log.read(0)
        if entries:
            self.image.apply(entries[-1][0], [r for _, r in entries])
        # Kafka's BrokerHeartbeatManager: a new active controller gives every broker a fresh
        # session, so a failover does not fence brokers that heartbeated to the old one.
        now = clock_ms()
        self._last_heartbeat = {b: now for b in self.image.brokers}
        self._next_balance_ms: int | None = None  # the next automatic leader rebalance (first tick sets it)

    # -- committing ------------------------------------------------------------------------

    def _commit(self, records: Sequence[Record]) -> int:
        offset = self.log.append(self.epoch, records)
        if records:
            self.image.apply(offset, records)
            if self.on_commit is not None:
                self.on_commit(offset, records)
        return offset

    def _session_ms(self) -> int:
        return int(self.config["broker.session.timeout.ms"])

    def _session_alive(self, broker_id: int, now: int) -> bool:
        last = self._last_heartbeat.get(broker_id)
        return last is not None and now - last < self._session_ms()

    # -- elections (PartitionChangeBuilder) --------------------------------------------------

    def _unclean_allowed(self, topic: TopicImage) -> bool:
        # KAFKA-12670's lookup: the topic's, this node's dynamic, the cluster default's, static.
        return effective(topic.configs, "unclean.leader.election.enable",
                         self._broker_view(str(self.node_id))).lower() == "true"

    def _usable(self, broker_id: int, gone: int | None) -> bool:
        b = self.image.brokers.get(broker_id)
        return broker_id != gone and b is not None and not b.fenced

    def _change(self, topic: TopicImage, index: int, part: PartitionRegistration,
                gone: int | None = None, election: Election | None = None) -> PartitionChangeRecord | None:
        """The change that removes ``gone`` (a broker being fenced) from the ISR and gives the
        partition a usable leader, or None when nothing changes.

        ``election`` is Kafka's ``PartitionChangeBuilder.Election``; None: ONLINE, or UNCLEAN
        when the topic's ``unclean.leader.election.enable`` allows it (as Kafka's controller
        builds its changes). An election is tried when the leader is not valid (not in the
        ISR, or fenced), and for PREFERRED also when it is not the preferred replica
        (``shouldTryElection``)."""
        if election is None:
            election = Election.UNCLEAN if self._unclean_allowed(topic) else Election.ONLINE
        isr = tuple(r for r in part.isr if r != gone) or part.isr  # never drop the last member

        def valid(r: int) -> bool:  # isValidNewLeader
            return r in isr and self._usable(r, gone)

        leader = part.leader
        preferred = part.replicas[0] if part.replicas else NO_LEADER
        if not valid(leader) or (election is Election.PREFERRED and leader != preferred):
            if election is Election.PREFERRED:
                # electPreferredLeader: the preferred replica, else the current leader if it is
                # still valid (a healthy partition is left alone), else any other valid one.
                candidates = (preferred, leader, *part.replicas[1:])
            else:
                candidates = tuple(part.replicas)  # electAnyLeader: the first valid replica
            leader = next((r for r in candidates if valid(r)), NO_LEADER)
            if leader == NO_LEADER and election is Election.UNCLEAN:
                # electAnyLeader's unclean step: any live replica; the ISR becomes just it.
                leader = next((r for r in part.replicas if self._usable(r, gone)), NO_LEADER)
                if leader != NO_LEADER:
                    log.warning("unclean leader election of %s-%d: broker %d leads without being in the ISR %s; "
                                "records only the old ISR had are lost", topic.name, index, leader, list(part.isr))
                    isr = (leader,)
        if isr == part.isr and leader == part.leader:
            return None
        return PartitionChangeRecord(topic_id=topic.topic_id, partition_id=index,
                                     isr=isr if isr != part.isr else None,
                                     leader=leader if leader != part.leader else None)

    def _fence(self, broker_id: int, why: str) -> None:
        broker = self.image.brokers[broker_id]
        records: list[Record] = []
        for topic in self.image.topics.values():
            for index, part in topic.partitions.items():
                if broker_id in part.isr or part.leader == broker_id:
                    change = self._change(topic, index, part, gone=broker_id)
                    if change is not None:
                        records.append(change)
        records.append(BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=broker.broker_epoch,
                                                      fenced=True))
        self._commit(records)
        log.info("broker %d fenced (%s); %d partition(s) changed", broker_id, why, len(records) - 1)

    def _elect_leaderless(self) -> None:
        records: list[Record] = []
        for topic in self.image.topics.values():
            for index, part in topic.partitions.items():
                if part.leader == NO_LEADER:
                    change = self._change(topic, index, part)
                    if change is not None:
                        records.append(change)
        if records:
            self._commit(records)

    # -- brokers -----------------------------------------------------------------------------

    def register_broker(self, r: BrokerRegistrationRequest) -> BrokerRegistrationReply:
        now = self.clock_ms()
        existing = self.image.brokers.get(r.broker_id)
        if existing is not None and not existing.fenced:
            if existing.incarnation_id != r.incarnation_id and self._session_alive(r.broker_id, now):
                # ClusterControlManager.registerBroker: the old incarnation still holds the id
                return BrokerRegistrationReply(error_code=DuplicateBrokerRegistrationError.code, broker_epoch=-1)
            self._fence(r.broker_id, "registered again")  # its old epoch leaves every ISR first
        epoch = self.log.end_offset  # the broker epoch is the offset of its RegisterBrokerRecord
        self._commit([RegisterBrokerRecord(broker_id=r.broker_id, broker_epoch=epoch, incarnation_id=r.incarnation_id,
                                           host=r.host, port=r.port, rack=r.rack, listeners=r.listeners)])
        self._last_heartbeat[r.broker_id] = now
        log.info("broker %d registered at %s:%d with epoch %d", r.broker_id, r.host, r.port, epoch)
        return BrokerRegistrationReply(error_code=0, broker_epoch=epoch)

    def heartbeat(self, r: BrokerHeartbeatRequest) -> BrokerHeartbeatReply:
        broker = self.image.brokers.get(r.broker_id)
        if broker is None or broker.broker_epoch != r.broker_epoch:
            # ClusterControlManager.checkBrokerEpoch: not registered is a stale epoch too
            return BrokerHeartbeatReply(error_code=StaleBrokerEpochError.code, is_caught_up=False,
                                        is_fenced=True if broker is None else broker.fenced, should_shut_down=False)
        self._last_heartbeat[r.broker_id] = self.clock_ms()
        caught_up = r.current_metadata_offset >= broker.broker_epoch
        if r.want_shut_down:
            if not broker.fenced:
                self._fence(r.broker_id, "it asked to shut down")
            return BrokerHeartbeatReply(error_code=0, is_caught_up=caught_up, is_fenced=True, should_shut_down=True)
        if broker.fenced and caught_up:
            self._commit([BrokerRegistrationChangeRecord(broker_id=r.broker_id, broker_epoch=broker.broker_epoch,
                                                         fenced=False)])
            log.info("broker %d unfenced (caught up with the metadata at offset %d)",
                     r.broker_id, r.current_metadata_offset)
            self._elect_leaderless()  # ReplicationControlManager.handleBrokerUnfenced
        return BrokerHeartbeatReply(error_code=0, is_caught_up=caught_up,
                                    is_fenced=self.image.brokers[r.broker_id].fenced, should_shut_down=False)

    def tick(self, now_ms: int) -> None:
        """Fence the brokers whose session expired, then retry elections of leaderless
        partitions (an unclean election may have become possible), then, when due, move
        leadership back to preferred replicas (:meth:`_balance_leaders`)."""
        for broker_id, broker in sorted(self.image.brokers.items()):
            if not broker.fenced and not self._session_alive(broker_id, now_ms):
                self._fence(broker_id, f"no heartbeat for {self._session_ms()} ms")
        self._elect_leaderless()
        self._balance_leaders(now_ms)

    # -- preferred leaders: ElectLeaders and the automatic rebalance ---------------------------

    def elect_leaders(self, election_type: ElectionType,
                      partitions: Mapping[str, Sequence[int]] | None) -> list[ElectionResult]:
        """ElectLeaders (KIP-460, Kafka's ``ReplicationControlManager.electLeaders``): one
        result per partition asked; ``partitions`` None asks for every partition and answers
        only those where an election was needed (not ELECTION_NOT_NEEDED). The changes made
        are one append.

        Raises:
            InvalidRequestError: an election type Kafka does not have.
        """
        try:
            kind = Election.PREFERRED if ElectionType(election_type) is ElectionType.PREFERRED else Election.UNCLEAN
        except ValueError:
            raise InvalidRequestError(f"Unknown election type {election_type}") from None
        records: list[Record] = []
        results: list[ElectionResult] = []
        if partitions is None:
            for topic in list(self.image.topics.values()):
                for index in sorted(topic.partitions):
                    result = self._elect_one(topic.name, index, kind, records)
                    if result.error_code != ElectionNotNeededError.code:
                        results.append(result)
        else:
            done: dict[tuple[str, int], ElectionResult] = {}
            for name, asked in partitions.items():
                for index in asked:  # a partition asked twice is elected once
                    result = done.get((name, index)) or self._elect_one(name, index, kind, records)
                    done[(name, index)] = result
                    results.append(result)
        if records:
            self._commit(records)
        return results

    def _elect_one(self, name: str, index: int, election: Election, records: list[Record]) -> ElectionResult:
        """``ReplicationControlManager.electLeader``: the partition's change goes to ``records``."""
        topic = self.image.topic_by_name(name)
        part = topic.partitions.get(index) if topic is not None else None
        if topic is None or part is None:
            why = f"No such topic as {name}" if topic is None else f"No such partition as {name}-{index}"
            return ElectionResult(topic=name, partition=index, error_code=UnknownTopicOrPartitionError.code,
                                  error_message=why)
        preferred = part.replicas[0] if part.replicas else NO_LEADER
        if (election is Election.PREFERRED and part.leader == preferred) or (
                election is Election.UNCLEAN and part.leader != NO_LEADER):
            return ElectionResult(topic=name, partition=index, error_code=ElectionNotNeededError.code,
                                  error_message=ElectionNotNeededError.name)
        change = self._change(topic, index, part, election=election)
        if change is None:  # no record: nobody could be elected
            error = (PreferredLeaderNotAvailableError if election is Election.PREFERRED
                     else EligibleLeadersNotAvailableError)
            return ElectionResult(topic=name, partition=index, error_code=error.code, error_message=error.name)
        records.append(change)
        return ElectionResult(topic=name, partition=index, error_code=0)

    def _balance_leaders(self, now_ms: int) -> None:
        """``auto.leader.rebalance.enable``: every ``leader.imbalance.check.interval.seconds``,
        move leadership back to preferred replicas (ZooKeeper-mode Kafka's
        ``KafkaController.checkAndTriggerAutoLeaderRebalance``): for each live broker, the
        partitions it is the preferred replica of; when the share of them led by others is
        above ``leader.imbalance.per.broker.percentage``, each of those whose preferred
        replica is in the ISR gets a PREFERRED election. KRaft's controller
        (``maybeBalancePartitionLeaders``) moves every such partition: percentage 0."""
        if not self.config["auto.leader.rebalance.enable"]:
            return
        interval = int(self.config["leader.imbalance.check.interval.seconds"]) * 1000
        if self._next_balance_ms is None:
            self._next_balance_ms = now_ms + interval  # the first check one interval after activation
        if now_ms < self._next_balance_ms:
            return
        self._next_balance_ms = now_ms + interval
        by_preferred: dict[int, list[tuple[TopicImage, int, PartitionRegistration]]] = {}
        for topic in self.image.topics.values():
            for index, part in sorted(topic.partitions.items()):
                if part.replicas:
                    by_preferred.setdefault(part.replicas[0], []).append((topic, index, part))
        limit = int(self.config["leader.imbalance.per.broker.percentage"]) / 100
        records: list[Record] = []
        for broker_id, parts in sorted(by_preferred.items()):
            not_led = [p for p in parts if p[2].leader != broker_id]
            if not not_led or len(not_led) / len(parts) <= limit or not self._usable(broker_id, None):
                continue
            for topic, index, part in not_led:
                change = self._change(topic, index, part, election=Election.PREFERRED)
                if change is not None and change.leader == broker_id:  # canPreferredReplicaBeLeader
                    records.append(change)
        if records:
            self._commit(records)
            log.info("leader rebalance: %d partition(s) moved back to their preferred replica", len(records))

    # -- partitions --------------------------------------------------------------------------

    def alter_partition(self, r: AlterPartitionRequest) -> AlterPartitionReply:
        code, reg = self._check_alter(r)
        if code:
            return AlterPartitionReply(error_code=code, registration=None)
        assert reg is not None
        new_isr = tuple(m.broker_id for m in r.new_isr)
        if new_isr != reg.isr:
            self._commit([PartitionChangeRecord(topic_id=r.topic_id, partition_id=r.partition, isr=new_isr)])
        return AlterPartitionReply(error_code=0, registration=self.image.topics[r.topic_id].partitions[r.partition])

    def _check_alter(self, r: AlterPartitionRequest) -> tuple[int, PartitionRegistration | None]:
        """ReplicationControlManager.validateAlterPartitionData, in its order."""
        sender = self.image.brokers.get(r.broker_id)
        if sender is None or sender.broker_epoch != r.broker_epoch:
            return StaleBrokerEpochError.code, None
        topic = self.image.topics.get(r.topic_id)
        if topic is None:
            return UnknownTopicIdError.code, None
        part = topic.partitions.get(r.partition)
        if part is None:
            return UnknownTopicOrPartitionError.code, None
        if r.leader_epoch > part.leader_epoch or r.partition_epoch > part.partition_epoch:
            return NotControllerError.code, None
        if r.leader_epoch < part.leader_epoch:
            return FencedLeaderEpochError.code, None
        if r.broker_id != part.leader:
            return InvalidRequestError.code, None
        if r.partition_epoch < part.partition_epoch:
            return InvalidUpdateVersionError.code, None
        ids = [m.broker_id for m in r.new_isr]
        if len(set(ids)) != len(ids) or not set(ids) <= set(part.replicas) or part.leader not in ids:
            return InvalidRequestError.code, None  # the ISR must always include the leader
        for m in r.new_isr:
            b = self.image.brokers.get(m.broker_id)
            if b is None or b.fenced or (m.broker_epoch != -1 and m.broker_epoch != b.broker_epoch):
                return IneligibleReplicaError.code, None  # KIP-903
        return 0, part

    # -- topics ------------------------------------------------------------------------------

    def _new_partitions(self, topic_id: uuid.UUID, first: int,
                        placed: Sequence[Sequence[int]]) -> list[Record]:
        records: list[Record] = []
        for i, replicas in enumerate(placed):
            isr = tuple(b for b in replicas if self._usable(b, None))
            records.append(PartitionRecord(topic_id=topic_id, partition_id=first + i, replicas=tuple(replicas),
                                           isr=isr, leader=isr[0], leader_epoch=0, partition_epoch=0))
        return records

    def _place(self, count: int, replication: int, assignments: dict[int, tuple[int, ...]] | None,
               first: int) -> tuple[int, str | None, list[tuple[int, ...]]]:
        if assignments is not None:
            if why := validate_assignments(assignments, self.image.brokers, first_partition=first):
                return InvalidReplicaAssignmentError.code, why, []
            return 0, None, [tuple(assignments[p]) for p in sorted(assignments)]
        try:
            return 0, None, place_replicas(list(self.image.brokers.values()), count, replication,
                                           first_partition=first, rng=self.rng)
        except InvalidReplicationFactorError as exc:  # ReplicationControlManager's prefix
            return (InvalidReplicationFactorError.code,
                    f"Unable to replicate the partition {replication} time(s): {exc.args[0]}", [])

    def create_topics(self, topics: Sequence[NewTopic], *, validate_only: bool) -> list[TopicResult]:
        results: list[TopicResult] = []
        records: list[Record] = []
        taken: set[str] = set()
        for t in topics:
            code, message, placed = self._check_create(t, taken)
            if code:
                results.append(TopicResult(name=t.name, topic_id=None, error_code=code, error_message=message))
                continue
            taken.add(t.name)
            topic_id = None
            if not validate_only:
                topic_id = uuid.UUID(int=self.rng.getrandbits(128), version=4)
                records.append(TopicRecord(name=t.name, topic_id=topic_id))
                records.extend(ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name=t.name, name=k, value=v)
                               for k, v in sorted((t.configs or {}).items()) if v is not None)
                records.extend(self._new_partitions(topic_id, 0, placed))
            results.append(TopicResult(name=t.name, topic_id=topic_id, error_code=0, num_partitions=len(placed),
                                       replication_factor=len(placed[0])))
        if records:
            self._commit(records)
        return results

    def _check_create(self, t: NewTopic, taken: set[str]) -> tuple[int, str | None, list[tuple[int, ...]]]:
        if why := validate_topic_name(t.name):
            return InvalidTopicError.code, why, []
        if t.name in taken or self.image.topic_by_name(t.name) is not None:
            return TopicAlreadyExistsError.code, f"Topic '{t.name}' already exists.", []
        if t.assignments and (t.num_partitions != -1 or t.replication_factor != -1):
            return (InvalidRequestError.code, "Both numPartitions or replicationFactor and replicasAssignments "
                    "were set. Both cannot be used at the same time.", [])
        count = int(self.config["num.partitions"]) if t.num_partitions == -1 else t.num_partitions
        replication = (int(self.config["default.replication.factor"]) if t.replication_factor == -1
                       else t.replication_factor)
        if not t.assignments:
            if count <= 0:
                return InvalidPartitionsError.code, "Number of partitions was set to an invalid non-positive value.", []
            if replication <= 0:
                return (InvalidReplicationFactorError.code,
                        "Replication factor must be larger than 0, or -1 to use the default value.", [])
        placement = self._place(count, replication, dict(t.assignments) if t.assignments else None, 0)
        if placement[0]:
            return placement
        if why := validate_all(t.configs or {}, self.config):  # the single broker's validator and message
            return InvalidConfigError.code, why, []
        return placement

    def create_partitions(self, name: str, count: int, assignments: Sequence[tuple[int, ...]] | None, *,
                          validate_only: bool) -> TopicResult:
        topic = self.image.topic_by_name(name)
        if topic is None:
            return TopicResult(name=name, topic_id=None, error_code=UnknownTopicOrPartitionError.code,
                               error_message=f"Topic '{name}' does not exist.")
        have = len(topic.partitions)
        replication = len(topic.partitions[0].replicas) if have else 1
        if count <= have:
            return TopicResult(name=name, topic_id=topic.topic_id, error_code=InvalidPartitionsError.code,
                               error_message=f"Topic currently has {have} partitions, which is higher than or "
                                             f"equal to the requested {count}.")
        by_id = None
        if assignments is not None:
            if len(assignments) != count - have:
                return TopicResult(name=name, topic_id=topic.topic_id, error_code=InvalidReplicaAssignmentError.code,
                                   error_message=f"Attempted to add {count - have} additional partition(s), but only "
                                                 f"{len(assignments)} assignment(s) were specified.")
            if any(len(a) != replication for a in assignments):
                return TopicResult(name=name, topic_id=topic.topic_id, error_code=InvalidReplicaAssignmentError.code,
                                   error_message=f"The manual partition assignment has a partition whose replica "
                                                 f"count is not the topic's replication factor {replication}.")
            by_id = {have + i: tuple(a) for i, a in enumerate(assignments)}
        code, message, placed = self._place(count - have, replication, by_id, have)
        if code:
            return TopicResult(name=name, topic_id=topic.topic_id, error_code=code, error_message=message)
        if not validate_only:
            self._commit(self._new_partitions(topic.topic_id, have, placed))
        return TopicResult(name=name, topic_id=topic.topic_id, error_code=0, num_partitions=count,
                           replication_factor=replication)

    def delete_topics(self, topic_ids: Sequence[uuid.UUID]) -> list[TopicResult]:
        results: list[TopicResult] = []
        records: list[RemoveTopicRecord] = []
        for topic_id in topic_ids:
            topic = self.image.topics.get(topic_id)
            if topic is None or any(r.topic_id == topic_id for r in records):
                results.append(TopicResult(name="", topic_id=topic_id, error_code=UnknownTopicIdError.code,
                                           error_message=f"Topic id {topic_id} does not exist."))
                continue
            records.append(RemoveTopicRecord(topic_id=topic_id))
            results.append(TopicResult(name=topic.name, topic_id=topic_id, error_code=0))
        if records:
            self._commit(records)
        return results

    # -- producer ids ------------------------------------------------------------------------

    def allocate_producer_ids(self, broker_id: int, broker_epoch: int) -> tuple[int, int]:
        """A block of :data:`PRODUCER_ID_BLOCK_SIZE` producer ids: ``(first, count)``.

        Raises:
            StaleBrokerEpochError: the broker is not registered with ``broker_epoch``.
        """
        broker = self.image.brokers.get(broker_id)
        if broker is None or broker.broker_epoch != broker_epoch:
            raise StaleBrokerEpochError(f"broker {broker_id} is not registered with epoch {broker_epoch}")
        first = self.image.next_producer_id
        self._commit([ProducerIdsRecord(broker_id=broker_id, broker_epoch=broker_epoch,
                                        next_producer_id=first + PRODUCER_ID_BLOCK_SIZE)])
        return first, PRODUCER_ID_BLOCK_SIZE

    # -- ACLs (AclControlManager) -------------------------------------------------------------

    def create_acls(self, acls: Sequence[AclBinding]) -> None:
        """Commit an AccessControlEntryRecord, with a new id, for each ACL the cluster does
        not have yet (the broker checked them: :func:`~minibroker.authorizer.validate_binding`)."""
        held = {record.binding() for record in self.image.acls.values()}
        new = [acl for acl in dict.fromkeys(acls) if acl not in held]
        if new:
            self._commit([AccessControlEntryRecord.of(uuid.uuid4(), acl) for acl in new])

    def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[list[AclBinding]]:
        """Commit a RemoveAccessControlEntryRecord for every ACL a filter matches; returns
        the ACLs each filter matched (one two filters match is under both, as in Kafka)."""
        held = list(self.image.acls.values())
        matched = [[r for r in held if f.matches(r.binding())] for f in filters]
        gone = {r.id for records in matched for r in records}
        if gone:
            self._commit([RemoveAccessControlEntryRecord(id=acl_id) for acl_id in gone])
        return [[r.binding() for r in records] for records in matched]

    # -- config changes (ConfigurationControlManager) ----------------------------------------

    def alter_configs(self, resources: Sequence[AlterConfigsResource], *, validate_only: bool) -> list[ConfigResult]:
        """Validate each resource's change and commit the valid ones as ConfigRecords (see the
        module docstring); one :class:`ConfigResult` per resource."""
        results: list[ConfigResult] = []
        records: list[Record] = []
        for r in resources:
            code, message, changes = self._config_changes(r)
            results.append(ConfigResult(error_code=code, error_message=message))
            if not code and not validate_only:
                records.extend(changes)
        if records:
            self._commit(records)
            if any(c.name == "unclean.leader.election.enable" for c in records if isinstance(c, ConfigRecord)):
                self._elect_leaderless()  # an unclean election may be allowed now
        return results

    def _broker_view(self, name: str, own: Mapping[str, str] | None = None,
                     default: Mapping[str, str] | None = None) -> _BrokerView:
        """The broker configs in force for BROKER resource ``name`` (a broker id; "" the
        cluster default), with ``own`` / ``default`` in place of its and the default's
        dynamic configs when given."""
        held = self.image.broker_configs
        layers = [held.get("", {}) if default is None else default]
        if name:
            layers.insert(0, held.get(name, {}) if own is None else own)
        return _BrokerView(self.config, layers)

    def _broker_config_changes(self, r: AlterConfigsResource) -> tuple[int, str | None, list[ConfigRecord]]:
        current = self.image.broker_configs.get(r.resource_name, {})
        configs, why = apply_ops({} if r.replace else current, r.ops, default_of)
        if why is None:
            try:
                checked = {name: as_text(value) for name, value in BrokerConfig.check_dynamic(configs).items()}
            except ValueError as exc:
                why = str(exc)
        if why is None:  # the rules across values hold for the broker's too (validateBrokerLogConfigValues)
            view = (self._broker_view("", default=checked) if r.resource_name == ""
                    else self._broker_view(r.resource_name, own=checked))
            why = validate_all({}, view)
        if why is not None:
            return InvalidRequestError.code, why, []
        names = sorted(set(current) | set(checked))
        return 0, None, [ConfigRecord(resource_type=BROKER_RESOURCE, resource_name=r.resource_name, name=name,
                                      value=checked.get(name))
                         for name in names if checked.get(name) != current.get(name)]

    def _config_changes(self, r: AlterConfigsResource) -> tuple[int, str | None, list[ConfigRecord]]:
        if r.resource_type == BROKER_RESOURCE:
            return self._broker_config_changes(r)
        if r.resource_type != TOPIC_RESOURCE:
            return InvalidRequestError.code, f"unknown resource type {r.resource_type}", []
        topic = self.image.topic_by_name(r.resource_name)
        if topic is None:
            return UnknownTopicOrPartitionError.code, f"topic {r.resource_name!r} does not exist", []
        configs, why = apply_ops({} if r.replace else topic.configs, r.ops, default_of)
        if why is None:
            why = validate_all(configs, self.config)  # the single broker's validator and message
        if why is not None:
            return InvalidConfigError.code, why, []
        names = sorted(set(topic.configs) | set(configs))
        return 0, None, [ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name=topic.name, name=name,
                                      value=configs.get(name))
                         for name in names if configs.get(name) != topic.configs.get(name)]

    # -- client quotas (ClientQuotaControlManager) ---------------------------------------------

    def alter_client_quotas(self, entries: Sequence[AlterEntry], *, validate_only: bool) -> list[AlterResult]:
        """Check each entity's changes and commit the valid ones as ClientQuotaRecords (see
        the module docstring); one result per distinct entity."""
        current = self.image.client_quotas
        results, new = plan_alter(current, entries)
        records: list[Record] = []
        for entity in sorted(set(current) | set(new), key=repr):
            before, after = current.get(entity, {}), new.get(entity, {})
            records.extend(ClientQuotaRecord(entity=entity, key=key, remove=True) for key in sorted(before)
                           if key not in after)
            records.extend(ClientQuotaRecord(entity=entity, key=key, value=value) for key, value in sorted(after.items())
                           if before.get(key) != value)
        if records and not validate_only:
            self._commit(records)
        return results

    # -- SCRAM users (ScramControlManager) ---------------------------------------------------

    def alter_user_scram_credentials(self, request: Any) -> list[tuple[str, int, str | None]]:
        """Check an AlterUserScramCredentials request (its wire form) and commit the valid
        changes as (Remove)UserScramCredentialRecords in one append (see the module
        docstring); one ``(user, error code, message)`` per user named."""
        deletions, upsertions, results = plan_scram_alter(self.image.scram_credentials.__contains__, request)
        records: list[Record] = [RemoveUserScramCredentialRecord(name=user, mechanism=mechanism)
                                 for user, mechanism in deletions]
        records += [UserScramCredentialRecord(name=user, mechanism=mechanism, salt=c.salt, stored_key=c.stored_key,
                                              server_key=c.server_key, iterations=c.iterations)
                    for (user, mechanism), c in upsertions.items()]
        if records:
            self._commit(records)
        return results


class _BrokerView:
    """Broker configs in force, by name: the first dynamic layer that sets one (a broker's
    own, then the cluster default's: KIP-226's order), else the static config."""

    def __init__(self, config: BrokerConfig, layers: Sequence[Mapping[str, str]]):
        self._config = config
        self._layers = layers

    def __getitem__(self, name: str) -> object:
        for layer in self._layers:
            if name in layer:
                return layer[name]
        return self._config[name]
