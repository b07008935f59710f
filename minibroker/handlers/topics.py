"""CreateTopics v0-7, DeleteTopics v0-6 and CreatePartitions v0-3.

Behaviour: names are checked as Kafka does; -1 partitions or replication factor take
``num.partitions`` / ``default.replication.factor`` (KIP-464); a replication factor
above the number of brokers (one) is INVALID_REPLICATION_FACTOR; ``validate_only``
checks without creating. Topic configs are validated against Kafka's names and types
(:mod:`minibroker.topic_configs`). DeleteTopics takes names, or from v6 topic ids.
CreatePartitions only grows a topic (INVALID_PARTITIONS otherwise).
Internal topics (``__consumer_offsets``) belong to the broker: creating, deleting or
growing one is INVALID_TOPIC_EXCEPTION (Kafka's own kafka-topics tool refuses to delete
them too), since the committed offsets they hold would be lost or misplaced.
A request may add at most :data:`MAX_PARTITIONS_PER_REQUEST` (10000) partitions in all,
Kafka's own bound (``ReplicationControlManager.MAX_PARTITIONS_PER_BATCH`` for CreateTopics,
``QuorumController.MAX_RECORDS_PER_USER_OP`` for CreatePartitions): above it every topic
of the request gets POLICY_VIOLATION and nothing is made. Partitions are made one at a
time, the other connections served in between (see
:meth:`~minibroker.state.BrokerState.grow_topic`); the answer comes once all exist. A
topic whose partitions are still being made cannot be created again (TOPIC_ALREADY_EXISTS)
nor grown (UNKNOWN_TOPIC_OR_PARTITION, retriable) until then. A file system error while
they are made (a full disk, too many open files) is KAFKA_STORAGE_ERROR, and none of the
partitions of that request's topic is left; so is a deletion that cannot be recorded in
the topics file, and the topic stays.
Authorization (Kafka's ``KafkaApis``): CreateTopics needs CREATE on the cluster or on the
topic, DeleteTopics DELETE on the topic (one asked for by id is answered without its name
unless the principal may DESCRIBE it), CreatePartitions ALTER on the topic; a refused topic
is TOPIC_AUTHORIZATION_FAILED, "Authorization failed.", and the others go on.
Not implemented yet: manual replica assignments beyond one broker; CreateTopics v5+ shows
a created topic's configs whether or not the principal may DESCRIBE_CONFIGS it.

In a MiniCluster (``state.cluster``) the same checks of names, internal topics and the
request's partition total come first, then the controller decides and commits (Kafka's
``ReplicationControlManager``, see :mod:`minibroker.cluster.controller`): a replication
factor above the unfenced brokers is INVALID_REPLICATION_FACTOR; manual assignments are
accepted and checked (an unknown broker, a broker twice in a partition, unequal lengths,
partition ids not contiguous from 0, or only fenced brokers: INVALID_REPLICA_ASSIGNMENT).
Delivery of committed metadata is synchronous, so the partitions exist on their brokers
when the answer leaves. DeleteTopics and CreatePartitions go to the controller too.
"""

import copy

from kproto.errors import (
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidTopicError,
    KafkaStorageError,
    PolicyViolationError,
    TopicAlreadyExistsError,
    TopicAuthorizationFailedError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    CreatePartitionsResponse,
    CreateTopicsResponse,
    DeleteTopicsResponse,
)
from minibroker.authorizer import AclOperation, ResourceType
from minibroker.cluster.api import NewTopic
from minibroker.handlers import handles
from minibroker.state import INTERNAL_TOPICS, validate_topic_name
from minibroker.topic_configs import validate_all

BROKERS = 1
_DENIED = "Authorization failed."  # Kafka's message with TOPIC_AUTHORIZATION_FAILED here
MAX_PARTITIONS_PER_REQUEST = 10_000  # Kafka's ReplicationControlManager.MAX_PARTITIONS_PER_BATCH


def _too_many(total):
    return (f"the request adds {total} partitions; at most {MAX_PARTITIONS_PER_REQUEST} "
            "may be added per request (Kafka's bound)")


def _internal(name):
    return f"{name} is internal to the broker; clients may read it, not manage it"


