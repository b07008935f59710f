"""Metadata v0-12.

Behaviour: one broker, listed at its advertised address (``advertised.listeners``, not
the bind address), leader of every partition, replicas and ISR of one. A null topic
list (v1+) or an empty one at v0 means every topic. Unknown topics are created when
both ``auto.create.topics.enable`` and the request allow it (v4+), with
``num.partitions``, and described at once (Kafka says LEADER_NOT_AVAILABLE until the
new leader is elected; here it already is, so clients save a retry). Internal topics
(``__consumer_offsets``) are flagged ``is_internal``; asking for the offsets topic
creates it as the broker's own (compacted, ``offsets.topic.num.partitions``), never as
an ordinary topic.
Version notes: topic ids from v10, leader epochs from v7, v12 may ask by topic id.
Authorized operations (v8+, KIP-430): when asked, the operations on a topic (and, at
v8-10, on the cluster) the principal is allowed (every one with the authorizer off); see
:mod:`minibroker.authorizer`. Unasked, INT32_MIN. Entries for an unknown topic id get none.
Authorization (``KafkaApis.handleTopicMetadataRequest``): every topic (a null list) lists
only the topics the principal may DESCRIBE; a named one it may not describe is
TOPIC_AUTHORIZATION_FAILED (without saying whether it exists), as is an unknown one that
would be auto-created without CREATE on the cluster or on the topic.

In a MiniCluster (``state.cluster``) the answer comes from the broker's metadata image
(Kafka's ``KRaftMetadataCache``): brokers are the registered, unfenced ones with their
racks; ``controller_id`` is the active controller's node; each partition has its leader
(-1 → LEADER_NOT_AVAILABLE), leader epoch, replicas, ISR, and as ``offline_replicas``
the replicas on fenced brokers (Kafka lists replicas on offline log directories; a dead
broker is the closest a MiniCluster has). Auto-creation goes through the controller
(``default.replication.factor``; the offsets topic with ``offsets.topic.replication.factor``
capped at the live brokers), then the topic is described as committed.
"""

import copy
import uuid

