"""DescribeUserScramCredentials v0 and AlterUserScramCredentials v0 (KIP-554).

Behaviour: the broker's SCRAM users (:class:`~minibroker.scram_credentials.ScramCredentials`),
checked as Kafka's ``ScramControlManager`` does (:func:`minibroker.scram_users.plan_alter`:
a user named twice in one request is DUPLICATE_RESOURCE for all its changes, an empty name
UNACCEPTABLE_CREDENTIAL, a mechanism other than SCRAM-SHA-256 (1) or SCRAM-SHA-512 (2)
UNSUPPORTED_SASL_MECHANISM, iterations below 4096 or above 16384 UNACCEPTABLE_CREDENTIAL,
deleting a credential that does not exist RESOURCE_NOT_FOUND). The accepted changes are
applied together and written once; in a MiniCluster they are forwarded to the controller,
which commits them to the metadata log for every broker. The
broker derives StoredKey and ServerKey from the salted password the client sends and keeps
only those. Describe lists each user's mechanisms and iterations (never keys); users null
or empty describe every user; a named user without credentials is RESOURCE_NOT_FOUND, a
user named twice DUPLICATE_RESOURCE (Kafka's texts).

Authorization (with the authorizer on): AlterUserScramCredentials needs ALTER on the
cluster (``ControllerApis.handleAlterUserScramCredentials``: every user answered
CLUSTER_AUTHORIZATION_FAILED, nothing changed), DescribeUserScramCredentials DESCRIBE
(``KafkaApis``: the whole answer CLUSTER_AUTHORIZATION_FAILED).
"""

from kproto.errors import (
    ClusterAuthorizationFailedError,
    DuplicateResourceError,
    ResourceNotFoundError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsResponse,
)
from kproto.security.scram import MECHANISM_CODES
from minibroker.authorizer import AclOperation, ResourceType
from minibroker.handlers import handles
from minibroker.scram_users import plan_alter

_REFUSED = "Cluster authorization failed."  # Errors.CLUSTER_AUTHORIZATION_FAILED's message


@handles(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0)
async def alter_user_scram_credentials(state, header, request):
    Result = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult
    if not state.authorizer.allows(header, AclOperation.ALTER, ResourceType.CLUSTER):
        users = dict.fromkeys(c.name for c in [*request.deletions, *request.upsertions])
        return AlterUserScramCredentialsResponse(results=[
            Result(user=name, error_code=ClusterAuthorizationFailedError.code, error_message=_REFUSED) for name in users])
    if state.cluster is not None:  # the controller decides and commits (UserScramCredentialRecords)
        results = await state.cluster.channel.alter_user_scram_credentials(request)
    else:
        store = state.scram_credentials
        deletions, upsertions, results = plan_alter(store.__contains__, request)
        store.apply(deletions, upsertions)
    return AlterUserScramCredentialsResponse(results=[
        Result(user=name, error_code=code, error_message=message) for name, code, message in results])


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
        infos = [R.CredentialInfo(mechanism=MECHANISM_CODES[mechanism], iterations=c.iterations)
                 for mechanism, c in store.of_user(name)]
        if not infos:
            results.append(R.DescribeUserScramCredentialsResult(
                user=name, error_code=ResourceNotFoundError.code,
                error_message="Attempt to describe a user credential that does not exist"))
            continue
        results.append(R.DescribeUserScramCredentialsResult(user=name, error_code=0, error_message=None,
                                                            credential_infos=infos))
    return R(error_code=0, error_message=None, results=results)
