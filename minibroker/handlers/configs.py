"""DescribeConfigs v0-4, AlterConfigs v0-2, IncrementalAlterConfigs v0-1.

Behaviour: topic configs (every one Kafka 4.x defines, see
:mod:`minibroker.topic_configs`) are validated, stored and described; an unknown name or
a bad value is INVALID_CONFIG and changes nothing. Broker configs (every key of
:data:`minibroker.config.DEFAULTS`) are described; the broker synonyms of topic configs
(:data:`minibroker.config.DYNAMIC`: ``log.retention.ms``, ``log.segment.bytes``,
``message.max.bytes``...) may be altered while the broker runs (KIP-226), for this
broker (its id as the resource name) or as the cluster-wide default (the empty name),
and change at once the logs of the topics that do not set their own; the others are
read-only, INVALID_REQUEST "Cannot update these configs dynamically". A bad broker
config value is INVALID_REQUEST too, as Kafka answers it (``ConfigAdminManager``,
KAFKA-13609), not INVALID_CONFIG. Dynamic broker configs are kept on disk with the logs.
AlterConfigs replaces a resource's whole set, IncrementalAlterConfigs applies SET /
DELETE / APPEND / SUBTRACT. ``validate_only`` checks without changing anything. A change
that cannot be recorded on disk (a full disk) is KAFKA_STORAGE_ERROR and changes nothing.

In a MiniCluster, changes of topic configs and of dynamic broker configs (this broker's or
the cluster default) go to the controller, which checks them by the same rules and
commits them as ConfigRecords to the metadata log; every broker applies them (a topic's
to its topic and logs, the cluster default to every broker, a broker's own to it), and
they are kept by the metadata log, not in files beside the logs.

Synonyms, as Kafka's ``ConfigHelper`` builds them (KIP-226): a config's synonyms run
from the setting in force to the fallback, and the first one gives its value and
source. A topic config has its own setting (TOPIC_CONFIG) if any, then its broker
synonym (``retention.ms`` -> ``log.retention.ms``) as set for this broker
(DYNAMIC_BROKER_CONFIG), as the cluster default (DYNAMIC_DEFAULT_BROKER_CONFIG), in the
broker's config at start (STATIC_BROKER_CONFIG) and as its default (DEFAULT_CONFIG). So
a topic without its own ``retention.ms`` reports the broker's ``log.retention.ms``,
which is what its log uses. Describing the cluster default resource lists only the
configs set there, without per-broker synonyms, as Kafka does. Synonyms are listed only
when ``include_synonyms`` (v1+) asks, documentation only when ``include_documentation``
(v3+) does, as in Kafka.
Authorization (Kafka's ``AuthHelper.authorizeConfigs``): DESCRIBE_CONFIGS (to describe)
or ALTER_CONFIGS (to change) on the topic, else TOPIC_AUTHORIZATION_FAILED; on the cluster
for a broker's configs, else CLUSTER_AUTHORIZATION_FAILED; per resource, the others go on.
Version notes: ``is_default`` is v0 only; v1+ has ``config_source`` instead.
Not implemented: BROKER_LOGGER resources, changing or describing another broker's
dynamic configs (a single broker has none; in a cluster, ask that broker), configs that
are stored but not acted on (``ConfigKey.enforced`` false), Kafka's coarser broker
spellings (``log.retention.hours``...).
"""

from kproto.errors import (
    ClusterAuthorizationFailedError,
    InvalidConfigError,
    InvalidRequestError,
    KafkaStorageError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    AlterConfigsResponse,
    DescribeConfigsResponse,
    IncrementalAlterConfigsResponse,
)
from minibroker.authorizer import AclOperation, ResourceType
from minibroker.cluster.api import AlterConfigsResource
from minibroker.config import DEFAULTS as BROKER_DEFAULTS
from minibroker.config import DYNAMIC, SENSITIVE, BrokerConfig
from minibroker.handlers import handles
from minibroker.topic_configs import (
    SET,
    TOPIC_CONFIGS,
    ConfigSource,
    ConfigType,
    apply_ops,
    as_text,
    default_of,
    validate_all,
)

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8  # Kafka's ConfigResource.Type
_DENIED = "Authorization failed."
_BROKER_TYPES = {bool: ConfigType.BOOLEAN, int: ConfigType.LONG, float: ConfigType.DOUBLE, str: ConfigType.STRING}
# A broker synonym has its topic config's type (an INT stays an INT).
_SYNONYM_TYPES = {key.synonym: key.type for key in TOPIC_CONFIGS.values() if key.synonym}

Entry = DescribeConfigsResponse.DescribeConfigsResourceResult
Synonym = DescribeConfigsResponse.DescribeConfigsSynonym