def _check_create(state, t):
    """(error_code, message, partitions) for one CreatableTopic."""
    why = validate_topic_name(t.name)
    if why:
        return InvalidTopicError.code, why, 0
    if t.name in INTERNAL_TOPICS:
        return InvalidTopicError.code, _internal(t.name), 0
    if t.name in state.topics or t.name in state.growing:
        return TopicAlreadyExistsError.code, f"topic {t.name!r} already exists", 0
    if t.assignments:
        return InvalidRequestError.code, "manual replica assignments are not supported by minibroker yet", 0
    partitions = state.config["num.partitions"] if t.num_partitions == -1 else t.num_partitions
    replication = state.config["default.replication.factor"] if t.replication_factor == -1 else t.replication_factor
    if partitions <= 0:
        return InvalidPartitionsError.code, f"number of partitions must be positive, got {partitions}", 0
    if replication <= 0 or replication > BROKERS:
        return InvalidReplicationFactorError.code, f"replication factor {replication} with {BROKERS} broker(s)", 0
    if why := validate_all({c.name: c.value for c in t.configs}, state.config):
        return InvalidConfigError.code, why, 0
    return 0, None, partitions


def _authorized(state, header, request, attr, operation):
    """``request`` without the topics of its list ``attr`` the principal may not do
    ``operation`` on, and those."""
    refused = [item for item in getattr(request, attr)
               if not state.authorizer.allows(header, operation, ResourceType.TOPIC, item.name)]
    if not refused:
        return request, []
    request = copy.copy(request)
    setattr(request, attr, [item for item in getattr(request, attr) if not any(item is r for r in refused)])
    return request, refused


@handles(ApiKey.CREATE_TOPICS, 0, 7)
async def create_topics(state, header, request):
    # KafkaApis.handleCreateTopicsRequest: CREATE on the cluster, else on each topic.
    if not state.authorizer.allows(header, AclOperation.CREATE, ResourceType.CLUSTER):
        request, refused = _authorized(state, header, request, "topics", AclOperation.CREATE)
        response = await _create_topics(state, request)
        response.topics += [CreateTopicsResponse.CreatableTopicResult(
            name=t.name, error_code=TopicAuthorizationFailedError.code, error_message=_DENIED) for t in refused]
        return response
    return await _create_topics(state, request)


async def _create_topics(state, request):
    # Kafka's validateTotalNumberOfPartitions: the sum asked for, before anything else.
    total = sum(state.config["num.partitions"] if t.num_partitions == -1 else max(t.num_partitions, 0)
                for t in request.topics if not t.assignments)
    if total > MAX_PARTITIONS_PER_REQUEST:
        return CreateTopicsResponse(topics=[CreateTopicsResponse.CreatableTopicResult(
            name=t.name, error_code=PolicyViolationError.code, error_message=_too_many(total)) for t in request.topics])
    if state.cluster is not None:
        return await _create_in_cluster(state, request)
    results, created = [], []
    for t in request.topics:
        code, message, partitions = _check_create(state, t)
        result = CreateTopicsResponse.CreatableTopicResult(name=t.name, error_code=code, error_message=message)
        if code == 0:
            result.num_partitions = partitions
            result.replication_factor = BROKERS
            if not request.validate_only:
                # The name is taken now, so that a second topic of that name is refused.
                topic = state.new_topic(t.name, {c.name: c.value for c in t.configs})
                result.topic_id = topic.topic_id
                created.append((topic, partitions, result))
        results.append(result)
    for topic, partitions, result in created:
        try:
            await state.grow_topic(topic, partitions)
        except OSError as exc:  # e.g. a full disk or too many open files: nothing of it is left
            result.error_code, result.error_message = KafkaStorageError.code, f"cannot make its partitions: {exc}"
    return CreateTopicsResponse(topics=results)


async def _create_in_cluster(state, request):
    """CreateTopics through the controller (cluster mode)."""
    Result = CreateTopicsResponse.CreatableTopicResult
    results: list = [None] * len(request.topics)
    forwarded, where = [], []
    for i, t in enumerate(request.topics):
        why = validate_topic_name(t.name)
        if why or t.name in INTERNAL_TOPICS:
            results[i] = Result(name=t.name, error_code=InvalidTopicError.code, error_message=why or _internal(t.name))
            continue
        forwarded.append(NewTopic(
            name=t.name, num_partitions=t.num_partitions, replication_factor=t.replication_factor,
            assignments={a.partition_index: tuple(a.broker_ids) for a in t.assignments} or None,
            configs={c.name: c.value for c in t.configs}))
        where.append(i)
    if forwarded:
        answers = await state.cluster.channel.create_topics(forwarded, validate_only=request.validate_only)
        for i, r in zip(where, answers):
            result = Result(name=r.name, error_code=r.error_code, error_message=r.error_message)
            if r.error_code == 0:
                result.num_partitions, result.replication_factor = r.num_partitions, r.replication_factor
                if r.topic_id is not None:
                    result.topic_id = r.topic_id
            results[i] = result
    return CreateTopicsResponse(topics=results)


