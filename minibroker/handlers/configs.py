"""DescribeConfigs v0-4, AlterConfigs v0-2, IncrementalAlterConfigs v0-1.

Behaviour: topic configs (Kafka's names, see :mod:`minibroker.topic_configs`) are
validated, stored and described; broker configs (every key of
:data:`minibroker.config.DEFAULTS`, ``listeners`` and the ``log.*`` keys among them) are
described read-only: minibroker has no dynamic broker configs. AlterConfigs replaces a
topic's whole set, IncrementalAlterConfigs applies SET / DELETE / APPEND / SUBTRACT.
``validate_only`` checks without changing anything.

Synonyms, as Kafka's ``ConfigHelper`` builds them (KIP-226): a config's synonyms run
from the setting in force to the fallback, and the first one gives its value and
source. A topic config has its own setting (TOPIC_CONFIG) if any, then its broker
synonym (``retention.ms`` -> ``log.retention.ms``), as set in the broker's config
(STATIC_BROKER_CONFIG) and as its default (DEFAULT_CONFIG). So a topic without its own
``retention.ms`` reports the broker's ``log.retention.ms``, which is what its log
uses. A broker config has its static setting, then its default. Synonyms are listed
only when ``include_synonyms`` (v1+) asks, documentation only when
``include_documentation`` (v3+) does, as in Kafka.
Version notes: ``is_default`` is v0 only; v1+ has ``config_source`` instead.
Not implemented: BROKER_LOGGER resources, configs that are stored but not yet acted on
(see ``topic_configs.ENFORCED``), broker synonyms that minibroker has no broker config
for (Kafka's ``compression.type``, ``min.insync.replicas``,
``log.message.timestamp.type``...): those topic configs fall back to Kafka's defaults.
"""

from kproto.errors import InvalidConfigError, InvalidRequestError, UnknownTopicOrPartitionError
from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    AlterConfigsResponse,
    DescribeConfigsResponse,
    IncrementalAlterConfigsResponse,
)
from minibroker.config import DEFAULTS as BROKER_DEFAULTS
from minibroker.config import BrokerConfig
from minibroker.handlers import handles
from minibroker.topic_configs import BROKER_SYNONYMS, TOPIC_CONFIGS, ConfigType, validate

TOPIC, BROKER = 2, 4
SOURCE_TOPIC, SOURCE_STATIC_BROKER, SOURCE_DEFAULT = 1, 4, 5
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_BROKER_TYPES = {bool: ConfigType.BOOLEAN, int: ConfigType.LONG, str: ConfigType.STRING}

Entry = DescribeConfigsResponse.DescribeConfigsResourceResult
Synonym = DescribeConfigsResponse.DescribeConfigsSynonym


def _text(value, kind):
    return str(value).lower() if kind is bool else str(value)


def _broker_synonyms(config: BrokerConfig, name: str) -> list:
    default, kind, _ = BROKER_DEFAULTS[name]
    synonyms = [Synonym(name=name, value=_text(default, kind), source=SOURCE_DEFAULT)]
    if config.is_set(name):
        synonyms.insert(0, Synonym(name=name, value=_text(config[name], kind), source=SOURCE_STATIC_BROKER))
    return synonyms


def _entry(name, synonyms, fallback, read_only, config_type, doc, request, version):
    """One described config, its value and source taken from the first synonym."""
    value, source = (synonyms[0].value, synonyms[0].source) if synonyms else (fallback, SOURCE_DEFAULT)
    entry = Entry(name=name, value=value, read_only=read_only, config_source=source, is_sensitive=False,
                  synonyms=synonyms if version >= 1 and request.include_synonyms else [],
                  config_type=config_type, documentation=doc if version >= 3 and request.include_documentation else None)
    if version == 0:
        entry.is_default = source == SOURCE_DEFAULT
    return entry


def _topic_entries(state, topic, keys, request, version):
    out = []
    for name, config in TOPIC_CONFIGS.items():
        if keys is not None and name not in keys:
            continue
        synonyms = []
        if topic.configs.get(name) is not None:
            synonyms.append(Synonym(name=name, value=topic.configs[name], source=SOURCE_TOPIC))
        if name in BROKER_SYNONYMS:
            synonyms += _broker_synonyms(state.config, BROKER_SYNONYMS[name])
        out.append(_entry(name, synonyms, config.default, False, config.type, config.doc, request, version))
    return out


