"""Every error kproto raises, and one class per Kafka error code.

The tree, split by who is to blame::

    KafkaError                      base of everything kproto raises
    ├── KafkaCodeError              a Kafka error code (from a broker, or the same
    │   │                           condition found locally); has .code, .name, .retriable
    │   ├── CorruptMessageError     code 2, CORRUPT_MESSAGE
    │   │   └── CorruptRecordError  bytes from the network or disk that do not parse;
    │   │                           carries the offset range of the bad batch when known
    │   ├── OffsetOutOfRangeError   code 1, OFFSET_OUT_OF_RANGE
    │   │   └── LogTruncationError  a consumer's position was truncated away (KIP-320)
    │   ├── UnsupportedCompressionTypeError   code 76
    │   └── ... one class per code in the table below
    ├── ProtocolError               a peer broke the wire protocol (garbled frame,
    │                               truncated response): the connection is unusable
    ├── KafkaConnectionError        a broker could not be reached or the connection
    │   │                           dropped (retriable)
    │   └── NoBrokersAvailableError none of bootstrap.servers answered
    ├── KafkaTimeoutError           a request or an operation ran out of time (retriable)
    ├── ConfigError                 a client config key or value is wrong (also a ValueError)
    ├── AuthenticationError         TLS or SASL refused the client (not retriable: the
    │   │                           same credentials fail again; Java's AuthenticationException)
    │   ├── SslAuthenticationError  the TLS handshake failed: names the certificate and
    │   │                           the check (hostname, trusted CA, validity)
    │   └── SaslAuthenticationFailedError, UnsupportedSaslMechanismError,
    │       IllegalSaslStateError   codes 58, 33, 34 (also KafkaCodeErrors);
    │                               SaslAuthenticationError is the first's other name
    ├── ClientClosedError           the client was closed
    ├── TransactionStateError       a transactional call the producer's state does not
    │                               allow (send outside a transaction, commit twice...):
    │                               the application's mistake (also a RuntimeError)
    └── TransactionAbortedError     a record of a transaction that was aborted before it
                                    was sent (Java's TransactionAbortedException)

    IllegalTransitionError          (a RuntimeError, not a KafkaError) a state machine was
                                    asked for a move its transition table forbids: a bug
                                    in its driver, never a peer's or a user's doing; raised
                                    by the consumer's membership and minibroker's groups

Classes for Kafka codes are declared once, below, each with its code, Kafka's NAME and
whether a retry can succeed; ``for_code(code)`` returns the class for a code (an
unknown code gets :class:`UnknownServerError`'s behaviour but keeps its number).

The table covers every code in Kafka's ``Errors.java`` from -1 up to 133 (the highest in
apache/kafka when it was written) except 0, NONE, which is success. Class names are
Kafka's NAME in CamelCase plus ``Error``, after dropping a trailing ``_ERROR`` or
``_EXCEPTION`` (NETWORK_EXCEPTION -> NetworkError, KAFKA_STORAGE_ERROR -> KafkaStorageError).
``retriable`` is the Retriable column of Kafka's protocol guide, i.e. whether the Java
exception for the code extends RetriableException.

A transactional producer sorts the errors it raises as KIP-691 does (Java's
``TransactionManager``): what a retry can repair it retries inside; every other error
carries ``txn_requires_abort`` (the transaction failed: abort it, then start again) or
``fatal`` (the producer cannot go on: close it), set on the instance, since one code can
be either by context (UNKNOWN_PRODUCER_ID is abortable when the epoch can be bumped).
The table is in the producer guide's transactions section.
"""

from __future__ import annotations

