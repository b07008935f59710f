"""What a client may do to a resource, as the authorized-operations fields report it (KIP-430).

Metadata (topics, and the cluster at v8-10), DescribeCluster and DescribeGroups (v3+)
answer, when the request asks, a 32-bit field with bit ``1 << code`` set for each
:class:`AclOperation` allowed on the resource; unasked, they answer
:data:`NOT_REQUESTED` (``INT32_MIN``). minibroker has no authorizer yet, and a Kafka
broker without one allows every operation the resource type supports
(``KafkaApis.authorizedOperations`` with ``authorizer = None``), so that is the answer.

Facts (Kafka's ``AclOperation`` codes and ``AclEntry.supportedOperations``):
  topic: READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS;
  group: READ, DELETE, DESCRIBE;
  cluster: CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS,
  IDEMPOTENT_WRITE.
"""

from __future__ import annotations

import enum

__all__ = ["NOT_REQUESTED", "AclOperation", "ResourceType", "SUPPORTED_OPERATIONS", "authorized_operations"]

#: An authorized-operations field the request did not ask for (Java's ``Integer.MIN_VALUE``).
NOT_REQUESTED = -(2**31)


class AclOperation(enum.IntEnum):
    """Kafka's ``org.apache.kafka.common.acl.AclOperation``, by wire code."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class ResourceType(enum.IntEnum):
    """Kafka's ``org.apache.kafka.common.resource.ResourceType``, by wire code."""

    TOPIC = 2
    GROUP = 3
    CLUSTER = 4


_O = AclOperation
#: Kafka's ``AclEntry.supportedOperations`` for the resource types minibroker reports on.
SUPPORTED_OPERATIONS: dict[ResourceType, frozenset[AclOperation]] = {
    ResourceType.TOPIC: frozenset({_O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER,
                                   _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS}),
    ResourceType.GROUP: frozenset({_O.READ, _O.DESCRIBE, _O.DELETE}),
    ResourceType.CLUSTER: frozenset({_O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS,
                                     _O.IDEMPOTENT_WRITE, _O.ALTER, _O.DESCRIBE}),
}


def authorized_operations(resource_type: ResourceType, requested: bool = True) -> int:
    """The authorized-operations field for a resource of that type.

    Args:
        resource_type: the resource's type.
        requested: whether the request asked for the field (its ``include_*`` flag).

    Returns:
        :data:`NOT_REQUESTED` when not asked; otherwise the bit set (``1 << code``, Kafka's
        ``Utils.to32BitField``) of every operation the type supports, as Kafka reports
        them with no authorizer.
    """
    if not requested:
        return NOT_REQUESTED
    return sum(1 << op for op in SUPPORTED_OPERATIONS[resource_type])