def _broker_entries(state, keys, request, version):
    out = []
    for name, (_, kind, doc) in BROKER_DEFAULTS.items():
        if keys is not None and name not in keys:
            continue
        synonyms = _broker_synonyms(state.config, name)
        out.append(_entry(name, synonyms, None, True, _BROKER_TYPES[kind], doc, request, version))
    return out


@handles(ApiKey.DESCRIBE_CONFIGS, 0, 4)
async def describe_configs(state, header, request):
    results = []
    for resource in request.resources:
        keys = set(resource.configuration_keys) if resource.configuration_keys is not None else None
        result = DescribeConfigsResponse.DescribeConfigsResult(
            error_code=0, resource_type=resource.resource_type, resource_name=resource.resource_name, configs=[])
        if resource.resource_type == TOPIC:
            topic = state.topics.get(resource.resource_name)
            if topic is None:
                result.error_code = UnknownTopicOrPartitionError.code
                result.error_message = f"topic {resource.resource_name!r} does not exist"
            else:
                result.configs = _topic_entries(state, topic, keys, request, header.api_version)
        elif resource.resource_type == BROKER and resource.resource_name in ("", str(state.node_id)):
            result.configs = _broker_entries(state, keys, request, header.api_version)
        else:
            result.error_code = InvalidRequestError.code
            result.error_message = f"unknown resource type {resource.resource_type} / name {resource.resource_name!r}"
        results.append(result)
    return DescribeConfigsResponse(results=results)


def _alter(state, resource, new_configs, validate_only):
    """(error_code, message) for one resource; applies ``new_configs(topic)`` unless validating."""
    if resource.resource_type == BROKER:
        return InvalidRequestError.code, "minibroker's broker configs are static: set them when starting it"
    if resource.resource_type != TOPIC:
        return InvalidRequestError.code, f"unknown resource type {resource.resource_type}"
    topic = state.topics.get(resource.resource_name)
    if topic is None:
        return UnknownTopicOrPartitionError.code, f"topic {resource.resource_name!r} does not exist"
    configs, error = new_configs(topic)
    if error is None:
        error = next((why for name, value in configs.items() if (why := validate(name, value))), None)
    if error is not None:
        return InvalidConfigError.code, error
    if not validate_only:
        state.set_topic_configs(topic, configs)
    return 0, None


@handles(ApiKey.ALTER_CONFIGS, 0, 2)
async def alter_configs(state, header, request):
    responses = []
    for resource in request.resources:
        code, message = _alter(state, resource, lambda topic, r=resource: ({c.name: c.value for c in r.configs}, None),
                               request.validate_only)
        responses.append(AlterConfigsResponse.AlterConfigsResourceResponse(
            error_code=code, error_message=message, resource_type=resource.resource_type, resource_name=resource.resource_name))
    return AlterConfigsResponse(responses=responses)


def _incremental(resource):
    def apply(topic):
        configs = dict(topic.configs)
        for op in resource.configs:
            config = TOPIC_CONFIGS.get(op.name)
            if op.config_operation == SET:
                configs[op.name] = op.value
            elif op.config_operation == DELETE:
                configs.pop(op.name, None)
            elif op.config_operation in (APPEND, SUBTRACT):
                if config is None or config.type != ConfigType.LIST:
                    return configs, f"{op.name} is not a list config: APPEND and SUBTRACT do not apply"
                current = [v for v in (configs.get(op.name) or config.default).split(",") if v]
                values = [v.strip() for v in (op.value or "").split(",") if v.strip()]
                if op.config_operation == APPEND:
                    current += [v for v in values if v not in current]
                else:
                    current = [v for v in current if v not in values]
                configs[op.name] = ",".join(current)
            else:
                return configs, f"unknown config operation {op.config_operation}"
        return configs, None
    return apply


@handles(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1)
async def incremental_alter_configs(state, header, request):
    responses = []
    for resource in request.resources:
        code, message = _alter(state, resource, _incremental(resource), request.validate_only)
        responses.append(IncrementalAlterConfigsResponse.AlterConfigsResourceResponse(
            error_code=code, error_message=message, resource_type=resource.resource_type, resource_name=resource.resource_name))
    return IncrementalAlterConfigsResponse(responses=responses)