__all__ = [
    "KafkaError",
    "KafkaCodeError",
    "ProtocolError",
    "KafkaConnectionError",
    "NoBrokersAvailableError",
    "KafkaTimeoutError",
    "ConfigError",
    "AuthenticationError",
    "SslAuthenticationError",
    "SaslAuthenticationError",
    "ClientClosedError",
    "CorruptRecordError",
    "LogTruncationError",
    "IllegalTransitionError",
    "TransactionStateError",
    "TransactionAbortedError",
    "for_code",
    # One class per Kafka error code, in code order.
    "UnknownServerError",
    "OffsetOutOfRangeError",
    "CorruptMessageError",
    "UnknownTopicOrPartitionError",
    "InvalidFetchSizeError",
    "LeaderNotAvailableError",
    "NotLeaderOrFollowerError",
    "RequestTimedOutError",
    "BrokerNotAvailableError",
    "ReplicaNotAvailableError",
    "MessageTooLargeError",
    "StaleControllerEpochError",
    "OffsetMetadataTooLargeError",
    "NetworkError",
    "CoordinatorLoadInProgressError",
    "CoordinatorNotAvailableError",
    "NotCoordinatorError",
    "InvalidTopicError",
    "RecordListTooLargeError",
    "NotEnoughReplicasError",
    "NotEnoughReplicasAfterAppendError",
    "InvalidRequiredAcksError",
    "IllegalGenerationError",
    "InconsistentGroupProtocolError",
    "InvalidGroupIdError",
    "UnknownMemberIdError",
    "InvalidSessionTimeoutError",
    "RebalanceInProgressError",
    "InvalidCommitOffsetSizeError",
    "TopicAuthorizationFailedError",
    "GroupAuthorizationFailedError",
    "ClusterAuthorizationFailedError",
    "InvalidTimestampError",
    "UnsupportedSaslMechanismError",
    "IllegalSaslStateError",
    "UnsupportedVersionError",
    "TopicAlreadyExistsError",
    "InvalidPartitionsError",
    "InvalidReplicationFactorError",
    "InvalidReplicaAssignmentError",
    "InvalidConfigError",
    "NotControllerError",
    "InvalidRequestError",
    "UnsupportedForMessageFormatError",
    "PolicyViolationError",
    "OutOfOrderSequenceNumberError",
    "DuplicateSequenceNumberError",
    "InvalidProducerEpochError",
    "InvalidTxnStateError",
    "InvalidProducerIdMappingError",
    "InvalidTransactionTimeoutError",
    "ConcurrentTransactionsError",
    "TransactionCoordinatorFencedError",
    "TransactionalIdAuthorizationFailedError",
    "SecurityDisabledError",
    "OperationNotAttemptedError",
    "KafkaStorageError",
    "LogDirNotFoundError",
    "SaslAuthenticationFailedError",
    "UnknownProducerIdError",
    "ReassignmentInProgressError",
    "DelegationTokenAuthDisabledError",
    "DelegationTokenNotFoundError",
    "DelegationTokenOwnerMismatchError",
    "DelegationTokenRequestNotAllowedError",
    "DelegationTokenAuthorizationFailedError",
    "DelegationTokenExpiredError",
    "InvalidPrincipalTypeError",
    "NonEmptyGroupError",
    "GroupIdNotFoundError",
    "FetchSessionIdNotFoundError",
    "InvalidFetchSessionEpochError",
    "ListenerNotFoundError",
    "TopicDeletionDisabledError",
    "FencedLeaderEpochError",
    "UnknownLeaderEpochError",
    "UnsupportedCompressionTypeError",
    "StaleBrokerEpochError",
    "OffsetNotAvailableError",
    "MemberIdRequiredError",
    "PreferredLeaderNotAvailableError",
    "GroupMaxSizeReachedError",
    "FencedInstanceIdError",
    "EligibleLeadersNotAvailableError",
    "ElectionNotNeededError",
    "NoReassignmentInProgressError",
    "GroupSubscribedToTopicError",
    "InvalidRecordError",
    "UnstableOffsetCommitError",
    "ThrottlingQuotaExceededError",
    "ProducerFencedError",
    "ResourceNotFoundError",
    "DuplicateResourceError",
    "UnacceptableCredentialError",
    "InconsistentVoterSetError",
    "InvalidUpdateVersionError",
    "FeatureUpdateFailedError",
    "PrincipalDeserializationFailureError",
    "SnapshotNotFoundError",
    "PositionOutOfRangeError",
    "UnknownTopicIdError",
    "DuplicateBrokerRegistrationError",
    "BrokerIdNotRegisteredError",
    "InconsistentTopicIdError",
    "InconsistentClusterIdError",
    "TransactionalIdNotFoundError",
    "FetchSessionTopicIdError",
    "IneligibleReplicaError",
    "NewLeaderElectedError",
    "OffsetMovedToTieredStorageError",
    "FencedMemberEpochError",
    "UnreleasedInstanceIdError",
    "UnsupportedAssignorError",
    "StaleMemberEpochError",
    "MismatchedEndpointTypeError",
    "UnsupportedEndpointTypeError",
    "UnknownControllerIdError",
    "UnknownSubscriptionIdError",
    "TelemetryTooLargeError",
    "InvalidRegistrationError",
    "TransactionAbortableError",
    "InvalidRecordStateError",
    "ShareSessionNotFoundError",
    "InvalidShareSessionEpochError",
    "FencedStateEpochError",
    "InvalidVoterKeyError",
    "DuplicateVoterError",
    "VoterNotFoundError",
    "InvalidRegularExpressionError",
    "RebootstrapRequiredError",
    "StreamsInvalidTopologyError",
    "StreamsInvalidTopologyEpochError",
    "StreamsTopologyFencedError",
    "ShareSessionLimitReachedError",
]


class KafkaError(Exception):
    """Base class of every exception kproto raises.

    Attributes:
        retriable: a retry of the same call may succeed.
        txn_requires_abort: raised by a transactional producer, the transaction failed:
            abort it (KIP-691's abortable errors); the producer stays usable.
        fatal: raised by a producer, it cannot go on (fenced by a newer instance with the
            same ``transactional.id``, not authorized...): close it (KIP-691's fatal errors).
    """

    retriable: bool = False
    txn_requires_abort: bool = False
    fatal: bool = False


class ProtocolError(KafkaError):
    """A peer sent bytes that break the Kafka wire protocol (not a record payload)."""


class KafkaConnectionError(KafkaError):
    """A broker could not be reached, or the connection to it was lost."""

    retriable = True


class NoBrokersAvailableError(KafkaConnectionError):
    """None of the bootstrap servers could be reached."""


class KafkaTimeoutError(KafkaError):
    """A request or an operation did not complete in the time allowed."""

    retriable = True


