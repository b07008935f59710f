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
Authorized operations (v8+, KIP-430): when asked, every operation of a topic (and, at
v8-10, of the cluster), as a Kafka broker without an authorizer answers; see
:mod:`minibroker.authorizer`. Unasked, INT32_MIN. Entries for an unknown topic id get none.
"""

from kproto.errors import (
    InvalidTopicError,
    LeaderNotAvailableError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import MetadataResponse
from minibroker.authorizer import ResourceType, authorized_operations
from minibroker.handlers import handles
from minibroker.state import INTERNAL_TOPICS, OFFSETS_TOPIC, validate_topic_name

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


@handles(ApiKey.METADATA, 0, 12)
async def handle(state, header, request):
    version = header.api_version
    wanted = request.topics
    if wanted is None or (version == 0 and not wanted):
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
                    created = state.offsets_topic() if name == OFFSETS_TOPIC else state.create_topic(name, state.config["num.partitions"])
                except OSError:  # a full disk: nothing was made; as Kafka while a leader is missing
                    topics.append(Topic_(error_code=LeaderNotAvailableError.code, name=name))
                    continue
                topics.append(_describe(state, created))
            else:
                topics.append(Topic_(error_code=UnknownTopicOrPartitionError.code, name=name))
    if version >= 8:
        # KafkaApis sets it on every named topic of the answer, errors included.
        topic_ops = authorized_operations(ResourceType.TOPIC, request.include_topic_authorized_operations)
        for t in topics:
            if t.name is not None:
                t.topic_authorized_operations = topic_ops
    return MetadataResponse(
        brokers=[MetadataResponse.MetadataResponseBroker(node_id=state.node_id, host=state.host, port=state.port)],
        cluster_id=state.config["cluster.id"],
        controller_id=state.node_id,
        topics=topics,
        cluster_authorized_operations=authorized_operations(
            ResourceType.CLUSTER, 8 <= version <= 10 and request.include_cluster_authorized_operations),
    )
