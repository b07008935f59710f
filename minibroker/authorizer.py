r"""Who may do what: minibroker's authorizer, with the rules of Kafka's ``StandardAuthorizer``.

The authorizer is off unless ``authorizer.class.name`` names Kafka's
``org.apache.kafka.metadata.authorizer.StandardAuthorizer`` (or its ZooKeeper-era twin
``kafka.security.authorizer.AclAuthorizer``, taken as a synonym): then every request is
checked against the ACLs (:class:`AclBinding`) that CreateAcls adds and DeleteAcls
removes (:mod:`minibroker.handlers.acls`). Off, everything is allowed, as a Kafka broker
without an authorizer allows it, and the ACL requests answer SECURITY_DISABLED.

Facts (Kafka's ``StandardAuthorizerData.authorize``, ``findAclRule``, ``findResult``):

- a principal in ``super.users`` (``;``-separated, ``User:admin;User:broker``) may do
  anything, whatever the ACLs say;
- an ACL applies to a resource when its resource type is the resource's and its pattern
  matches the name: LITERAL the same name, LITERAL ``*`` any name, PREFIXED a name that
  starts with it; to a request when its principal is the request's or ``User:*`` and its
  host is the client's address or ``*``;
- an ACL applies to an operation when it names that operation or ALL; an ALLOW of READ,
  WRITE, DELETE or ALTER also allows DESCRIBE, and one of ALTER_CONFIGS allows
  DESCRIBE_CONFIGS. A DENY denies only the operation it names (or every one, for ALL);
- a matching DENY wins over any ALLOW; then a matching ALLOW allows; then, when no ACL at
  all applies to the resource (whoever it names), ``allow.everyone.if.no.acl.found``
  decides (default false); otherwise the answer is no.

:meth:`Authorizer.allows_any` is Kafka's ``Authorizer.authorizeByResourceType`` (may the
principal do the operation on *some* resource of a type: an idempotent producer's WRITE on
any topic, KIP-679). The authorized-operations fields (KIP-430) of Metadata,
DescribeCluster and DescribeGroups report, per resource, each operation of
:data:`SUPPORTED_OPERATIONS` that the principal is allowed (``KafkaApis.authorizedOperations``):
every one with the authorizer off.

The ACLs themselves are kept by the caller: :class:`Authorizer` calls its ``journal`` with
the new set before a change counts, so that a file that cannot be written leaves the ACLs
as they were (:mod:`minibroker.acl_store` writes them to the first log directory). In a
MiniCluster they are the controller's, as in KRaft: CreateAcls and DeleteAcls go to it,
it commits ``AccessControlEntryRecord`` / ``RemoveAccessControlEntryRecord``, and every
broker :meth:`Authorizer.load`\ s the ACLs of its metadata image.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kproto.acl import AclOperation, AclPermissionType, PatternType, ResourceType
from minibroker.faults import broker_node

__all__ = ["AUTHORIZER_CLASSES", "CLUSTER_NAME", "INTER_BROKER_PRINCIPAL", "INTER_BROKER_RIGHTS", "NOT_REQUESTED", "SUPPORTED_OPERATIONS", "WILDCARD",
           "WILDCARD_PRINCIPAL", "AclBinding", "AclBindingFilter", "AclOperation", "AclPermissionType",
           "Authorizer", "PatternType", "ResourceType", "authorized_operations", "client_ip", "validate_binding",
           "validate_filter"]

#: An authorized-operations field the request did not ask for (Java's ``Integer.MIN_VALUE``).
NOT_REQUESTED = -(2**31)

#: The ``authorizer.class.name`` values that turn the authorizer on: KRaft's, and the
#: ZooKeeper-mode one Kafka 4.0 removed, accepted as a synonym.
AUTHORIZER_CLASSES = frozenset({"org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                                "kafka.security.authorizer.AclAuthorizer"})

#: The name of the one CLUSTER resource (Kafka's ``Resource.CLUSTER_NAME``).
CLUSTER_NAME = "kafka-cluster"
#: A LITERAL resource name, or an ACL's host, that matches any (``ResourcePattern.WILDCARD_RESOURCE``).
WILDCARD = "*"
#: The principal an ACL names to apply to everyone (``Acl.WildcardPrincipalString``).
WILDCARD_PRINCIPAL = "User:*"


_O = AclOperation
#: Kafka's ``AclEntry.supportedOperations``: what an ACL of each resource type may name
#: (besides ALL), and what the authorized-operations fields report on.
SUPPORTED_OPERATIONS: dict[ResourceType, frozenset[AclOperation]] = {
    ResourceType.TOPIC: frozenset({_O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER,
                                   _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS}),
    ResourceType.GROUP: frozenset({_O.READ, _O.DESCRIBE, _O.DELETE}),
    ResourceType.CLUSTER: frozenset({_O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS,
                                     _O.IDEMPOTENT_WRITE, _O.ALTER, _O.DESCRIBE}),
    ResourceType.TRANSACTIONAL_ID: frozenset({_O.DESCRIBE, _O.WRITE}),
    ResourceType.DELEGATION_TOKEN: frozenset({_O.DESCRIBE}),
    ResourceType.USER: frozenset({_O.CREATE_TOKENS, _O.DESCRIBE_TOKENS}),
}

# StandardAuthorizerData.IMPLIES_DESCRIBE and IMPLIES_DESCRIBE_CONFIGS (ALLOW ACLs only).
_IMPLIED_BY = {_O.DESCRIBE: frozenset({_O.DESCRIBE, _O.READ, _O.WRITE, _O.DELETE, _O.ALTER}),
               _O.DESCRIBE_CONFIGS: frozenset({_O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS})}


def authorized_operations(resource_type: ResourceType, requested: bool = True) -> int:
    """The authorized-operations field for a resource of that type, with no authorizer.

    Args:
        resource_type: the resource's type.
        requested: whether the request asked for the field (its ``include_*`` flag).

    Returns:
        :data:`NOT_REQUESTED` when not asked; otherwise the bit set (``1 << code``, Kafka's
        ``Utils.to32BitField``) of every operation the type supports, as Kafka reports
        them with no authorizer. :meth:`Authorizer.operations` answers for a principal.
    """
    if not requested:
        return NOT_REQUESTED
    return sum(1 << op for op in SUPPORTED_OPERATIONS[resource_type])


def client_ip(client_host: str) -> str:
    """The address an ACL's host is compared with: ``RequestContext.client_host``
    (``"/127.0.0.1"``, Java's ``InetAddress.toString()``) without the slash
    (``getHostAddress()``)."""
    return client_host[1:] if client_host.startswith("/") else client_host


@dataclass(frozen=True, slots=True)
class AclBinding:
    """One ACL: a resource pattern and an access control entry (Kafka's ``AclBinding``,
    flattened as KRaft's ``StandardAcl``). Checked by :func:`validate_binding`."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def applies(self, resource_type: ResourceType, name: str) -> bool:
        """Whether the pattern matches a resource (``StandardAuthorizerData.checkSection``)."""
        if self.resource_type != resource_type:
            return False
        if self.pattern_type == PatternType.PREFIXED:
            return name.startswith(self.resource_name)
        return self.resource_name in (name, WILDCARD)

    def decides(self, principals: frozenset[str], host: str, operation: AclOperation) -> AclPermissionType | None:
        """ALLOW or DENY when the entry applies to the request, else None
        (``StandardAuthorizerData.findResult``)."""
        if self.principal not in principals or self.host not in (WILDCARD, host):
            return None
        if self.operation != _O.ALL:
            if self.permission_type == AclPermissionType.ALLOW:
                if self.operation not in _IMPLIED_BY.get(operation, (operation,)):
                    return None
            elif self.operation != operation:  # a DENY implies nothing
                return None
        return self.permission_type


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """A filter of ACLs (Kafka's ``AclBindingFilter``): None, ANY and the ANY pattern match
    every value; the MATCH pattern type matches every ACL that applies to a resource
    named ``resource_name`` (LITERAL the name or ``*``, PREFIXED a prefix of it)."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def matches(self, acl: AclBinding) -> bool:
        """``ResourcePatternFilter.matches`` and ``AccessControlEntryFilter.matches``."""
        if self.resource_type != ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH) and self.pattern_type != acl.pattern_type:
            return False
        if self.resource_name is not None:
            if self.pattern_type in (PatternType.ANY, acl.pattern_type):
                if self.resource_name != acl.resource_name:
                    return False
            elif not acl.applies(acl.resource_type, self.resource_name):  # MATCH
                return False
        return ((self.principal is None or self.principal == acl.principal)
                and (self.host is None or self.host == acl.host)
                and self.operation in (AclOperation.ANY, acl.operation)
                and self.permission_type in (AclPermissionType.ANY, acl.permission_type))


def _enum(kind: type[enum.IntEnum], code: int, what: str) -> Any:
    try:
        value = kind(code)
    except ValueError:
        raise ValueError(f"Invalid {what} {code}") from None
    if value.name == "UNKNOWN":
        raise ValueError(f"Invalid {what} UNKNOWN")
    return value


def _check_principal(principal: str) -> None:
    # SecurityUtils.parseKafkaPrincipal: "principalType:principalName".
    kind, colon, name = principal.partition(":")
    if not colon or not kind:
        raise ValueError(f"Could not parse principal from `{principal}` (no colon is present separating the "
                         "principal type from the principal name)")


def validate_binding(resource_type: int, resource_name: str, pattern_type: int, principal: str, host: str,
                     operation: int, permission_type: int) -> AclBinding:
    """An ACL from CreateAcls' fields, checked as KRaft's ``AclControlManager.validateNewAcl``
    and ``AclApis.handleCreateAcls`` check it.

    Raises:
        ValueError: Kafka's INVALID_REQUEST, with its message: an UNKNOWN or ANY resource
            type, pattern type other than LITERAL or PREFIXED, UNKNOWN or ANY operation or
            permission type, an operation the resource type does not support, an empty
            resource name, a CLUSTER resource not named ``kafka-cluster``, a principal that
            is not ``Type:name``, or no host.
    """
    rtype = _enum(ResourceType, resource_type, "resourceType")
    ptype = _enum(PatternType, pattern_type, "patternType")
    op = _enum(AclOperation, operation, "operation")
    perm = _enum(AclPermissionType, permission_type, "permissionType")
    if rtype == ResourceType.ANY:
        raise ValueError("Invalid resourceType ANY")
    if ptype not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise ValueError(f"Invalid patternType {ptype.name}")
    if op == _O.ANY:
        raise ValueError("Invalid operation ANY")
    if perm == AclPermissionType.ANY:
        raise ValueError("Invalid permissionType ANY")
    if not resource_name:
        raise ValueError("Resource name should not be empty")
    if rtype == ResourceType.CLUSTER and resource_name != CLUSTER_NAME:
        raise ValueError(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if op != _O.ALL and op not in SUPPORTED_OPERATIONS[rtype]:  # AclEntry.supportedOperations
        raise ValueError(f"ACL operation {op.name} is not supported for resource type {rtype.name}")
    _check_principal(principal)
    if not host:
        raise ValueError("Invalid null host")
    return AclBinding(rtype, resource_name, ptype, principal, host, op, perm)


def validate_filter(resource_type: int, resource_name: str | None, pattern_type: int, principal: str | None,
                    host: str | None, operation: int, permission_type: int) -> AclBindingFilter:
    """A filter from DescribeAcls' or DeleteAcls' fields (Kafka's requests refuse one with an
    UNKNOWN element: ``DescribeAclsRequest.validate``, ``DeleteAclsRequest.validate``).

    Raises:
        ValueError: INVALID_REQUEST: a code Kafka does not have, or UNKNOWN.
    """
    return AclBindingFilter(_enum(ResourceType, resource_type, "resourceType"), resource_name,
                            _enum(PatternType, pattern_type, "patternType"), principal, host,
                            _enum(AclOperation, operation, "operation"),
                            _enum(AclPermissionType, permission_type, "permissionType"))


Journal = Callable[[list[AclBinding]], None]

#: The principal a MiniCluster's brokers speak to each other as over a PLAINTEXT
#: inter-broker listener. Kafka makes the inter-broker principal a super user; over
#: PLAINTEXT the brokers do not authenticate, so theirs is the anonymous principal of any
#: unauthenticated client, and a super user of that name would turn the authorizer off for
#: everyone. On a secured inter-broker listener (SSL, SASL_*) the brokers log in as a real
#: principal, which users put in ``super.users`` as in Kafka, and this stopgap is off.
INTER_BROKER_PRINCIPAL = "User:ANONYMOUS"
#: What a cluster broker's authorizer allows :data:`INTER_BROKER_PRINCIPAL` without ACLs:
#: what the brokers' requests to each other need (a follower's Fetch and OffsetForLeaderEpoch,
#: WriteTxnMarkers, AddPartitionsToTxn v4+: CLUSTER_ACTION; a follower's ListOffsets: DESCRIBE
#: on the topic). Only requests that carry a broker's client id get them
#: (:func:`minibroker.faults.broker_node`).
INTER_BROKER_RIGHTS = frozenset({(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER),
                                 (AclOperation.DESCRIBE, ResourceType.TOPIC)})
def _from_a_broker(ctx: Any, inter_broker_principal: str | None) -> bool:
    # A MiniCluster broker's connections to the other brokers send a broker's client id
    # (minibroker.faults.broker_node: its replica fetchers', WriteTxnMarkers' and
    # AddPartitionsToTxn v4+'s). Where the brokers do not authenticate to each other (a
    # PLAINTEXT inter-broker listener), this is how the stopgap tells a broker's request
    # from an anonymous client's. It is a claim, not a
    # proof: an unauthenticated client that sends such a client id gets the brokers' rights
    # too (docs/guides/acls.rst says so).
    return (inter_broker_principal is not None and ctx.principal == inter_broker_principal
            and broker_node(ctx.client_id) is not None)


class Authorizer:
    """The broker's ACLs and the decisions made from them (see the module docstring).

    Args:
        config: the broker's settings: ``authorizer.class.name``, ``super.users``,
            ``allow.everyone.if.no.acl.found`` are read.
        acls: the ACLs kept from before (a restart).
        journal: called with every ACL after a change, before it counts; if it raises,
            the change is not made and the error goes to the caller.

        inter_broker_principal: in a MiniCluster whose inter-broker listener is PLAINTEXT,
            the principal the brokers' requests to each other come as
            (:data:`INTER_BROKER_PRINCIPAL`; None otherwise), allowed what they need (see
            :data:`INTER_BROKER_RIGHTS`) when their client id is a broker's
            (:func:`minibroker.faults.broker_node`).

    Attributes:
        enabled: whether an authorizer is configured; if not, :meth:`allows` is always true.
    """

    def __init__(self, config: Mapping[str, Any], acls: Iterable[AclBinding] = (), journal: Journal | None = None,
                 inter_broker_principal: str | None = None):
        self.inter_broker_principal = inter_broker_principal
        self.enabled = bool(config["authorizer.class.name"])
        # StandardAuthorizer.getConfiguredSuperUsers: split on ";", trimmed, empties dropped.
        self.super_users = frozenset(p.strip() for p in str(config["super.users"]).split(";") if p.strip())
        self.allow_if_no_acl = bool(config["allow.everyone.if.no.acl.found"])
        self._acls: dict[AclBinding, None] = dict.fromkeys(acls)  # insertion-ordered set
        self._journal = journal

    # -- decisions --------------------------------------------------------------------------

    def allows(self, ctx: Any, operation: AclOperation, resource_type: ResourceType, name: str = CLUSTER_NAME) -> bool:
        """Whether the request's principal may do ``operation`` on the resource.

        Args:
            ctx: the request's :class:`~minibroker.handlers.RequestContext` (its
                ``principal`` and ``client_host`` are read, and in a MiniCluster its
                ``client_id``).
            operation: what it wants to do.
            resource_type: TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID...
            name: the resource's name (the cluster's by default).
        """
        if not self.enabled or ctx.principal in self.super_users:
            return True
        if (operation, resource_type) in INTER_BROKER_RIGHTS and _from_a_broker(ctx, self.inter_broker_principal):
            return True
        return self._decide(ctx.principal, client_ip(ctx.client_host), operation, resource_type, name)

    def _decide(self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType,
                name: str) -> bool:
        principals = frozenset({principal, WILDCARD_PRINCIPAL})
        applied = allowed = False
        for acl in self._acls:
            if not acl.applies(resource_type, name):
                continue
            applied = True
            decision = acl.decides(principals, host, operation)
            if decision == AclPermissionType.DENY:
                return False  # DENY wins
            allowed = allowed or decision == AclPermissionType.ALLOW
        return allowed or (not applied and self.allow_if_no_acl)

    def allows_any(self, ctx: Any, operation: AclOperation, resource_type: ResourceType) -> bool:
        """Whether the principal may do ``operation`` on at least one resource of the type
        (Kafka's ``Authorizer.authorizeByResourceType``, its default method): a super user,
        or no ACL on a resource (with ``allow.everyone.if.no.acl.found``); else, among the
        ACLs of the type that apply to the request (:meth:`AclBinding.decides`), a DENY on
        ``*`` denies whatever else there is, an ALLOW on ``*`` allows, and otherwise an
        ALLOW of a literal or prefix allows when no DENY of the same literal or of a prefix
        of it covers it. (Through ``decides`` an ALLOW of READ, WRITE... also counts for
        DESCRIBE, where Kafka's default method takes the operation or ALL only: the same
        answer for the WRITE and IDEMPOTENT_WRITE that it is asked about.)"""
        if self.allows(ctx, operation, resource_type, "hardcode"):  # Kafka's own probe name
            return True
        principals, host = frozenset({ctx.principal, WILDCARD_PRINCIPAL}), client_ip(ctx.client_host)
        found: dict[AclPermissionType, dict[PatternType, set[str]]] = {
            perm: {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
            for perm in (AclPermissionType.ALLOW, AclPermissionType.DENY)}
        for acl in self._acls:
            if acl.resource_type == resource_type and (decision := acl.decides(principals, host, operation)):
                found[decision][acl.pattern_type].add(acl.resource_name)
        allow, deny = found[AclPermissionType.ALLOW], found[AclPermissionType.DENY]
        if WILDCARD in deny[PatternType.LITERAL]:
            return False  # a DENY on "*" denies, whatever the order of the ACLs
        if WILDCARD in allow[PatternType.LITERAL]:
            return True
        for kind, names in allow.items():
            for name in names:
                if kind == PatternType.LITERAL and name in deny[PatternType.LITERAL]:
                    continue
                if not any(name[:i] in deny[PatternType.PREFIXED] for i in range(1, len(name) + 1)):
                    return True
        return False

    def operations(self, ctx: Any, resource_type: ResourceType, name: str = CLUSTER_NAME,
                   requested: bool = True) -> int:
        """The authorized-operations field (KIP-430) of a resource for the request's
        principal: :data:`NOT_REQUESTED` when not asked, else the bit set of the supported
        operations it is allowed (``KafkaApis.authorizedOperations``)."""
        if not requested or not self.enabled:
            return authorized_operations(resource_type, requested)
        return sum(1 << op for op in SUPPORTED_OPERATIONS[resource_type] if self.allows(ctx, op, resource_type, name))

    def cluster_operations(self, ctx: Any, requested: bool = True) -> int:
        """The cluster's authorized-operations field (KIP-430) of DescribeCluster and
        Metadata v8-10: as :meth:`operations`, but 0 to a principal that may not DESCRIBE
        the cluster (``KafkaApis.handleDescribeCluster``, ``handleTopicMetadataRequest``)."""
        if requested and not self.allows(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER):
            return 0
        return self.operations(ctx, ResourceType.CLUSTER, requested=requested)

    # -- the ACLs ---------------------------------------------------------------------------

    def acls(self, acl_filter: AclBindingFilter | None = None) -> list[AclBinding]:
        """The ACLs the filter matches (all without one), oldest first."""
        return [acl for acl in self._acls if acl_filter is None or acl_filter.matches(acl)]

    def create(self, bindings: Iterable[AclBinding]) -> None:
        """Add ACLs (one already there is kept once, as Kafka's ACL set does).

        Raises:
            Exception: what the journal raised; nothing is added then.
        """
        new = dict(self._acls)
        new.update(dict.fromkeys(bindings))
        self._replace(new)

    def delete(self, filters: Iterable[AclBindingFilter]) -> list[list[AclBinding]]:
        """Remove the ACLs each filter matches; returns them, per filter (an ACL that two
        filters match is reported under both, as Kafka does).

        Raises:
            Exception: what the journal raised; nothing is removed then.
        """
        matched = [self.acls(f) for f in filters]
        gone = {acl for acls in matched for acl in acls}
        if gone:
            self._replace({acl: None for acl in self._acls if acl not in gone})
        return matched

    def load(self, acls: Iterable[AclBinding]) -> None:
        """Take ``acls`` as the ACLs, without the journal: a cluster broker's, from the
        metadata image (KRaft's ``AclsImage``), where the controller keeps them."""
        self._acls = dict.fromkeys(acls)

    def _replace(self, acls: dict[AclBinding, None]) -> None:
        if self._journal is not None:
            self._journal(list(acls))
        self._acls = acls