class ConfigError(KafkaError, ValueError):
    """A client configuration key is unknown, or its value is not valid."""


class AuthenticationError(KafkaError):
    """TLS or SASL authentication with a broker failed (Java's ``AuthenticationException``).

    Not retriable: the same certificate or password fails again, so a client's call fails
    with it at once instead of retrying until its timeout (Java's ``NetworkClient`` marks
    the node AUTHENTICATION_FAILED and its callers raise the exception). Connections to
    the broker are tried again only after the reconnect backoff.
    """


class SslAuthenticationError(AuthenticationError):
    """The TLS handshake with a broker failed: its certificate did not pass a check
    (hostname, trusted issuer, validity; the message names the certificate and the
    check), the broker refused the client's certificate, or the peer does not speak TLS
    (Java's ``SslAuthenticationException``)."""


class ClientClosedError(KafkaError):
    """The client was closed; it cannot be used any more."""


class TransactionStateError(KafkaError, RuntimeError):
    """A transactional call in a state that does not allow it: a send or a commit outside
    a transaction, ``begin_transaction()`` twice, anything before ``init_transactions()``,
    a transactional call on a producer without ``transactional.id`` (Java's
    ``IllegalStateException``). The application's mistake: nothing was sent."""


class TransactionAbortedError(KafkaError):
    """The record was not sent: its transaction was aborted first (Java's
    ``TransactionAbortedException``)."""


class IllegalTransitionError(RuntimeError):
    """A state machine was asked for a move its ``TRANSITIONS`` table does not allow.

    A bug in the code that drives the machine, so not a :class:`KafkaError`: nothing a
    retry or a peer can cause. The one class for every such table (the consumer's
    membership, minibroker's group states).
    """


_BY_CODE: dict[int, type[KafkaCodeError]] = {}


class KafkaCodeError(KafkaError):
    """An error that Kafka names with a numeric code.

    Subclasses set ``code``, ``name`` (Kafka's upper-case name) and ``retriable``; the
    docstring is Kafka's description. Declaring a subclass registers it for
    :func:`for_code`.
    """

    code: int = -1
    name: str = "UNKNOWN_SERVER_ERROR"

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        # Only direct declarations of a code register; refinements such as
        # CorruptRecordError inherit their parent's code without replacing it.
        if "code" in cls.__dict__:
            if cls.code in _BY_CODE:
                raise TypeError(f"Kafka error code {cls.code} declared twice")
            _BY_CODE[cls.code] = cls

    def __str__(self) -> str:
        detail = super().__str__()
        return (
            f"[{self.name}] {detail}" if detail else f"[{self.name}] {self.__doc__ or ''}".strip()
        )


def for_code(code: int) -> type[KafkaCodeError]:
    """Return the exception class for a Kafka error code.

    An unknown code returns a fresh subclass of :class:`KafkaCodeError` carrying that code,
    so the number is never lost.
    """
    try:
        return _BY_CODE[code]
    except KeyError:
        return type(
            f"KafkaCode{code}Error",
            (KafkaCodeError,),
            {
                "code": code,
                "name": f"UNKNOWN_CODE_{code}",
                "__doc__": f"Kafka error code {code} (unknown to kproto).",
            },
        )


# ---------------------------------------------------------------------------
# The table of Kafka error codes: one class per code, in code order.
# ---------------------------------------------------------------------------


class UnknownServerError(KafkaCodeError):
    """The server hit an unexpected error while processing the request."""

    code, name, retriable = -1, "UNKNOWN_SERVER_ERROR", False


class OffsetOutOfRangeError(KafkaCodeError):
    """The requested offset is outside the range of offsets the server keeps."""

    code, name, retriable = 1, "OFFSET_OUT_OF_RANGE", False


class CorruptMessageError(KafkaCodeError):
    """The message failed its CRC, is too large, has a null key on a compacted topic, or is corrupt."""

    code, name, retriable = 2, "CORRUPT_MESSAGE", True


class UnknownTopicOrPartitionError(KafkaCodeError):
    """This server does not host this topic-partition."""

    code, name, retriable = 3, "UNKNOWN_TOPIC_OR_PARTITION", True


class InvalidFetchSizeError(KafkaCodeError):
    """The requested fetch size is invalid."""

    code, name, retriable = 4, "INVALID_FETCH_SIZE", False


class LeaderNotAvailableError(KafkaCodeError):
    """The partition has no leader right now: a leader election is in progress."""

    code, name, retriable = 5, "LEADER_NOT_AVAILABLE", True


class NotLeaderOrFollowerError(KafkaCodeError):
    """The broker is not the partition's leader (or, for any-replica requests, not a replica)."""

    code, name, retriable = 6, "NOT_LEADER_OR_FOLLOWER", True


class RequestTimedOutError(KafkaCodeError):
    """The request timed out."""

    code, name, retriable = 7, "REQUEST_TIMED_OUT", True


class BrokerNotAvailableError(KafkaCodeError):
    """The broker is not available."""

    code, name, retriable = 8, "BROKER_NOT_AVAILABLE", False


class ReplicaNotAvailableError(KafkaCodeError):
    """The replica is not available for the requested topic-partition."""

    code, name, retriable = 9, "REPLICA_NOT_AVAILABLE", True


