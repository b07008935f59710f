"""The admin client's ACL calls (KIP-140, pattern types KIP-290): create, describe and
delete the access control lists a broker's authorizer checks requests against.

An ACL (:class:`AclBinding`) joins a :class:`ResourcePattern` (a TOPIC, GROUP, CLUSTER,
TRANSACTIONAL_ID... named literally, ``*`` for any, or by a PREFIXED name) and an
:class:`AccessControlEntry` (who, ``User:alice`` or ``User:*``; from which host, ``*``
for any; which operation; ALLOW or DENY). A filter (:class:`AclBindingFilter`) matches
ACLs: None and the ANY values match everything, and the MATCH pattern type matches every
ACL that applies to a resource of the name given. These are Java's
``org.apache.kafka.common.acl`` and ``org.apache.kafka.common.resource`` classes, with
Kafka's names and wire codes; enum fields take the member or its name (``"TOPIC"``).

Routing and errors, as Java's ``KafkaAdminClient``: each call is one request to any
broker. :meth:`~Acls.create_acls` answers per ACL and :meth:`~Acls.delete_acls` per filter,
raising the first failure with ``.results`` holding every item's outcome (the others'
results, or their exceptions), as kproto's other multi-item calls do;
:meth:`~Acls.describe_acls` raises the request's error. A broker without an authorizer
answers SECURITY_DISABLED (:class:`~kproto.errors.SecurityDisabledError`); a principal
without ALTER (create, delete) or DESCRIBE (describe) on the cluster gets
:class:`~kproto.errors.ClusterAuthorizationFailedError`.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kproto.acl import AclOperation, AclPermissionType, PatternType, ResourceType
from kproto.admin.base import AdminState, item_error, outcome
from kproto.errors import for_code
from kproto.protocol.messages import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest

__all__ = ["AccessControlEntry", "AccessControlEntryFilter", "AclBinding", "AclBindingFilter", "AclOperation",
           "AclPermissionType", "Acls", "PatternType", "ResourcePattern", "ResourcePatternFilter", "ResourceType"]


def _member(kind: type[enum.IntEnum], value: Any, what: str) -> Any:
    if isinstance(value, str):
        try:
            return kind[value.upper()]
        except KeyError:
            raise ValueError(f"unknown {what} {value!r}: one of {', '.join(m.name for m in kind)}") from None
    try:
        return kind(value)
    except ValueError:
        raise ValueError(f"unknown {what} {value!r}") from None


def _refuse(value: Any, what: str, *names: str) -> None:
    if value.name in names:
        raise ValueError(f"an ACL's {what} cannot be {value.name} (a filter's can)")


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    """What an ACL is about (Java's ``ResourcePattern``).

    Attributes:
        resource_type: TOPIC, GROUP, CLUSTER (named ``kafka-cluster``), TRANSACTIONAL_ID,
            DELEGATION_TOKEN or USER.
        name: the resource's name; LITERAL ``*`` is every resource of the type.
        pattern_type: LITERAL (the default) or PREFIXED (every name that starts with ``name``).

    Raises:
        ValueError: an unknown value, or ANY / MATCH / UNKNOWN (filters' values).
    """

    resource_type: ResourceType | str
    name: str
    pattern_type: PatternType | str = PatternType.LITERAL

    def __post_init__(self) -> None:
        object.__setattr__(self, "resource_type", _member(ResourceType, self.resource_type, "resource type"))
        object.__setattr__(self, "pattern_type", _member(PatternType, self.pattern_type, "pattern type"))
        _refuse(self.resource_type, "resource type", "ANY", "UNKNOWN")
        _refuse(self.pattern_type, "pattern type", "ANY", "MATCH", "UNKNOWN")


@dataclass(frozen=True, slots=True)
class AccessControlEntry:
    """Who may (or may not) do what, from where (Java's ``AccessControlEntry``).

    Attributes:
        principal: ``Type:name`` (``User:alice``), ``User:*`` for everyone.
        host: the client's IP address, ``*`` (the default) for any.
        operation: READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION,
            DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ... or ALL.
        permission_type: ALLOW (the default) or DENY; a DENY wins over any ALLOW.

    Raises:
        ValueError: an unknown value, ANY / UNKNOWN, or a principal without ``Type:``.
    """

    principal: str
    host: str = "*"
    operation: AclOperation | str = AclOperation.ALL
    permission_type: AclPermissionType | str = AclPermissionType.ALLOW

    def __post_init__(self) -> None:
        object.__setattr__(self, "operation", _member(AclOperation, self.operation, "operation"))
        object.__setattr__(self, "permission_type", _member(AclPermissionType, self.permission_type, "permission type"))
        _refuse(self.operation, "operation", "ANY", "UNKNOWN")
        _refuse(self.permission_type, "permission type", "ANY", "UNKNOWN")
        if ":" not in self.principal:
            raise ValueError(f"principal {self.principal!r} must be Type:name, e.g. User:alice")


@dataclass(frozen=True, slots=True)
class AclBinding:
    """One ACL (Java's ``AclBinding``): a resource pattern and an entry."""

    pattern: ResourcePattern
    entry: AccessControlEntry


@dataclass(frozen=True, slots=True)
class ResourcePatternFilter:
    """Matches resource patterns (Java's ``ResourcePatternFilter``): ANY and None match
    every value; MATCH every pattern that applies to a resource named ``name``."""

    resource_type: ResourceType | str = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType | str = PatternType.ANY

    def __post_init__(self) -> None:
        object.__setattr__(self, "resource_type", _member(ResourceType, self.resource_type, "resource type"))
        object.__setattr__(self, "pattern_type", _member(PatternType, self.pattern_type, "pattern type"))


@dataclass(frozen=True, slots=True)
class AccessControlEntryFilter:
    """Matches entries (Java's ``AccessControlEntryFilter``): ANY and None match every value."""

    principal: str | None = None
    host: str | None = None
    operation: AclOperation | str = AclOperation.ANY
    permission_type: AclPermissionType | str = AclPermissionType.ANY

    def __post_init__(self) -> None:
        object.__setattr__(self, "operation", _member(AclOperation, self.operation, "operation"))
        object.__setattr__(self, "permission_type", _member(AclPermissionType, self.permission_type, "permission type"))


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """Matches ACLs (Java's ``AclBindingFilter``); the default matches every ACL."""

    pattern_filter: ResourcePatternFilter = field(default_factory=ResourcePatternFilter)
    entry_filter: AccessControlEntryFilter = field(default_factory=AccessControlEntryFilter)


def _binding(r: Any, name: str, pattern_type: int, acl: Any) -> AclBinding:
    """An AclBinding from a DescribeAcls resource or a DeleteAcls matching ACL."""
    return AclBinding(ResourcePattern(ResourceType(r), name, PatternType(pattern_type)),
                      AccessControlEntry(acl.principal, acl.host, acl.operation, acl.permission_type))


def _filter_fields(f: AclBindingFilter) -> dict[str, Any]:
    p, e = f.pattern_filter, f.entry_filter
    return dict(resource_type_filter=p.resource_type, resource_name_filter=p.name, pattern_type_filter=p.pattern_type,
                principal_filter=e.principal, host_filter=e.host, operation=e.operation,
                permission_type=e.permission_type)


def _min_version(patterns: Iterable[Any]) -> int:
    # v0 knows LITERAL names only (Java's CreateAclsRequest / DescribeAclsRequest refuse the rest).
    return 0 if all(p == PatternType.LITERAL for p in patterns) else 1


class Acls(AdminState):
    """The ACL calls of :class:`~kproto.admin.AIOAdminClient` (see the module)."""

    async def create_acls(self, acls: Iterable[AclBinding]) -> dict[AclBinding, None]:
        """Create ACLs (Java's ``Admin.createAcls``); one that exists already is kept once.

        Returns:
            Each ACL, with None, when all were created.

        Raises:
            KafkaCodeError: the first refused ACL's error (``InvalidRequestError`` with the
                broker's reason, ``SecurityDisabledError``, ``ClusterAuthorizationFailedError``),
                with ``.results`` holding every ACL's outcome.
        """
        bindings = list(dict.fromkeys(acls))
        if not bindings:
            return {}
        # The constructors made every enum field a member (typed "member | str" for callers).
        request = CreateAclsRequest(creations=[CreateAclsRequest.AclCreation(
            resource_type=int(b.pattern.resource_type), resource_name=b.pattern.name,
            resource_pattern_type=int(b.pattern.pattern_type), principal=b.entry.principal, host=b.entry.host,
            operation=int(b.entry.operation), permission_type=int(b.entry.permission_type)) for b in bindings])

        async def attempt() -> Any:
            conn = await self._cluster.any_connection()
            return await conn.request(request, min_version=_min_version(b.pattern.pattern_type for b in bindings))

        response = await self._retrying(attempt)
        return outcome({b: item_error(r.error_code, r.error_message, b) for b, r in zip(bindings, response.results)})

    async def describe_acls(self, acl_filter: AclBindingFilter | None = None) -> list[AclBinding]:
        """The ACLs the filter matches, every one without a filter (Java's ``Admin.describeAcls``).

        Raises:
            KafkaCodeError: the broker's error (``SecurityDisabledError``,
                ``ClusterAuthorizationFailedError``, ``InvalidRequestError``).
        """
        acl_filter = acl_filter or AclBindingFilter()
        request = DescribeAclsRequest(**_filter_fields(acl_filter))

        async def attempt() -> Any:
            conn = await self._cluster.any_connection()
            return await conn.request(request, min_version=_min_version([acl_filter.pattern_filter.pattern_type]))

        response = await self._retrying(attempt)
        if response.error_code:
            raise for_code(response.error_code)(response.error_message or "DescribeAcls")
        return [_binding(r.resource_type, r.resource_name, r.pattern_type, acl)
                for r in response.resources for acl in r.acls]

    async def delete_acls(self, filters: Iterable[AclBindingFilter]) -> dict[AclBindingFilter, list[AclBinding]]:
        """Delete the ACLs each filter matches (Java's ``Admin.deleteAcls``).

        Returns:
            Per filter, the ACLs it deleted (an ACL two filters match is under both).

        Raises:
            KafkaCodeError: the first refused filter's error (or that of an ACL it matched
                and could not delete), with ``.results`` holding every filter's outcome.
        """
        wanted = list(dict.fromkeys(filters))
        if not wanted:
            return {}
        request = DeleteAclsRequest(filters=[DeleteAclsRequest.DeleteAclsFilter(**_filter_fields(f)) for f in wanted])

        async def attempt() -> Any:
            conn = await self._cluster.any_connection()
            return await conn.request(request, min_version=_min_version(f.pattern_filter.pattern_type for f in wanted))

        response = await self._retrying(attempt)
        results: dict[AclBindingFilter, Any] = {}
        for f, r in zip(wanted, response.filter_results):
            failed = [(x.error_code, x.error_message) for x in (r, *r.matching_acls) if x.error_code]
            if failed:
                results[f] = item_error(*failed[0], f)
            else:
                results[f] = [_binding(m.resource_type, m.resource_name, m.pattern_type, m) for m in r.matching_acls]
        return outcome(results)
