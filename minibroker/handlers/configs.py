"""DescribeConfigs v0-4, AlterConfigs v0-2, IncrementalAlterConfigs v0-1.

Behaviour: topic configs (Kafka's names, see :mod:`minibroker.topic_configs`) are
validated, stored and described with their defaults; broker configs are described
(read-only: minibroker has no dynamic broker configs). AlterConfigs replaces a topic's
whole set, IncrementalAlterConfigs applies SET / DELETE / APPEND / SUBTRACT.
``validate_only`` checks without changing anything.
Not implemented: synonyms beyond the config itself, BROKER_LOGGER resources, configs
that are stored but not yet acted on (see ``topic_configs.ENFORCED``).
"""

from kproto.errors import InvalidConfigError, InvalidRequestError, UnknownTopicOrPartitionError
from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    AlterConfigsResponse,
    DescribeConfigsResponse,
    IncrementalAlterConfigsResponse,
)
from minibroker.config import DEFAULTS as BROKER_DEFAULTS
from minibroker.handlers import handles
from minibroker.topic_configs import TOPIC_CONFIGS, ConfigType, validate

TOPIC, BROKER = 2, 4
SOURCE_TOPIC, SOURCE_STATIC_BROKER, SOURCE_DEFAULT = 1, 4, 5
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_BROKER_TYPES = {bool: ConfigType.BOOLEAN, int: ConfigType.LONG, str: ConfigType.STRING}

Entry = DescribeConfigsResponse.DescribeConfigsResourceResult


def _topic_entries(topic, keys, version):
    out = []
    for name, config in TOPIC_CONFIGS.items():
        if keys is not None and name not in keys:
            continue
        is_set = topic.configs.get(name) is not None
        entry = Entry(name=name, value=topic.configs[name] if is_set else config.default, read_only=False,
                      config_source=SOURCE_TOPIC if is_set else SOURCE_DEFAULT, is_sensitive=False,
                      config_type=config.type, documentation=config.doc)
        if version == 0:
            entry.is_default = not is_set
        out.append(entry)
    return out


def _broker_entries(state, keys, version):
    out = []
    for name, (default, kind, doc) in BROKER_DEFAULTS.items():
        if keys is not None and name not in keys:
            continue
        value = state.config[name]
        entry = Entry(name=name, value=str(value).lower() if kind is bool else str(value), read_only=True,
                      config_source=SOURCE_STATIC_BROKER if value != default else SOURCE_DEFAULT, is_sensitive=False,
                      config_type=_BROKER_TYPES[kind], documentation=doc)
        if version == 0:
            entry.is_default = value == default
        out.append(entry)
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
                result.configs = _topic_entries(topic, keys, header.api_version)
        elif resource.resource_type == BROKER and resource.resource_name in ("", str(state.node_id)):
            result.configs = _broker_entries(state, keys, header.api_version)
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