class MessageTooLargeError(KafkaCodeError):
    """The request held a message larger than the largest the server accepts."""

    code, name, retriable = 10, "MESSAGE_TOO_LARGE", False


class StaleControllerEpochError(KafkaCodeError):
    """The controller moved to another broker."""

    code, name, retriable = 11, "STALE_CONTROLLER_EPOCH", False


class OffsetMetadataTooLargeError(KafkaCodeError):
    """The metadata field of the offset request was too large."""

    code, name, retriable = 12, "OFFSET_METADATA_TOO_LARGE", False


class NetworkError(KafkaCodeError):
    """The server disconnected before a response was received."""

    code, name, retriable = 13, "NETWORK_EXCEPTION", True


class CoordinatorLoadInProgressError(KafkaCodeError):
    """The coordinator is still loading and cannot process requests yet."""

    code, name, retriable = 14, "COORDINATOR_LOAD_IN_PROGRESS", True


class CoordinatorNotAvailableError(KafkaCodeError):
    """The coordinator is not available."""

    code, name, retriable = 15, "COORDINATOR_NOT_AVAILABLE", True


class NotCoordinatorError(KafkaCodeError):
    """This broker is not the right coordinator."""

    code, name, retriable = 16, "NOT_COORDINATOR", True


class InvalidTopicError(KafkaCodeError):
    """The request tried to operate on an invalid topic."""

    code, name, retriable = 17, "INVALID_TOPIC_EXCEPTION", False


class RecordListTooLargeError(KafkaCodeError):
    """The request held a batch larger than the server's configured segment size."""

    code, name, retriable = 18, "RECORD_LIST_TOO_LARGE", False


class NotEnoughReplicasError(KafkaCodeError):
    """Messages were rejected: fewer in-sync replicas than required."""

    code, name, retriable = 19, "NOT_ENOUGH_REPLICAS", True


class NotEnoughReplicasAfterAppendError(KafkaCodeError):
    """Messages were written, but to fewer in-sync replicas than required."""

    code, name, retriable = 20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", True


class InvalidRequiredAcksError(KafkaCodeError):
    """The produce request gave an invalid value for required acks."""

    code, name, retriable = 21, "INVALID_REQUIRED_ACKS", False


class IllegalGenerationError(KafkaCodeError):
    """The group generation id is not valid."""

    code, name, retriable = 22, "ILLEGAL_GENERATION", False


class InconsistentGroupProtocolError(KafkaCodeError):
    """The member's protocols are incompatible with the group's (or it joined with none)."""

    code, name, retriable = 23, "INCONSISTENT_GROUP_PROTOCOL", False


class InvalidGroupIdError(KafkaCodeError):
    """The group id is invalid."""

    code, name, retriable = 24, "INVALID_GROUP_ID", False


class UnknownMemberIdError(KafkaCodeError):
    """The coordinator does not know this member."""

    code, name, retriable = 25, "UNKNOWN_MEMBER_ID", False


class InvalidSessionTimeoutError(KafkaCodeError):
    """The session timeout is outside group.min/max.session.timeout.ms."""

    code, name, retriable = 26, "INVALID_SESSION_TIMEOUT", False


class RebalanceInProgressError(KafkaCodeError):
    """The group is rebalancing, so the member must rejoin."""

    code, name, retriable = 27, "REBALANCE_IN_PROGRESS", False


class InvalidCommitOffsetSizeError(KafkaCodeError):
    """The committed offset data has an invalid size."""

    code, name, retriable = 28, "INVALID_COMMIT_OFFSET_SIZE", False


class TopicAuthorizationFailedError(KafkaCodeError):
    """Not authorized to access the topic."""

    code, name, retriable = 29, "TOPIC_AUTHORIZATION_FAILED", False


class GroupAuthorizationFailedError(KafkaCodeError):
    """Not authorized to access the group."""

    code, name, retriable = 30, "GROUP_AUTHORIZATION_FAILED", False


class ClusterAuthorizationFailedError(KafkaCodeError):
    """Not authorized for the cluster operation."""

    code, name, retriable = 31, "CLUSTER_AUTHORIZATION_FAILED", False


class InvalidTimestampError(KafkaCodeError):
    """The message timestamp is outside the acceptable range."""

    code, name, retriable = 32, "INVALID_TIMESTAMP", False


class UnsupportedSaslMechanismError(KafkaCodeError, AuthenticationError):
    """The broker does not support the requested SASL mechanism."""

    code, name, retriable = 33, "UNSUPPORTED_SASL_MECHANISM", False


class IllegalSaslStateError(KafkaCodeError, AuthenticationError):
    """The request is not valid in the current SASL state."""

    code, name, retriable = 34, "ILLEGAL_SASL_STATE", False


class UnsupportedVersionError(KafkaCodeError):
    """The API version is not supported."""

    code, name, retriable = 35, "UNSUPPORTED_VERSION", False


class TopicAlreadyExistsError(KafkaCodeError):
    """A topic with this name already exists."""

    code, name, retriable = 36, "TOPIC_ALREADY_EXISTS", False


class InvalidPartitionsError(KafkaCodeError):
    """The number of partitions is below 1."""

    code, name, retriable = 37, "INVALID_PARTITIONS", False


