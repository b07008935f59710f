"""DescribeClientQuotas v0-1, AlterClientQuotas v0-1 (KIP-546).

Behaviour: the broker's client quotas (:class:`minibroker.quotas.ClientQuotas`, where
they are enforced) on user and client-id entities, each a name or the default (a null
name). DescribeClientQuotas answers, as Kafka's ``ClientQuotasImage.describe``, the
entities matching every filter component (match type 0: that name, 1: the default, 2:
any), all of them for an empty non-strict filter; ``strict`` keeps only entities with
exactly the filtered types. A bad filter answers INVALID_REQUEST (UNSUPPORTED_VERSION for
an unknown entity type) with Kafka's text and no entries. AlterClientQuotas checks each
entity and value as Kafka's ``ClientQuotaControlManager`` does, with its texts: an empty
entity, an unknown entity type, an empty name, an unknown key, a value not above 0, a
fraction for a byte rate, a key twice, an entity twice are INVALID_REQUEST for that
entity; a ``remove`` op (what Java's client sends for a null value) drops the key;
``validate_only`` checks and changes nothing. Changes are kept on disk with the logs; one
that cannot be written (a full disk) is KAFKA_STORAGE_ERROR for every entity and changes
nothing.

Authorization (with the authorizer on): DescribeClientQuotas needs DESCRIBE_CONFIGS on the
cluster (``KafkaApis.handleDescribeClientQuotasRequest``), AlterClientQuotas ALTER_CONFIGS
(``ControllerApis.handleAlterClientQuotas``); refused, the answer is
CLUSTER_AUTHORIZATION_FAILED, for the request or for every entity, and nothing changes.

In a MiniCluster, AlterClientQuotas is forwarded to the controller, which checks it by the
same rules and commits ClientQuotaRecords to the metadata log; every broker enforces and
describes its image's quotas, kept by the metadata log rather than in a file.

Not implemented: IP entities (KIP-612 connection rates: INVALID_REQUEST);
``controller_mutation_rate`` (KIP-599) is stored and described but not enforced.
"""

from kproto.errors import ClusterAuthorizationFailedError, KafkaStorageError
from kproto.protocol import ApiKey
from kproto.protocol.messages import AlterClientQuotasResponse, DescribeClientQuotasResponse
from minibroker.authorizer import AclOperation, ResourceType
from minibroker.handlers import handles
from minibroker.quotas import QuotaError, entity_of

__all__: list[str] = []

_D, _A = DescribeClientQuotasResponse, AlterClientQuotasResponse
_REFUSED = "Cluster authorization failed."  # Errors.CLUSTER_AUTHORIZATION_FAILED's message


@handles(ApiKey.DESCRIBE_CLIENT_QUOTAS, 0, 1)
async def describe_client_quotas(state, header, request):
    # KafkaApis.handleDescribeClientQuotasRequest: DESCRIBE_CONFIGS on the cluster
    if not state.authorizer.allows(header, AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER):
        return DescribeClientQuotasResponse(error_code=ClusterAuthorizationFailedError.code, error_message=_REFUSED,
                                            entries=None)
    components = [(c.entity_type, c.match_type, c.match) for c in request.components]
    try:
        found = state.quotas.describe(components, request.strict)
    except QuotaError as exc:
        return DescribeClientQuotasResponse(error_code=exc.code, error_message=exc.message, entries=None)
    return DescribeClientQuotasResponse(error_code=0, error_message=None, entries=[
        _D.EntryData(entity=[_D.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                     values=[_D.ValueData(key=k, value=v) for k, v in sorted(values.items())])
        for entity, values in found.items()])


@handles(ApiKey.ALTER_CLIENT_QUOTAS, 0, 1)
async def alter_client_quotas(state, header, request):
    entries = [([(e.entity_type, e.entity_name) for e in entry.entity],
                [(op.key, None if op.remove else op.value) for op in entry.ops])
               for entry in request.entries]
    # ControllerApis.handleAlterClientQuotas: ALTER_CONFIGS on the cluster, else every entity refused
    if not state.authorizer.allows(header, AclOperation.ALTER_CONFIGS, ResourceType.CLUSTER):
        results = [(entity_of(pairs), ClusterAuthorizationFailedError.code, _REFUSED) for pairs, _ in entries]
    elif state.cluster is not None:  # the controller decides and commits (ClientQuotaRecords)
        results = await state.cluster.channel.alter_client_quotas(entries, validate_only=request.validate_only)
    else:
        try:
            results = state.quotas.alter(entries, validate_only=request.validate_only)
        except OSError as exc:  # a full disk: nothing changed; the valid entities retriable
            results = [(entity, KafkaStorageError.code, f"cannot record the client quotas: {exc}") if code == 0
                       else (entity, code, message)
                       for entity, code, message in state.quotas.alter(entries, validate_only=True)]
    return AlterClientQuotasResponse(entries=[
        _A.EntryData(error_code=code, error_message=message,
                     entity=[_A.EntityData(entity_type=t, entity_name=n) for t, n in entity])
        for entity, code, message in results])