from kproto.errors import (
    InvalidTopicError,
    LeaderNotAvailableError,
    TopicAuthorizationFailedError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import MetadataResponse
from minibroker.authorizer import AclOperation, ResourceType
from minibroker.cluster.api import NewTopic
from minibroker.handlers import handles
from minibroker.state import (
    INTERNAL_TOPICS,
    OFFSETS_TOPIC,
    TRANSACTION_STATE_TOPIC,
    validate_topic_name,
)

ZERO_UUID = uuid.UUID(int=0)
Topic_ = MetadataResponse.MetadataResponseTopic
Partition_ = MetadataResponse.MetadataResponsePartition


def _describe(state, topic):
    node = state.node_id
    return Topic_(
        error_code=0, name=topic.name, topic_id=topic.topic_id, is_internal=topic.name in INTERNAL_TOPICS,
        partitions=[  # an offline log has no leader (KRaftMetadataCache: LEADER_NOT_AVAILABLE)
            Partition_(error_code=LeaderNotAvailableError.code if p.log.offline else 0, partition_index=i,
                       leader_id=-1 if p.log.offline else node, leader_epoch=p.leader_epoch,
                       replica_nodes=[node], isr_nodes=[node], offline_replicas=[node] if p.log.offline else [])
            for i, p in enumerate(topic.partitions)
        ],
    )


def _describe_image(image, topic):
    """A topic as the broker's metadata image has it (cluster mode)."""
    fenced = {b.broker_id for b in image.brokers.values() if b.fenced}
    partitions = []
    for i in sorted(topic.partitions):
        p = topic.partitions[i]
        partitions.append(Partition_(
            error_code=LeaderNotAvailableError.code if p.leader < 0 else 0, partition_index=i,
            leader_id=p.leader, leader_epoch=p.leader_epoch, replica_nodes=list(p.replicas),
            isr_nodes=list(p.isr),
            offline_replicas=[r for r in p.replicas if r in fenced or r not in image.brokers]))
    return Topic_(error_code=0, name=topic.name, topic_id=topic.topic_id, is_internal=topic.name in INTERNAL_TOPICS,
                  partitions=partitions)


def offsets_topic_spec(state):
    """``__consumer_offsets`` as the controller creates it: compacted,
    ``offsets.topic.num.partitions``, ``offsets.topic.replication.factor`` capped at the
    live brokers (so a small cluster can still commit)."""
    live = len(state.cluster.image.live_brokers())
    return NewTopic(name=OFFSETS_TOPIC, num_partitions=state.config["offsets.topic.num.partitions"],
                    replication_factor=max(1, min(state.config["offsets.topic.replication.factor"], live)),
                    configs={"cleanup.policy": "compact",
                             "segment.bytes": str(state.config["offsets.topic.segment.bytes"])})


def transaction_state_topic_spec(state) -> NewTopic:
    """``__transaction_state`` as the controller creates it: compacted,
    ``transaction.state.log.num.partitions``, ``transaction.state.log.replication.factor``
    capped at the live brokers and ``transaction.state.log.min.isr`` capped at that."""
    live = len(state.cluster.image.live_brokers())
    replicas = max(1, min(state.config["transaction.state.log.replication.factor"], live))
    return NewTopic(name=TRANSACTION_STATE_TOPIC, num_partitions=state.config["transaction.state.log.num.partitions"],
                    replication_factor=replicas,
                    configs={"cleanup.policy": "compact",
                             "segment.bytes": str(state.config["transaction.state.log.segment.bytes"]),
                             "min.insync.replicas": str(max(1, min(state.config["transaction.state.log.min.isr"],
                                                                   replicas)))})


#: Internal topics auto-created as their coordinators make them (Kafka's createInternalTopic).
_INTERNAL_SPECS = {OFFSETS_TOPIC: offsets_topic_spec, TRANSACTION_STATE_TOPIC: transaction_state_topic_spec}


async def _cluster_answer(state, every, request, listener_name):
    """(topics, brokers, controller id) of a cluster broker's answer (``every`` topic or those
    asked), with each broker's address on the request's listener."""
    cluster = state.cluster
    image = cluster.image
    wanted = request.topics
    if every:
        topics = [_describe_image(image, t) for t in image.topics.values()]
    else:
        allow = request.allow_auto_topic_creation and state.config["auto.create.topics.enable"]
        topics = []
        for asked in wanted:
            name = asked.name
            if name is None:  # v10+: by topic id
                topic = image.topics.get(asked.topic_id)
                topics.append(Topic_(error_code=UnknownTopicIdError.code, name=None, topic_id=asked.topic_id)
                              if topic is None else _describe_image(image, topic))
                continue
            topic = image.topic_by_name(name)
            if topic is None and validate_topic_name(name) is None and allow:
                internal = _INTERNAL_SPECS.get(name)
                new = internal(state) if internal is not None else NewTopic(
                    name=name, num_partitions=state.config["num.partitions"],
                    replication_factor=state.config["default.replication.factor"])
                await cluster.channel.create_topics([new], validate_only=False)
                topic = image.topic_by_name(name)  # committed records are applied before the answer
                if topic is None:  # no controller, too few brokers...: as Kafka while it cannot create
                    topics.append(Topic_(error_code=LeaderNotAvailableError.code, name=name))
                    continue
            if topic is not None:
                topics.append(_describe_image(image, topic))
            elif validate_topic_name(name) is not None:
                topics.append(Topic_(error_code=InvalidTopicError.code, name=name))
            else:
                topics.append(Topic_(error_code=UnknownTopicOrPartitionError.code, name=name))
    brokers = [MetadataResponse.MetadataResponseBroker(node_id=b.broker_id, host=at[0], port=at[1], rack=b.rack)
               for b in image.live_brokers() if (at := state.cluster_endpoint(b, listener_name)) is not None]
    return topics, brokers, cluster.channel.active_controller_id


def _refused(state, header, version, request):
    """The request without the topics the principal may not describe, or (being unknown,
    with auto-creation on) not create, and the answers for those: TOPIC_AUTHORIZATION_FAILED
    (``KafkaApis.handleTopicMetadataRequest``: a CREATE on the cluster covers every topic)."""
    if request.topics is None or (version == 0 and not request.topics) or not state.authorizer.enabled:
        return request, []
    auto = request.allow_auto_topic_creation and state.config["auto.create.topics.enable"]
    kept, refused = [], []
    for asked in request.topics:
        name = asked.name
        if name is None:  # by id: its name, if it has one, is what is authorized
            topic = (state.cluster.image.topics.get(asked.topic_id) if state.cluster is not None
                     else state.topic_by_id(asked.topic_id))
            name = None if topic is None else topic.name
        exists = name is not None and (state.cluster.image.topic_by_name(name) if state.cluster is not None
                                       else state.topics.get(name)) is not None
        if name is not None and not state.authorizer.allows(header, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
            refused.append(Topic_(error_code=TopicAuthorizationFailedError.code, name=asked.name,
                                  topic_id=asked.topic_id if asked.name is None else ZERO_UUID))
        elif (asked.name is not None and not exists and auto and validate_topic_name(name) is None
              and not state.authorizer.allows(header, AclOperation.CREATE, ResourceType.CLUSTER)
              and not state.authorizer.allows(header, AclOperation.CREATE, ResourceType.TOPIC, name)):
            refused.append(Topic_(error_code=TopicAuthorizationFailedError.code, name=name, topic_id=ZERO_UUID,
                                  is_internal=name in INTERNAL_TOPICS))
        else:
            kept.append(asked)
    request = copy.copy(request)
    request.topics = kept
    return request, refused


@handles(ApiKey.METADATA, 0, 12)
async def handle(state, header, request):
    version = header.api_version
    request, refused = _refused(state, header, version, request)
    wanted = request.topics
    every = wanted is None or (version == 0 and not wanted and not refused)  # v0: [] is every topic
    if state.cluster is not None:
        topics, brokers, controller_id = await _cluster_answer(state, every, request, header.listener_name)
        return _response(state, header, request, topics + refused, brokers, controller_id)
    if every:
        topics = [_describe(state, t) for t in state.topics.values()]
    else:
        allow = request.allow_auto_topic_creation and state.config["auto.create.topics.enable"]
        topics = []
        for asked in wanted:
            name = asked.name
            if name is None:  # v10+: by topic id
                topic = state.topic_by_id(asked.topic_id)
                if topic is None:
                    topics.append(Topic_(error_code=UnknownTopicIdError.code, name=None, topic_id=asked.topic_id))
                else:
                    topics.append(_describe(state, topic))
                continue
            topic = state.topics.get(name)
            if topic is not None:
                topics.append(_describe(state, topic))
            elif validate_topic_name(name) is not None:
                topics.append(Topic_(error_code=InvalidTopicError.code, name=name))
            elif allow:
                try:
                    # an internal topic as its coordinator makes it (Kafka's createInternalTopic)
                    created = (state.offsets_topic() if name == OFFSETS_TOPIC
                               else state.transaction_state_topic() if name == TRANSACTION_STATE_TOPIC
                               else state.create_topic(name, state.config["num.partitions"]))
                except OSError:  # a full disk: nothing was made; as Kafka while a leader is missing
                    topics.append(Topic_(error_code=LeaderNotAvailableError.code, name=name))
                    continue
                topics.append(_describe(state, created))
            else:
                topics.append(Topic_(error_code=UnknownTopicOrPartitionError.code, name=name))
    host, port = state.endpoint(header.listener_name)
    brokers = [MetadataResponse.MetadataResponseBroker(node_id=state.node_id, host=host, port=port)]
    return _response(state, header, request, topics + refused, brokers, state.node_id)


def _response(state, header, request, topics, brokers, controller_id):
    version = header.api_version
    authorizer = state.authorizer
    # Every topic (all asked for) lists only those the principal may describe.
    topics = [t for t in topics if t.error_code == TopicAuthorizationFailedError.code or t.name is None
              or authorizer.allows(header, AclOperation.DESCRIBE, ResourceType.TOPIC, t.name)]
    if version >= 8:
        # KafkaApis sets it on every named topic of the answer, errors included.
        for t in topics:
            if t.name is not None:
                t.topic_authorized_operations = authorizer.operations(
                    header, ResourceType.TOPIC, t.name, request.include_topic_authorized_operations)
    return MetadataResponse(
        brokers=brokers,
        cluster_id=state.config["cluster.id"],
        controller_id=controller_id,
        topics=topics,
        cluster_authorized_operations=authorizer.cluster_operations(
            header, requested=8 <= version <= 10 and request.include_cluster_authorized_operations),
    )