class InvalidReplicationFactorError(KafkaCodeError):
    """The replication factor is below 1 or above the number of available brokers."""

    code, name, retriable = 38, "INVALID_REPLICATION_FACTOR", False


class InvalidReplicaAssignmentError(KafkaCodeError):
    """The replica assignment is invalid."""

    code, name, retriable = 39, "INVALID_REPLICA_ASSIGNMENT", False


class InvalidConfigError(KafkaCodeError):
    """The configuration is invalid."""

    code, name, retriable = 40, "INVALID_CONFIG", False


class NotControllerError(KafkaCodeError):
    """This broker is not the controller of the cluster."""

    code, name, retriable = 41, "NOT_CONTROLLER", True


class InvalidRequestError(KafkaCodeError):
    """The request is malformed, or was sent to an incompatible broker (see the broker logs)."""

    code, name, retriable = 42, "INVALID_REQUEST", False


class UnsupportedForMessageFormatError(KafkaCodeError):
    """The broker's message format version does not support the request."""

    code, name, retriable = 43, "UNSUPPORTED_FOR_MESSAGE_FORMAT", False


class PolicyViolationError(KafkaCodeError):
    """The request parameters do not satisfy the configured policy."""

    code, name, retriable = 44, "POLICY_VIOLATION", False


class OutOfOrderSequenceNumberError(KafkaCodeError):
    """The broker received an out-of-order sequence number."""

    code, name, retriable = 45, "OUT_OF_ORDER_SEQUENCE_NUMBER", False


class DuplicateSequenceNumberError(KafkaCodeError):
    """The broker received a duplicate sequence number."""

    code, name, retriable = 46, "DUPLICATE_SEQUENCE_NUMBER", False


class InvalidProducerEpochError(KafkaCodeError):
    """The producer tried to produce with an old epoch."""

    code, name, retriable = 47, "INVALID_PRODUCER_EPOCH", False


class InvalidTxnStateError(KafkaCodeError):
    """The producer tried a transactional operation in an invalid state."""

    code, name, retriable = 48, "INVALID_TXN_STATE", False


class InvalidProducerIdMappingError(KafkaCodeError):
    """The producer used a producer id not currently assigned to its transactional id."""

    code, name, retriable = 49, "INVALID_PRODUCER_ID_MAPPING", False


class InvalidTransactionTimeoutError(KafkaCodeError):
    """The transaction timeout exceeds the broker's transaction.max.timeout.ms."""

    code, name, retriable = 50, "INVALID_TRANSACTION_TIMEOUT", False


class ConcurrentTransactionsError(KafkaCodeError):
    """Another operation on the same transaction was still ongoing."""

    code, name, retriable = 51, "CONCURRENT_TRANSACTIONS", True


class TransactionCoordinatorFencedError(KafkaCodeError):
    """The coordinator sending WriteTxnMarkers is no longer current for the producer."""

    code, name, retriable = 52, "TRANSACTION_COORDINATOR_FENCED", False


class TransactionalIdAuthorizationFailedError(KafkaCodeError):
    """Not authorized for the transactional id."""

    code, name, retriable = 53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", False


class SecurityDisabledError(KafkaCodeError):
    """Security features are disabled."""

    code, name, retriable = 54, "SECURITY_DISABLED", False


class OperationNotAttemptedError(KafkaCodeError):
    """Not attempted, because other operations in the same batched request failed."""

    code, name, retriable = 55, "OPERATION_NOT_ATTEMPTED", False


class KafkaStorageError(KafkaCodeError):
    """A disk error occurred while accessing a log file."""

    code, name, retriable = 56, "KAFKA_STORAGE_ERROR", True


class LogDirNotFoundError(KafkaCodeError):
    """The given log directory is not in the broker's configuration."""

    code, name, retriable = 57, "LOG_DIR_NOT_FOUND", False


class SaslAuthenticationFailedError(KafkaCodeError, AuthenticationError):
    """SASL authentication failed."""

    code, name, retriable = 58, "SASL_AUTHENTICATION_FAILED", False


#: SASL authentication failed (a wrong password, an expired or refused token): the name
#: Java's ``SaslAuthenticationException`` suggests, for :class:`SaslAuthenticationFailedError`.
SaslAuthenticationError = SaslAuthenticationFailedError


class UnknownProducerIdError(KafkaCodeError):
    """The broker has no state for the producer id (e.g. retention deleted all its records)."""

    code, name, retriable = 59, "UNKNOWN_PRODUCER_ID", False


class ReassignmentInProgressError(KafkaCodeError):
    """A partition reassignment is in progress."""

    code, name, retriable = 60, "REASSIGNMENT_IN_PROGRESS", False


class DelegationTokenAuthDisabledError(KafkaCodeError):
    """The delegation token feature is not enabled."""

    code, name, retriable = 61, "DELEGATION_TOKEN_AUTH_DISABLED", False


class DelegationTokenNotFoundError(KafkaCodeError):
    """The delegation token is not found on the server."""

    code, name, retriable = 62, "DELEGATION_TOKEN_NOT_FOUND", False


class DelegationTokenOwnerMismatchError(KafkaCodeError):
    """The principal is not a valid owner or renewer of the token."""

    code, name, retriable = 63, "DELEGATION_TOKEN_OWNER_MISMATCH", False


