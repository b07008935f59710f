"""DescribeUserScramCredentials v0 and AlterUserScramCredentials v0 (KIP-554).

Behaviour: the broker's SCRAM users (:class:`~minibroker.scram_credentials.ScramCredentials`),
checked as Kafka's ``ScramControlManager`` does: a user named twice in one request is
DUPLICATE_RESOURCE for all its changes, an empty name UNACCEPTABLE_CREDENTIAL, a mechanism
other than SCRAM-SHA-256 (1) or SCRAM-SHA-512 (2) UNSUPPORTED_SASL_MECHANISM, iterations
below 4096 or above 16384 UNACCEPTABLE_CREDENTIAL, deleting a credential that does not
exist RESOURCE_NOT_FOUND. The accepted changes are applied together and written once. The
broker derives StoredKey and ServerKey from the salted password the client sends and keeps
only those. Describe lists each user's mechanisms and iterations (never keys); users null
or empty describe every user; a named user without credentials is RESOURCE_NOT_FOUND, a
user named twice DUPLICATE_RESOURCE (Kafka's texts).
Authorization (with the authorizer on): AlterUserScramCredentials needs ALTER on the
cluster (``ControllerApis.handleAlterUserScramCredentials``: every user answered
CLUSTER_AUTHORIZATION_FAILED, nothing changed), DescribeUserScramCredentials DESCRIBE
(``KafkaApis``: the whole answer CLUSTER_AUTHORIZATION_FAILED).

Not implemented: a MiniCluster's cluster-wide users (each broker keeps its own).
"""

from kproto.errors import (
    ClusterAuthorizationFailedError,
    DuplicateResourceError,
    ResourceNotFoundError,
    UnacceptableCredentialError,
    UnsupportedSaslMechanismError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsResponse,
)
from kproto.security.scram import MIN_ITERATIONS, credential_of_salted_password
from minibroker.authorizer import AclOperation, ResourceType
from minibroker.handlers import handles

#: Kafka's ScramMechanism types on the wire (org.apache.kafka.clients.admin.ScramMechanism).
MECHANISM_TYPES = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
# ScramControlManager.MAX_ITERATIONS
MAX_ITERATIONS = 16384
_TYPE_OF = {name: code for code, name in MECHANISM_TYPES.items()}
_REFUSED = "Cluster authorization failed."  # Errors.CLUSTER_AUTHORIZATION_FAILED's message


def _check(name, mechanism):
    """(error_code, message) of ScramControlManager.validateScramUsernameAndMechanism."""
    if not name:
        return UnacceptableCredentialError.code, "Username must not be empty"
    if mechanism not in MECHANISM_TYPES:
        return UnsupportedSaslMechanismError.code, "Unknown SCRAM mechanism"
    return 0, None


@handles(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0)
async def alter_user_scram_credentials(state, header, request):
    Result = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult
    if not state.authorizer.allows(header, AclOperation.ALTER, ResourceType.CLUSTER):
        users = dict.fromkeys(c.name for c in [*request.deletions, *request.upsertions])
        return AlterUserScramCredentialsResponse(results=[
            Result(user=name, error_code=ClusterAuthorizationFailedError.code, error_message=_REFUSED) for name in users])
    store = state.scram_credentials
    deletions, upsertions, errors = {}, {}, {}
    duplicate = DuplicateResourceError.code, "A user credential cannot be altered twice in the same request"
    for d in request.deletions:
        if d.name in errors:
            continue
        if deletions.pop(d.name, None) is not None:
            errors[d.name] = duplicate
            continue
        code, message = _check(d.name, d.mechanism)
        if not code and (d.name, MECHANISM_TYPES[d.mechanism]) not in store:
            code, message = ResourceNotFoundError.code, "Attempt to delete a user credential that does not exist"
        if code:
            errors[d.name] = code, message
        else:
            deletions[d.name] = d
    for u in request.upsertions:
        if u.name in errors:
            continue
        if deletions.pop(u.name, None) is not None or upsertions.pop(u.name, None) is not None:
            errors[u.name] = duplicate
            continue
        code, message = _check(u.name, u.mechanism)
        if not code and u.iterations < MIN_ITERATIONS:
            code, message = UnacceptableCredentialError.code, "Too few iterations"
        elif not code and u.iterations > MAX_ITERATIONS:
            code, message = UnacceptableCredentialError.code, "Too many iterations"
        if code:
            errors[u.name] = code, message
        else:
            upsertions[u.name] = u
    store.apply([(d.name, MECHANISM_TYPES[d.mechanism]) for d in deletions.values()],
                {(u.name, MECHANISM_TYPES[u.mechanism]): credential_of_salted_password(
                    u.salted_password, MECHANISM_TYPES[u.mechanism], u.iterations, u.salt) for u in upsertions.values()})
    results = [Result(user=name, error_code=0, error_message=None) for name in [*deletions, *upsertions]]
    results += [Result(user=name, error_code=code, error_message=message) for name, (code, message) in errors.items()]
    return AlterUserScramCredentialsResponse(results=results)


@handles(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0)
async def describe_user_scram_credentials(state, header, request):
    store = state.scram_credentials
    R = DescribeUserScramCredentialsResponse
    if not state.authorizer.allows(header, AclOperation.DESCRIBE, ResourceType.CLUSTER):
        return R(error_code=ClusterAuthorizationFailedError.code, error_message=_REFUSED, results=[])
    names = [u.name for u in request.users or []] or store.users()
    results = []
    for name in dict.fromkeys(names):
        if names.count(name) > 1:
            results.append(R.DescribeUserScramCredentialsResult(
                user=name, error_code=DuplicateResourceError.code,
                error_message="Cannot describe SCRAM credentials for the same user twice in a single request"))
            continue
        infos = [R.CredentialInfo(mechanism=_TYPE_OF[mechanism], iterations=c.iterations)
                 for mechanism, c in store.of_user(name)]
        if not infos:
            results.append(R.DescribeUserScramCredentialsResult(
                user=name, error_code=ResourceNotFoundError.code,
                error_message="Attempt to describe a user credential that does not exist"))
            continue
        results.append(R.DescribeUserScramCredentialsResult(user=name, error_code=0, error_message=None,
                                                            credential_infos=infos))
    return R(error_code=0, error_message=None, results=results)
