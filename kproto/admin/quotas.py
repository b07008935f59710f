"""The admin client's client quota calls (KIP-546): describe and alter the quotas that brokers
enforce on users and client ids (KIP-13, KIP-55, KIP-124).

The shapes are Java's ``org.apache.kafka.common.quota`` ones: a :class:`ClientQuotaEntity`
names a user, a client id or both (a ``None`` name is the default entity, Kafka's
``<default>``); a :class:`ClientQuotaAlteration` sets (a value) or removes (``None``) keys
such as ``producer_byte_rate``, ``consumer_byte_rate`` and ``request_percentage`` on an
entity; a :class:`ClientQuotaFilter` of :class:`ClientQuotaFilterComponent` selects the
entities to describe::

    await admin.alter_client_quotas([ClientQuotaAlteration(
        ClientQuotaEntity({ClientQuotaEntity.USER: "alice"}),
        [ClientQuotaAlteration.Op("producer_byte_rate", 1048576)])])
    await admin.describe_client_quotas(ClientQuotaFilter.contains(
        [ClientQuotaFilterComponent.of_entity(ClientQuotaEntity.USER, "alice")]))
    # {ClientQuotaEntity({'user': 'alice'}): {'producer_byte_rate': 1048576.0}}

Routing and errors, as Java's ``KafkaAdminClient``: both requests go to any broker (a
KRaft broker forwards AlterClientQuotas to the controller); an error of the whole
DescribeClientQuotas answer raises its typed error with the broker's message
(``InvalidRequestError`` for a bad filter); AlterClientQuotas answers per entity, and one
failed entity raises its error with ``.results`` holding every entity's outcome (see
:mod:`kproto.admin`). A broker that moved is retried within ``default.api.timeout.ms``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from kproto.admin.base import AdminState, item_error, outcome
from kproto.errors import for_code
from kproto.protocol.messages import AlterClientQuotasRequest, DescribeClientQuotasRequest

__all__ = ["ClientQuotaAlteration", "ClientQuotaEntity", "ClientQuotaFilter", "ClientQuotaFilterComponent", "Quotas"]


class ClientQuotaEntity:
    """What a quota applies to (Java's ``ClientQuotaEntity``): entity type -> name, a name
    of ``None`` being that type's default entity.

    Args:
        entries: e.g. ``{"user": "alice"}``, ``{"user": "alice", "client-id": None}``.

    Equal entities are equal and hash alike whatever the order of their entries.
    """

    USER: ClassVar[str] = "user"
    CLIENT_ID: ClassVar[str] = "client-id"
    IP: ClassVar[str] = "ip"

    __slots__ = ("_entries",)

    def __init__(self, entries: Mapping[str, str | None]) -> None:
        for entity_type, name in entries.items():
            if not isinstance(entity_type, str) or not (name is None or isinstance(name, str)):
                raise TypeError(f"a client quota entity maps entity types to names or None, not {entity_type!r}: {name!r}")
        self._entries = tuple(sorted(entries.items()))

    @property
    def entries(self) -> dict[str, str | None]:
        """Entity type -> name (``None``: the default)."""
        return dict(self._entries)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClientQuotaEntity) and self._entries == other._entries

    def __hash__(self) -> int:
        return hash(self._entries)

    def __repr__(self) -> str:
        return f"ClientQuotaEntity({dict(self._entries)!r})"


@dataclass(frozen=True, slots=True)
class ClientQuotaAlteration:
    """Changes to one entity's quotas (Java's ``ClientQuotaAlteration``).

    Attributes:
        entity: the entity to change.
        ops: the keys to set or remove.
    """

    @dataclass(frozen=True, slots=True)
    class Op:
        """Set ``key`` to ``value``, or remove it with ``None`` (Java's ``ClientQuotaAlteration.Op``)."""

        key: str
        value: float | None

    entity: ClientQuotaEntity
    ops: tuple[ClientQuotaAlteration.Op, ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "ops", tuple(self.ops))


@dataclass(frozen=True, slots=True)
class ClientQuotaFilterComponent:
    """One condition on an entity type (Java's ``ClientQuotaFilterComponent``); make one with
    :meth:`of_entity`, :meth:`of_default_entity` or :meth:`of_entity_type`.

    Attributes:
        entity_type: ``"user"``, ``"client-id"`` or ``"ip"``.
        match_type: 0 that name exactly, 1 the default entity, 2 any entity of the type
            (DescribeClientQuotas' ``match_type``).
        match: the name, for match type 0.
    """

    entity_type: str
    match_type: int
    match: str | None = None

    @classmethod
    def of_entity(cls, entity_type: str, name: str) -> ClientQuotaFilterComponent:
        """Entities naming ``name`` for this type."""
        return cls(entity_type, 0, name)

    @classmethod
    def of_default_entity(cls, entity_type: str) -> ClientQuotaFilterComponent:
        """Entities whose name for this type is the default."""
        return cls(entity_type, 1)

    @classmethod
    def of_entity_type(cls, entity_type: str) -> ClientQuotaFilterComponent:
        """Entities with this type, whatever the name (the default included)."""
        return cls(entity_type, 2)


@dataclass(frozen=True, slots=True)
class ClientQuotaFilter:
    """Which entities to describe (Java's ``ClientQuotaFilter``): those meeting every
    component; with ``strict``, those with no other entity type either. Make one with
    :meth:`contains`, :meth:`contains_only` or :meth:`all`."""

    components: tuple[ClientQuotaFilterComponent, ...] = ()
    strict: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "components", tuple(self.components))

    @classmethod
    def contains(cls, components: Iterable[ClientQuotaFilterComponent]) -> ClientQuotaFilter:
        """Entities meeting every component, whatever other types they have."""
        return cls(tuple(components), False)

    @classmethod
    def contains_only(cls, components: Iterable[ClientQuotaFilterComponent]) -> ClientQuotaFilter:
        """Entities meeting every component and having no other type."""
        return cls(tuple(components), True)

    @classmethod
    def all(cls) -> ClientQuotaFilter:
        """Every entity."""
        return cls((), False)