async def _delete_in_cluster(state, wanted):
    """DeleteTopics through the controller (cluster mode)."""
    image = state.cluster.image
    results, ids = [], []
    for name, topic_id in wanted:
        topic = image.topic_by_name(name) if name is not None else image.topics.get(topic_id)
        if topic is None:
            code = UnknownTopicOrPartitionError.code if name is not None else UnknownTopicIdError.code
            results.append(DeleteTopicsResponse.DeletableTopicResult(name=name, topic_id=topic_id, error_code=code))
        elif topic.name in INTERNAL_TOPICS:
            results.append(DeleteTopicsResponse.DeletableTopicResult(
                name=topic.name, topic_id=topic.topic_id, error_code=InvalidTopicError.code,
                error_message=_internal(topic.name)))
        else:
            results.append(DeleteTopicsResponse.DeletableTopicResult(name=topic.name, topic_id=topic.topic_id,
                                                                     error_code=0))
            ids.append((len(results) - 1, topic.topic_id))
    if ids:
        answers = await state.cluster.channel.delete_topics([topic_id for _, topic_id in ids])
        for (i, _), r in zip(ids, answers):
            results[i].error_code, results[i].error_message = r.error_code, r.error_message
    return DeleteTopicsResponse(responses=results)


def _topic_name(state, name, topic_id):
    if name is not None:
        return name
    topic = state.cluster.image.topics.get(topic_id) if state.cluster is not None else state.topic_by_id(topic_id)
    return None if topic is None else topic.name


@handles(ApiKey.DELETE_TOPICS, 0, 6)
async def delete_topics(state, header, request):
    wanted = [(name, None) for name in request.topic_names] if header.api_version < 6 else [(t.name, t.topic_id) for t in request.topics]
    # KafkaApis.handleDeleteTopicsRequest: DELETE on the topic; one asked for by id is not
    # named to a principal that may not DESCRIBE it.
    refused = []
    for name, topic_id in wanted:
        known = _topic_name(state, name, topic_id)
        if known is not None and not state.authorizer.allows(header, AclOperation.DELETE, ResourceType.TOPIC, known):
            named = name is not None or state.authorizer.allows(header, AclOperation.DESCRIBE, ResourceType.TOPIC, known)
            refused.append(DeleteTopicsResponse.DeletableTopicResult(
                name=known if named else None, topic_id=topic_id, error_code=TopicAuthorizationFailedError.code,
                error_message=_DENIED))
    if refused:
        wanted = [(n, i) for n, i in wanted if not any(r.topic_id == i and (n is None or r.name == n) for r in refused)]
        response = await _delete_topics(state, wanted)
        response.responses += refused
        return response
    return await _delete_topics(state, wanted)


async def _delete_topics(state, wanted):
    if state.cluster is not None:
        return await _delete_in_cluster(state, wanted)
    results = []
    for name, topic_id in wanted:
        topic = state.topics.get(name) if name is not None else state.topic_by_id(topic_id)
        if topic is None:
            code = UnknownTopicOrPartitionError.code if name is not None else UnknownTopicIdError.code
            results.append(DeleteTopicsResponse.DeletableTopicResult(name=name, topic_id=topic_id, error_code=code))
            continue
        if topic.name in INTERNAL_TOPICS:
            results.append(DeleteTopicsResponse.DeletableTopicResult(
                name=topic.name, topic_id=topic.topic_id, error_code=InvalidTopicError.code, error_message=_internal(topic.name)))
            continue
        try:
            state.delete_topic(topic)
        except OSError as exc:  # the topics file could not be written: the topic stays
            results.append(DeleteTopicsResponse.DeletableTopicResult(
                name=topic.name, topic_id=topic.topic_id, error_code=KafkaStorageError.code,
                error_message=f"cannot record the deletion: {exc}"))
            continue
        results.append(DeleteTopicsResponse.DeletableTopicResult(name=topic.name, topic_id=topic.topic_id, error_code=0))
    return DeleteTopicsResponse(responses=results)


