"""The admin client: topics, partitions, configs, groups and their offsets, the cluster,
transactions, client quotas, ACLs, SCRAM users.

:class:`AIOAdminClient` is the implementation (native asyncio); :class:`AdminClient` is
the same client for threads, running it on a background loop. Both take Kafka's admin
client settings (:mod:`kproto.config`).

Errors. An operation on several items (topics, groups, partitions) sends one request
per broker that must answer and collects one result per item. When every item
succeeded it returns them; when one failed it raises that item's typed error
(``TopicAlreadyExistsError``, ``GroupNotEmptyError``...) with ``.results`` holding every
item's outcome (a result, or the exception), so nothing about the others is lost.
Retriable failures (a coordinator that moved, a leader election) are retried after
``retry.backoff.ms`` doubling up to ``retry.backoff.max.ms`` with KIP-580's jitter
(:class:`~kproto.io.retry.Backoff`) until ``default.api.timeout.ms``. Requests go at
the highest version both kproto's clients (:mod:`kproto.io.versions`) and the broker
have; ListOffsets is :mod:`kproto.io.list_offsets`'.

The client is one class made of parts (:mod:`kproto.admin.base` says what they share):
:mod:`~kproto.admin.client` holds the calls on topics, configs, groups, offsets and the
cluster and the thread face; :mod:`~kproto.admin.transactions` the transaction calls
(KIP-664), :mod:`~kproto.admin.quotas` the client quota calls (KIP-546),
:mod:`~kproto.admin.acls` the ACL calls (KIP-140), :mod:`~kproto.admin.scram` the SCRAM user
calls (KIP-554). Every public name is here.
"""

from kproto.admin.acls import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kproto.admin.client import (
    AdminClient,
    AIOAdminClient,
    ClusterDescription,
    ConfigEntry,
    ConfigResource,
    GroupDescription,
    GroupListing,
    ListedOffset,
    MemberDescription,
    NewTopic,
    OffsetSpec,
    TopicDescription,
)
from kproto.admin.quotas import (
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ClientQuotaFilter,
    ClientQuotaFilterComponent,
)
from kproto.admin.scram import (
    ScramCredentialInfo,
    UserScramCredentialDeletion,
    UserScramCredentialsDescription,
    UserScramCredentialUpsertion,
)
from kproto.admin.transactions import (
    TRANSACTION_STATES,
    ProducerState,
    TransactionDescription,
    TransactionListing,
)

__all__ = [
    "AIOAdminClient",
    "AccessControlEntry",
    "AccessControlEntryFilter",
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "AdminClient",
    "ClientQuotaAlteration",
    "ClientQuotaEntity",
    "ClientQuotaFilter",
    "ClientQuotaFilterComponent",
    "ClusterDescription",
    "ConfigEntry",
    "ConfigResource",
    "GroupDescription",
    "GroupListing",
    "ListedOffset",
    "MemberDescription",
    "NewTopic",
    "OffsetSpec",
    "PatternType",
    "ProducerState",
    "ResourcePattern",
    "ResourcePatternFilter",
    "ResourceType",
    "ScramCredentialInfo",
    "TRANSACTION_STATES",
    "TopicDescription",
    "TransactionDescription",
    "TransactionListing",
    "UserScramCredentialDeletion",
    "UserScramCredentialUpsertion",
    "UserScramCredentialsDescription",
]