class DelegationTokenRequestNotAllowedError(KafkaCodeError):
    """Delegation token requests are not allowed on PLAINTEXT, 1-way SSL or token channels."""

    code, name, retriable = 64, "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", False


class DelegationTokenAuthorizationFailedError(KafkaCodeError):
    """Delegation token authorization failed."""

    code, name, retriable = 65, "DELEGATION_TOKEN_AUTHORIZATION_FAILED", False


class DelegationTokenExpiredError(KafkaCodeError):
    """The delegation token has expired."""

    code, name, retriable = 66, "DELEGATION_TOKEN_EXPIRED", False


class InvalidPrincipalTypeError(KafkaCodeError):
    """The principal type is not supported."""

    code, name, retriable = 67, "INVALID_PRINCIPAL_TYPE", False


class NonEmptyGroupError(KafkaCodeError):
    """The group is not empty."""

    code, name, retriable = 68, "NON_EMPTY_GROUP", False


class GroupIdNotFoundError(KafkaCodeError):
    """The group id does not exist."""

    code, name, retriable = 69, "GROUP_ID_NOT_FOUND", False


class FetchSessionIdNotFoundError(KafkaCodeError):
    """The fetch session id was not found."""

    code, name, retriable = 70, "FETCH_SESSION_ID_NOT_FOUND", True


class InvalidFetchSessionEpochError(KafkaCodeError):
    """The fetch session epoch is invalid."""

    code, name, retriable = 71, "INVALID_FETCH_SESSION_EPOCH", True


class ListenerNotFoundError(KafkaCodeError):
    """The leader has no listener matching the one the metadata request came in on."""

    code, name, retriable = 72, "LISTENER_NOT_FOUND", True


class TopicDeletionDisabledError(KafkaCodeError):
    """Topic deletion is disabled."""

    code, name, retriable = 73, "TOPIC_DELETION_DISABLED", False


class FencedLeaderEpochError(KafkaCodeError):
    """The leader epoch in the request is older than the broker's."""

    code, name, retriable = 74, "FENCED_LEADER_EPOCH", True


class UnknownLeaderEpochError(KafkaCodeError):
    """The leader epoch in the request is newer than the broker's."""

    code, name, retriable = 75, "UNKNOWN_LEADER_EPOCH", True


class UnsupportedCompressionTypeError(KafkaCodeError):
    """The requesting client does not support the compression type of the partition."""

    code, name, retriable = 76, "UNSUPPORTED_COMPRESSION_TYPE", False


class StaleBrokerEpochError(KafkaCodeError):
    """The broker epoch has changed."""

    code, name, retriable = 77, "STALE_BROKER_EPOCH", False


class OffsetNotAvailableError(KafkaCodeError):
    """The new leader's high watermark has not caught up, so offsets may not be monotonic yet."""

    code, name, retriable = 78, "OFFSET_NOT_AVAILABLE", True


class MemberIdRequiredError(KafkaCodeError):
    """The member needs a valid member id before it can enter the group."""

    code, name, retriable = 79, "MEMBER_ID_REQUIRED", False


class PreferredLeaderNotAvailableError(KafkaCodeError):
    """The preferred leader was not available."""

    code, name, retriable = 80, "PREFERRED_LEADER_NOT_AVAILABLE", True


class GroupMaxSizeReachedError(KafkaCodeError):
    """The group has reached its maximum size."""

    code, name, retriable = 81, "GROUP_MAX_SIZE_REACHED", False


class FencedInstanceIdError(KafkaCodeError):
    """Fenced by a static member with the same group.instance.id but another member.id."""

    code, name, retriable = 82, "FENCED_INSTANCE_ID", False


class EligibleLeadersNotAvailableError(KafkaCodeError):
    """No eligible leaders are available for the partition."""

    code, name, retriable = 83, "ELIGIBLE_LEADERS_NOT_AVAILABLE", True


class ElectionNotNeededError(KafkaCodeError):
    """No leader election is needed for the partition."""

    code, name, retriable = 84, "ELECTION_NOT_NEEDED", True


class NoReassignmentInProgressError(KafkaCodeError):
    """No partition reassignment is in progress."""

    code, name, retriable = 85, "NO_REASSIGNMENT_IN_PROGRESS", False


class GroupSubscribedToTopicError(KafkaCodeError):
    """Deleting a topic's offsets is forbidden while the group is subscribed to it."""

    code, name, retriable = 86, "GROUP_SUBSCRIBED_TO_TOPIC", False


class InvalidRecordError(KafkaCodeError):
    """The record failed the broker's validation and was rejected."""

    code, name, retriable = 87, "INVALID_RECORD", False


class UnstableOffsetCommitError(KafkaCodeError):
    """There are unstable offsets that must be cleared first."""

    code, name, retriable = 88, "UNSTABLE_OFFSET_COMMIT", True


class ThrottlingQuotaExceededError(KafkaCodeError):
    """The throttling quota has been exceeded."""

    code, name, retriable = 89, "THROTTLING_QUOTA_EXCEEDED", True