def _broker_synonyms(config: BrokerConfig, name: str, per_broker: bool = True) -> list:
    return [Synonym(name=name, value=as_text(value), source=source) for value, source in config.synonyms(name)
            if per_broker or source != ConfigSource.DYNAMIC_BROKER_CONFIG]


def _entry(name, synonyms, fallback, read_only, config_type, doc, request, version):
    """One described config, its value and source taken from the first synonym (else
    ``fallback``, Kafka's default: a topic config without a broker synonym)."""
    value, source = (synonyms[0].value, synonyms[0].source) if synonyms else (fallback, ConfigSource.DEFAULT_CONFIG)
    entry = Entry(name=name, value=value, read_only=read_only, config_source=source, is_sensitive=False,
                  synonyms=synonyms if version >= 1 and request.include_synonyms else [],
                  config_type=config_type, documentation=doc if version >= 3 and request.include_documentation else None)
    if version == 0:
        entry.is_default = source == ConfigSource.DEFAULT_CONFIG
    return entry


def _topic_entries(state, topic, keys, request, version):
    out = []
    for name, key in TOPIC_CONFIGS.items():
        if keys is not None and name not in keys:
            continue
        synonyms = []
        if topic.configs.get(name) is not None:
            synonyms.append(Synonym(name=name, value=topic.configs[name], source=ConfigSource.TOPIC_CONFIG))
        if key.synonym:
            synonyms += _broker_synonyms(state.config, key.synonym)
        out.append(_entry(name, synonyms, key.default, False, key.type, key.doc, request, version))
    return out


def _broker_entries(state, keys, request, version, per_broker):
    out = []
    for name, (_, kind, doc) in BROKER_DEFAULTS.items():
        if keys is not None and name not in keys:
            continue
        if not per_broker and name not in state.config.dynamic(per_broker=False):
            continue  # the cluster default resource has only what is set there
        synonyms = _broker_synonyms(state.config, name, per_broker)
        entry = _entry(name, synonyms, None, name not in DYNAMIC, _SYNONYM_TYPES.get(name, _BROKER_TYPES[kind]), doc,
                       request, version)
        if name.endswith(SENSITIVE):  # Kafka's PASSWORD type: described, never shown
            entry.value, entry.is_sensitive = None, True
            for synonym in entry.synonyms:
                synonym.value = None
        out.append(entry)
    return out


def _refused(state, header, resource, operation) -> int:
    """TOPIC_AUTHORIZATION_FAILED or CLUSTER_AUTHORIZATION_FAILED unless the principal may
    do ``operation`` on the topic, or (a broker's configs) on the cluster, else 0
    (Kafka's ``AuthHelper.authorizeConfigs`` / ``ConfigAdminManager``)."""
    if resource.resource_type == TOPIC:
        allowed = state.authorizer.allows(header, operation, ResourceType.TOPIC, resource.resource_name)
        return 0 if allowed else TopicAuthorizationFailedError.code
    if resource.resource_type in (BROKER, BROKER_LOGGER):
        allowed = state.authorizer.allows(header, operation, ResourceType.CLUSTER)
        return 0 if allowed else ClusterAuthorizationFailedError.code
    return 0


@handles(ApiKey.DESCRIBE_CONFIGS, 0, 4)
async def describe_configs(state, header, request):
    results = []
    for resource in request.resources:
        keys = set(resource.configuration_keys) if resource.configuration_keys is not None else None
        result = DescribeConfigsResponse.DescribeConfigsResult(
            error_code=0, resource_type=resource.resource_type, resource_name=resource.resource_name, configs=[])
        if code := _refused(state, header, resource, AclOperation.DESCRIBE_CONFIGS):
            result.error_code, result.error_message = code, _DENIED
        elif resource.resource_type == TOPIC:
            topic = state.topics.get(resource.resource_name)
            if topic is None:
                result.error_code = UnknownTopicOrPartitionError.code
                result.error_message = f"topic {resource.resource_name!r} does not exist"
            else:
                result.configs = _topic_entries(state, topic, keys, request, header.api_version)
        elif resource.resource_type == BROKER and resource.resource_name in ("", str(state.node_id)):
            result.configs = _broker_entries(state, keys, request, header.api_version, resource.resource_name != "")
        else:
            result.error_code = InvalidRequestError.code
            result.error_message = f"unknown resource type {resource.resource_type} / name {resource.resource_name!r}"
        results.append(result)
    return DescribeConfigsResponse(results=results)


def _not_here(state, resource):
    """Why a BROKER resource is not this broker's to change (its id, or "" for the default)."""
    if resource.resource_name not in ("", str(state.node_id)):
        return f"no broker {resource.resource_name!r} here: minibroker is broker {state.node_id}"
    return None