class Quotas(AdminState):
    """The admin client's client quota calls (see the module docstring)."""

    async def describe_client_quotas(self, filter: ClientQuotaFilter | None = None
                                     ) -> dict[ClientQuotaEntity, dict[str, float]]:
        """The quotas of the entities the filter selects (every entity without one).

        Returns:
            Entity -> quota key -> value.

        Raises:
            KafkaCodeError: the broker refused the filter (``InvalidRequestError`` with its
                text; ``UnsupportedVersionError`` for an unknown entity type).
        """
        quota_filter = filter if filter is not None else ClientQuotaFilter.all()
        request = DescribeClientQuotasRequest(components=[
            DescribeClientQuotasRequest.ComponentData(entity_type=c.entity_type, match_type=c.match_type, match=c.match)
            for c in quota_filter.components], strict=quota_filter.strict)
        response = await self._retrying(lambda: self._cluster.request(None, request))
        if response.error_code:
            raise for_code(response.error_code)(response.error_message or "")
        return {ClientQuotaEntity({e.entity_type: e.entity_name for e in entry.entity}):
                {v.key: v.value for v in entry.values}
                for entry in response.entries or ()}

    async def alter_client_quotas(self, alterations: Iterable[ClientQuotaAlteration], *,
                                  validate_only: bool = False) -> dict[ClientQuotaEntity, None]:
        """Set and remove quota keys of entities; with ``validate_only``, only check.

        Returns:
            Entity -> None, for every entity changed.

        Raises:
            KafkaCodeError: an entity's error (``InvalidRequestError`` for a bad entity, key or
                value, with the broker's text), with ``.results`` holding every entity's outcome.
        """
        alterations = list(alterations)
        request = AlterClientQuotasRequest(entries=[
            AlterClientQuotasRequest.EntryData(
                entity=[AlterClientQuotasRequest.EntityData(entity_type=t, entity_name=n) for t, n in a.entity.entries.items()],
                ops=[AlterClientQuotasRequest.OpData(key=op.key, value=0.0 if op.value is None else float(op.value),
                                                     remove=op.value is None) for op in a.ops])
            for a in alterations], validate_only=validate_only)
        response = await self._retrying(lambda: self._cluster.request(None, request))
        results = {}
        for entry in response.entries:
            entity = ClientQuotaEntity({e.entity_type: e.entity_name for e in entry.entity})
            results[entity] = item_error(entry.error_code, entry.error_message, entity)
        return outcome(results)