class ProducerFencedError(KafkaCodeError):
    """A newer producer with the same transactional id fenced this one."""

    code, name, retriable = 90, "PRODUCER_FENCED", False


class ResourceNotFoundError(KafkaCodeError):
    """The request referred to a resource that does not exist."""

    code, name, retriable = 91, "RESOURCE_NOT_FOUND", False


class DuplicateResourceError(KafkaCodeError):
    """The request referred to the same resource twice."""

    code, name, retriable = 92, "DUPLICATE_RESOURCE", False


class UnacceptableCredentialError(KafkaCodeError):
    """The requested credential would not meet the acceptability criteria."""

    code, name, retriable = 93, "UNACCEPTABLE_CREDENTIAL", False


class InconsistentVoterSetError(KafkaCodeError):
    """The sender or recipient of a voter-only request is not one of the expected voters."""

    code, name, retriable = 94, "INCONSISTENT_VOTER_SET", False


class InvalidUpdateVersionError(KafkaCodeError):
    """The given update version was invalid."""

    code, name, retriable = 95, "INVALID_UPDATE_VERSION", False


class FeatureUpdateFailedError(KafkaCodeError):
    """Finalized features could not be updated because of an unexpected server error."""

    code, name, retriable = 96, "FEATURE_UPDATE_FAILED", False


class PrincipalDeserializationFailureError(KafkaCodeError):
    """The principal could not be deserialized during forwarding (broker security setup)."""

    code, name, retriable = 97, "PRINCIPAL_DESERIALIZATION_FAILURE", False


class SnapshotNotFoundError(KafkaCodeError):
    """The requested snapshot was not found."""

    code, name, retriable = 98, "SNAPSHOT_NOT_FOUND", False


class PositionOutOfRangeError(KafkaCodeError):
    """The requested position is negative or beyond the size of the snapshot."""

    code, name, retriable = 99, "POSITION_OUT_OF_RANGE", False


class UnknownTopicIdError(KafkaCodeError):
    """This server does not host this topic id."""

    code, name, retriable = 100, "UNKNOWN_TOPIC_ID", True


class DuplicateBrokerRegistrationError(KafkaCodeError):
    """This broker id is already in use."""

    code, name, retriable = 101, "DUPLICATE_BROKER_REGISTRATION", False


class BrokerIdNotRegisteredError(KafkaCodeError):
    """The given broker id was not registered."""

    code, name, retriable = 102, "BROKER_ID_NOT_REGISTERED", False


class InconsistentTopicIdError(KafkaCodeError):
    """The log's topic id does not match the topic id in the request."""

    code, name, retriable = 103, "INCONSISTENT_TOPIC_ID", True


class InconsistentClusterIdError(KafkaCodeError):
    """The cluster id in the request does not match the server's."""

    code, name, retriable = 104, "INCONSISTENT_CLUSTER_ID", False


class TransactionalIdNotFoundError(KafkaCodeError):
    """The transactional id could not be found."""

    code, name, retriable = 105, "TRANSACTIONAL_ID_NOT_FOUND", False


class FetchSessionTopicIdError(KafkaCodeError):
    """The fetch session saw inconsistent use of topic ids."""

    code, name, retriable = 106, "FETCH_SESSION_TOPIC_ID_ERROR", True


class IneligibleReplicaError(KafkaCodeError):
    """The new ISR contains at least one ineligible replica."""

    code, name, retriable = 107, "INELIGIBLE_REPLICA", False


class NewLeaderElectedError(KafkaCodeError):
    """The AlterPartition request updated the partition state, but the leader has changed."""

    code, name, retriable = 108, "NEW_LEADER_ELECTED", False


class OffsetMovedToTieredStorageError(KafkaCodeError):
    """The requested offset has moved to tiered storage."""

    code, name, retriable = 109, "OFFSET_MOVED_TO_TIERED_STORAGE", False


class FencedMemberEpochError(KafkaCodeError):
    """The member epoch is fenced: the member must give up its partitions and rejoin."""

    code, name, retriable = 110, "FENCED_MEMBER_EPOCH", False


class UnreleasedInstanceIdError(KafkaCodeError):
    """Another member still uses the instance id and must leave first."""

    code, name, retriable = 111, "UNRELEASED_INSTANCE_ID", False


class UnsupportedAssignorError(KafkaCodeError):
    """The group does not support the assignor or its version range."""

    code, name, retriable = 112, "UNSUPPORTED_ASSIGNOR", False


class StaleMemberEpochError(KafkaCodeError):
    """The member epoch is stale: retry after getting the new epoch from a heartbeat."""

    code, name, retriable = 113, "STALE_MEMBER_EPOCH", False


class MismatchedEndpointTypeError(KafkaCodeError):
    """The request was sent to an endpoint of the wrong type."""

    code, name, retriable = 114, "MISMATCHED_ENDPOINT_TYPE", False


class UnsupportedEndpointTypeError(KafkaCodeError):
    """This endpoint type is not supported yet."""

    code, name, retriable = 115, "UNSUPPORTED_ENDPOINT_TYPE", False


class UnknownControllerIdError(KafkaCodeError):
    """This controller id is not known."""

    code, name, retriable = 116, "UNKNOWN_CONTROLLER_ID", False