async def _grow_in_cluster(state, request):
    """CreatePartitions through the controller (cluster mode)."""
    Result = CreatePartitionsResponse.CreatePartitionsTopicResult
    image = state.cluster.image
    total = sum(max(t.count - len(topic.partitions), 0) for t in request.topics
                if (topic := image.topic_by_name(t.name)) is not None)
    if total > MAX_PARTITIONS_PER_REQUEST:
        return CreatePartitionsResponse(results=[Result(
            name=t.name, error_code=PolicyViolationError.code, error_message=_too_many(total)) for t in request.topics])
    results, seen = [], set()
    for t in request.topics:
        if t.name in INTERNAL_TOPICS:
            results.append(Result(name=t.name, error_code=InvalidTopicError.code, error_message=_internal(t.name)))
        elif t.name in seen:
            results.append(Result(name=t.name, error_code=InvalidRequestError.code,
                                  error_message=f"topic {t.name!r} is listed twice"))
        else:
            seen.add(t.name)
            assignments = None if t.assignments is None else [tuple(a.broker_ids) for a in t.assignments]
            r = await state.cluster.channel.create_partitions(t.name, t.count, assignments,
                                                              validate_only=request.validate_only)
            results.append(Result(name=t.name, error_code=r.error_code, error_message=r.error_message))
    return CreatePartitionsResponse(results=results)


@handles(ApiKey.CREATE_PARTITIONS, 0, 3)
async def create_partitions(state, header, request):
    # KafkaApis.handleCreatePartitionsRequest: ALTER on the topic.
    request, refused = _authorized(state, header, request, "topics", AclOperation.ALTER)
    response = await _create_partitions(state, request)
    response.results += [CreatePartitionsResponse.CreatePartitionsTopicResult(
        name=t.name, error_code=TopicAuthorizationFailedError.code, error_message=_DENIED) for t in refused]
    return response


async def _create_partitions(state, request):
    if state.cluster is not None:
        return await _grow_in_cluster(state, request)
    results, grown = [], []
    for t in request.topics:
        topic = state.topics.get(t.name)
        code, message = 0, None
        if topic is None:
            code, message = UnknownTopicOrPartitionError.code, f"topic {t.name!r} does not exist"
        elif t.name in INTERNAL_TOPICS:
            code, message = InvalidTopicError.code, _internal(t.name)
        elif any(g is topic for g, _, _ in grown):
            code, message = InvalidRequestError.code, f"topic {t.name!r} is listed twice"
        elif t.name in state.growing or not topic.partitions:
            code, message = UnknownTopicOrPartitionError.code, f"the partitions of {t.name!r} are being made; try again"
        elif t.count <= len(topic.partitions):
            code, message = InvalidPartitionsError.code, f"topic has {len(topic.partitions)} partitions; the count can only grow"
        elif t.assignments:
            code, message = InvalidRequestError.code, "manual replica assignments are not supported by minibroker yet"
        result = CreatePartitionsResponse.CreatePartitionsTopicResult(name=t.name, error_code=code, error_message=message)
        if code == 0:
            grown.append((topic, t.count, result))
        results.append(result)
    # Kafka's bound on the records of one request (QuorumController.MAX_RECORDS_PER_USER_OP).
    total = sum(count - len(topic.partitions) for topic, count, _ in grown)
    if total > MAX_PARTITIONS_PER_REQUEST:
        return CreatePartitionsResponse(results=[CreatePartitionsResponse.CreatePartitionsTopicResult(
            name=t.name, error_code=PolicyViolationError.code, error_message=_too_many(total)) for t in request.topics])
    if request.validate_only:
        return CreatePartitionsResponse(results=results)
    for topic, _, _ in grown:  # taken now: no other request may grow them until this one did
        state.growing.add(topic.name)
    try:
        for topic, count, result in grown:
            try:
                await state.grow_topic(topic, count)
            except OSError as exc:  # the topic keeps the partitions it had
                result.error_code, result.error_message = KafkaStorageError.code, f"cannot make the partitions: {exc}"
    finally:
        for topic, _, _ in grown:
            state.growing.discard(topic.name)
    return CreatePartitionsResponse(results=results)
