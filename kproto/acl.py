"""Kafka's ACL vocabulary: resource types, pattern types, operations and permission types,
by their wire codes (Java's ``org.apache.kafka.common.acl`` and
``org.apache.kafka.common.resource`` enums).

One owner for the admin client's ACL calls (:mod:`kproto.admin.acls`, which re-exports
them as ``kproto.admin.ResourceType``...) and minibroker's authorizer
(:mod:`minibroker.authorizer`): a module of the lowest layer, so that both may import it.
Every enum has UNKNOWN (a code Kafka does not know) and ANY (filters only).
"""

from __future__ import annotations

import enum

__all__ = ["AclOperation", "AclPermissionType", "PatternType", "ResourceType"]


class ResourceType(enum.IntEnum):
    """Kafka's ``ResourceType``, by wire code (ANY in filters only)."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    """Kafka's ``PatternType`` (KIP-290), by wire code: an ACL's name is LITERAL (``*`` for
    any name) or PREFIXED; filters also take ANY (either, the name compared as is) and
    MATCH (every ACL that would apply to a resource of that name)."""

    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    """Kafka's ``AclOperation``, by wire code (ANY in filters only)."""

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


class AclPermissionType(enum.IntEnum):
    """Kafka's ``AclPermissionType``, by wire code (ANY in filters only)."""

    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3