def _alter_broker(state, resource, new_configs, validate_only):
    """(error_code, message) for a BROKER resource: this broker's dynamic configs, or the
    cluster default's (empty name). Errors are INVALID_REQUEST, as in Kafka (KAFKA-13609)."""
    if why := _not_here(state, resource):
        return InvalidRequestError.code, why
    per_broker = resource.resource_name != ""
    configs, error = new_configs(state.config.dynamic(per_broker),
                                 default_of)
    if error is None:
        try:
            checked = BrokerConfig.check_dynamic(configs)
        except ValueError as exc:
            error = str(exc)
    if error is not None:
        return InvalidRequestError.code, error
    previous = state.config.dynamic(per_broker)
    state.config.set_dynamic(per_broker, checked)
    # The rules across values hold for the broker's too (LogConfig.validateBrokerLogConfigValues).
    error = validate_all({}, state.config)
    if error is not None or validate_only:
        state.config.set_dynamic(per_broker, previous)
        return (InvalidRequestError.code, error) if error else (0, None)
    try:
        state.storage.save_broker_configs()
    except BaseException as exc:
        state.config.set_dynamic(per_broker, previous)  # not kept, so not applied
        if isinstance(exc, OSError):  # a full disk: retriable
            return KafkaStorageError.code, f"cannot record the configs: {exc}"
        raise
    for topic in state.topics.values():  # topics without their own setting follow the broker's
        for log in topic.logs():
            log.config = state.storage.log_config(topic.configs)
    return 0, None


def _alter(state, resource, new_configs, validate_only):
    """(error_code, message) for one resource; applies ``new_configs`` unless validating.

    ``new_configs(current, default)`` gives the resource's new set of configs (or an
    error) from its current one and a look-up of a config's default, which APPEND and
    SUBTRACT start from when the resource does not set it (Kafka's
    ``ConfigurationControlManager.getParts``).
    """
    if resource.resource_type == BROKER:
        return _alter_broker(state, resource, new_configs, validate_only)
    if resource.resource_type != TOPIC:
        return InvalidRequestError.code, f"unknown resource type {resource.resource_type}"
    topic = state.topics.get(resource.resource_name)
    if topic is None:
        return UnknownTopicOrPartitionError.code, f"topic {resource.resource_name!r} does not exist"
    configs, error = new_configs(topic.configs, default_of)
    if error is None:
        error = validate_all(configs, state.config)
    if error is not None:
        return InvalidConfigError.code, error
    if not validate_only:
        try:
            state.set_topic_configs(topic, configs)
        except OSError as exc:  # a full disk: nothing changed, retriable
            return KafkaStorageError.code, f"cannot record the configs: {exc}"
    return 0, None


async def _alter_any(state, resource, ops, replace, validate_only):
    """(error_code, message) for one resource of either request: ``ops`` are
    ``(name, operation, value)``, applied to the resource's configs, or to none when
    ``replace`` (AlterConfigs gives the whole new set).

    A cluster's topic configs and dynamic broker configs are the controller's (KIP-590
    forwards the request to it): it validates them with the same rules and commits the
    change as ConfigRecords, which every broker applies (:mod:`minibroker.cluster.controller`).
    A broker id other than this broker's is refused here first, as for a single broker."""
    if state.cluster is not None and resource.resource_type in (TOPIC, BROKER):
        if resource.resource_type == BROKER and (why := _not_here(state, resource)):
            return InvalidRequestError.code, why
        change = AlterConfigsResource(resource_type=resource.resource_type, resource_name=resource.resource_name,
                                      ops=tuple(ops), replace=replace)
        [result] = await state.cluster.channel.alter_configs([change], validate_only=validate_only)
        return result.error_code, result.error_message
    return _alter(state, resource, lambda current, default: apply_ops({} if replace else current, ops, default),
                  validate_only)


@handles(ApiKey.ALTER_CONFIGS, 0, 2)
async def alter_configs(state, header, request):
    responses = []
    for resource in request.resources:
        code, message = (_refused(state, header, resource, AclOperation.ALTER_CONFIGS), _DENIED)
        if not code:
            code, message = await _alter_any(state, resource, [(c.name, SET, c.value) for c in resource.configs],
                                             True, request.validate_only)
        responses.append(AlterConfigsResponse.AlterConfigsResourceResponse(
            error_code=code, error_message=message, resource_type=resource.resource_type, resource_name=resource.resource_name))
    return AlterConfigsResponse(responses=responses)


@handles(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1)
async def incremental_alter_configs(state, header, request):
    responses = []
    for resource in request.resources:
        code, message = (_refused(state, header, resource, AclOperation.ALTER_CONFIGS), _DENIED)
        if not code:
            code, message = await _alter_any(state, resource, [(op.name, op.config_operation, op.value)
                                                               for op in resource.configs], False, request.validate_only)
        responses.append(IncrementalAlterConfigsResponse.AlterConfigsResourceResponse(
            error_code=code, error_message=message, resource_type=resource.resource_type, resource_name=resource.resource_name))
    return IncrementalAlterConfigsResponse(responses=responses)
