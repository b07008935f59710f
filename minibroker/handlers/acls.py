"""DescribeAcls v0-3, CreateAcls v0-3, DeleteAcls v0-3 (KIP-140; pattern types KIP-290).

Behaviour, as Kafka's ``AclApis``: DescribeAcls needs DESCRIBE on the cluster, CreateAcls
and DeleteAcls ALTER on the cluster (else CLUSTER_AUTHORIZATION_FAILED: the one error of
DescribeAcls, every creation's or filter's error of the others). With no authorizer
configured (``authorizer.class.name`` empty) they answer SECURITY_DISABLED, "No Authorizer
is configured on the broker". A creation or filter Kafka would refuse is INVALID_REQUEST
with Kafka's message (:func:`~minibroker.authorizer.validate_binding`,
:func:`~minibroker.authorizer.validate_filter`: UNKNOWN elements, an ANY resource type or
a MATCH pattern in a creation, a CLUSTER resource not named ``kafka-cluster``, a
principal without ``Type:``...), and the others of the request are still made. A creation
of an ACL that exists succeeds and keeps one. DescribeAcls groups the ACLs it finds by
resource pattern. The ACLs file not written (a full disk) answers KAFKA_STORAGE_ERROR and
changes nothing.
Version notes: v0 has no pattern types (LITERAL is implied, the field's default); v3
adds the USER resource type (KIP-373), which minibroker takes at every version.
In a MiniCluster the ACLs are the cluster's, as in KRaft: CreateAcls and DeleteAcls go to
the controller, which commits ``AccessControlEntryRecord`` / ``RemoveAccessControlEntryRecord``
to the metadata log (NOT_CONTROLLER when there is none), and every broker's authorizer takes
the ACLs of its metadata image; the answer leaves once this broker has them.
"""

from kproto.errors import (
    ClusterAuthorizationFailedError,
    InvalidRequestError,
    KafkaStorageError,
    NotControllerError,
    SecurityDisabledError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    CreateAclsResponse,
    DeleteAclsResponse,
    DescribeAclsResponse,
)
from minibroker.authorizer import AclOperation, ResourceType, validate_binding, validate_filter
from minibroker.handlers import handles

_DISABLED = "No Authorizer is configured on the broker"


def _refusal(state, header, operation):
    """(code, message) that refuses the whole request, or None (AclApis' first two checks)."""
    if not state.authorizer.allows(header, operation, ResourceType.CLUSTER):
        return ClusterAuthorizationFailedError.code, f"Cluster authorization failed ({operation.name} on the cluster)"
    if not state.authorizer.enabled:
        return SecurityDisabledError.code, _DISABLED
    return None


async def _create(state, acls):
    """A single broker's ACLs change here; a cluster's at the controller (KRaft's
    ``AclControlManager``), which every broker's image then has (NotControllerError
    when there is none)."""
    if state.cluster is None:
        state.authorizer.create(acls)
    elif acls:
        await state.cluster.channel.create_acls(acls)


async def _delete(state, filters):
    if state.cluster is None:
        return state.authorizer.delete(filters)
    return await state.cluster.channel.delete_acls(filters) if filters else []


def _filter(f):
    return validate_filter(f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter,
                           f.principal_filter, f.host_filter, f.operation, f.permission_type)


@handles(ApiKey.DESCRIBE_ACLS, 0, 3)
async def describe_acls(state, header, request):
    refused = _refusal(state, header, AclOperation.DESCRIBE)
    if refused is None:
        try:
            acls = state.authorizer.acls(_filter(request))
        except ValueError as exc:
            refused = InvalidRequestError.code, str(exc)
    if refused is not None:
        return DescribeAclsResponse(error_code=refused[0], error_message=refused[1], resources=[])
    resources: dict[tuple, list] = {}  # DescribeAclsResponse.aclsResources: grouped by pattern
    for acl in acls:
        resources.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(
            DescribeAclsResponse.AclDescription(principal=acl.principal, host=acl.host, operation=acl.operation,
                                                permission_type=acl.permission_type))
    return DescribeAclsResponse(error_code=0, error_message=None, resources=[
        DescribeAclsResponse.DescribeAclsResource(resource_type=rtype, resource_name=name, pattern_type=ptype,
                                                  acls=entries)
        for (rtype, name, ptype), entries in resources.items()])


@handles(ApiKey.CREATE_ACLS, 0, 3)
async def create_acls(state, header, request):
    refused = _refusal(state, header, AclOperation.ALTER)
    if refused is not None:
        return CreateAclsResponse(results=[CreateAclsResponse.AclCreationResult(
            error_code=refused[0], error_message=refused[1]) for _ in request.creations])
    results, valid = [], []
    for c in request.creations:
        try:
            valid.append(validate_binding(c.resource_type, c.resource_name, c.resource_pattern_type, c.principal,
                                          c.host, c.operation, c.permission_type))
            results.append((0, None))
        except ValueError as exc:
            results.append((InvalidRequestError.code, str(exc)))
    try:
        await _create(state, valid)
    except OSError as exc:
        results = [(code or KafkaStorageError.code, message or f"the ACLs could not be written: {exc}")
                   for code, message in results]
    except NotControllerError as exc:
        results = [(code or exc.code, message or str(exc)) for code, message in results]
    return CreateAclsResponse(results=[CreateAclsResponse.AclCreationResult(error_code=code, error_message=message)
                                       for code, message in results])


@handles(ApiKey.DELETE_ACLS, 0, 3)
async def delete_acls(state, header, request):
    refused = _refusal(state, header, AclOperation.ALTER)
    if refused is not None:
        return DeleteAclsResponse(filter_results=[DeleteAclsResponse.DeleteAclsFilterResult(
            error_code=refused[0], error_message=refused[1], matching_acls=[]) for _ in request.filters])
    filters = []
    for f in request.filters:
        try:
            filters.append(_filter(f))
        except ValueError as exc:
            filters.append(exc)
    try:
        deleted = iter(await _delete(state, [f for f in filters if not isinstance(f, ValueError)]))
    except (OSError, NotControllerError) as exc:
        code = exc.code if isinstance(exc, NotControllerError) else KafkaStorageError.code
        return DeleteAclsResponse(filter_results=[DeleteAclsResponse.DeleteAclsFilterResult(
            error_code=InvalidRequestError.code if isinstance(f, ValueError) else code,
            error_message=str(f) if isinstance(f, ValueError) else f"the ACLs could not be changed: {exc}",
            matching_acls=[]) for f in filters])
    results = []
    for f in filters:
        if isinstance(f, ValueError):
            results.append(DeleteAclsResponse.DeleteAclsFilterResult(
                error_code=InvalidRequestError.code, error_message=str(f), matching_acls=[]))
            continue
        results.append(DeleteAclsResponse.DeleteAclsFilterResult(error_code=0, error_message=None, matching_acls=[
            DeleteAclsResponse.DeleteAclsMatchingAcl(
                error_code=0, error_message=None, resource_type=acl.resource_type, resource_name=acl.resource_name,
                pattern_type=acl.pattern_type, principal=acl.principal, host=acl.host, operation=acl.operation,
                permission_type=acl.permission_type) for acl in next(deleted)]))
    return DeleteAclsResponse(filter_results=results)