class UnknownSubscriptionIdError(KafkaCodeError):
    """The push-telemetry request carried an invalid or outdated subscription id."""

    code, name, retriable = 117, "UNKNOWN_SUBSCRIPTION_ID", False


class TelemetryTooLargeError(KafkaCodeError):
    """The push-telemetry request is larger than the broker accepts."""

    code, name, retriable = 118, "TELEMETRY_TOO_LARGE", False


class InvalidRegistrationError(KafkaCodeError):
    """The controller considered the broker registration invalid."""

    code, name, retriable = 119, "INVALID_REGISTRATION", False


class TransactionAbortableError(KafkaCodeError):
    """The transaction hit a server error; abort it to keep using the transactional id."""

    code, name, retriable = 120, "TRANSACTION_ABORTABLE", False


class InvalidRecordStateError(KafkaCodeError):
    """The record state is invalid, so its delivery could not be acknowledged."""

    code, name, retriable = 121, "INVALID_RECORD_STATE", False


class ShareSessionNotFoundError(KafkaCodeError):
    """The share session was not found."""

    code, name, retriable = 122, "SHARE_SESSION_NOT_FOUND", True


class InvalidShareSessionEpochError(KafkaCodeError):
    """The share session epoch is invalid."""

    code, name, retriable = 123, "INVALID_SHARE_SESSION_EPOCH", True


class FencedStateEpochError(KafkaCodeError):
    """The share coordinator rejected the request: the share-group state epoch did not match."""

    code, name, retriable = 124, "FENCED_STATE_EPOCH", False


class InvalidVoterKeyError(KafkaCodeError):
    """The voter key does not match the receiving replica's key."""

    code, name, retriable = 125, "INVALID_VOTER_KEY", False


class DuplicateVoterError(KafkaCodeError):
    """The voter is already in the voter set."""

    code, name, retriable = 126, "DUPLICATE_VOTER", False


class VoterNotFoundError(KafkaCodeError):
    """The voter is not in the voter set."""

    code, name, retriable = 127, "VOTER_NOT_FOUND", False


class InvalidRegularExpressionError(KafkaCodeError):
    """The regular expression is not valid."""

    code, name, retriable = 128, "INVALID_REGULAR_EXPRESSION", False


class RebootstrapRequiredError(KafkaCodeError):
    """The client's metadata is stale: it should rebootstrap."""

    code, name, retriable = 129, "REBOOTSTRAP_REQUIRED", False


class StreamsInvalidTopologyError(KafkaCodeError):
    """The supplied Streams topology is invalid."""

    code, name, retriable = 130, "STREAMS_INVALID_TOPOLOGY", False


class StreamsInvalidTopologyEpochError(KafkaCodeError):
    """The supplied Streams topology epoch is invalid."""

    code, name, retriable = 131, "STREAMS_INVALID_TOPOLOGY_EPOCH", False


class StreamsTopologyFencedError(KafkaCodeError):
    """The supplied Streams topology epoch is outdated."""

    code, name, retriable = 132, "STREAMS_TOPOLOGY_FENCED", False


class ShareSessionLimitReachedError(KafkaCodeError):
    """No new share session could be opened: the limit has been reached."""

    code, name, retriable = 133, "SHARE_SESSION_LIMIT_REACHED", True


# ---------------------------------------------------------------------------
# Local refinements of Kafka codes.
# ---------------------------------------------------------------------------


class CorruptRecordError(CorruptMessageError):
    """Record bytes (from the network or a log segment) that do not parse.

    Attributes:
        first_offset: first offset of the batch that failed, or None when unknown.
        last_offset: last offset of that batch, or None when unknown. A consumer can
            seek to ``last_offset + 1`` to step past it.
    """

    def __init__(
        self, message: str, first_offset: int | None = None, last_offset: int | None = None
    ):
        super().__init__(message)
        self.first_offset = first_offset
        self.last_offset = last_offset

    def __reduce__(self):  # keep the offsets across pickling (Spark executors)
        return (type(self), (self.args[0], self.first_offset, self.last_offset))


class LogTruncationError(OffsetOutOfRangeError):
    """A consumer's position is past the end of its partition's log: the log was truncated
    under it by a leader change (an unclean election, or records the old leader had that
    the new one never got), and ``auto.offset.reset`` is ``none`` (KIP-320; Java's
    ``LogTruncationException``).

    The consumer found it validating its position with OffsetForLeaderEpoch after the
    partition's leader epoch changed. Records it returned past the divergence point are
    no longer in the log; seek (to :attr:`divergent_offsets`, or anywhere) to go on.

    Attributes:
        partitions: ``{TopicPartition: position}`` of the truncated partitions.
        divergent_offsets: ``{TopicPartition: OffsetAndMetadata}``, the first offset known
            to diverge and its leader epoch, per partition; None for a partition whose
            leader knew no epoch as old as the position's.
    """

    def __init__(self, message: str, partitions: dict | None = None, divergent_offsets: dict | None = None):
        super().__init__(message)
        self.partitions = dict(partitions or {})
        self.divergent_offsets = dict(divergent_offsets or {})

    def __reduce__(self):  # keep the offsets across pickling (Spark executors)
        return (type(self), (self.args[0], self.partitions, self.divergent_offsets))
