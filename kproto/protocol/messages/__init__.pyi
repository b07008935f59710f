"""Type stubs for kproto.protocol.messages, generated from the schema table: do not edit.

Regenerate with ``python -m kproto.protocol._stubgen`` after changing the table
(tests/protocol/test_stubs.py checks that this file is current).
"""

from enum import IntEnum
from typing import Any, ClassVar, Literal
from uuid import UUID

from kproto.protocol.schema import DataMessage, Message, Struct
from kproto.protocol.spec import Api, Data

__all__ = [
    "TABLE",
    "APIS",
    "ApiKey",
    "REQUESTS",
    "RESPONSES",
    "request_class",
    "response_class",
    "DATA",
    "DATA_CLASSES",
    "data_class",
    "ConsumerProtocolAssignment",
    "ConsumerProtocolSubscription",
    "GroupMetadataKey",
    "GroupMetadataValue",
    "OffsetCommitKey",
    "OffsetCommitValue",
    "TransactionLogKey",
    "TransactionLogValue",
    "AddOffsetsToTxnRequest",
    "AddOffsetsToTxnResponse",
    "AddPartitionsToTxnRequest",
    "AddPartitionsToTxnResponse",
    "AllocateProducerIdsRequest",
    "AllocateProducerIdsResponse",
    "AlterClientQuotasRequest",
    "AlterClientQuotasResponse",
    "AlterConfigsRequest",
    "AlterConfigsResponse",
    "AlterPartitionRequest",
    "AlterPartitionResponse",
    "AlterUserScramCredentialsRequest",
    "AlterUserScramCredentialsResponse",
    "ApiVersionsRequest",
    "ApiVersionsResponse",
    "BrokerHeartbeatRequest",
    "BrokerHeartbeatResponse",
    "BrokerRegistrationRequest",
    "BrokerRegistrationResponse",
    "ConsumerGroupDescribeRequest",
    "ConsumerGroupDescribeResponse",
    "ConsumerGroupHeartbeatRequest",
    "ConsumerGroupHeartbeatResponse",
    "CreateAclsRequest",
    "CreateAclsResponse",
    "CreatePartitionsRequest",
    "CreatePartitionsResponse",
    "CreateTopicsRequest",
    "CreateTopicsResponse",
    "DeleteAclsRequest",
    "DeleteAclsResponse",
    "DeleteGroupsRequest",
    "DeleteGroupsResponse",
    "DeleteRecordsRequest",
    "DeleteRecordsResponse",
    "DeleteTopicsRequest",
    "DeleteTopicsResponse",
    "DescribeAclsRequest",
    "DescribeAclsResponse",
    "DescribeClientQuotasRequest",
    "DescribeClientQuotasResponse",
    "DescribeClusterRequest",
    "DescribeClusterResponse",
    "DescribeConfigsRequest",
    "DescribeConfigsResponse",
    "DescribeGroupsRequest",
    "DescribeGroupsResponse",
    "DescribeLogDirsRequest",
    "DescribeLogDirsResponse",
    "DescribeProducersRequest",
    "DescribeProducersResponse",
    "DescribeTransactionsRequest",
    "DescribeTransactionsResponse",
    "DescribeUserScramCredentialsRequest",
    "DescribeUserScramCredentialsResponse",
    "ElectLeadersRequest",
    "ElectLeadersResponse",
    "EndTxnRequest",
    "EndTxnResponse",
    "FetchRequest",
    "FetchResponse",
    "FindCoordinatorRequest",
    "FindCoordinatorResponse",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "IncrementalAlterConfigsRequest",
    "IncrementalAlterConfigsResponse",
    "InitProducerIdRequest",
    "InitProducerIdResponse",
    "JoinGroupRequest",
    "JoinGroupResponse",
    "LeaveGroupRequest",
    "LeaveGroupResponse",
    "ListGroupsRequest",
    "ListGroupsResponse",
    "ListOffsetsRequest",
    "ListOffsetsResponse",
    "ListTransactionsRequest",
    "ListTransactionsResponse",
    "MetadataRequest",
    "MetadataResponse",
    "OffsetCommitRequest",
    "OffsetCommitResponse",
    "OffsetDeleteRequest",
    "OffsetDeleteResponse",
    "OffsetFetchRequest",
    "OffsetFetchResponse",
    "OffsetForLeaderEpochRequest",
    "OffsetForLeaderEpochResponse",
    "ProduceRequest",
    "ProduceResponse",
    "SaslAuthenticateRequest",
    "SaslAuthenticateResponse",
    "SaslHandshakeRequest",
    "SaslHandshakeResponse",
    "SyncGroupRequest",
    "SyncGroupResponse",
    "TxnOffsetCommitRequest",
    "TxnOffsetCommitResponse",
    "WriteTxnMarkersRequest",
    "WriteTxnMarkersResponse",
]

TABLE: tuple[Api, ...]
APIS: dict[int, Api]

class ApiKey(IntEnum):
    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    ALTER_PARTITION = 56
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    BROKER_REGISTRATION = 62
    BROKER_HEARTBEAT = 63
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    ALLOCATE_PRODUCER_IDS = 67
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69

REQUESTS: dict[int, type[Message]]
RESPONSES: dict[int, type[Message]]
DATA: tuple[Data, ...]
DATA_CLASSES: dict[str, type[DataMessage]]
def request_class(api_key: int) -> type[Message]: ...
def response_class(api_key: int) -> type[Message]: ...
def data_class(name: str) -> type[DataMessage]: ...

class ProduceRequest(Message):
    """The Produce request body (API key 0, v0-12, flexible v9+).

    Fields:
        transactional_id: string, v3+, nullable v3+, default None
        acks: int16, v0+, default 0
        timeout_ms: int32, v0+, default 0
        topic_data: []TopicProduceData, v0+
    """
    API_KEY: ClassVar[Literal[0]]
    API_NAME: ClassVar[Literal["Produce"]]
    IS_REQUEST: ClassVar[Literal[True]]
    transactional_id: str | None
    acks: int
    timeout_ms: int
    topic_data: list[ProduceRequest.TopicProduceData]
    def __init__(
        self,
        *,
        transactional_id: str | None = None,
        acks: int = 0,
        timeout_ms: int = 0,
        topic_data: list[ProduceRequest.TopicProduceData] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> ProduceRequest: ...
    class TopicProduceData(Struct):
        """A TopicProduceData struct of ProduceRequest.

        Fields:
            name: string, v0+, default ''
            partition_data: []PartitionProduceData, v0+
        """
        name: str
        partition_data: list[ProduceRequest.PartitionProduceData]
        def __init__(
            self,
            *,
            name: str = "",
            partition_data: list[ProduceRequest.PartitionProduceData] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class PartitionProduceData(Struct):
        """A PartitionProduceData struct of ProduceRequest.

        Fields:
            index: int32, v0+, default 0
            records: records, v0+, nullable v0+, default None
        """
        index: int
        records: bytes | bytearray | memoryview | None
        def __init__(
            self,
            *,
            index: int = 0,
            records: bytes | bytearray | memoryview | None = None,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class ProduceResponse(Message):
    """The Produce response body (API key 0, v0-12, flexible v9+).

    Fields:
        responses: []TopicProduceResponse, v0+
        throttle_time_ms: int32, v1+, default 0, ignorable
        node_endpoints: []NodeEndpoint, v10+, tag 0
    """
    API_KEY: ClassVar[Literal[0]]
    API_NAME: ClassVar[Literal["Produce"]]
    IS_REQUEST: ClassVar[Literal[False]]
    responses: list[ProduceResponse.TopicProduceResponse]
    throttle_time_ms: int
    node_endpoints: list[ProduceResponse.NodeEndpoint]
    def __init__(
        self,
        *,
        responses: list[ProduceResponse.TopicProduceResponse] = ...,
        throttle_time_ms: int = 0,
        node_endpoints: list[ProduceResponse.NodeEndpoint] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> ProduceResponse: ...
    class TopicProduceResponse(Struct):
        """A TopicProduceResponse struct of ProduceResponse.

        Fields:
            name: string, v0+, default ''
            partition_responses: []PartitionProduceResponse, v0+
        """
        name: str
        partition_responses: list[ProduceResponse.PartitionProduceResponse]
        def __init__(
            self,
            *,
            name: str = "",
            partition_responses: list[ProduceResponse.PartitionProduceResponse] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class PartitionProduceResponse(Struct):
        """A PartitionProduceResponse struct of ProduceResponse.

        Fields:
            index: int32, v0+, default 0
            error_code: int16, v0+, default 0
            base_offset: int64, v0+, default 0
            log_append_time_ms: int64, v2+, default -1, ignorable
            log_start_offset: int64, v5+, default -1, ignorable
            record_errors: []BatchIndexAndErrorMessage, v8+, ignorable
            error_message: string, v8+, nullable v8+, default None, ignorable
            current_leader: LeaderIdAndEpoch, v10+, tag 0
        """
        index: int
        error_code: int
        base_offset: int
        log_append_time_ms: int
        log_start_offset: int
        record_errors: list[ProduceResponse.BatchIndexAndErrorMessage]
        error_message: str | None
        current_leader: ProduceResponse.LeaderIdAndEpoch
        def __init__(
            self,
            *,
            index: int = 0,
            error_code: int = 0,
            base_offset: int = 0,
            log_append_time_ms: int = -1,
            log_start_offset: int = -1,
            record_errors: list[ProduceResponse.BatchIndexAndErrorMessage] = ...,
            error_message: str | None = None,
            current_leader: ProduceResponse.LeaderIdAndEpoch = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class BatchIndexAndErrorMessage(Struct):
        """A BatchIndexAndErrorMessage struct of ProduceResponse.

        Fields:
            batch_index: int32, v8+, default 0
            batch_index_error_message: string, v8+, nullable v8+, default None
        """
        batch_index: int
        batch_index_error_message: str | None
        def __init__(
            self,
            *,
            batch_index: int = 0,
            batch_index_error_message: str | None = None,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class LeaderIdAndEpoch(Struct):
        """A LeaderIdAndEpoch struct of ProduceResponse.

        Fields:
            leader_id: int32, v10+, default -1
            leader_epoch: int32, v10+, default -1
        """
        leader_id: int
        leader_epoch: int
        def __init__(
            self,
            *,
            leader_id: int = -1,
            leader_epoch: int = -1,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class NodeEndpoint(Struct):
        """A NodeEndpoint struct of ProduceResponse.

        Fields:
            node_id: int32, v10+, default 0
            host: string, v10+, default ''
            port: int32, v10+, default 0
            rack: string, v10+, nullable v10+, default None
        """
        node_id: int
        host: str
        port: int
        rack: str | None
        def __init__(
            self,
            *,
            node_id: int = 0,
            host: str = "",
            port: int = 0,
            rack: str | None = None,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class FetchRequest(Message):
    """The Fetch request body (API key 1, v0-17, flexible v12+).

    Fields:
        cluster_id: string, v12+, nullable v12+, tag 0, default None, ignorable
        replica_id: int32, v0-14, default -1
        replica_state: ReplicaState, v15+, tag 1
        max_wait_ms: int32, v0+, default 0
        min_bytes: int32, v0+, default 0
        max_bytes: int32, v3+, default 2147483647, ignorable
        isolation_level: int8, v4+, default 0, ignorable
        session_id: int32, v7+, default 0, ignorable
        session_epoch: int32, v7+, default -1, ignorable
        topics: []FetchTopic, v0+
        forgotten_topics_data: []ForgottenTopic, v7+
        rack_id: string, v11+, default '', ignorable
    """
    API_KEY: ClassVar[Literal[1]]
    API_NAME: ClassVar[Literal["Fetch"]]
    IS_REQUEST: ClassVar[Literal[True]]
    cluster_id: str | None
    replica_id: int
    replica_state: FetchRequest.ReplicaState
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation_level: int
    session_id: int
    session_epoch: int
    topics: list[FetchRequest.FetchTopic]
    forgotten_topics_data: list[FetchRequest.ForgottenTopic]
    rack_id: str
    def __init__(
        self,
        *,
        cluster_id: str | None = None,
        replica_id: int = -1,
        replica_state: FetchRequest.ReplicaState = ...,
        max_wait_ms: int = 0,
        min_bytes: int = 0,
        max_bytes: int = 2147483647,
        isolation_level: int = 0,
        session_id: int = 0,
        session_epoch: int = -1,
        topics: list[FetchRequest.FetchTopic] = ...,
        forgotten_topics_data: list[FetchRequest.ForgottenTopic] = ...,
        rack_id: str = "",
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> FetchRequest: ...
    class ReplicaState(Struct):
        """A ReplicaState struct of FetchRequest.

        Fields:
            replica_id: int32, v15+, default -1
            replica_epoch: int64, v15+, default -1
        """
        replica_id: int
        replica_epoch: int
        def __init__(
            self,
            *,
            replica_id: int = -1,
            replica_epoch: int = -1,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class FetchTopic(Struct):
        """A FetchTopic struct of FetchRequest.

        Fields:
            topic: string, v0-12, default '', ignorable
            topic_id: uuid, v13+, default UUID('00000000-0000-0000-0000-000000000000'), ignorable
            partitions: []FetchPartition, v0+
        """
        topic: str
        topic_id: UUID
        partitions: list[FetchRequest.FetchPartition]
        def __init__(
            self,
            *,
            topic: str = "",
            topic_id: UUID = ...,
            partitions: list[FetchRequest.FetchPartition] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class FetchPartition(Struct):
        """A FetchPartition struct of FetchRequest.

        Fields:
            partition: int32, v0+, default 0
            current_leader_epoch: int32, v9+, default -1, ignorable
            fetch_offset: int64, v0+, default 0
            last_fetched_epoch: int32, v12+, default -1
            log_start_offset: int64, v5+, default -1, ignorable
            partition_max_bytes: int32, v0+, default 0
            replica_directory_id: uuid, v17+, tag 0, default UUID('00000000-0000-0000-0000-000000000000'), ignorable
        """
        partition: int
        current_leader_epoch: int
        fetch_offset: int
        last_fetched_epoch: int
        log_start_offset: int
        partition_max_bytes: int
        replica_directory_id: UUID
        def __init__(
            self,
            *,
            partition: int = 0,
            current_leader_epoch: int = -1,
            fetch_offset: int = 0,
            last_fetched_epoch: int = -1,
            log_start_offset: int = -1,
            partition_max_bytes: int = 0,
            replica_directory_id: UUID = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class ForgottenTopic(Struct):
        """A ForgottenTopic struct of FetchRequest.

        Fields:
            topic: string, v7-12, default '', ignorable
            topic_id: uuid, v13+, default UUID('00000000-0000-0000-0000-000000000000'), ignorable
            partitions: []int32, v7+
        """
        topic: str
        topic_id: UUID
        partitions: list[int]
        def __init__(
            self,
            *,
            topic: str = "",
            topic_id: UUID = ...,
            partitions: list[int] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class FetchResponse(Message):
    """The Fetch response body (API key 1, v0-17, flexible v12+).

    Fields:
        throttle_time_ms: int32, v1+, default 0, ignorable
        error_code: int16, v7+, default 0, ignorable
        session_id: int32, v7+, default 0
        responses: []FetchableTopicResponse, v0+
        node_endpoints: []NodeEndpoint, v16+, tag 0
    """
    API_KEY: ClassVar[Literal[1]]
    API_NAME: ClassVar[Literal["Fetch"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    error_code: int
    session_id: int
    responses: list[FetchResponse.FetchableTopicResponse]
    node_endpoints: list[FetchResponse.NodeEndpoint]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        error_code: int = 0,
        session_id: int = 0,
        responses: list[FetchResponse.FetchableTopicResponse] = ...,
        node_endpoints: list[FetchResponse.NodeEndpoint] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> FetchResponse: ...
    class FetchableTopicResponse(Struct):
        """A FetchableTopicResponse struct of FetchResponse.

        Fields:
            topic: string, v0-12, default '', ignorable
            topic_id: uuid, v13+, default UUID('00000000-0000-0000-0000-000000000000'), ignorable
            partitions: []PartitionData, v0+
        """
        topic: str
        topic_id: UUID
        partitions: list[FetchResponse.PartitionData]
        def __init__(
            self,
            *,
            topic: str = "",
            topic_id: UUID = ...,
            partitions: list[FetchResponse.PartitionData] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class PartitionData(Struct):
        """A PartitionData struct of FetchResponse.

        Fields:
            partition_index: int32, v0+, default 0
            error_code: int16, v0+, default 0
            high_watermark: int64, v0+, default 0
            last_stable_offset: int64, v4+, default -1, ignorable
            log_start_offset: int64, v5+, default -1, ignorable
            diverging_epoch: EpochEndOffset, v12+, tag 0
            current_leader: LeaderIdAndEpoch, v12+, tag 1
            snapshot_id: SnapshotId, v12+, tag 2
            aborted_transactions: []AbortedTransaction, v4+, nullable v4+, ignorable
            preferred_read_replica: int32, v11+, default -1
            records: records, v0+, nullable v0+, default None
        """
        partition_index: int
        error_code: int
        high_watermark: int
        last_stable_offset: int
        log_start_offset: int
        diverging_epoch: FetchResponse.EpochEndOffset
        current_leader: FetchResponse.LeaderIdAndEpoch
        snapshot_id: FetchResponse.SnapshotId
        aborted_transactions: list[FetchResponse.AbortedTransaction] | None
        preferred_read_replica: int
        records: bytes | bytearray | memoryview | None
        def __init__(
            self,
            *,
            partition_index: int = 0,
            error_code: int = 0,
            high_watermark: int = 0,
            last_stable_offset: int = -1,
            log_start_offset: int = -1,
            diverging_epoch: FetchResponse.EpochEndOffset = ...,
            current_leader: FetchResponse.LeaderIdAndEpoch = ...,
            snapshot_id: FetchResponse.SnapshotId = ...,
            aborted_transactions: list[FetchResponse.AbortedTransaction] | None = ...,
            preferred_read_replica: int = -1,
            records: bytes | bytearray | memoryview | None = None,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class EpochEndOffset(Struct):
        """A EpochEndOffset struct of FetchResponse.

        Fields:
            epoch: int32, v12+, default -1
            end_offset: int64, v12+, default -1
        """
        epoch: int
        end_offset: int
        def __init__(
            self,
            *,
            epoch: int = -1,
            end_offset: int = -1,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class LeaderIdAndEpoch(Struct):
        """A LeaderIdAndEpoch struct of FetchResponse.

        Fields:
            leader_id: int32, v12+, default -1
            leader_epoch: int32, v12+, default -1
        """
        leader_id: int
        leader_epoch: int
        def __init__(
            self,
            *,
            leader_id: int = -1,
            leader_epoch: int = -1,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class SnapshotId(Struct):
        """A SnapshotId struct of FetchResponse.

        Fields:
            end_offset: int64, v0+, default -1
            epoch: int32, v0+, default -1
        """
        end_offset: int
        epoch: int
        def __init__(
            self,
            *,
            end_offset: int = -1,
            epoch: int = -1,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class AbortedTransaction(Struct):
        """A AbortedTransaction struct of FetchResponse.

        Fields:
            producer_id: int64, v4+, default 0
            first_offset: int64, v4+, default 0
        """
        producer_id: int
        first_offset: int
        def __init__(
            self,
            *,
            producer_id: int = 0,
            first_offset: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class NodeEndpoint(Struct):
        """A NodeEndpoint struct of FetchResponse.

        Fields:
            node_id: int32, v16+, default 0
            host: string, v16+, default ''
            port: int32, v16+, default 0
            rack: string, v16+, nullable v16+, default None
        """
        node_id: int
        host: str
        port: int
        rack: str | None
        def __init__(
            self,
            *,
            node_id: int = 0,
            host: str = "",
            port: int = 0,
            rack: str | None = None,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class ListOffsetsRequest(Message):
    """The ListOffsets request body (API key 2, v0-10, flexible v6+).

    Fields:
        replica_id: int32, v0+, default 0
        isolation_level: int8, v2+, default 0
        topics: []ListOffsetsTopic, v0+
        timeout_ms: int32, v10+, default 0, ignorable
    """
    API_KEY: ClassVar[Literal[2]]
    API_NAME: ClassVar[Literal["ListOffsets"]]
    IS_REQUEST: ClassVar[Literal[True]]
    replica_id: int
    isolation_level: int
    topics: list[ListOffsetsRequest.ListOffsetsTopic]
    timeout_ms: int
    def __init__(
        self,
        *,
        replica_id: int = 0,
        isolation_level: int = 0,
        topics: list[ListOffsetsRequest.ListOffsetsTopic] = ...,
        timeout_ms: int = 0,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> ListOffsetsRequest: ...
    class ListOffsetsTopic(Struct):
        """A ListOffsetsTopic struct of ListOffsetsRequest.

        Fields:
            name: string, v0+, default ''
            partitions: []ListOffsetsPartition, v0+
        """
        name: str
        partitions: list[ListOffsetsRequest.ListOffsetsPartition]
        def __init__(
            self,
            *,
            name: str = "",
            partitions: list[ListOffsetsRequest.ListOffsetsPartition] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class ListOffsetsPartition(Struct):
        """A ListOffsetsPartition struct of ListOffsetsRequest.

        Fields:
            partition_index: int32, v0+, default 0
            current_leader_epoch: int32, v4+, default -1, ignorable
            timestamp: int64, v0+, default 0
            max_num_offsets: int32, v0, default 1
        """
        partition_index: int
        current_leader_epoch: int
        timestamp: int
        max_num_offsets: int
        def __init__(
            self,
            *,
            partition_index: int = 0,
            current_leader_epoch: int = -1,
            timestamp: int = 0,
            max_num_offsets: int = 1,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class ListOffsetsResponse(Message):
    """The ListOffsets response body (API key 2, v0-10, flexible v6+).

    Fields:
        throttle_time_ms: int32, v2+, default 0, ignorable
        topics: []ListOffsetsTopicResponse, v0+
    """
    API_KEY: ClassVar[Literal[2]]
    API_NAME: ClassVar[Literal["ListOffsets"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    topics: list[ListOffsetsResponse.ListOffsetsTopicResponse]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        topics: list[ListOffsetsResponse.ListOffsetsTopicResponse] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> ListOffsetsResponse: ...
    class ListOffsetsTopicResponse(Struct):
        """A ListOffsetsTopicResponse struct of ListOffsetsResponse.

        Fields:
            name: string, v0+, default ''
            partitions: []ListOffsetsPartitionResponse, v0+
        """
        name: str
        partitions: list[ListOffsetsResponse.ListOffsetsPartitionResponse]
        def __init__(
            self,
            *,
            name: str = "",
            partitions: list[ListOffsetsResponse.ListOffsetsPartitionResponse] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class ListOffsetsPartitionResponse(Struct):
        """A ListOffsetsPartitionResponse struct of ListOffsetsResponse.

        Fields:
            partition_index: int32, v0+, default 0
            error_code: int16, v0+, default 0
            old_style_offsets: []int64, v0
            timestamp: int64, v1+, default -1
            offset: int64, v1+, default -1
            leader_epoch: int32, v4+, default -1
        """
        partition_index: int
        error_code: int
        old_style_offsets: list[int]
        timestamp: int
        offset: int
        leader_epoch: int
        def __init__(
            self,
            *,
            partition_index: int = 0,
            error_code: int = 0,
            old_style_offsets: list[int] = ...,
            timestamp: int = -1,
            offset: int = -1,
            leader_epoch: int = -1,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class MetadataRequest(Message):
    """The Metadata request body (API key 3, v0-12, flexible v9+).

    Fields:
        topics: []MetadataRequestTopic, v0+, nullable v1+
        allow_auto_topic_creation: bool, v4+, default True
        include_cluster_authorized_operations: bool, v8-10, default False
        include_topic_authorized_operations: bool, v8+, default False
    """
    API_KEY: ClassVar[Literal[3]]
    API_NAME: ClassVar[Literal["Metadata"]]
    IS_REQUEST: ClassVar[Literal[True]]
    topics: list[MetadataRequest.MetadataRequestTopic] | None
    allow_auto_topic_creation: bool
    include_cluster_authorized_operations: bool
    include_topic_authorized_operations: bool
    def __init__(
        self,
        *,
        topics: list[MetadataRequest.MetadataRequestTopic] | None = ...,
        allow_auto_topic_creation: bool = True,
        include_cluster_authorized_operations: bool = False,
        include_topic_authorized_operations: bool = False,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> MetadataRequest: ...
    class MetadataRequestTopic(Struct):
        """A MetadataRequestTopic struct of MetadataRequest.

        Fields:
            topic_id: uuid, v10+, default UUID('00000000-0000-0000-0000-000000000000'), ignorable
            name: string, v0+, nullable v10+, default ''
        """
        topic_id: UUID
        name: str | None
        def __init__(
            self,
            *,
            topic_id: UUID = ...,
            name: str | None = "",
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class MetadataResponse(Message):
    """The Metadata response body (API key 3, v0-12, flexible v9+).

    Fields:
        throttle_time_ms: int32, v3+, default 0, ignorable
        brokers: []MetadataResponseBroker, v0+
        cluster_id: string, v2+, nullable v2+, default None, ignorable
        controller_id: int32, v1+, default -1, ignorable
        topics: []MetadataResponseTopic, v0+
        cluster_authorized_operations: int32, v8-10, default -2147483648
    """
    API_KEY: ClassVar[Literal[3]]
    API_NAME: ClassVar[Literal["Metadata"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    brokers: list[MetadataResponse.MetadataResponseBroker]
    cluster_id: str | None
    controller_id: int
    topics: list[MetadataResponse.MetadataResponseTopic]
    cluster_authorized_operations: int
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        brokers: list[MetadataResponse.MetadataResponseBroker] = ...,
        cluster_id: str | None = None,
        controller_id: int = -1,
        topics: list[MetadataResponse.MetadataResponseTopic] = ...,
        cluster_authorized_operations: int = -2147483648,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> MetadataResponse: ...
    class MetadataResponseBroker(Struct):
        """A MetadataResponseBroker struct of MetadataResponse.

        Fields:
            node_id: int32, v0+, default 0
            host: string, v0+, default ''
            port: int32, v0+, default 0
            rack: string, v1+, nullable v1+, default None, ignorable
        """
        node_id: int
        host: str
        port: int
        rack: str | None
        def __init__(
            self,
            *,
            node_id: int = 0,
            host: str = "",
            port: int = 0,
            rack: str | None = None,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class MetadataResponseTopic(Struct):
        """A MetadataResponseTopic struct of MetadataResponse.

        Fields:
            error_code: int16, v0+, default 0
            name: string, v0+, nullable v12+, default ''
            topic_id: uuid, v10+, default UUID('00000000-0000-0000-0000-000000000000'), ignorable
            is_internal: bool, v1+, default False, ignorable
            partitions: []MetadataResponsePartition, v0+
            topic_authorized_operations: int32, v8+, default -2147483648
        """
        error_code: int
        name: str | None
        topic_id: UUID
        is_internal: bool
        partitions: list[MetadataResponse.MetadataResponsePartition]
        topic_authorized_operations: int
        def __init__(
            self,
            *,
            error_code: int = 0,
            name: str | None = "",
            topic_id: UUID = ...,
            is_internal: bool = False,
            partitions: list[MetadataResponse.MetadataResponsePartition] = ...,
            topic_authorized_operations: int = -2147483648,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class MetadataResponsePartition(Struct):
        """A MetadataResponsePartition struct of MetadataResponse.

        Fields:
            error_code: int16, v0+, default 0
            partition_index: int32, v0+, default 0
            leader_id: int32, v0+, default 0
            leader_epoch: int32, v7+, default -1, ignorable
            replica_nodes: []int32, v0+
            isr_nodes: []int32, v0+
            offline_replicas: []int32, v5+, ignorable
        """
        error_code: int
        partition_index: int
        leader_id: int
        leader_epoch: int
        replica_nodes: list[int]
        isr_nodes: list[int]
        offline_replicas: list[int]
        def __init__(
            self,
            *,
            error_code: int = 0,
            partition_index: int = 0,
            leader_id: int = 0,
            leader_epoch: int = -1,
            replica_nodes: list[int] = ...,
            isr_nodes: list[int] = ...,
            offline_replicas: list[int] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class OffsetCommitRequest(Message):
    """The OffsetCommit request body (API key 8, v0-9, flexible v8+).

    Fields:
        group_id: string, v0+, default ''
        generation_id_or_member_epoch: int32, v1+, default -1, ignorable
        member_id: string, v1+, default '', ignorable
        group_instance_id: string, v7+, nullable v7+, default None
        retention_time_ms: int64, v2-4, default -1, ignorable
        topics: []OffsetCommitRequestTopic, v0+
    """
    API_KEY: ClassVar[Literal[8]]
    API_NAME: ClassVar[Literal["OffsetCommit"]]
    IS_REQUEST: ClassVar[Literal[True]]
    group_id: str
    generation_id_or_member_epoch: int
    member_id: str
    group_instance_id: str | None
    retention_time_ms: int
    topics: list[OffsetCommitRequest.OffsetCommitRequestTopic]
    def __init__(
        self,
        *,
        group_id: str = "",
        generation_id_or_member_epoch: int = -1,
        member_id: str = "",
        group_instance_id: str | None = None,
        retention_time_ms: int = -1,
        topics: list[OffsetCommitRequest.OffsetCommitRequestTopic] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> OffsetCommitRequest: ...
    class OffsetCommitRequestTopic(Struct):
        """A OffsetCommitRequestTopic struct of OffsetCommitRequest.

        Fields:
            name: string, v0+, default ''
            partitions: []OffsetCommitRequestPartition, v0+
        """
        name: str
        partitions: list[OffsetCommitRequest.OffsetCommitRequestPartition]
        def __init__(
            self,
            *,
            name: str = "",
            partitions: list[OffsetCommitRequest.OffsetCommitRequestPartition] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class OffsetCommitRequestPartition(Struct):
        """A OffsetCommitRequestPartition struct of OffsetCommitRequest.

        Fields:
            partition_index: int32, v0+, default 0
            committed_offset: int64, v0+, default 0
            committed_leader_epoch: int32, v6+, default -1, ignorable
            commit_timestamp: int64, v1, default -1
            committed_metadata: string, v0+, nullable v0+, default ''
        """
        partition_index: int
        committed_offset: int
        committed_leader_epoch: int
        commit_timestamp: int
        committed_metadata: str | None
        def __init__(
            self,
            *,
            partition_index: int = 0,
            committed_offset: int = 0,
            committed_leader_epoch: int = -1,
            commit_timestamp: int = -1,
            committed_metadata: str | None = "",
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class OffsetCommitResponse(Message):
    """The OffsetCommit response body (API key 8, v0-9, flexible v8+).

    Fields:
        throttle_time_ms: int32, v3+, default 0, ignorable
        topics: []OffsetCommitResponseTopic, v0+
    """
    API_KEY: ClassVar[Literal[8]]
    API_NAME: ClassVar[Literal["OffsetCommit"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    topics: list[OffsetCommitResponse.OffsetCommitResponseTopic]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        topics: list[OffsetCommitResponse.OffsetCommitResponseTopic] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> OffsetCommitResponse: ...
    class OffsetCommitResponseTopic(Struct):
        """A OffsetCommitResponseTopic struct of OffsetCommitResponse.

        Fields:
            name: string, v0+, default ''
            partitions: []OffsetCommitResponsePartition, v0+
        """
        name: str
        partitions: list[OffsetCommitResponse.OffsetCommitResponsePartition]
        def __init__(
            self,
            *,
            name: str = "",
            partitions: list[OffsetCommitResponse.OffsetCommitResponsePartition] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class OffsetCommitResponsePartition(Struct):
        """A OffsetCommitResponsePartition struct of OffsetCommitResponse.

        Fields:
            partition_index: int32, v0+, default 0
            error_code: int16, v0+, default 0
        """
        partition_index: int
        error_code: int
        def __init__(
            self,
            *,
            partition_index: int = 0,
            error_code: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class OffsetFetchRequest(Message):
    """The OffsetFetch request body (API key 9, v0-9, flexible v6+).

    Fields:
        group_id: string, v0-7, default ''
        topics: []OffsetFetchRequestTopic, v0-7, nullable v2-7
        groups: []OffsetFetchRequestGroup, v8+
        require_stable: bool, v7+, default False
    """
    API_KEY: ClassVar[Literal[9]]
    API_NAME: ClassVar[Literal["OffsetFetch"]]
    IS_REQUEST: ClassVar[Literal[True]]
    group_id: str
    topics: list[OffsetFetchRequest.OffsetFetchRequestTopic] | None
    groups: list[OffsetFetchRequest.OffsetFetchRequestGroup]
    require_stable: bool
    def __init__(
        self,
        *,
        group_id: str = "",
        topics: list[OffsetFetchRequest.OffsetFetchRequestTopic] | None = ...,
        groups: list[OffsetFetchRequest.OffsetFetchRequestGroup] = ...,
        require_stable: bool = False,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> OffsetFetchRequest: ...
    class OffsetFetchRequestTopic(Struct):
        """A OffsetFetchRequestTopic struct of OffsetFetchRequest.

        Fields:
            name: string, v0-7, default ''
            partition_indexes: []int32, v0-7
        """
        name: str
        partition_indexes: list[int]
        def __init__(
            self,
            *,
            name: str = "",
            partition_indexes: list[int] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class OffsetFetchRequestGroup(Struct):
        """A OffsetFetchRequestGroup struct of OffsetFetchRequest.

        Fields:
            group_id: string, v8+, default ''
            member_id: string, v9+, nullable v9+, default None, ignorable
            member_epoch: int32, v9+, default -1, ignorable
            topics: []OffsetFetchRequestTopics, v8+, nullable v8+
        """
        group_id: str
        member_id: str | None
        member_epoch: int
        topics: list[OffsetFetchRequest.OffsetFetchRequestTopics] | None
        def __init__(
            self,
            *,
            group_id: str = "",
            member_id: str | None = None,
            member_epoch: int = -1,
            topics: list[OffsetFetchRequest.OffsetFetchRequestTopics] | None = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class OffsetFetchRequestTopics(Struct):
        """A OffsetFetchRequestTopics struct of OffsetFetchRequest.

        Fields:
            name: string, v8+, default ''
            partition_indexes: []int32, v8+
        """
        name: str
        partition_indexes: list[int]
        def __init__(
            self,
            *,
            name: str = "",
            partition_indexes: list[int] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class OffsetFetchResponse(Message):
    """The OffsetFetch response body (API key 9, v0-9, flexible v6+).

    Fields:
        throttle_time_ms: int32, v3+, default 0, ignorable
        topics: []OffsetFetchResponseTopic, v0-7
        error_code: int16, v2-7, default 0, ignorable
        groups: []OffsetFetchResponseGroup, v8+
    """
    API_KEY: ClassVar[Literal[9]]
    API_NAME: ClassVar[Literal["OffsetFetch"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    topics: list[OffsetFetchResponse.OffsetFetchResponseTopic]
    error_code: int
    groups: list[OffsetFetchResponse.OffsetFetchResponseGroup]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        topics: list[OffsetFetchResponse.OffsetFetchResponseTopic] = ...,
        error_code: int = 0,
        groups: list[OffsetFetchResponse.OffsetFetchResponseGroup] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> OffsetFetchResponse: ...
    class OffsetFetchResponseTopic(Struct):
        """A OffsetFetchResponseTopic struct of OffsetFetchResponse.

        Fields:
            name: string, v0-7, default ''
            partitions: []OffsetFetchResponsePartition, v0-7
        """
        name: str
        partitions: list[OffsetFetchResponse.OffsetFetchResponsePartition]
        def __init__(
            self,
            *,
            name: str = "",
            partitions: list[OffsetFetchResponse.OffsetFetchResponsePartition] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class OffsetFetchResponsePartition(Struct):
        """A OffsetFetchResponsePartition struct of OffsetFetchResponse.

        Fields:
            partition_index: int32, v0-7, default 0
            committed_offset: int64, v0-7, default 0
            committed_leader_epoch: int32, v5-7, default -1, ignorable
            metadata: string, v0-7, nullable v0-7, default ''
            error_code: int16, v0-7, default 0
        """
        partition_index: int
        committed_offset: int
        committed_leader_epoch: int
        metadata: str | None
        error_code: int
        def __init__(
            self,
            *,
            partition_index: int = 0,
            committed_offset: int = 0,
            committed_leader_epoch: int = -1,
            metadata: str | None = "",
            error_code: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class OffsetFetchResponseGroup(Struct):
        """A OffsetFetchResponseGroup struct of OffsetFetchResponse.

        Fields:
            group_id: string, v8+, default ''
            topics: []OffsetFetchResponseTopics, v8+
            error_code: int16, v8+, default 0
        """
        group_id: str
        topics: list[OffsetFetchResponse.OffsetFetchResponseTopics]
        error_code: int
        def __init__(
            self,
            *,
            group_id: str = "",
            topics: list[OffsetFetchResponse.OffsetFetchResponseTopics] = ...,
            error_code: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class OffsetFetchResponseTopics(Struct):
        """A OffsetFetchResponseTopics struct of OffsetFetchResponse.

        Fields:
            name: string, v8+, default ''
            partitions: []OffsetFetchResponsePartitions, v8+
        """
        name: str
        partitions: list[OffsetFetchResponse.OffsetFetchResponsePartitions]
        def __init__(
            self,
            *,
            name: str = "",
            partitions: list[OffsetFetchResponse.OffsetFetchResponsePartitions] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class OffsetFetchResponsePartitions(Struct):
        """A OffsetFetchResponsePartitions struct of OffsetFetchResponse.

        Fields:
            partition_index: int32, v8+, default 0
            committed_offset: int64, v8+, default 0
            committed_leader_epoch: int32, v8+, default -1, ignorable
            metadata: string, v8+, nullable v8+, default ''
            error_code: int16, v8+, default 0
        """
        partition_index: int
        committed_offset: int
        committed_leader_epoch: int
        metadata: str | None
        error_code: int
        def __init__(
            self,
            *,
            partition_index: int = 0,
            committed_offset: int = 0,
            committed_leader_epoch: int = -1,
            metadata: str | None = "",
            error_code: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class FindCoordinatorRequest(Message):
    """The FindCoordinator request body (API key 10, v0-6, flexible v3+).

    Fields:
        key: string, v0-3, default ''
        key_type: int8, v1+, default 0
        coordinator_keys: []string, v4+
    """
    API_KEY: ClassVar[Literal[10]]
    API_NAME: ClassVar[Literal["FindCoordinator"]]
    IS_REQUEST: ClassVar[Literal[True]]
    key: str
    key_type: int
    coordinator_keys: list[str]
    def __init__(
        self,
        *,
        key: str = "",
        key_type: int = 0,
        coordinator_keys: list[str] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> FindCoordinatorRequest: ...

class FindCoordinatorResponse(Message):
    """The FindCoordinator response body (API key 10, v0-6, flexible v3+).

    Fields:
        throttle_time_ms: int32, v1+, default 0, ignorable
        error_code: int16, v0-3, default 0
        error_message: string, v1-3, nullable v1-3, default '', ignorable
        node_id: int32, v0-3, default 0
        host: string, v0-3, default ''
        port: int32, v0-3, default 0
        coordinators: []Coordinator, v4+
    """
    API_KEY: ClassVar[Literal[10]]
    API_NAME: ClassVar[Literal["FindCoordinator"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    node_id: int
    host: str
    port: int
    coordinators: list[FindCoordinatorResponse.Coordinator]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        error_code: int = 0,
        error_message: str | None = "",
        node_id: int = 0,
        host: str = "",
        port: int = 0,
        coordinators: list[FindCoordinatorResponse.Coordinator] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> FindCoordinatorResponse: ...
    class Coordinator(Struct):
        """A Coordinator struct of FindCoordinatorResponse.

        Fields:
            key: string, v4+, default ''
            node_id: int32, v4+, default 0
            host: string, v4+, default ''
            port: int32, v4+, default 0
            error_code: int16, v4+, default 0
            error_message: string, v4+, nullable v4+, default '', ignorable
        """
        key: str
        node_id: int
        host: str
        port: int
        error_code: int
        error_message: str | None
        def __init__(
            self,
            *,
            key: str = "",
            node_id: int = 0,
            host: str = "",
            port: int = 0,
            error_code: int = 0,
            error_message: str | None = "",
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class JoinGroupRequest(Message):
    """The JoinGroup request body (API key 11, v0-9, flexible v6+).

    Fields:
        group_id: string, v0+, default ''
        session_timeout_ms: int32, v0+, default 0
        rebalance_timeout_ms: int32, v1+, default -1, ignorable
        member_id: string, v0+, default ''
        group_instance_id: string, v5+, nullable v5+, default None
        protocol_type: string, v0+, default ''
        protocols: []JoinGroupRequestProtocol, v0+
        reason: string, v8+, nullable v8+, default None, ignorable
    """
    API_KEY: ClassVar[Literal[11]]
    API_NAME: ClassVar[Literal["JoinGroup"]]
    IS_REQUEST: ClassVar[Literal[True]]
    group_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str
    protocols: list[JoinGroupRequest.JoinGroupRequestProtocol]
    reason: str | None
    def __init__(
        self,
        *,
        group_id: str = "",
        session_timeout_ms: int = 0,
        rebalance_timeout_ms: int = -1,
        member_id: str = "",
        group_instance_id: str | None = None,
        protocol_type: str = "",
        protocols: list[JoinGroupRequest.JoinGroupRequestProtocol] = ...,
        reason: str | None = None,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> JoinGroupRequest: ...
    class JoinGroupRequestProtocol(Struct):
        """A JoinGroupRequestProtocol struct of JoinGroupRequest.

        Fields:
            name: string, v0+, default ''
            metadata: bytes, v0+, default b''
        """
        name: str
        metadata: bytes
        def __init__(
            self,
            *,
            name: str = "",
            metadata: bytes = b'',
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class JoinGroupResponse(Message):
    """The JoinGroup response body (API key 11, v0-9, flexible v6+).

    Fields:
        throttle_time_ms: int32, v2+, default 0, ignorable
        error_code: int16, v0+, default 0
        generation_id: int32, v0+, default -1
        protocol_type: string, v7+, nullable v7+, default None, ignorable
        protocol_name: string, v0+, nullable v7+, default ''
        leader: string, v0+, default ''
        skip_assignment: bool, v9+, default False
        member_id: string, v0+, default ''
        members: []JoinGroupResponseMember, v0+
    """
    API_KEY: ClassVar[Literal[11]]
    API_NAME: ClassVar[Literal["JoinGroup"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    error_code: int
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader: str
    skip_assignment: bool
    member_id: str
    members: list[JoinGroupResponse.JoinGroupResponseMember]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        error_code: int = 0,
        generation_id: int = -1,
        protocol_type: str | None = None,
        protocol_name: str | None = "",
        leader: str = "",
        skip_assignment: bool = False,
        member_id: str = "",
        members: list[JoinGroupResponse.JoinGroupResponseMember] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> JoinGroupResponse: ...
    class JoinGroupResponseMember(Struct):
        """A JoinGroupResponseMember struct of JoinGroupResponse.

        Fields:
            member_id: string, v0+, default ''
            group_instance_id: string, v5+, nullable v5+, default None, ignorable
            metadata: bytes, v0+, default b''
        """
        member_id: str
        group_instance_id: str | None
        metadata: bytes
        def __init__(
            self,
            *,
            member_id: str = "",
            group_instance_id: str | None = None,
            metadata: bytes = b'',
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class HeartbeatRequest(Message):
    """The Heartbeat request body (API key 12, v0-4, flexible v4+).

    Fields:
        group_id: string, v0+, default ''
        generation_id: int32, v0+, default 0
        member_id: string, v0+, default ''
        group_instance_id: string, v3+, nullable v3+, default None
    """
    API_KEY: ClassVar[Literal[12]]
    API_NAME: ClassVar[Literal["Heartbeat"]]
    IS_REQUEST: ClassVar[Literal[True]]
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    def __init__(
        self,
        *,
        group_id: str = "",
        generation_id: int = 0,
        member_id: str = "",
        group_instance_id: str | None = None,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> HeartbeatRequest: ...

class HeartbeatResponse(Message):
    """The Heartbeat response body (API key 12, v0-4, flexible v4+).

    Fields:
        throttle_time_ms: int32, v1+, default 0, ignorable
        error_code: int16, v0+, default 0
    """
    API_KEY: ClassVar[Literal[12]]
    API_NAME: ClassVar[Literal["Heartbeat"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    error_code: int
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        error_code: int = 0,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> HeartbeatResponse: ...

class LeaveGroupRequest(Message):
    """The LeaveGroup request body (API key 13, v0-5, flexible v4+).

    Fields:
        group_id: string, v0+, default ''
        member_id: string, v0-2, default ''
        members: []MemberIdentity, v3+
    """
    API_KEY: ClassVar[Literal[13]]
    API_NAME: ClassVar[Literal["LeaveGroup"]]
    IS_REQUEST: ClassVar[Literal[True]]
    group_id: str
    member_id: str
    members: list[LeaveGroupRequest.MemberIdentity]
    def __init__(
        self,
        *,
        group_id: str = "",
        member_id: str = "",
        members: list[LeaveGroupRequest.MemberIdentity] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> LeaveGroupRequest: ...
    class MemberIdentity(Struct):
        """A MemberIdentity struct of LeaveGroupRequest.

        Fields:
            member_id: string, v3+, default ''
            group_instance_id: string, v3+, nullable v3+, default None
            reason: string, v5+, nullable v5+, default None, ignorable
        """
        member_id: str
        group_instance_id: str | None
        reason: str | None
        def __init__(
            self,
            *,
            member_id: str = "",
            group_instance_id: str | None = None,
            reason: str | None = None,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class LeaveGroupResponse(Message):
    """The LeaveGroup response body (API key 13, v0-5, flexible v4+).

    Fields:
        throttle_time_ms: int32, v1+, default 0, ignorable
        error_code: int16, v0+, default 0
        members: []MemberResponse, v3+
    """
    API_KEY: ClassVar[Literal[13]]
    API_NAME: ClassVar[Literal["LeaveGroup"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    error_code: int
    members: list[LeaveGroupResponse.MemberResponse]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        error_code: int = 0,
        members: list[LeaveGroupResponse.MemberResponse] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> LeaveGroupResponse: ...
    class MemberResponse(Struct):
        """A MemberResponse struct of LeaveGroupResponse.

        Fields:
            member_id: string, v3+, default ''
            group_instance_id: string, v3+, nullable v3+, default ''
            error_code: int16, v3+, default 0
        """
        member_id: str
        group_instance_id: str | None
        error_code: int
        def __init__(
            self,
            *,
            member_id: str = "",
            group_instance_id: str | None = "",
            error_code: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class SyncGroupRequest(Message):
    """The SyncGroup request body (API key 14, v0-5, flexible v4+).

    Fields:
        group_id: string, v0+, default ''
        generation_id: int32, v0+, default 0
        member_id: string, v0+, default ''
        group_instance_id: string, v3+, nullable v3+, default None
        protocol_type: string, v5+, nullable v5+, default None, ignorable
        protocol_name: string, v5+, nullable v5+, default None, ignorable
        assignments: []SyncGroupRequestAssignment, v0+
    """
    API_KEY: ClassVar[Literal[14]]
    API_NAME: ClassVar[Literal["SyncGroup"]]
    IS_REQUEST: ClassVar[Literal[True]]
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str | None
    protocol_name: str | None
    assignments: list[SyncGroupRequest.SyncGroupRequestAssignment]
    def __init__(
        self,
        *,
        group_id: str = "",
        generation_id: int = 0,
        member_id: str = "",
        group_instance_id: str | None = None,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
        assignments: list[SyncGroupRequest.SyncGroupRequestAssignment] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> SyncGroupRequest: ...
    class SyncGroupRequestAssignment(Struct):
        """A SyncGroupRequestAssignment struct of SyncGroupRequest.

        Fields:
            member_id: string, v0+, default ''
            assignment: bytes, v0+, default b''
        """
        member_id: str
        assignment: bytes
        def __init__(
            self,
            *,
            member_id: str = "",
            assignment: bytes = b'',
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class SyncGroupResponse(Message):
    """The SyncGroup response body (API key 14, v0-5, flexible v4+).

    Fields:
        throttle_time_ms: int32, v1+, default 0, ignorable
        error_code: int16, v0+, default 0
        protocol_type: string, v5+, nullable v5+, default None, ignorable
        protocol_name: string, v5+, nullable v5+, default None, ignorable
        assignment: bytes, v0+, default b''
    """
    API_KEY: ClassVar[Literal[14]]
    API_NAME: ClassVar[Literal["SyncGroup"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    error_code: int
    protocol_type: str | None
    protocol_name: str | None
    assignment: bytes
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        error_code: int = 0,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
        assignment: bytes = b'',
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> SyncGroupResponse: ...

class DescribeGroupsRequest(Message):
    """The DescribeGroups request body (API key 15, v0-5, flexible v5+).

    Fields:
        groups: []string, v0+
        include_authorized_operations: bool, v3+, default False
    """
    API_KEY: ClassVar[Literal[15]]
    API_NAME: ClassVar[Literal["DescribeGroups"]]
    IS_REQUEST: ClassVar[Literal[True]]
    groups: list[str]
    include_authorized_operations: bool
    def __init__(
        self,
        *,
        groups: list[str] = ...,
        include_authorized_operations: bool = False,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> DescribeGroupsRequest: ...

class DescribeGroupsResponse(Message):
    """The DescribeGroups response body (API key 15, v0-5, flexible v5+).

    Fields:
        throttle_time_ms: int32, v1+, default 0, ignorable
        groups: []DescribedGroup, v0+
    """
    API_KEY: ClassVar[Literal[15]]
    API_NAME: ClassVar[Literal["DescribeGroups"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    groups: list[DescribeGroupsResponse.DescribedGroup]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        groups: list[DescribeGroupsResponse.DescribedGroup] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> DescribeGroupsResponse: ...
    class DescribedGroup(Struct):
        """A DescribedGroup struct of DescribeGroupsResponse.

        Fields:
            error_code: int16, v0+, default 0
            group_id: string, v0+, default ''
            group_state: string, v0+, default ''
            protocol_type: string, v0+, default ''
            protocol_data: string, v0+, default ''
            members: []DescribedGroupMember, v0+
            authorized_operations: int32, v3+, default -2147483648
        """
        error_code: int
        group_id: str
        group_state: str
        protocol_type: str
        protocol_data: str
        members: list[DescribeGroupsResponse.DescribedGroupMember]
        authorized_operations: int
        def __init__(
            self,
            *,
            error_code: int = 0,
            group_id: str = "",
            group_state: str = "",
            protocol_type: str = "",
            protocol_data: str = "",
            members: list[DescribeGroupsResponse.DescribedGroupMember] = ...,
            authorized_operations: int = -2147483648,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class DescribedGroupMember(Struct):
        """A DescribedGroupMember struct of DescribeGroupsResponse.

        Fields:
            member_id: string, v0+, default ''
            group_instance_id: string, v4+, nullable v4+, default None, ignorable
            client_id: string, v0+, default ''
            client_host: string, v0+, default ''
            member_metadata: bytes, v0+, default b''
            member_assignment: bytes, v0+, default b''
        """
        member_id: str
        group_instance_id: str | None
        client_id: str
        client_host: str
        member_metadata: bytes
        member_assignment: bytes
        def __init__(
            self,
            *,
            member_id: str = "",
            group_instance_id: str | None = None,
            client_id: str = "",
            client_host: str = "",
            member_metadata: bytes = b'',
            member_assignment: bytes = b'',
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class ListGroupsRequest(Message):
    """The ListGroups request body (API key 16, v0-5, flexible v3+).

    Fields:
        states_filter: []string, v4+
        types_filter: []string, v5+
    """
    API_KEY: ClassVar[Literal[16]]
    API_NAME: ClassVar[Literal["ListGroups"]]
    IS_REQUEST: ClassVar[Literal[True]]
    states_filter: list[str]
    types_filter: list[str]
    def __init__(
        self,
        *,
        states_filter: list[str] = ...,
        types_filter: list[str] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> ListGroupsRequest: ...

class ListGroupsResponse(Message):
    """The ListGroups response body (API key 16, v0-5, flexible v3+).

    Fields:
        throttle_time_ms: int32, v1+, default 0, ignorable
        error_code: int16, v0+, default 0
        groups: []ListedGroup, v0+
    """
    API_KEY: ClassVar[Literal[16]]
    API_NAME: ClassVar[Literal["ListGroups"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    error_code: int
    groups: list[ListGroupsResponse.ListedGroup]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        error_code: int = 0,
        groups: list[ListGroupsResponse.ListedGroup] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> ListGroupsResponse: ...
    class ListedGroup(Struct):
        """A ListedGroup struct of ListGroupsResponse.

        Fields:
            group_id: string, v0+, default ''
            protocol_type: string, v0+, default ''
            group_state: string, v4+, default '', ignorable
            group_type: string, v5+, default '', ignorable
        """
        group_id: str
        protocol_type: str
        group_state: str
        group_type: str
        def __init__(
            self,
            *,
            group_id: str = "",
            protocol_type: str = "",
            group_state: str = "",
            group_type: str = "",
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class SaslHandshakeRequest(Message):
    """The SaslHandshake request body (API key 17, v0-1, flexible vnone).

    Fields:
        mechanism: string, v0+, default ''
    """
    API_KEY: ClassVar[Literal[17]]
    API_NAME: ClassVar[Literal["SaslHandshake"]]
    IS_REQUEST: ClassVar[Literal[True]]
    mechanism: str
    def __init__(
        self,
        *,
        mechanism: str = "",
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> SaslHandshakeRequest: ...

class SaslHandshakeResponse(Message):
    """The SaslHandshake response body (API key 17, v0-1, flexible vnone).

    Fields:
        error_code: int16, v0+, default 0
        mechanisms: []string, v0+
    """
    API_KEY: ClassVar[Literal[17]]
    API_NAME: ClassVar[Literal["SaslHandshake"]]
    IS_REQUEST: ClassVar[Literal[False]]
    error_code: int
    mechanisms: list[str]
    def __init__(
        self,
        *,
        error_code: int = 0,
        mechanisms: list[str] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> SaslHandshakeResponse: ...

class ApiVersionsRequest(Message):
    """The ApiVersions request body (API key 18, v0-4, flexible v3+).

    Fields:
        client_software_name: string, v3+, default '', ignorable
        client_software_version: string, v3+, default '', ignorable
    """
    API_KEY: ClassVar[Literal[18]]
    API_NAME: ClassVar[Literal["ApiVersions"]]
    IS_REQUEST: ClassVar[Literal[True]]
    client_software_name: str
    client_software_version: str
    def __init__(
        self,
        *,
        client_software_name: str = "",
        client_software_version: str = "",
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> ApiVersionsRequest: ...

class ApiVersionsResponse(Message):
    """The ApiVersions response body (API key 18, v0-4, flexible v3+).

    Fields:
        error_code: int16, v0+, default 0
        api_keys: []ApiVersion, v0+
        throttle_time_ms: int32, v1+, default 0, ignorable
        supported_features: []SupportedFeatureKey, v3+, tag 0, ignorable
        finalized_features_epoch: int64, v3+, tag 1, default -1, ignorable
        finalized_features: []FinalizedFeatureKey, v3+, tag 2, ignorable
        zk_migration_ready: bool, v3+, tag 3, default False, ignorable
    """
    API_KEY: ClassVar[Literal[18]]
    API_NAME: ClassVar[Literal["ApiVersions"]]
    IS_REQUEST: ClassVar[Literal[False]]
    error_code: int
    api_keys: list[ApiVersionsResponse.ApiVersion]
    throttle_time_ms: int
    supported_features: list[ApiVersionsResponse.SupportedFeatureKey]
    finalized_features_epoch: int
    finalized_features: list[ApiVersionsResponse.FinalizedFeatureKey]
    zk_migration_ready: bool
    def __init__(
        self,
        *,
        error_code: int = 0,
        api_keys: list[ApiVersionsResponse.ApiVersion] = ...,
        throttle_time_ms: int = 0,
        supported_features: list[ApiVersionsResponse.SupportedFeatureKey] = ...,
        finalized_features_epoch: int = -1,
        finalized_features: list[ApiVersionsResponse.FinalizedFeatureKey] = ...,
        zk_migration_ready: bool = False,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> ApiVersionsResponse: ...
    class ApiVersion(Struct):
        """A ApiVersion struct of ApiVersionsResponse.

        Fields:
            api_key: int16, v0+, default 0
            min_version: int16, v0+, default 0
            max_version: int16, v0+, default 0
        """
        api_key: int
        min_version: int
        max_version: int
        def __init__(
            self,
            *,
            api_key: int = 0,
            min_version: int = 0,
            max_version: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class SupportedFeatureKey(Struct):
        """A SupportedFeatureKey struct of ApiVersionsResponse.

        Fields:
            name: string, v3+, default ''
            min_version: int16, v3+, default 0
            max_version: int16, v3+, default 0
        """
        name: str
        min_version: int
        max_version: int
        def __init__(
            self,
            *,
            name: str = "",
            min_version: int = 0,
            max_version: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class FinalizedFeatureKey(Struct):
        """A FinalizedFeatureKey struct of ApiVersionsResponse.

        Fields:
            name: string, v3+, default ''
            max_version_level: int16, v3+, default 0
            min_version_level: int16, v3+, default 0
        """
        name: str
        max_version_level: int
        min_version_level: int
        def __init__(
            self,
            *,
            name: str = "",
            max_version_level: int = 0,
            min_version_level: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class CreateTopicsRequest(Message):
    """The CreateTopics request body (API key 19, v0-7, flexible v5+).

    Fields:
        topics: []CreatableTopic, v0+
        timeout_ms: int32, v0+, default 60000
        validate_only: bool, v1+, default False
    """
    API_KEY: ClassVar[Literal[19]]
    API_NAME: ClassVar[Literal["CreateTopics"]]
    IS_REQUEST: ClassVar[Literal[True]]
    topics: list[CreateTopicsRequest.CreatableTopic]
    timeout_ms: int
    validate_only: bool
    def __init__(
        self,
        *,
        topics: list[CreateTopicsRequest.CreatableTopic] = ...,
        timeout_ms: int = 60000,
        validate_only: bool = False,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> CreateTopicsRequest: ...
    class CreatableTopic(Struct):
        """A CreatableTopic struct of CreateTopicsRequest.

        Fields:
            name: string, v0+, default ''
            num_partitions: int32, v0+, default 0
            replication_factor: int16, v0+, default 0
            assignments: []CreatableReplicaAssignment, v0+
            configs: []CreatableTopicConfig, v0+
        """
        name: str
        num_partitions: int
        replication_factor: int
        assignments: list[CreateTopicsRequest.CreatableReplicaAssignment]
        configs: list[CreateTopicsRequest.CreatableTopicConfig]
        def __init__(
            self,
            *,
            name: str = "",
            num_partitions: int = 0,
            replication_factor: int = 0,
            assignments: list[CreateTopicsRequest.CreatableReplicaAssignment] = ...,
            configs: list[CreateTopicsRequest.CreatableTopicConfig] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class CreatableReplicaAssignment(Struct):
        """A CreatableReplicaAssignment struct of CreateTopicsRequest.

        Fields:
            partition_index: int32, v0+, default 0
            broker_ids: []int32, v0+
        """
        partition_index: int
        broker_ids: list[int]
        def __init__(
            self,
            *,
            partition_index: int = 0,
            broker_ids: list[int] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class CreatableTopicConfig(Struct):
        """A CreatableTopicConfig struct of CreateTopicsRequest.

        Fields:
            name: string, v0+, default ''
            value: string, v0+, nullable v0+, default ''
        """
        name: str
        value: str | None
        def __init__(
            self,
            *,
            name: str = "",
            value: str | None = "",
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class CreateTopicsResponse(Message):
    """The CreateTopics response body (API key 19, v0-7, flexible v5+).

    Fields:
        throttle_time_ms: int32, v2+, default 0, ignorable
        topics: []CreatableTopicResult, v0+
    """
    API_KEY: ClassVar[Literal[19]]
    API_NAME: ClassVar[Literal["CreateTopics"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    topics: list[CreateTopicsResponse.CreatableTopicResult]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        topics: list[CreateTopicsResponse.CreatableTopicResult] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> CreateTopicsResponse: ...
    class CreatableTopicResult(Struct):
        """A CreatableTopicResult struct of CreateTopicsResponse.

        Fields:
            name: string, v0+, default ''
            topic_id: uuid, v7+, default UUID('00000000-0000-0000-0000-000000000000'), ignorable
            error_code: int16, v0+, default 0
            error_message: string, v1+, nullable v1+, default '', ignorable
            topic_config_error_code: int16, v5+, tag 0, default 0, ignorable
            num_partitions: int32, v5+, default -1, ignorable
            replication_factor: int16, v5+, default -1, ignorable
            configs: []CreatableTopicConfigs, v5+, nullable v5+, ignorable
        """
        name: str
        topic_id: UUID
        error_code: int
        error_message: str | None
        topic_config_error_code: int
        num_partitions: int
        replication_factor: int
        configs: list[CreateTopicsResponse.CreatableTopicConfigs] | None
        def __init__(
            self,
            *,
            name: str = "",
            topic_id: UUID = ...,
            error_code: int = 0,
            error_message: str | None = "",
            topic_config_error_code: int = 0,
            num_partitions: int = -1,
            replication_factor: int = -1,
            configs: list[CreateTopicsResponse.CreatableTopicConfigs] | None = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class CreatableTopicConfigs(Struct):
        """A CreatableTopicConfigs struct of CreateTopicsResponse.

        Fields:
            name: string, v5+, default ''
            value: string, v5+, nullable v5+, default ''
            read_only: bool, v5+, default False
            config_source: int8, v5+, default -1, ignorable
            is_sensitive: bool, v5+, default False
        """
        name: str
        value: str | None
        read_only: bool
        config_source: int
        is_sensitive: bool
        def __init__(
            self,
            *,
            name: str = "",
            value: str | None = "",
            read_only: bool = False,
            config_source: int = -1,
            is_sensitive: bool = False,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class DeleteTopicsRequest(Message):
    """The DeleteTopics request body (API key 20, v0-6, flexible v4+).

    Fields:
        topics: []DeleteTopicState, v6+
        topic_names: []string, v0-5, ignorable
        timeout_ms: int32, v0+, default 0
    """
    API_KEY: ClassVar[Literal[20]]
    API_NAME: ClassVar[Literal["DeleteTopics"]]
    IS_REQUEST: ClassVar[Literal[True]]
    topics: list[DeleteTopicsRequest.DeleteTopicState]
    topic_names: list[str]
    timeout_ms: int
    def __init__(
        self,
        *,
        topics: list[DeleteTopicsRequest.DeleteTopicState] = ...,
        topic_names: list[str] = ...,
        timeout_ms: int = 0,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> DeleteTopicsRequest: ...
    class DeleteTopicState(Struct):
        """A DeleteTopicState struct of DeleteTopicsRequest.

        Fields:
            name: string, v6+, nullable v6+, default None
            topic_id: uuid, v6+, default UUID('00000000-0000-0000-0000-000000000000')
        """
        name: str | None
        topic_id: UUID
        def __init__(
            self,
            *,
            name: str | None = None,
            topic_id: UUID = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class DeleteTopicsResponse(Message):
    """The DeleteTopics response body (API key 20, v0-6, flexible v4+).

    Fields:
        throttle_time_ms: int32, v1+, default 0, ignorable
        responses: []DeletableTopicResult, v0+
    """
    API_KEY: ClassVar[Literal[20]]
    API_NAME: ClassVar[Literal["DeleteTopics"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    responses: list[DeleteTopicsResponse.DeletableTopicResult]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        responses: list[DeleteTopicsResponse.DeletableTopicResult] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> DeleteTopicsResponse: ...
    class DeletableTopicResult(Struct):
        """A DeletableTopicResult struct of DeleteTopicsResponse.

        Fields:
            name: string, v0+, nullable v6+, default ''
            topic_id: uuid, v6+, default UUID('00000000-0000-0000-0000-000000000000'), ignorable
            error_code: int16, v0+, default 0
            error_message: string, v5+, nullable v5+, default None, ignorable
        """
        name: str | None
        topic_id: UUID
        error_code: int
        error_message: str | None
        def __init__(
            self,
            *,
            name: str | None = "",
            topic_id: UUID = ...,
            error_code: int = 0,
            error_message: str | None = None,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class DeleteRecordsRequest(Message):
    """The DeleteRecords request body (API key 21, v0-2, flexible v2+).

    Fields:
        topics: []DeleteRecordsTopic, v0+
        timeout_ms: int32, v0+, default 0
    """
    API_KEY: ClassVar[Literal[21]]
    API_NAME: ClassVar[Literal["DeleteRecords"]]
    IS_REQUEST: ClassVar[Literal[True]]
    topics: list[DeleteRecordsRequest.DeleteRecordsTopic]
    timeout_ms: int
    def __init__(
        self,
        *,
        topics: list[DeleteRecordsRequest.DeleteRecordsTopic] = ...,
        timeout_ms: int = 0,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> DeleteRecordsRequest: ...
    class DeleteRecordsTopic(Struct):
        """A DeleteRecordsTopic struct of DeleteRecordsRequest.

        Fields:
            name: string, v0+, default ''
            partitions: []DeleteRecordsPartition, v0+
        """
        name: str
        partitions: list[DeleteRecordsRequest.DeleteRecordsPartition]
        def __init__(
            self,
            *,
            name: str = "",
            partitions: list[DeleteRecordsRequest.DeleteRecordsPartition] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class DeleteRecordsPartition(Struct):
        """A DeleteRecordsPartition struct of DeleteRecordsRequest.

        Fields:
            partition_index: int32, v0+, default 0
            offset: int64, v0+, default 0
        """
        partition_index: int
        offset: int
        def __init__(
            self,
            *,
            partition_index: int = 0,
            offset: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class DeleteRecordsResponse(Message):
    """The DeleteRecords response body (API key 21, v0-2, flexible v2+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        topics: []DeleteRecordsTopicResult, v0+
    """
    API_KEY: ClassVar[Literal[21]]
    API_NAME: ClassVar[Literal["DeleteRecords"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    topics: list[DeleteRecordsResponse.DeleteRecordsTopicResult]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        topics: list[DeleteRecordsResponse.DeleteRecordsTopicResult] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> DeleteRecordsResponse: ...
    class DeleteRecordsTopicResult(Struct):
        """A DeleteRecordsTopicResult struct of DeleteRecordsResponse.

        Fields:
            name: string, v0+, default ''
            partitions: []DeleteRecordsPartitionResult, v0+
        """
        name: str
        partitions: list[DeleteRecordsResponse.DeleteRecordsPartitionResult]
        def __init__(
            self,
            *,
            name: str = "",
            partitions: list[DeleteRecordsResponse.DeleteRecordsPartitionResult] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class DeleteRecordsPartitionResult(Struct):
        """A DeleteRecordsPartitionResult struct of DeleteRecordsResponse.

        Fields:
            partition_index: int32, v0+, default 0
            low_watermark: int64, v0+, default 0
            error_code: int16, v0+, default 0
        """
        partition_index: int
        low_watermark: int
        error_code: int
        def __init__(
            self,
            *,
            partition_index: int = 0,
            low_watermark: int = 0,
            error_code: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class InitProducerIdRequest(Message):
    """The InitProducerId request body (API key 22, v0-5, flexible v2+).

    Fields:
        transactional_id: string, v0+, nullable v0+, default ''
        transaction_timeout_ms: int32, v0+, default 0
        producer_id: int64, v3+, default -1
        producer_epoch: int16, v3+, default -1
    """
    API_KEY: ClassVar[Literal[22]]
    API_NAME: ClassVar[Literal["InitProducerId"]]
    IS_REQUEST: ClassVar[Literal[True]]
    transactional_id: str | None
    transaction_timeout_ms: int
    producer_id: int
    producer_epoch: int
    def __init__(
        self,
        *,
        transactional_id: str | None = "",
        transaction_timeout_ms: int = 0,
        producer_id: int = -1,
        producer_epoch: int = -1,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> InitProducerIdRequest: ...

class InitProducerIdResponse(Message):
    """The InitProducerId response body (API key 22, v0-5, flexible v2+).

    Fields:
        throttle_time_ms: int32, v0+, default 0, ignorable
        error_code: int16, v0+, default 0
        producer_id: int64, v0+, default -1
        producer_epoch: int16, v0+, default 0
    """
    API_KEY: ClassVar[Literal[22]]
    API_NAME: ClassVar[Literal["InitProducerId"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    error_code: int
    producer_id: int
    producer_epoch: int
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        error_code: int = 0,
        producer_id: int = -1,
        producer_epoch: int = 0,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> InitProducerIdResponse: ...

class OffsetForLeaderEpochRequest(Message):
    """The OffsetForLeaderEpoch request body (API key 23, v0-4, flexible v4+).

    Fields:
        replica_id: int32, v3+, default -2, ignorable
        topics: []OffsetForLeaderTopic, v0+
    """
    API_KEY: ClassVar[Literal[23]]
    API_NAME: ClassVar[Literal["OffsetForLeaderEpoch"]]
    IS_REQUEST: ClassVar[Literal[True]]
    replica_id: int
    topics: list[OffsetForLeaderEpochRequest.OffsetForLeaderTopic]
    def __init__(
        self,
        *,
        replica_id: int = -2,
        topics: list[OffsetForLeaderEpochRequest.OffsetForLeaderTopic] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> OffsetForLeaderEpochRequest: ...
    class OffsetForLeaderTopic(Struct):
        """A OffsetForLeaderTopic struct of OffsetForLeaderEpochRequest.

        Fields:
            topic: string, v0+, default ''
            partitions: []OffsetForLeaderPartition, v0+
        """
        topic: str
        partitions: list[OffsetForLeaderEpochRequest.OffsetForLeaderPartition]
        def __init__(
            self,
            *,
            topic: str = "",
            partitions: list[OffsetForLeaderEpochRequest.OffsetForLeaderPartition] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class OffsetForLeaderPartition(Struct):
        """A OffsetForLeaderPartition struct of OffsetForLeaderEpochRequest.

        Fields:
            partition: int32, v0+, default 0
            current_leader_epoch: int32, v2+, default -1, ignorable
            leader_epoch: int32, v0+, default 0
        """
        partition: int
        current_leader_epoch: int
        leader_epoch: int
        def __init__(
            self,
            *,
            partition: int = 0,
            current_leader_epoch: int = -1,
            leader_epoch: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class OffsetForLeaderEpochResponse(Message):
    """The OffsetForLeaderEpoch response body (API key 23, v0-4, flexible v4+).

    Fields:
        throttle_time_ms: int32, v2+, default 0, ignorable
        topics: []OffsetForLeaderTopicResult, v0+
    """
    API_KEY: ClassVar[Literal[23]]
    API_NAME: ClassVar[Literal["OffsetForLeaderEpoch"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    topics: list[OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        topics: list[OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> OffsetForLeaderEpochResponse: ...
    class OffsetForLeaderTopicResult(Struct):
        """A OffsetForLeaderTopicResult struct of OffsetForLeaderEpochResponse.

        Fields:
            topic: string, v0+, default ''
            partitions: []EpochEndOffset, v0+
        """
        topic: str
        partitions: list[OffsetForLeaderEpochResponse.EpochEndOffset]
        def __init__(
            self,
            *,
            topic: str = "",
            partitions: list[OffsetForLeaderEpochResponse.EpochEndOffset] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class EpochEndOffset(Struct):
        """A EpochEndOffset struct of OffsetForLeaderEpochResponse.

        Fields:
            error_code: int16, v0+, default 0
            partition: int32, v0+, default 0
            leader_epoch: int32, v1+, default -1, ignorable
            end_offset: int64, v0+, default -1
        """
        error_code: int
        partition: int
        leader_epoch: int
        end_offset: int
        def __init__(
            self,
            *,
            error_code: int = 0,
            partition: int = 0,
            leader_epoch: int = -1,
            end_offset: int = -1,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class AddPartitionsToTxnRequest(Message):
    """The AddPartitionsToTxn request body (API key 24, v0-5, flexible v3+).

    Fields:
        transactions: []AddPartitionsToTxnTransaction, v4+
        v3_and_below_transactional_id: string, v0-3, default ''
        v3_and_below_producer_id: int64, v0-3, default 0
        v3_and_below_producer_epoch: int16, v0-3, default 0
        v3_and_below_topics: []AddPartitionsToTxnTopic, v0-3
    """
    API_KEY: ClassVar[Literal[24]]
    API_NAME: ClassVar[Literal["AddPartitionsToTxn"]]
    IS_REQUEST: ClassVar[Literal[True]]
    transactions: list[AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction]
    v3_and_below_transactional_id: str
    v3_and_below_producer_id: int
    v3_and_below_producer_epoch: int
    v3_and_below_topics: list[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic]
    def __init__(
        self,
        *,
        transactions: list[AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction] = ...,
        v3_and_below_transactional_id: str = "",
        v3_and_below_producer_id: int = 0,
        v3_and_below_producer_epoch: int = 0,
        v3_and_below_topics: list[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> AddPartitionsToTxnRequest: ...
    class AddPartitionsToTxnTransaction(Struct):
        """A AddPartitionsToTxnTransaction struct of AddPartitionsToTxnRequest.

        Fields:
            transactional_id: string, v4+, default ''
            producer_id: int64, v4+, default 0
            producer_epoch: int16, v4+, default 0
            verify_only: bool, v4+, default False
            topics: []AddPartitionsToTxnTopic, v4+
        """
        transactional_id: str
        producer_id: int
        producer_epoch: int
        verify_only: bool
        topics: list[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic]
        def __init__(
            self,
            *,
            transactional_id: str = "",
            producer_id: int = 0,
            producer_epoch: int = 0,
            verify_only: bool = False,
            topics: list[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class AddPartitionsToTxnTopic(Struct):
        """A AddPartitionsToTxnTopic struct of AddPartitionsToTxnRequest.

        Fields:
            name: string, v0+, default ''
            partitions: []int32, v0+
        """
        name: str
        partitions: list[int]
        def __init__(
            self,
            *,
            name: str = "",
            partitions: list[int] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class AddPartitionsToTxnResponse(Message):
    """The AddPartitionsToTxn response body (API key 24, v0-5, flexible v3+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        error_code: int16, v4+, default 0, ignorable
        results_by_transaction: []AddPartitionsToTxnResult, v4+
        results_by_topic_v3_and_below: []AddPartitionsToTxnTopicResult, v0-3
    """
    API_KEY: ClassVar[Literal[24]]
    API_NAME: ClassVar[Literal["AddPartitionsToTxn"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    error_code: int
    results_by_transaction: list[AddPartitionsToTxnResponse.AddPartitionsToTxnResult]
    results_by_topic_v3_and_below: list[AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        error_code: int = 0,
        results_by_transaction: list[AddPartitionsToTxnResponse.AddPartitionsToTxnResult] = ...,
        results_by_topic_v3_and_below: list[AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> AddPartitionsToTxnResponse: ...
    class AddPartitionsToTxnResult(Struct):
        """A AddPartitionsToTxnResult struct of AddPartitionsToTxnResponse.

        Fields:
            transactional_id: string, v4+, default ''
            topic_results: []AddPartitionsToTxnTopicResult, v4+
        """
        transactional_id: str
        topic_results: list[AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult]
        def __init__(
            self,
            *,
            transactional_id: str = "",
            topic_results: list[AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class AddPartitionsToTxnTopicResult(Struct):
        """A AddPartitionsToTxnTopicResult struct of AddPartitionsToTxnResponse.

        Fields:
            name: string, v0+, default ''
            results_by_partition: []AddPartitionsToTxnPartitionResult, v0+
        """
        name: str
        results_by_partition: list[AddPartitionsToTxnResponse.AddPartitionsToTxnPartitionResult]
        def __init__(
            self,
            *,
            name: str = "",
            results_by_partition: list[AddPartitionsToTxnResponse.AddPartitionsToTxnPartitionResult] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class AddPartitionsToTxnPartitionResult(Struct):
        """A AddPartitionsToTxnPartitionResult struct of AddPartitionsToTxnResponse.

        Fields:
            partition_index: int32, v0+, default 0
            partition_error_code: int16, v0+, default 0
        """
        partition_index: int
        partition_error_code: int
        def __init__(
            self,
            *,
            partition_index: int = 0,
            partition_error_code: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class AddOffsetsToTxnRequest(Message):
    """The AddOffsetsToTxn request body (API key 25, v0-4, flexible v3+).

    Fields:
        transactional_id: string, v0+, default ''
        producer_id: int64, v0+, default 0
        producer_epoch: int16, v0+, default 0
        group_id: string, v0+, default ''
    """
    API_KEY: ClassVar[Literal[25]]
    API_NAME: ClassVar[Literal["AddOffsetsToTxn"]]
    IS_REQUEST: ClassVar[Literal[True]]
    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str
    def __init__(
        self,
        *,
        transactional_id: str = "",
        producer_id: int = 0,
        producer_epoch: int = 0,
        group_id: str = "",
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> AddOffsetsToTxnRequest: ...

class AddOffsetsToTxnResponse(Message):
    """The AddOffsetsToTxn response body (API key 25, v0-4, flexible v3+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        error_code: int16, v0+, default 0
    """
    API_KEY: ClassVar[Literal[25]]
    API_NAME: ClassVar[Literal["AddOffsetsToTxn"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    error_code: int
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        error_code: int = 0,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> AddOffsetsToTxnResponse: ...

class EndTxnRequest(Message):
    """The EndTxn request body (API key 26, v0-5, flexible v3+).

    Fields:
        transactional_id: string, v0+, default ''
        producer_id: int64, v0+, default 0
        producer_epoch: int16, v0+, default 0
        committed: bool, v0+, default False
    """
    API_KEY: ClassVar[Literal[26]]
    API_NAME: ClassVar[Literal["EndTxn"]]
    IS_REQUEST: ClassVar[Literal[True]]
    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool
    def __init__(
        self,
        *,
        transactional_id: str = "",
        producer_id: int = 0,
        producer_epoch: int = 0,
        committed: bool = False,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> EndTxnRequest: ...

class EndTxnResponse(Message):
    """The EndTxn response body (API key 26, v0-5, flexible v3+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        error_code: int16, v0+, default 0
        producer_id: int64, v5+, default -1, ignorable
        producer_epoch: int16, v5+, default -1, ignorable
    """
    API_KEY: ClassVar[Literal[26]]
    API_NAME: ClassVar[Literal["EndTxn"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    error_code: int
    producer_id: int
    producer_epoch: int
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        error_code: int = 0,
        producer_id: int = -1,
        producer_epoch: int = -1,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> EndTxnResponse: ...

class WriteTxnMarkersRequest(Message):
    """The WriteTxnMarkers request body (API key 27, v0-1, flexible v1+).

    Fields:
        markers: []WritableTxnMarker, v0+
    """
    API_KEY: ClassVar[Literal[27]]
    API_NAME: ClassVar[Literal["WriteTxnMarkers"]]
    IS_REQUEST: ClassVar[Literal[True]]
    markers: list[WriteTxnMarkersRequest.WritableTxnMarker]
    def __init__(
        self,
        *,
        markers: list[WriteTxnMarkersRequest.WritableTxnMarker] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> WriteTxnMarkersRequest: ...
    class WritableTxnMarker(Struct):
        """A WritableTxnMarker struct of WriteTxnMarkersRequest.

        Fields:
            producer_id: int64, v0+, default 0
            producer_epoch: int16, v0+, default 0
            transaction_result: bool, v0+, default False
            topics: []WritableTxnMarkerTopic, v0+
            coordinator_epoch: int32, v0+, default 0
        """
        producer_id: int
        producer_epoch: int
        transaction_result: bool
        topics: list[WriteTxnMarkersRequest.WritableTxnMarkerTopic]
        coordinator_epoch: int
        def __init__(
            self,
            *,
            producer_id: int = 0,
            producer_epoch: int = 0,
            transaction_result: bool = False,
            topics: list[WriteTxnMarkersRequest.WritableTxnMarkerTopic] = ...,
            coordinator_epoch: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class WritableTxnMarkerTopic(Struct):
        """A WritableTxnMarkerTopic struct of WriteTxnMarkersRequest.

        Fields:
            name: string, v0+, default ''
            partition_indexes: []int32, v0+
        """
        name: str
        partition_indexes: list[int]
        def __init__(
            self,
            *,
            name: str = "",
            partition_indexes: list[int] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class WriteTxnMarkersResponse(Message):
    """The WriteTxnMarkers response body (API key 27, v0-1, flexible v1+).

    Fields:
        markers: []WritableTxnMarkerResult, v0+
    """
    API_KEY: ClassVar[Literal[27]]
    API_NAME: ClassVar[Literal["WriteTxnMarkers"]]
    IS_REQUEST: ClassVar[Literal[False]]
    markers: list[WriteTxnMarkersResponse.WritableTxnMarkerResult]
    def __init__(
        self,
        *,
        markers: list[WriteTxnMarkersResponse.WritableTxnMarkerResult] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> WriteTxnMarkersResponse: ...
    class WritableTxnMarkerResult(Struct):
        """A WritableTxnMarkerResult struct of WriteTxnMarkersResponse.

        Fields:
            producer_id: int64, v0+, default 0
            topics: []WritableTxnMarkerTopicResult, v0+
        """
        producer_id: int
        topics: list[WriteTxnMarkersResponse.WritableTxnMarkerTopicResult]
        def __init__(
            self,
            *,
            producer_id: int = 0,
            topics: list[WriteTxnMarkersResponse.WritableTxnMarkerTopicResult] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class WritableTxnMarkerTopicResult(Struct):
        """A WritableTxnMarkerTopicResult struct of WriteTxnMarkersResponse.

        Fields:
            name: string, v0+, default ''
            partitions: []WritableTxnMarkerPartitionResult, v0+
        """
        name: str
        partitions: list[WriteTxnMarkersResponse.WritableTxnMarkerPartitionResult]
        def __init__(
            self,
            *,
            name: str = "",
            partitions: list[WriteTxnMarkersResponse.WritableTxnMarkerPartitionResult] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class WritableTxnMarkerPartitionResult(Struct):
        """A WritableTxnMarkerPartitionResult struct of WriteTxnMarkersResponse.

        Fields:
            partition_index: int32, v0+, default 0
            error_code: int16, v0+, default 0
        """
        partition_index: int
        error_code: int
        def __init__(
            self,
            *,
            partition_index: int = 0,
            error_code: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class TxnOffsetCommitRequest(Message):
    """The TxnOffsetCommit request body (API key 28, v0-4, flexible v3+).

    Fields:
        transactional_id: string, v0+, default ''
        group_id: string, v0+, default ''
        producer_id: int64, v0+, default 0
        producer_epoch: int16, v0+, default 0
        generation_id: int32, v3+, default -1
        member_id: string, v3+, default ''
        group_instance_id: string, v3+, nullable v3+, default None
        topics: []TxnOffsetCommitRequestTopic, v0+
    """
    API_KEY: ClassVar[Literal[28]]
    API_NAME: ClassVar[Literal["TxnOffsetCommit"]]
    IS_REQUEST: ClassVar[Literal[True]]
    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    generation_id: int
    member_id: str
    group_instance_id: str | None
    topics: list[TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic]
    def __init__(
        self,
        *,
        transactional_id: str = "",
        group_id: str = "",
        producer_id: int = 0,
        producer_epoch: int = 0,
        generation_id: int = -1,
        member_id: str = "",
        group_instance_id: str | None = None,
        topics: list[TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> TxnOffsetCommitRequest: ...
    class TxnOffsetCommitRequestTopic(Struct):
        """A TxnOffsetCommitRequestTopic struct of TxnOffsetCommitRequest.

        Fields:
            name: string, v0+, default ''
            partitions: []TxnOffsetCommitRequestPartition, v0+
        """
        name: str
        partitions: list[TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition]
        def __init__(
            self,
            *,
            name: str = "",
            partitions: list[TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class TxnOffsetCommitRequestPartition(Struct):
        """A TxnOffsetCommitRequestPartition struct of TxnOffsetCommitRequest.

        Fields:
            partition_index: int32, v0+, default 0
            committed_offset: int64, v0+, default 0
            committed_leader_epoch: int32, v2+, default -1, ignorable
            committed_metadata: string, v0+, nullable v0+, default ''
        """
        partition_index: int
        committed_offset: int
        committed_leader_epoch: int
        committed_metadata: str | None
        def __init__(
            self,
            *,
            partition_index: int = 0,
            committed_offset: int = 0,
            committed_leader_epoch: int = -1,
            committed_metadata: str | None = "",
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class TxnOffsetCommitResponse(Message):
    """The TxnOffsetCommit response body (API key 28, v0-4, flexible v3+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        topics: []TxnOffsetCommitResponseTopic, v0+
    """
    API_KEY: ClassVar[Literal[28]]
    API_NAME: ClassVar[Literal["TxnOffsetCommit"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    topics: list[TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        topics: list[TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> TxnOffsetCommitResponse: ...
    class TxnOffsetCommitResponseTopic(Struct):
        """A TxnOffsetCommitResponseTopic struct of TxnOffsetCommitResponse.

        Fields:
            name: string, v0+, default ''
            partitions: []TxnOffsetCommitResponsePartition, v0+
        """
        name: str
        partitions: list[TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition]
        def __init__(
            self,
            *,
            name: str = "",
            partitions: list[TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class TxnOffsetCommitResponsePartition(Struct):
        """A TxnOffsetCommitResponsePartition struct of TxnOffsetCommitResponse.

        Fields:
            partition_index: int32, v0+, default 0
            error_code: int16, v0+, default 0
        """
        partition_index: int
        error_code: int
        def __init__(
            self,
            *,
            partition_index: int = 0,
            error_code: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class DescribeAclsRequest(Message):
    """The DescribeAcls request body (API key 29, v0-3, flexible v2+).

    Fields:
        resource_type_filter: int8, v0+, default 0
        resource_name_filter: string, v0+, nullable v0+, default ''
        pattern_type_filter: int8, v1+, default 3
        principal_filter: string, v0+, nullable v0+, default ''
        host_filter: string, v0+, nullable v0+, default ''
        operation: int8, v0+, default 0
        permission_type: int8, v0+, default 0
    """
    API_KEY: ClassVar[Literal[29]]
    API_NAME: ClassVar[Literal["DescribeAcls"]]
    IS_REQUEST: ClassVar[Literal[True]]
    resource_type_filter: int
    resource_name_filter: str | None
    pattern_type_filter: int
    principal_filter: str | None
    host_filter: str | None
    operation: int
    permission_type: int
    def __init__(
        self,
        *,
        resource_type_filter: int = 0,
        resource_name_filter: str | None = "",
        pattern_type_filter: int = 3,
        principal_filter: str | None = "",
        host_filter: str | None = "",
        operation: int = 0,
        permission_type: int = 0,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> DescribeAclsRequest: ...

class DescribeAclsResponse(Message):
    """The DescribeAcls response body (API key 29, v0-3, flexible v2+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        error_code: int16, v0+, default 0
        error_message: string, v0+, nullable v0+, default ''
        resources: []DescribeAclsResource, v0+
    """
    API_KEY: ClassVar[Literal[29]]
    API_NAME: ClassVar[Literal["DescribeAcls"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    resources: list[DescribeAclsResponse.DescribeAclsResource]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        error_code: int = 0,
        error_message: str | None = "",
        resources: list[DescribeAclsResponse.DescribeAclsResource] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> DescribeAclsResponse: ...
    class DescribeAclsResource(Struct):
        """A DescribeAclsResource struct of DescribeAclsResponse.

        Fields:
            resource_type: int8, v0+, default 0
            resource_name: string, v0+, default ''
            pattern_type: int8, v1+, default 3
            acls: []AclDescription, v0+
        """
        resource_type: int
        resource_name: str
        pattern_type: int
        acls: list[DescribeAclsResponse.AclDescription]
        def __init__(
            self,
            *,
            resource_type: int = 0,
            resource_name: str = "",
            pattern_type: int = 3,
            acls: list[DescribeAclsResponse.AclDescription] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class AclDescription(Struct):
        """A AclDescription struct of DescribeAclsResponse.

        Fields:
            principal: string, v0+, default ''
            host: string, v0+, default ''
            operation: int8, v0+, default 0
            permission_type: int8, v0+, default 0
        """
        principal: str
        host: str
        operation: int
        permission_type: int
        def __init__(
            self,
            *,
            principal: str = "",
            host: str = "",
            operation: int = 0,
            permission_type: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class CreateAclsRequest(Message):
    """The CreateAcls request body (API key 30, v0-3, flexible v2+).

    Fields:
        creations: []AclCreation, v0+
    """
    API_KEY: ClassVar[Literal[30]]
    API_NAME: ClassVar[Literal["CreateAcls"]]
    IS_REQUEST: ClassVar[Literal[True]]
    creations: list[CreateAclsRequest.AclCreation]
    def __init__(
        self,
        *,
        creations: list[CreateAclsRequest.AclCreation] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> CreateAclsRequest: ...
    class AclCreation(Struct):
        """A AclCreation struct of CreateAclsRequest.

        Fields:
            resource_type: int8, v0+, default 0
            resource_name: string, v0+, default ''
            resource_pattern_type: int8, v1+, default 3
            principal: string, v0+, default ''
            host: string, v0+, default ''
            operation: int8, v0+, default 0
            permission_type: int8, v0+, default 0
        """
        resource_type: int
        resource_name: str
        resource_pattern_type: int
        principal: str
        host: str
        operation: int
        permission_type: int
        def __init__(
            self,
            *,
            resource_type: int = 0,
            resource_name: str = "",
            resource_pattern_type: int = 3,
            principal: str = "",
            host: str = "",
            operation: int = 0,
            permission_type: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class CreateAclsResponse(Message):
    """The CreateAcls response body (API key 30, v0-3, flexible v2+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        results: []AclCreationResult, v0+
    """
    API_KEY: ClassVar[Literal[30]]
    API_NAME: ClassVar[Literal["CreateAcls"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    results: list[CreateAclsResponse.AclCreationResult]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        results: list[CreateAclsResponse.AclCreationResult] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> CreateAclsResponse: ...
    class AclCreationResult(Struct):
        """A AclCreationResult struct of CreateAclsResponse.

        Fields:
            error_code: int16, v0+, default 0
            error_message: string, v0+, nullable v0+, default ''
        """
        error_code: int
        error_message: str | None
        def __init__(
            self,
            *,
            error_code: int = 0,
            error_message: str | None = "",
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class DeleteAclsRequest(Message):
    """The DeleteAcls request body (API key 31, v0-3, flexible v2+).

    Fields:
        filters: []DeleteAclsFilter, v0+
    """
    API_KEY: ClassVar[Literal[31]]
    API_NAME: ClassVar[Literal["DeleteAcls"]]
    IS_REQUEST: ClassVar[Literal[True]]
    filters: list[DeleteAclsRequest.DeleteAclsFilter]
    def __init__(
        self,
        *,
        filters: list[DeleteAclsRequest.DeleteAclsFilter] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> DeleteAclsRequest: ...
    class DeleteAclsFilter(Struct):
        """A DeleteAclsFilter struct of DeleteAclsRequest.

        Fields:
            resource_type_filter: int8, v0+, default 0
            resource_name_filter: string, v0+, nullable v0+, default ''
            pattern_type_filter: int8, v1+, default 3
            principal_filter: string, v0+, nullable v0+, default ''
            host_filter: string, v0+, nullable v0+, default ''
            operation: int8, v0+, default 0
            permission_type: int8, v0+, default 0
        """
        resource_type_filter: int
        resource_name_filter: str | None
        pattern_type_filter: int
        principal_filter: str | None
        host_filter: str | None
        operation: int
        permission_type: int
        def __init__(
            self,
            *,
            resource_type_filter: int = 0,
            resource_name_filter: str | None = "",
            pattern_type_filter: int = 3,
            principal_filter: str | None = "",
            host_filter: str | None = "",
            operation: int = 0,
            permission_type: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class DeleteAclsResponse(Message):
    """The DeleteAcls response body (API key 31, v0-3, flexible v2+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        filter_results: []DeleteAclsFilterResult, v0+
    """
    API_KEY: ClassVar[Literal[31]]
    API_NAME: ClassVar[Literal["DeleteAcls"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    filter_results: list[DeleteAclsResponse.DeleteAclsFilterResult]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        filter_results: list[DeleteAclsResponse.DeleteAclsFilterResult] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> DeleteAclsResponse: ...
    class DeleteAclsFilterResult(Struct):
        """A DeleteAclsFilterResult struct of DeleteAclsResponse.

        Fields:
            error_code: int16, v0+, default 0
            error_message: string, v0+, nullable v0+, default ''
            matching_acls: []DeleteAclsMatchingAcl, v0+
        """
        error_code: int
        error_message: str | None
        matching_acls: list[DeleteAclsResponse.DeleteAclsMatchingAcl]
        def __init__(
            self,
            *,
            error_code: int = 0,
            error_message: str | None = "",
            matching_acls: list[DeleteAclsResponse.DeleteAclsMatchingAcl] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class DeleteAclsMatchingAcl(Struct):
        """A DeleteAclsMatchingAcl struct of DeleteAclsResponse.

        Fields:
            error_code: int16, v0+, default 0
            error_message: string, v0+, nullable v0+, default ''
            resource_type: int8, v0+, default 0
            resource_name: string, v0+, default ''
            pattern_type: int8, v1+, default 3
            principal: string, v0+, default ''
            host: string, v0+, default ''
            operation: int8, v0+, default 0
            permission_type: int8, v0+, default 0
        """
        error_code: int
        error_message: str | None
        resource_type: int
        resource_name: str
        pattern_type: int
        principal: str
        host: str
        operation: int
        permission_type: int
        def __init__(
            self,
            *,
            error_code: int = 0,
            error_message: str | None = "",
            resource_type: int = 0,
            resource_name: str = "",
            pattern_type: int = 3,
            principal: str = "",
            host: str = "",
            operation: int = 0,
            permission_type: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class DescribeConfigsRequest(Message):
    """The DescribeConfigs request body (API key 32, v0-4, flexible v4+).

    Fields:
        resources: []DescribeConfigsResource, v0+
        include_synonyms: bool, v1+, default False
        include_documentation: bool, v3+, default False
    """
    API_KEY: ClassVar[Literal[32]]
    API_NAME: ClassVar[Literal["DescribeConfigs"]]
    IS_REQUEST: ClassVar[Literal[True]]
    resources: list[DescribeConfigsRequest.DescribeConfigsResource]
    include_synonyms: bool
    include_documentation: bool
    def __init__(
        self,
        *,
        resources: list[DescribeConfigsRequest.DescribeConfigsResource] = ...,
        include_synonyms: bool = False,
        include_documentation: bool = False,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> DescribeConfigsRequest: ...
    class DescribeConfigsResource(Struct):
        """A DescribeConfigsResource struct of DescribeConfigsRequest.

        Fields:
            resource_type: int8, v0+, default 0
            resource_name: string, v0+, default ''
            configuration_keys: []string, v0+, nullable v0+
        """
        resource_type: int
        resource_name: str
        configuration_keys: list[str] | None
        def __init__(
            self,
            *,
            resource_type: int = 0,
            resource_name: str = "",
            configuration_keys: list[str] | None = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class DescribeConfigsResponse(Message):
    """The DescribeConfigs response body (API key 32, v0-4, flexible v4+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        results: []DescribeConfigsResult, v0+
    """
    API_KEY: ClassVar[Literal[32]]
    API_NAME: ClassVar[Literal["DescribeConfigs"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    results: list[DescribeConfigsResponse.DescribeConfigsResult]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        results: list[DescribeConfigsResponse.DescribeConfigsResult] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> DescribeConfigsResponse: ...
    class DescribeConfigsResult(Struct):
        """A DescribeConfigsResult struct of DescribeConfigsResponse.

        Fields:
            error_code: int16, v0+, default 0
            error_message: string, v0+, nullable v0+, default ''
            resource_type: int8, v0+, default 0
            resource_name: string, v0+, default ''
            configs: []DescribeConfigsResourceResult, v0+
        """
        error_code: int
        error_message: str | None
        resource_type: int
        resource_name: str
        configs: list[DescribeConfigsResponse.DescribeConfigsResourceResult]
        def __init__(
            self,
            *,
            error_code: int = 0,
            error_message: str | None = "",
            resource_type: int = 0,
            resource_name: str = "",
            configs: list[DescribeConfigsResponse.DescribeConfigsResourceResult] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class DescribeConfigsResourceResult(Struct):
        """A DescribeConfigsResourceResult struct of DescribeConfigsResponse.

        Fields:
            name: string, v0+, default ''
            value: string, v0+, nullable v0+, default ''
            read_only: bool, v0+, default False
            is_default: bool, v0, default False
            config_source: int8, v1+, default -1, ignorable
            is_sensitive: bool, v0+, default False
            synonyms: []DescribeConfigsSynonym, v1+, ignorable
            config_type: int8, v3+, default 0, ignorable
            documentation: string, v3+, nullable v3+, default '', ignorable
        """
        name: str
        value: str | None
        read_only: bool
        is_default: bool
        config_source: int
        is_sensitive: bool
        synonyms: list[DescribeConfigsResponse.DescribeConfigsSynonym]
        config_type: int
        documentation: str | None
        def __init__(
            self,
            *,
            name: str = "",
            value: str | None = "",
            read_only: bool = False,
            is_default: bool = False,
            config_source: int = -1,
            is_sensitive: bool = False,
            synonyms: list[DescribeConfigsResponse.DescribeConfigsSynonym] = ...,
            config_type: int = 0,
            documentation: str | None = "",
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class DescribeConfigsSynonym(Struct):
        """A DescribeConfigsSynonym struct of DescribeConfigsResponse.

        Fields:
            name: string, v1+, default ''
            value: string, v1+, nullable v1+, default ''
            source: int8, v1+, default 0
        """
        name: str
        value: str | None
        source: int
        def __init__(
            self,
            *,
            name: str = "",
            value: str | None = "",
            source: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class AlterConfigsRequest(Message):
    """The AlterConfigs request body (API key 33, v0-2, flexible v2+).

    Fields:
        resources: []AlterConfigsResource, v0+
        validate_only: bool, v0+, default False
    """
    API_KEY: ClassVar[Literal[33]]
    API_NAME: ClassVar[Literal["AlterConfigs"]]
    IS_REQUEST: ClassVar[Literal[True]]
    resources: list[AlterConfigsRequest.AlterConfigsResource]
    validate_only: bool
    def __init__(
        self,
        *,
        resources: list[AlterConfigsRequest.AlterConfigsResource] = ...,
        validate_only: bool = False,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> AlterConfigsRequest: ...
    class AlterConfigsResource(Struct):
        """A AlterConfigsResource struct of AlterConfigsRequest.

        Fields:
            resource_type: int8, v0+, default 0
            resource_name: string, v0+, default ''
            configs: []AlterableConfig, v0+
        """
        resource_type: int
        resource_name: str
        configs: list[AlterConfigsRequest.AlterableConfig]
        def __init__(
            self,
            *,
            resource_type: int = 0,
            resource_name: str = "",
            configs: list[AlterConfigsRequest.AlterableConfig] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class AlterableConfig(Struct):
        """A AlterableConfig struct of AlterConfigsRequest.

        Fields:
            name: string, v0+, default ''
            value: string, v0+, nullable v0+, default ''
        """
        name: str
        value: str | None
        def __init__(
            self,
            *,
            name: str = "",
            value: str | None = "",
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class AlterConfigsResponse(Message):
    """The AlterConfigs response body (API key 33, v0-2, flexible v2+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        responses: []AlterConfigsResourceResponse, v0+
    """
    API_KEY: ClassVar[Literal[33]]
    API_NAME: ClassVar[Literal["AlterConfigs"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    responses: list[AlterConfigsResponse.AlterConfigsResourceResponse]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        responses: list[AlterConfigsResponse.AlterConfigsResourceResponse] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> AlterConfigsResponse: ...
    class AlterConfigsResourceResponse(Struct):
        """A AlterConfigsResourceResponse struct of AlterConfigsResponse.

        Fields:
            error_code: int16, v0+, default 0
            error_message: string, v0+, nullable v0+, default ''
            resource_type: int8, v0+, default 0
            resource_name: string, v0+, default ''
        """
        error_code: int
        error_message: str | None
        resource_type: int
        resource_name: str
        def __init__(
            self,
            *,
            error_code: int = 0,
            error_message: str | None = "",
            resource_type: int = 0,
            resource_name: str = "",
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class DescribeLogDirsRequest(Message):
    """The DescribeLogDirs request body (API key 35, v0-4, flexible v2+).

    Fields:
        topics: []DescribableLogDirTopic, v0+, nullable v0+
    """
    API_KEY: ClassVar[Literal[35]]
    API_NAME: ClassVar[Literal["DescribeLogDirs"]]
    IS_REQUEST: ClassVar[Literal[True]]
    topics: list[DescribeLogDirsRequest.DescribableLogDirTopic] | None
    def __init__(
        self,
        *,
        topics: list[DescribeLogDirsRequest.DescribableLogDirTopic] | None = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> DescribeLogDirsRequest: ...
    class DescribableLogDirTopic(Struct):
        """A DescribableLogDirTopic struct of DescribeLogDirsRequest.

        Fields:
            topic: string, v0+, default ''
            partitions: []int32, v0+
        """
        topic: str
        partitions: list[int]
        def __init__(
            self,
            *,
            topic: str = "",
            partitions: list[int] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class DescribeLogDirsResponse(Message):
    """The DescribeLogDirs response body (API key 35, v0-4, flexible v2+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        error_code: int16, v3+, default 0, ignorable
        results: []DescribeLogDirsResult, v0+
    """
    API_KEY: ClassVar[Literal[35]]
    API_NAME: ClassVar[Literal["DescribeLogDirs"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    error_code: int
    results: list[DescribeLogDirsResponse.DescribeLogDirsResult]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        error_code: int = 0,
        results: list[DescribeLogDirsResponse.DescribeLogDirsResult] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> DescribeLogDirsResponse: ...
    class DescribeLogDirsResult(Struct):
        """A DescribeLogDirsResult struct of DescribeLogDirsResponse.

        Fields:
            error_code: int16, v0+, default 0
            log_dir: string, v0+, default ''
            topics: []DescribeLogDirsTopic, v0+
            total_bytes: int64, v4+, default -1, ignorable
            usable_bytes: int64, v4+, default -1, ignorable
        """
        error_code: int
        log_dir: str
        topics: list[DescribeLogDirsResponse.DescribeLogDirsTopic]
        total_bytes: int
        usable_bytes: int
        def __init__(
            self,
            *,
            error_code: int = 0,
            log_dir: str = "",
            topics: list[DescribeLogDirsResponse.DescribeLogDirsTopic] = ...,
            total_bytes: int = -1,
            usable_bytes: int = -1,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class DescribeLogDirsTopic(Struct):
        """A DescribeLogDirsTopic struct of DescribeLogDirsResponse.

        Fields:
            name: string, v0+, default ''
            partitions: []DescribeLogDirsPartition, v0+
        """
        name: str
        partitions: list[DescribeLogDirsResponse.DescribeLogDirsPartition]
        def __init__(
            self,
            *,
            name: str = "",
            partitions: list[DescribeLogDirsResponse.DescribeLogDirsPartition] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class DescribeLogDirsPartition(Struct):
        """A DescribeLogDirsPartition struct of DescribeLogDirsResponse.

        Fields:
            partition_index: int32, v0+, default 0
            partition_size: int64, v0+, default 0
            offset_lag: int64, v0+, default 0
            is_future_key: bool, v0+, default False
        """
        partition_index: int
        partition_size: int
        offset_lag: int
        is_future_key: bool
        def __init__(
            self,
            *,
            partition_index: int = 0,
            partition_size: int = 0,
            offset_lag: int = 0,
            is_future_key: bool = False,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class SaslAuthenticateRequest(Message):
    """The SaslAuthenticate request body (API key 36, v0-2, flexible v2+).

    Fields:
        auth_bytes: bytes, v0+, default b''
    """
    API_KEY: ClassVar[Literal[36]]
    API_NAME: ClassVar[Literal["SaslAuthenticate"]]
    IS_REQUEST: ClassVar[Literal[True]]
    auth_bytes: bytes
    def __init__(
        self,
        *,
        auth_bytes: bytes = b'',
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> SaslAuthenticateRequest: ...

class SaslAuthenticateResponse(Message):
    """The SaslAuthenticate response body (API key 36, v0-2, flexible v2+).

    Fields:
        error_code: int16, v0+, default 0
        error_message: string, v0+, nullable v0+, default ''
        auth_bytes: bytes, v0+, default b''
        session_lifetime_ms: int64, v1+, default 0, ignorable
    """
    API_KEY: ClassVar[Literal[36]]
    API_NAME: ClassVar[Literal["SaslAuthenticate"]]
    IS_REQUEST: ClassVar[Literal[False]]
    error_code: int
    error_message: str | None
    auth_bytes: bytes
    session_lifetime_ms: int
    def __init__(
        self,
        *,
        error_code: int = 0,
        error_message: str | None = "",
        auth_bytes: bytes = b'',
        session_lifetime_ms: int = 0,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> SaslAuthenticateResponse: ...

class CreatePartitionsRequest(Message):
    """The CreatePartitions request body (API key 37, v0-3, flexible v2+).

    Fields:
        topics: []CreatePartitionsTopic, v0+
        timeout_ms: int32, v0+, default 0
        validate_only: bool, v0+, default False
    """
    API_KEY: ClassVar[Literal[37]]
    API_NAME: ClassVar[Literal["CreatePartitions"]]
    IS_REQUEST: ClassVar[Literal[True]]
    topics: list[CreatePartitionsRequest.CreatePartitionsTopic]
    timeout_ms: int
    validate_only: bool
    def __init__(
        self,
        *,
        topics: list[CreatePartitionsRequest.CreatePartitionsTopic] = ...,
        timeout_ms: int = 0,
        validate_only: bool = False,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> CreatePartitionsRequest: ...
    class CreatePartitionsTopic(Struct):
        """A CreatePartitionsTopic struct of CreatePartitionsRequest.

        Fields:
            name: string, v0+, default ''
            count: int32, v0+, default 0
            assignments: []CreatePartitionsAssignment, v0+, nullable v0+
        """
        name: str
        count: int
        assignments: list[CreatePartitionsRequest.CreatePartitionsAssignment] | None
        def __init__(
            self,
            *,
            name: str = "",
            count: int = 0,
            assignments: list[CreatePartitionsRequest.CreatePartitionsAssignment] | None = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class CreatePartitionsAssignment(Struct):
        """A CreatePartitionsAssignment struct of CreatePartitionsRequest.

        Fields:
            broker_ids: []int32, v0+
        """
        broker_ids: list[int]
        def __init__(
            self,
            *,
            broker_ids: list[int] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class CreatePartitionsResponse(Message):
    """The CreatePartitions response body (API key 37, v0-3, flexible v2+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        results: []CreatePartitionsTopicResult, v0+
    """
    API_KEY: ClassVar[Literal[37]]
    API_NAME: ClassVar[Literal["CreatePartitions"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    results: list[CreatePartitionsResponse.CreatePartitionsTopicResult]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        results: list[CreatePartitionsResponse.CreatePartitionsTopicResult] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> CreatePartitionsResponse: ...
    class CreatePartitionsTopicResult(Struct):
        """A CreatePartitionsTopicResult struct of CreatePartitionsResponse.

        Fields:
            name: string, v0+, default ''
            error_code: int16, v0+, default 0
            error_message: string, v0+, nullable v0+, default None
        """
        name: str
        error_code: int
        error_message: str | None
        def __init__(
            self,
            *,
            name: str = "",
            error_code: int = 0,
            error_message: str | None = None,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class DeleteGroupsRequest(Message):
    """The DeleteGroups request body (API key 42, v0-2, flexible v2+).

    Fields:
        groups_names: []string, v0+
    """
    API_KEY: ClassVar[Literal[42]]
    API_NAME: ClassVar[Literal["DeleteGroups"]]
    IS_REQUEST: ClassVar[Literal[True]]
    groups_names: list[str]
    def __init__(
        self,
        *,
        groups_names: list[str] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> DeleteGroupsRequest: ...

class DeleteGroupsResponse(Message):
    """The DeleteGroups response body (API key 42, v0-2, flexible v2+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        results: []DeletableGroupResult, v0+
    """
    API_KEY: ClassVar[Literal[42]]
    API_NAME: ClassVar[Literal["DeleteGroups"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    results: list[DeleteGroupsResponse.DeletableGroupResult]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        results: list[DeleteGroupsResponse.DeletableGroupResult] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> DeleteGroupsResponse: ...
    class DeletableGroupResult(Struct):
        """A DeletableGroupResult struct of DeleteGroupsResponse.

        Fields:
            group_id: string, v0+, default ''
            error_code: int16, v0+, default 0
        """
        group_id: str
        error_code: int
        def __init__(
            self,
            *,
            group_id: str = "",
            error_code: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class ElectLeadersRequest(Message):
    """The ElectLeaders request body (API key 43, v0-2, flexible v2+).

    Fields:
        election_type: int8, v1+, default 0
        topic_partitions: []TopicPartitions, v0+, nullable v0+
        timeout_ms: int32, v0+, default 60000
    """
    API_KEY: ClassVar[Literal[43]]
    API_NAME: ClassVar[Literal["ElectLeaders"]]
    IS_REQUEST: ClassVar[Literal[True]]
    election_type: int
    topic_partitions: list[ElectLeadersRequest.TopicPartitions] | None
    timeout_ms: int
    def __init__(
        self,
        *,
        election_type: int = 0,
        topic_partitions: list[ElectLeadersRequest.TopicPartitions] | None = ...,
        timeout_ms: int = 60000,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> ElectLeadersRequest: ...
    class TopicPartitions(Struct):
        """A TopicPartitions struct of ElectLeadersRequest.

        Fields:
            topic: string, v0+, default ''
            partitions: []int32, v0+
        """
        topic: str
        partitions: list[int]
        def __init__(
            self,
            *,
            topic: str = "",
            partitions: list[int] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class ElectLeadersResponse(Message):
    """The ElectLeaders response body (API key 43, v0-2, flexible v2+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        error_code: int16, v1+, default 0
        replica_election_results: []ReplicaElectionResult, v0+
    """
    API_KEY: ClassVar[Literal[43]]
    API_NAME: ClassVar[Literal["ElectLeaders"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    error_code: int
    replica_election_results: list[ElectLeadersResponse.ReplicaElectionResult]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        error_code: int = 0,
        replica_election_results: list[ElectLeadersResponse.ReplicaElectionResult] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> ElectLeadersResponse: ...
    class ReplicaElectionResult(Struct):
        """A ReplicaElectionResult struct of ElectLeadersResponse.

        Fields:
            topic: string, v0+, default ''
            partition_result: []PartitionResult, v0+
        """
        topic: str
        partition_result: list[ElectLeadersResponse.PartitionResult]
        def __init__(
            self,
            *,
            topic: str = "",
            partition_result: list[ElectLeadersResponse.PartitionResult] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class PartitionResult(Struct):
        """A PartitionResult struct of ElectLeadersResponse.

        Fields:
            partition_id: int32, v0+, default 0
            error_code: int16, v0+, default 0
            error_message: string, v0+, nullable v0+, default ''
        """
        partition_id: int
        error_code: int
        error_message: str | None
        def __init__(
            self,
            *,
            partition_id: int = 0,
            error_code: int = 0,
            error_message: str | None = "",
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class IncrementalAlterConfigsRequest(Message):
    """The IncrementalAlterConfigs request body (API key 44, v0-1, flexible v1+).

    Fields:
        resources: []AlterConfigsResource, v0+
        validate_only: bool, v0+, default False
    """
    API_KEY: ClassVar[Literal[44]]
    API_NAME: ClassVar[Literal["IncrementalAlterConfigs"]]
    IS_REQUEST: ClassVar[Literal[True]]
    resources: list[IncrementalAlterConfigsRequest.AlterConfigsResource]
    validate_only: bool
    def __init__(
        self,
        *,
        resources: list[IncrementalAlterConfigsRequest.AlterConfigsResource] = ...,
        validate_only: bool = False,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> IncrementalAlterConfigsRequest: ...
    class AlterConfigsResource(Struct):
        """A AlterConfigsResource struct of IncrementalAlterConfigsRequest.

        Fields:
            resource_type: int8, v0+, default 0
            resource_name: string, v0+, default ''
            configs: []AlterableConfig, v0+
        """
        resource_type: int
        resource_name: str
        configs: list[IncrementalAlterConfigsRequest.AlterableConfig]
        def __init__(
            self,
            *,
            resource_type: int = 0,
            resource_name: str = "",
            configs: list[IncrementalAlterConfigsRequest.AlterableConfig] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class AlterableConfig(Struct):
        """A AlterableConfig struct of IncrementalAlterConfigsRequest.

        Fields:
            name: string, v0+, default ''
            config_operation: int8, v0+, default 0
            value: string, v0+, nullable v0+, default ''
        """
        name: str
        config_operation: int
        value: str | None
        def __init__(
            self,
            *,
            name: str = "",
            config_operation: int = 0,
            value: str | None = "",
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class IncrementalAlterConfigsResponse(Message):
    """The IncrementalAlterConfigs response body (API key 44, v0-1, flexible v1+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        responses: []AlterConfigsResourceResponse, v0+
    """
    API_KEY: ClassVar[Literal[44]]
    API_NAME: ClassVar[Literal["IncrementalAlterConfigs"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    responses: list[IncrementalAlterConfigsResponse.AlterConfigsResourceResponse]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        responses: list[IncrementalAlterConfigsResponse.AlterConfigsResourceResponse] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> IncrementalAlterConfigsResponse: ...
    class AlterConfigsResourceResponse(Struct):
        """A AlterConfigsResourceResponse struct of IncrementalAlterConfigsResponse.

        Fields:
            error_code: int16, v0+, default 0
            error_message: string, v0+, nullable v0+, default ''
            resource_type: int8, v0+, default 0
            resource_name: string, v0+, default ''
        """
        error_code: int
        error_message: str | None
        resource_type: int
        resource_name: str
        def __init__(
            self,
            *,
            error_code: int = 0,
            error_message: str | None = "",
            resource_type: int = 0,
            resource_name: str = "",
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class OffsetDeleteRequest(Message):
    """The OffsetDelete request body (API key 47, v0, flexible vnone).

    Fields:
        group_id: string, v0+, default ''
        topics: []OffsetDeleteRequestTopic, v0+
    """
    API_KEY: ClassVar[Literal[47]]
    API_NAME: ClassVar[Literal["OffsetDelete"]]
    IS_REQUEST: ClassVar[Literal[True]]
    group_id: str
    topics: list[OffsetDeleteRequest.OffsetDeleteRequestTopic]
    def __init__(
        self,
        *,
        group_id: str = "",
        topics: list[OffsetDeleteRequest.OffsetDeleteRequestTopic] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> OffsetDeleteRequest: ...
    class OffsetDeleteRequestTopic(Struct):
        """A OffsetDeleteRequestTopic struct of OffsetDeleteRequest.

        Fields:
            name: string, v0+, default ''
            partitions: []OffsetDeleteRequestPartition, v0+
        """
        name: str
        partitions: list[OffsetDeleteRequest.OffsetDeleteRequestPartition]
        def __init__(
            self,
            *,
            name: str = "",
            partitions: list[OffsetDeleteRequest.OffsetDeleteRequestPartition] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class OffsetDeleteRequestPartition(Struct):
        """A OffsetDeleteRequestPartition struct of OffsetDeleteRequest.

        Fields:
            partition_index: int32, v0+, default 0
        """
        partition_index: int
        def __init__(
            self,
            *,
            partition_index: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class OffsetDeleteResponse(Message):
    """The OffsetDelete response body (API key 47, v0, flexible vnone).

    Fields:
        error_code: int16, v0+, default 0
        throttle_time_ms: int32, v0+, default 0, ignorable
        topics: []OffsetDeleteResponseTopic, v0+
    """
    API_KEY: ClassVar[Literal[47]]
    API_NAME: ClassVar[Literal["OffsetDelete"]]
    IS_REQUEST: ClassVar[Literal[False]]
    error_code: int
    throttle_time_ms: int
    topics: list[OffsetDeleteResponse.OffsetDeleteResponseTopic]
    def __init__(
        self,
        *,
        error_code: int = 0,
        throttle_time_ms: int = 0,
        topics: list[OffsetDeleteResponse.OffsetDeleteResponseTopic] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> OffsetDeleteResponse: ...
    class OffsetDeleteResponseTopic(Struct):
        """A OffsetDeleteResponseTopic struct of OffsetDeleteResponse.

        Fields:
            name: string, v0+, default ''
            partitions: []OffsetDeleteResponsePartition, v0+
        """
        name: str
        partitions: list[OffsetDeleteResponse.OffsetDeleteResponsePartition]
        def __init__(
            self,
            *,
            name: str = "",
            partitions: list[OffsetDeleteResponse.OffsetDeleteResponsePartition] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class OffsetDeleteResponsePartition(Struct):
        """A OffsetDeleteResponsePartition struct of OffsetDeleteResponse.

        Fields:
            partition_index: int32, v0+, default 0
            error_code: int16, v0+, default 0
        """
        partition_index: int
        error_code: int
        def __init__(
            self,
            *,
            partition_index: int = 0,
            error_code: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class DescribeClientQuotasRequest(Message):
    """The DescribeClientQuotas request body (API key 48, v0-1, flexible v1+).

    Fields:
        components: []ComponentData, v0+
        strict: bool, v0+, default False
    """
    API_KEY: ClassVar[Literal[48]]
    API_NAME: ClassVar[Literal["DescribeClientQuotas"]]
    IS_REQUEST: ClassVar[Literal[True]]
    components: list[DescribeClientQuotasRequest.ComponentData]
    strict: bool
    def __init__(
        self,
        *,
        components: list[DescribeClientQuotasRequest.ComponentData] = ...,
        strict: bool = False,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> DescribeClientQuotasRequest: ...
    class ComponentData(Struct):
        """A ComponentData struct of DescribeClientQuotasRequest.

        Fields:
            entity_type: string, v0+, default ''
            match_type: int8, v0+, default 0
            match: string, v0+, nullable v0+, default ''
        """
        entity_type: str
        match_type: int
        match: str | None
        def __init__(
            self,
            *,
            entity_type: str = "",
            match_type: int = 0,
            match: str | None = "",
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class DescribeClientQuotasResponse(Message):
    """The DescribeClientQuotas response body (API key 48, v0-1, flexible v1+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        error_code: int16, v0+, default 0
        error_message: string, v0+, nullable v0+, default ''
        entries: []EntryData, v0+, nullable v0+
    """
    API_KEY: ClassVar[Literal[48]]
    API_NAME: ClassVar[Literal["DescribeClientQuotas"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    entries: list[DescribeClientQuotasResponse.EntryData] | None
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        error_code: int = 0,
        error_message: str | None = "",
        entries: list[DescribeClientQuotasResponse.EntryData] | None = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> DescribeClientQuotasResponse: ...
    class EntryData(Struct):
        """A EntryData struct of DescribeClientQuotasResponse.

        Fields:
            entity: []EntityData, v0+
            values: []ValueData, v0+
        """
        entity: list[DescribeClientQuotasResponse.EntityData]
        values: list[DescribeClientQuotasResponse.ValueData]
        def __init__(
            self,
            *,
            entity: list[DescribeClientQuotasResponse.EntityData] = ...,
            values: list[DescribeClientQuotasResponse.ValueData] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class EntityData(Struct):
        """A EntityData struct of DescribeClientQuotasResponse.

        Fields:
            entity_type: string, v0+, default ''
            entity_name: string, v0+, nullable v0+, default ''
        """
        entity_type: str
        entity_name: str | None
        def __init__(
            self,
            *,
            entity_type: str = "",
            entity_name: str | None = "",
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class ValueData(Struct):
        """A ValueData struct of DescribeClientQuotasResponse.

        Fields:
            key: string, v0+, default ''
            value: float64, v0+, default 0.0
        """
        key: str
        value: float
        def __init__(
            self,
            *,
            key: str = "",
            value: float = 0.0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class AlterClientQuotasRequest(Message):
    """The AlterClientQuotas request body (API key 49, v0-1, flexible v1+).

    Fields:
        entries: []EntryData, v0+
        validate_only: bool, v0+, default False
    """
    API_KEY: ClassVar[Literal[49]]
    API_NAME: ClassVar[Literal["AlterClientQuotas"]]
    IS_REQUEST: ClassVar[Literal[True]]
    entries: list[AlterClientQuotasRequest.EntryData]
    validate_only: bool
    def __init__(
        self,
        *,
        entries: list[AlterClientQuotasRequest.EntryData] = ...,
        validate_only: bool = False,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> AlterClientQuotasRequest: ...
    class EntryData(Struct):
        """A EntryData struct of AlterClientQuotasRequest.

        Fields:
            entity: []EntityData, v0+
            ops: []OpData, v0+
        """
        entity: list[AlterClientQuotasRequest.EntityData]
        ops: list[AlterClientQuotasRequest.OpData]
        def __init__(
            self,
            *,
            entity: list[AlterClientQuotasRequest.EntityData] = ...,
            ops: list[AlterClientQuotasRequest.OpData] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class EntityData(Struct):
        """A EntityData struct of AlterClientQuotasRequest.

        Fields:
            entity_type: string, v0+, default ''
            entity_name: string, v0+, nullable v0+, default ''
        """
        entity_type: str
        entity_name: str | None
        def __init__(
            self,
            *,
            entity_type: str = "",
            entity_name: str | None = "",
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class OpData(Struct):
        """A OpData struct of AlterClientQuotasRequest.

        Fields:
            key: string, v0+, default ''
            value: float64, v0+, default 0.0
            remove: bool, v0+, default False
        """
        key: str
        value: float
        remove: bool
        def __init__(
            self,
            *,
            key: str = "",
            value: float = 0.0,
            remove: bool = False,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class AlterClientQuotasResponse(Message):
    """The AlterClientQuotas response body (API key 49, v0-1, flexible v1+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        entries: []EntryData, v0+
    """
    API_KEY: ClassVar[Literal[49]]
    API_NAME: ClassVar[Literal["AlterClientQuotas"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    entries: list[AlterClientQuotasResponse.EntryData]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        entries: list[AlterClientQuotasResponse.EntryData] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> AlterClientQuotasResponse: ...
    class EntryData(Struct):
        """A EntryData struct of AlterClientQuotasResponse.

        Fields:
            error_code: int16, v0+, default 0
            error_message: string, v0+, nullable v0+, default ''
            entity: []EntityData, v0+
        """
        error_code: int
        error_message: str | None
        entity: list[AlterClientQuotasResponse.EntityData]
        def __init__(
            self,
            *,
            error_code: int = 0,
            error_message: str | None = "",
            entity: list[AlterClientQuotasResponse.EntityData] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class EntityData(Struct):
        """A EntityData struct of AlterClientQuotasResponse.

        Fields:
            entity_type: string, v0+, default ''
            entity_name: string, v0+, nullable v0+, default ''
        """
        entity_type: str
        entity_name: str | None
        def __init__(
            self,
            *,
            entity_type: str = "",
            entity_name: str | None = "",
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class DescribeUserScramCredentialsRequest(Message):
    """The DescribeUserScramCredentials request body (API key 50, v0, flexible v0+).

    Fields:
        users: []UserName, v0+, nullable v0+
    """
    API_KEY: ClassVar[Literal[50]]
    API_NAME: ClassVar[Literal["DescribeUserScramCredentials"]]
    IS_REQUEST: ClassVar[Literal[True]]
    users: list[DescribeUserScramCredentialsRequest.UserName] | None
    def __init__(
        self,
        *,
        users: list[DescribeUserScramCredentialsRequest.UserName] | None = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> DescribeUserScramCredentialsRequest: ...
    class UserName(Struct):
        """A UserName struct of DescribeUserScramCredentialsRequest.

        Fields:
            name: string, v0+, default ''
        """
        name: str
        def __init__(
            self,
            *,
            name: str = "",
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class DescribeUserScramCredentialsResponse(Message):
    """The DescribeUserScramCredentials response body (API key 50, v0, flexible v0+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        error_code: int16, v0+, default 0
        error_message: string, v0+, nullable v0+, default ''
        results: []DescribeUserScramCredentialsResult, v0+
    """
    API_KEY: ClassVar[Literal[50]]
    API_NAME: ClassVar[Literal["DescribeUserScramCredentials"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    results: list[DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        error_code: int = 0,
        error_message: str | None = "",
        results: list[DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> DescribeUserScramCredentialsResponse: ...
    class DescribeUserScramCredentialsResult(Struct):
        """A DescribeUserScramCredentialsResult struct of DescribeUserScramCredentialsResponse.

        Fields:
            user: string, v0+, default ''
            error_code: int16, v0+, default 0
            error_message: string, v0+, nullable v0+, default ''
            credential_infos: []CredentialInfo, v0+
        """
        user: str
        error_code: int
        error_message: str | None
        credential_infos: list[DescribeUserScramCredentialsResponse.CredentialInfo]
        def __init__(
            self,
            *,
            user: str = "",
            error_code: int = 0,
            error_message: str | None = "",
            credential_infos: list[DescribeUserScramCredentialsResponse.CredentialInfo] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class CredentialInfo(Struct):
        """A CredentialInfo struct of DescribeUserScramCredentialsResponse.

        Fields:
            mechanism: int8, v0+, default 0
            iterations: int32, v0+, default 0
        """
        mechanism: int
        iterations: int
        def __init__(
            self,
            *,
            mechanism: int = 0,
            iterations: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class AlterUserScramCredentialsRequest(Message):
    """The AlterUserScramCredentials request body (API key 51, v0, flexible v0+).

    Fields:
        deletions: []ScramCredentialDeletion, v0+
        upsertions: []ScramCredentialUpsertion, v0+
    """
    API_KEY: ClassVar[Literal[51]]
    API_NAME: ClassVar[Literal["AlterUserScramCredentials"]]
    IS_REQUEST: ClassVar[Literal[True]]
    deletions: list[AlterUserScramCredentialsRequest.ScramCredentialDeletion]
    upsertions: list[AlterUserScramCredentialsRequest.ScramCredentialUpsertion]
    def __init__(
        self,
        *,
        deletions: list[AlterUserScramCredentialsRequest.ScramCredentialDeletion] = ...,
        upsertions: list[AlterUserScramCredentialsRequest.ScramCredentialUpsertion] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> AlterUserScramCredentialsRequest: ...
    class ScramCredentialDeletion(Struct):
        """A ScramCredentialDeletion struct of AlterUserScramCredentialsRequest.

        Fields:
            name: string, v0+, default ''
            mechanism: int8, v0+, default 0
        """
        name: str
        mechanism: int
        def __init__(
            self,
            *,
            name: str = "",
            mechanism: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class ScramCredentialUpsertion(Struct):
        """A ScramCredentialUpsertion struct of AlterUserScramCredentialsRequest.

        Fields:
            name: string, v0+, default ''
            mechanism: int8, v0+, default 0
            iterations: int32, v0+, default 0
            salt: bytes, v0+, default b''
            salted_password: bytes, v0+, default b''
        """
        name: str
        mechanism: int
        iterations: int
        salt: bytes
        salted_password: bytes
        def __init__(
            self,
            *,
            name: str = "",
            mechanism: int = 0,
            iterations: int = 0,
            salt: bytes = b'',
            salted_password: bytes = b'',
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class AlterUserScramCredentialsResponse(Message):
    """The AlterUserScramCredentials response body (API key 51, v0, flexible v0+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        results: []AlterUserScramCredentialsResult, v0+
    """
    API_KEY: ClassVar[Literal[51]]
    API_NAME: ClassVar[Literal["AlterUserScramCredentials"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    results: list[AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        results: list[AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> AlterUserScramCredentialsResponse: ...
    class AlterUserScramCredentialsResult(Struct):
        """A AlterUserScramCredentialsResult struct of AlterUserScramCredentialsResponse.

        Fields:
            user: string, v0+, default ''
            error_code: int16, v0+, default 0
            error_message: string, v0+, nullable v0+, default ''
        """
        user: str
        error_code: int
        error_message: str | None
        def __init__(
            self,
            *,
            user: str = "",
            error_code: int = 0,
            error_message: str | None = "",
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class AlterPartitionRequest(Message):
    """The AlterPartition request body (API key 56, v0-3, flexible v0+).

    Fields:
        broker_id: int32, v0+, default 0
        broker_epoch: int64, v0+, default -1
        topics: []TopicData, v0+
    """
    API_KEY: ClassVar[Literal[56]]
    API_NAME: ClassVar[Literal["AlterPartition"]]
    IS_REQUEST: ClassVar[Literal[True]]
    broker_id: int
    broker_epoch: int
    topics: list[AlterPartitionRequest.TopicData]
    def __init__(
        self,
        *,
        broker_id: int = 0,
        broker_epoch: int = -1,
        topics: list[AlterPartitionRequest.TopicData] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> AlterPartitionRequest: ...
    class TopicData(Struct):
        """A TopicData struct of AlterPartitionRequest.

        Fields:
            topic_name: string, v0-1, default '', ignorable
            topic_id: uuid, v2+, default UUID('00000000-0000-0000-0000-000000000000'), ignorable
            partitions: []PartitionData, v0+
        """
        topic_name: str
        topic_id: UUID
        partitions: list[AlterPartitionRequest.PartitionData]
        def __init__(
            self,
            *,
            topic_name: str = "",
            topic_id: UUID = ...,
            partitions: list[AlterPartitionRequest.PartitionData] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class PartitionData(Struct):
        """A PartitionData struct of AlterPartitionRequest.

        Fields:
            partition_index: int32, v0+, default 0
            leader_epoch: int32, v0+, default 0
            new_isr: []int32, v0-2
            new_isr_with_epochs: []BrokerState, v3+
            leader_recovery_state: int8, v1+, default 0
            partition_epoch: int32, v0+, default 0
        """
        partition_index: int
        leader_epoch: int
        new_isr: list[int]
        new_isr_with_epochs: list[AlterPartitionRequest.BrokerState]
        leader_recovery_state: int
        partition_epoch: int
        def __init__(
            self,
            *,
            partition_index: int = 0,
            leader_epoch: int = 0,
            new_isr: list[int] = ...,
            new_isr_with_epochs: list[AlterPartitionRequest.BrokerState] = ...,
            leader_recovery_state: int = 0,
            partition_epoch: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class BrokerState(Struct):
        """A BrokerState struct of AlterPartitionRequest.

        Fields:
            broker_id: int32, v3+, default 0
            broker_epoch: int64, v3+, default -1
        """
        broker_id: int
        broker_epoch: int
        def __init__(
            self,
            *,
            broker_id: int = 0,
            broker_epoch: int = -1,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class AlterPartitionResponse(Message):
    """The AlterPartition response body (API key 56, v0-3, flexible v0+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        error_code: int16, v0+, default 0
        topics: []TopicData, v0+
    """
    API_KEY: ClassVar[Literal[56]]
    API_NAME: ClassVar[Literal["AlterPartition"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    error_code: int
    topics: list[AlterPartitionResponse.TopicData]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        error_code: int = 0,
        topics: list[AlterPartitionResponse.TopicData] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> AlterPartitionResponse: ...
    class TopicData(Struct):
        """A TopicData struct of AlterPartitionResponse.

        Fields:
            topic_name: string, v0-1, default '', ignorable
            topic_id: uuid, v2+, default UUID('00000000-0000-0000-0000-000000000000'), ignorable
            partitions: []PartitionData, v0+
        """
        topic_name: str
        topic_id: UUID
        partitions: list[AlterPartitionResponse.PartitionData]
        def __init__(
            self,
            *,
            topic_name: str = "",
            topic_id: UUID = ...,
            partitions: list[AlterPartitionResponse.PartitionData] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class PartitionData(Struct):
        """A PartitionData struct of AlterPartitionResponse.

        Fields:
            partition_index: int32, v0+, default 0
            error_code: int16, v0+, default 0
            leader_id: int32, v0+, default 0
            leader_epoch: int32, v0+, default 0
            isr: []int32, v0+
            leader_recovery_state: int8, v1+, default 0, ignorable
            partition_epoch: int32, v0+, default 0
        """
        partition_index: int
        error_code: int
        leader_id: int
        leader_epoch: int
        isr: list[int]
        leader_recovery_state: int
        partition_epoch: int
        def __init__(
            self,
            *,
            partition_index: int = 0,
            error_code: int = 0,
            leader_id: int = 0,
            leader_epoch: int = 0,
            isr: list[int] = ...,
            leader_recovery_state: int = 0,
            partition_epoch: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class DescribeClusterRequest(Message):
    """The DescribeCluster request body (API key 60, v0-1, flexible v0+).

    Fields:
        include_cluster_authorized_operations: bool, v0+, default False
        endpoint_type: int8, v1+, default 1
    """
    API_KEY: ClassVar[Literal[60]]
    API_NAME: ClassVar[Literal["DescribeCluster"]]
    IS_REQUEST: ClassVar[Literal[True]]
    include_cluster_authorized_operations: bool
    endpoint_type: int
    def __init__(
        self,
        *,
        include_cluster_authorized_operations: bool = False,
        endpoint_type: int = 1,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> DescribeClusterRequest: ...

class DescribeClusterResponse(Message):
    """The DescribeCluster response body (API key 60, v0-1, flexible v0+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        error_code: int16, v0+, default 0
        error_message: string, v0+, nullable v0+, default None
        endpoint_type: int8, v1+, default 1
        cluster_id: string, v0+, default ''
        controller_id: int32, v0+, default -1
        brokers: []DescribeClusterBroker, v0+
        cluster_authorized_operations: int32, v0+, default -2147483648
    """
    API_KEY: ClassVar[Literal[60]]
    API_NAME: ClassVar[Literal["DescribeCluster"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    endpoint_type: int
    cluster_id: str
    controller_id: int
    brokers: list[DescribeClusterResponse.DescribeClusterBroker]
    cluster_authorized_operations: int
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        error_code: int = 0,
        error_message: str | None = None,
        endpoint_type: int = 1,
        cluster_id: str = "",
        controller_id: int = -1,
        brokers: list[DescribeClusterResponse.DescribeClusterBroker] = ...,
        cluster_authorized_operations: int = -2147483648,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> DescribeClusterResponse: ...
    class DescribeClusterBroker(Struct):
        """A DescribeClusterBroker struct of DescribeClusterResponse.

        Fields:
            broker_id: int32, v0+, default 0
            host: string, v0+, default ''
            port: int32, v0+, default 0
            rack: string, v0+, nullable v0+, default None
        """
        broker_id: int
        host: str
        port: int
        rack: str | None
        def __init__(
            self,
            *,
            broker_id: int = 0,
            host: str = "",
            port: int = 0,
            rack: str | None = None,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class DescribeProducersRequest(Message):
    """The DescribeProducers request body (API key 61, v0, flexible v0+).

    Fields:
        topics: []TopicRequest, v0+
    """
    API_KEY: ClassVar[Literal[61]]
    API_NAME: ClassVar[Literal["DescribeProducers"]]
    IS_REQUEST: ClassVar[Literal[True]]
    topics: list[DescribeProducersRequest.TopicRequest]
    def __init__(
        self,
        *,
        topics: list[DescribeProducersRequest.TopicRequest] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> DescribeProducersRequest: ...
    class TopicRequest(Struct):
        """A TopicRequest struct of DescribeProducersRequest.

        Fields:
            name: string, v0+, default ''
            partition_indexes: []int32, v0+
        """
        name: str
        partition_indexes: list[int]
        def __init__(
            self,
            *,
            name: str = "",
            partition_indexes: list[int] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class DescribeProducersResponse(Message):
    """The DescribeProducers response body (API key 61, v0, flexible v0+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        topics: []TopicResponse, v0+
    """
    API_KEY: ClassVar[Literal[61]]
    API_NAME: ClassVar[Literal["DescribeProducers"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    topics: list[DescribeProducersResponse.TopicResponse]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        topics: list[DescribeProducersResponse.TopicResponse] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> DescribeProducersResponse: ...
    class TopicResponse(Struct):
        """A TopicResponse struct of DescribeProducersResponse.

        Fields:
            name: string, v0+, default ''
            partitions: []PartitionResponse, v0+
        """
        name: str
        partitions: list[DescribeProducersResponse.PartitionResponse]
        def __init__(
            self,
            *,
            name: str = "",
            partitions: list[DescribeProducersResponse.PartitionResponse] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class PartitionResponse(Struct):
        """A PartitionResponse struct of DescribeProducersResponse.

        Fields:
            partition_index: int32, v0+, default 0
            error_code: int16, v0+, default 0
            error_message: string, v0+, nullable v0+, default None
            active_producers: []ProducerState, v0+
        """
        partition_index: int
        error_code: int
        error_message: str | None
        active_producers: list[DescribeProducersResponse.ProducerState]
        def __init__(
            self,
            *,
            partition_index: int = 0,
            error_code: int = 0,
            error_message: str | None = None,
            active_producers: list[DescribeProducersResponse.ProducerState] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class ProducerState(Struct):
        """A ProducerState struct of DescribeProducersResponse.

        Fields:
            producer_id: int64, v0+, default 0
            producer_epoch: int32, v0+, default 0
            last_sequence: int32, v0+, default -1
            last_timestamp: int64, v0+, default -1
            coordinator_epoch: int32, v0+, default 0
            current_txn_start_offset: int64, v0+, default -1
        """
        producer_id: int
        producer_epoch: int
        last_sequence: int
        last_timestamp: int
        coordinator_epoch: int
        current_txn_start_offset: int
        def __init__(
            self,
            *,
            producer_id: int = 0,
            producer_epoch: int = 0,
            last_sequence: int = -1,
            last_timestamp: int = -1,
            coordinator_epoch: int = 0,
            current_txn_start_offset: int = -1,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class BrokerRegistrationRequest(Message):
    """The BrokerRegistration request body (API key 62, v0-4, flexible v0+).

    Fields:
        broker_id: int32, v0+, default 0
        cluster_id: string, v0+, default ''
        incarnation_id: uuid, v0+, default UUID('00000000-0000-0000-0000-000000000000')
        listeners: []Listener, v0+
        features: []Feature, v0+
        rack: string, v0+, nullable v0+, default ''
        is_migrating_zk_broker: bool, v1+, default False
        log_dirs: []uuid, v2+, ignorable
        previous_broker_epoch: int64, v3+, default -1, ignorable
    """
    API_KEY: ClassVar[Literal[62]]
    API_NAME: ClassVar[Literal["BrokerRegistration"]]
    IS_REQUEST: ClassVar[Literal[True]]
    broker_id: int
    cluster_id: str
    incarnation_id: UUID
    listeners: list[BrokerRegistrationRequest.Listener]
    features: list[BrokerRegistrationRequest.Feature]
    rack: str | None
    is_migrating_zk_broker: bool
    log_dirs: list[UUID]
    previous_broker_epoch: int
    def __init__(
        self,
        *,
        broker_id: int = 0,
        cluster_id: str = "",
        incarnation_id: UUID = ...,
        listeners: list[BrokerRegistrationRequest.Listener] = ...,
        features: list[BrokerRegistrationRequest.Feature] = ...,
        rack: str | None = "",
        is_migrating_zk_broker: bool = False,
        log_dirs: list[UUID] = ...,
        previous_broker_epoch: int = -1,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> BrokerRegistrationRequest: ...
    class Listener(Struct):
        """A Listener struct of BrokerRegistrationRequest.

        Fields:
            name: string, v0+, default ''
            host: string, v0+, default ''
            port: uint16, v0+, default 0
            security_protocol: int16, v0+, default 0
        """
        name: str
        host: str
        port: int
        security_protocol: int
        def __init__(
            self,
            *,
            name: str = "",
            host: str = "",
            port: int = 0,
            security_protocol: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class Feature(Struct):
        """A Feature struct of BrokerRegistrationRequest.

        Fields:
            name: string, v0+, default ''
            min_supported_version: int16, v0+, default 0
            max_supported_version: int16, v0+, default 0
        """
        name: str
        min_supported_version: int
        max_supported_version: int
        def __init__(
            self,
            *,
            name: str = "",
            min_supported_version: int = 0,
            max_supported_version: int = 0,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class BrokerRegistrationResponse(Message):
    """The BrokerRegistration response body (API key 62, v0-4, flexible v0+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        error_code: int16, v0+, default 0
        broker_epoch: int64, v0+, default -1
    """
    API_KEY: ClassVar[Literal[62]]
    API_NAME: ClassVar[Literal["BrokerRegistration"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    error_code: int
    broker_epoch: int
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        error_code: int = 0,
        broker_epoch: int = -1,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> BrokerRegistrationResponse: ...

class BrokerHeartbeatRequest(Message):
    """The BrokerHeartbeat request body (API key 63, v0-1, flexible v0+).

    Fields:
        broker_id: int32, v0+, default 0
        broker_epoch: int64, v0+, default -1
        current_metadata_offset: int64, v0+, default 0
        want_fence: bool, v0+, default False
        want_shut_down: bool, v0+, default False
        offline_log_dirs: []uuid, v1+, tag 0
    """
    API_KEY: ClassVar[Literal[63]]
    API_NAME: ClassVar[Literal["BrokerHeartbeat"]]
    IS_REQUEST: ClassVar[Literal[True]]
    broker_id: int
    broker_epoch: int
    current_metadata_offset: int
    want_fence: bool
    want_shut_down: bool
    offline_log_dirs: list[UUID]
    def __init__(
        self,
        *,
        broker_id: int = 0,
        broker_epoch: int = -1,
        current_metadata_offset: int = 0,
        want_fence: bool = False,
        want_shut_down: bool = False,
        offline_log_dirs: list[UUID] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> BrokerHeartbeatRequest: ...

class BrokerHeartbeatResponse(Message):
    """The BrokerHeartbeat response body (API key 63, v0-1, flexible v0+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        error_code: int16, v0+, default 0
        is_caught_up: bool, v0+, default False
        is_fenced: bool, v0+, default True
        should_shut_down: bool, v0+, default False
    """
    API_KEY: ClassVar[Literal[63]]
    API_NAME: ClassVar[Literal["BrokerHeartbeat"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    error_code: int
    is_caught_up: bool
    is_fenced: bool
    should_shut_down: bool
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        error_code: int = 0,
        is_caught_up: bool = False,
        is_fenced: bool = True,
        should_shut_down: bool = False,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> BrokerHeartbeatResponse: ...

class DescribeTransactionsRequest(Message):
    """The DescribeTransactions request body (API key 65, v0, flexible v0+).

    Fields:
        transactional_ids: []string, v0+
    """
    API_KEY: ClassVar[Literal[65]]
    API_NAME: ClassVar[Literal["DescribeTransactions"]]
    IS_REQUEST: ClassVar[Literal[True]]
    transactional_ids: list[str]
    def __init__(
        self,
        *,
        transactional_ids: list[str] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> DescribeTransactionsRequest: ...

class DescribeTransactionsResponse(Message):
    """The DescribeTransactions response body (API key 65, v0, flexible v0+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        transaction_states: []TransactionState, v0+
    """
    API_KEY: ClassVar[Literal[65]]
    API_NAME: ClassVar[Literal["DescribeTransactions"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    transaction_states: list[DescribeTransactionsResponse.TransactionState]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        transaction_states: list[DescribeTransactionsResponse.TransactionState] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> DescribeTransactionsResponse: ...
    class TransactionState(Struct):
        """A TransactionState struct of DescribeTransactionsResponse.

        Fields:
            error_code: int16, v0+, default 0
            transactional_id: string, v0+, default ''
            transaction_state: string, v0+, default ''
            transaction_timeout_ms: int32, v0+, default 0
            transaction_start_time_ms: int64, v0+, default 0
            producer_id: int64, v0+, default 0
            producer_epoch: int16, v0+, default 0
            topics: []TopicData, v0+
        """
        error_code: int
        transactional_id: str
        transaction_state: str
        transaction_timeout_ms: int
        transaction_start_time_ms: int
        producer_id: int
        producer_epoch: int
        topics: list[DescribeTransactionsResponse.TopicData]
        def __init__(
            self,
            *,
            error_code: int = 0,
            transactional_id: str = "",
            transaction_state: str = "",
            transaction_timeout_ms: int = 0,
            transaction_start_time_ms: int = 0,
            producer_id: int = 0,
            producer_epoch: int = 0,
            topics: list[DescribeTransactionsResponse.TopicData] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class TopicData(Struct):
        """A TopicData struct of DescribeTransactionsResponse.

        Fields:
            topic: string, v0+, default ''
            partitions: []int32, v0+
        """
        topic: str
        partitions: list[int]
        def __init__(
            self,
            *,
            topic: str = "",
            partitions: list[int] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class ListTransactionsRequest(Message):
    """The ListTransactions request body (API key 66, v0-1, flexible v0+).

    Fields:
        state_filters: []string, v0+
        producer_id_filters: []int64, v0+
        duration_filter: int64, v1+, default -1
    """
    API_KEY: ClassVar[Literal[66]]
    API_NAME: ClassVar[Literal["ListTransactions"]]
    IS_REQUEST: ClassVar[Literal[True]]
    state_filters: list[str]
    producer_id_filters: list[int]
    duration_filter: int
    def __init__(
        self,
        *,
        state_filters: list[str] = ...,
        producer_id_filters: list[int] = ...,
        duration_filter: int = -1,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> ListTransactionsRequest: ...

class ListTransactionsResponse(Message):
    """The ListTransactions response body (API key 66, v0-1, flexible v0+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        error_code: int16, v0+, default 0
        unknown_state_filters: []string, v0+
        transaction_states: []TransactionState, v0+
    """
    API_KEY: ClassVar[Literal[66]]
    API_NAME: ClassVar[Literal["ListTransactions"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    error_code: int
    unknown_state_filters: list[str]
    transaction_states: list[ListTransactionsResponse.TransactionState]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        error_code: int = 0,
        unknown_state_filters: list[str] = ...,
        transaction_states: list[ListTransactionsResponse.TransactionState] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> ListTransactionsResponse: ...
    class TransactionState(Struct):
        """A TransactionState struct of ListTransactionsResponse.

        Fields:
            transactional_id: string, v0+, default ''
            producer_id: int64, v0+, default 0
            transaction_state: string, v0+, default ''
        """
        transactional_id: str
        producer_id: int
        transaction_state: str
        def __init__(
            self,
            *,
            transactional_id: str = "",
            producer_id: int = 0,
            transaction_state: str = "",
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class AllocateProducerIdsRequest(Message):
    """The AllocateProducerIds request body (API key 67, v0, flexible v0+).

    Fields:
        broker_id: int32, v0+, default 0
        broker_epoch: int64, v0+, default -1
    """
    API_KEY: ClassVar[Literal[67]]
    API_NAME: ClassVar[Literal["AllocateProducerIds"]]
    IS_REQUEST: ClassVar[Literal[True]]
    broker_id: int
    broker_epoch: int
    def __init__(
        self,
        *,
        broker_id: int = 0,
        broker_epoch: int = -1,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> AllocateProducerIdsRequest: ...

class AllocateProducerIdsResponse(Message):
    """The AllocateProducerIds response body (API key 67, v0, flexible v0+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        error_code: int16, v0+, default 0
        producer_id_start: int64, v0+, default 0
        producer_id_len: int32, v0+, default 0
    """
    API_KEY: ClassVar[Literal[67]]
    API_NAME: ClassVar[Literal["AllocateProducerIds"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    error_code: int
    producer_id_start: int
    producer_id_len: int
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        error_code: int = 0,
        producer_id_start: int = 0,
        producer_id_len: int = 0,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> AllocateProducerIdsResponse: ...

class ConsumerGroupHeartbeatRequest(Message):
    """The ConsumerGroupHeartbeat request body (API key 68, v0-1, flexible v0+).

    Fields:
        group_id: string, v0+, default ''
        member_id: string, v0+, default ''
        member_epoch: int32, v0+, default 0
        instance_id: string, v0+, nullable v0+, default None
        rack_id: string, v0+, nullable v0+, default None
        rebalance_timeout_ms: int32, v0+, default -1
        subscribed_topic_names: []string, v0+, nullable v0+, default None
        subscribed_topic_regex: string, v1+, nullable v1+, default None
        server_assignor: string, v0+, nullable v0+, default None
        topic_partitions: []TopicPartitions, v0+, nullable v0+, default None
    """
    API_KEY: ClassVar[Literal[68]]
    API_NAME: ClassVar[Literal["ConsumerGroupHeartbeat"]]
    IS_REQUEST: ClassVar[Literal[True]]
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int
    subscribed_topic_names: list[str] | None
    subscribed_topic_regex: str | None
    server_assignor: str | None
    topic_partitions: list[ConsumerGroupHeartbeatRequest.TopicPartitions] | None
    def __init__(
        self,
        *,
        group_id: str = "",
        member_id: str = "",
        member_epoch: int = 0,
        instance_id: str | None = None,
        rack_id: str | None = None,
        rebalance_timeout_ms: int = -1,
        subscribed_topic_names: list[str] | None = None,
        subscribed_topic_regex: str | None = None,
        server_assignor: str | None = None,
        topic_partitions: list[ConsumerGroupHeartbeatRequest.TopicPartitions] | None = None,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> ConsumerGroupHeartbeatRequest: ...
    class TopicPartitions(Struct):
        """A TopicPartitions struct of ConsumerGroupHeartbeatRequest.

        Fields:
            topic_id: uuid, v0+, default UUID('00000000-0000-0000-0000-000000000000')
            partitions: []int32, v0+
        """
        topic_id: UUID
        partitions: list[int]
        def __init__(
            self,
            *,
            topic_id: UUID = ...,
            partitions: list[int] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class ConsumerGroupHeartbeatResponse(Message):
    """The ConsumerGroupHeartbeat response body (API key 68, v0-1, flexible v0+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        error_code: int16, v0+, default 0
        error_message: string, v0+, nullable v0+, default None
        member_id: string, v0+, nullable v0+, default None
        member_epoch: int32, v0+, default 0
        heartbeat_interval_ms: int32, v0+, default 0
        assignment: Assignment, v0+, nullable v0+, default None
    """
    API_KEY: ClassVar[Literal[68]]
    API_NAME: ClassVar[Literal["ConsumerGroupHeartbeat"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    member_id: str | None
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: ConsumerGroupHeartbeatResponse.Assignment | None
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        error_code: int = 0,
        error_message: str | None = None,
        member_id: str | None = None,
        member_epoch: int = 0,
        heartbeat_interval_ms: int = 0,
        assignment: ConsumerGroupHeartbeatResponse.Assignment | None = None,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> ConsumerGroupHeartbeatResponse: ...
    class Assignment(Struct):
        """A Assignment struct of ConsumerGroupHeartbeatResponse.

        Fields:
            topic_partitions: []TopicPartitions, v0+
        """
        topic_partitions: list[ConsumerGroupHeartbeatResponse.TopicPartitions]
        def __init__(
            self,
            *,
            topic_partitions: list[ConsumerGroupHeartbeatResponse.TopicPartitions] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class TopicPartitions(Struct):
        """A TopicPartitions struct of ConsumerGroupHeartbeatResponse.

        Fields:
            topic_id: uuid, v0+, default UUID('00000000-0000-0000-0000-000000000000')
            partitions: []int32, v0+
        """
        topic_id: UUID
        partitions: list[int]
        def __init__(
            self,
            *,
            topic_id: UUID = ...,
            partitions: list[int] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class ConsumerGroupDescribeRequest(Message):
    """The ConsumerGroupDescribe request body (API key 69, v0, flexible v0+).

    Fields:
        group_ids: []string, v0+
        include_authorized_operations: bool, v0+, default False
    """
    API_KEY: ClassVar[Literal[69]]
    API_NAME: ClassVar[Literal["ConsumerGroupDescribe"]]
    IS_REQUEST: ClassVar[Literal[True]]
    group_ids: list[str]
    include_authorized_operations: bool
    def __init__(
        self,
        *,
        group_ids: list[str] = ...,
        include_authorized_operations: bool = False,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> ConsumerGroupDescribeRequest: ...

class ConsumerGroupDescribeResponse(Message):
    """The ConsumerGroupDescribe response body (API key 69, v0, flexible v0+).

    Fields:
        throttle_time_ms: int32, v0+, default 0
        groups: []DescribedGroup, v0+
    """
    API_KEY: ClassVar[Literal[69]]
    API_NAME: ClassVar[Literal["ConsumerGroupDescribe"]]
    IS_REQUEST: ClassVar[Literal[False]]
    throttle_time_ms: int
    groups: list[ConsumerGroupDescribeResponse.DescribedGroup]
    def __init__(
        self,
        *,
        throttle_time_ms: int = 0,
        groups: list[ConsumerGroupDescribeResponse.DescribedGroup] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> ConsumerGroupDescribeResponse: ...
    class DescribedGroup(Struct):
        """A DescribedGroup struct of ConsumerGroupDescribeResponse.

        Fields:
            error_code: int16, v0+, default 0
            error_message: string, v0+, nullable v0+, default None
            group_id: string, v0+, default ''
            group_state: string, v0+, default ''
            group_epoch: int32, v0+, default 0
            assignment_epoch: int32, v0+, default 0
            assignor_name: string, v0+, default ''
            members: []Member, v0+
            authorized_operations: int32, v0+, default -2147483648
        """
        error_code: int
        error_message: str | None
        group_id: str
        group_state: str
        group_epoch: int
        assignment_epoch: int
        assignor_name: str
        members: list[ConsumerGroupDescribeResponse.Member]
        authorized_operations: int
        def __init__(
            self,
            *,
            error_code: int = 0,
            error_message: str | None = None,
            group_id: str = "",
            group_state: str = "",
            group_epoch: int = 0,
            assignment_epoch: int = 0,
            assignor_name: str = "",
            members: list[ConsumerGroupDescribeResponse.Member] = ...,
            authorized_operations: int = -2147483648,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class Member(Struct):
        """A Member struct of ConsumerGroupDescribeResponse.

        Fields:
            member_id: string, v0+, default ''
            instance_id: string, v0+, nullable v0+, default None
            rack_id: string, v0+, nullable v0+, default None
            member_epoch: int32, v0+, default 0
            client_id: string, v0+, default ''
            client_host: string, v0+, default ''
            subscribed_topic_names: []string, v0+
            subscribed_topic_regex: string, v0+, nullable v0+, default None
            assignment: Assignment, v0+
            target_assignment: Assignment, v0+
        """
        member_id: str
        instance_id: str | None
        rack_id: str | None
        member_epoch: int
        client_id: str
        client_host: str
        subscribed_topic_names: list[str]
        subscribed_topic_regex: str | None
        assignment: ConsumerGroupDescribeResponse.Assignment
        target_assignment: ConsumerGroupDescribeResponse.Assignment
        def __init__(
            self,
            *,
            member_id: str = "",
            instance_id: str | None = None,
            rack_id: str | None = None,
            member_epoch: int = 0,
            client_id: str = "",
            client_host: str = "",
            subscribed_topic_names: list[str] = ...,
            subscribed_topic_regex: str | None = None,
            assignment: ConsumerGroupDescribeResponse.Assignment = ...,
            target_assignment: ConsumerGroupDescribeResponse.Assignment = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class Assignment(Struct):
        """A Assignment struct of ConsumerGroupDescribeResponse.

        Fields:
            topic_partitions: []TopicPartitions, v0+
        """
        topic_partitions: list[ConsumerGroupDescribeResponse.TopicPartitions]
        def __init__(
            self,
            *,
            topic_partitions: list[ConsumerGroupDescribeResponse.TopicPartitions] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
    class TopicPartitions(Struct):
        """A TopicPartitions struct of ConsumerGroupDescribeResponse.

        Fields:
            topic_id: uuid, v0+, default UUID('00000000-0000-0000-0000-000000000000')
            topic_name: string, v0+, default ''
            partitions: []int32, v0+
        """
        topic_id: UUID
        topic_name: str
        partitions: list[int]
        def __init__(
            self,
            *,
            topic_id: UUID = ...,
            topic_name: str = "",
            partitions: list[int] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class ConsumerProtocolSubscription(DataMessage):
    """Kafka's ConsumerProtocolSubscription data message (v0-3, flexible vnone); on the wire its version comes first, as an int16 (encode_versioned, decode_versioned).

    Fields:
        topics: []string, v0+
        user_data: bytes, v0+, nullable v0+, default None
        owned_partitions: []TopicPartition, v1+, ignorable
        generation_id: int32, v2+, default -1, ignorable
        rack_id: string, v3+, nullable v3+, default None, ignorable
    """
    topics: list[str]
    user_data: bytes | None
    owned_partitions: list[ConsumerProtocolSubscription.TopicPartition]
    generation_id: int
    rack_id: str | None
    def __init__(
        self,
        *,
        topics: list[str] = ...,
        user_data: bytes | None = None,
        owned_partitions: list[ConsumerProtocolSubscription.TopicPartition] = ...,
        generation_id: int = -1,
        rack_id: str | None = None,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> ConsumerProtocolSubscription: ...
    class TopicPartition(Struct):
        """A TopicPartition struct of ConsumerProtocolSubscription.

        Fields:
            topic: string, v1+, default ''
            partitions: []int32, v1+
        """
        topic: str
        partitions: list[int]
        def __init__(
            self,
            *,
            topic: str = "",
            partitions: list[int] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class ConsumerProtocolAssignment(DataMessage):
    """Kafka's ConsumerProtocolAssignment data message (v0-3, flexible vnone); on the wire its version comes first, as an int16 (encode_versioned, decode_versioned).

    Fields:
        assigned_partitions: []TopicPartition, v0+
        user_data: bytes, v0+, nullable v0+, default None
    """
    assigned_partitions: list[ConsumerProtocolAssignment.TopicPartition]
    user_data: bytes | None
    def __init__(
        self,
        *,
        assigned_partitions: list[ConsumerProtocolAssignment.TopicPartition] = ...,
        user_data: bytes | None = None,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> ConsumerProtocolAssignment: ...
    class TopicPartition(Struct):
        """A TopicPartition struct of ConsumerProtocolAssignment.

        Fields:
            topic: string, v0+, default ''
            partitions: []int32, v0+
        """
        topic: str
        partitions: list[int]
        def __init__(
            self,
            *,
            topic: str = "",
            partitions: list[int] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class OffsetCommitKey(DataMessage):
    """Kafka's OffsetCommitKey data message (v0-1, flexible vnone); on the wire its version comes first, as an int16 (encode_versioned, decode_versioned).

    Fields:
        group: string, v0+, default ''
        topic: string, v0+, default ''
        partition: int32, v0+, default 0
    """
    group: str
    topic: str
    partition: int
    def __init__(
        self,
        *,
        group: str = "",
        topic: str = "",
        partition: int = 0,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> OffsetCommitKey: ...

class OffsetCommitValue(DataMessage):
    """Kafka's OffsetCommitValue data message (v0-4, flexible v4+); on the wire its version comes first, as an int16 (encode_versioned, decode_versioned).

    Fields:
        offset: int64, v0+, default 0
        leader_epoch: int32, v3+, default -1, ignorable
        metadata: string, v0+, default ''
        commit_timestamp: int64, v0+, default 0
        expire_timestamp: int64, v1, default -1, ignorable
    """
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int
    def __init__(
        self,
        *,
        offset: int = 0,
        leader_epoch: int = -1,
        metadata: str = "",
        commit_timestamp: int = 0,
        expire_timestamp: int = -1,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> OffsetCommitValue: ...

class GroupMetadataKey(DataMessage):
    """Kafka's GroupMetadataKey data message (v2, flexible vnone); on the wire its version comes first, as an int16 (encode_versioned, decode_versioned).

    Fields:
        group: string, v0+, default ''
    """
    group: str
    def __init__(
        self,
        *,
        group: str = "",
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> GroupMetadataKey: ...

class GroupMetadataValue(DataMessage):
    """Kafka's GroupMetadataValue data message (v0-4, flexible v4+); on the wire its version comes first, as an int16 (encode_versioned, decode_versioned).

    Fields:
        protocol_type: string, v0+, default ''
        generation: int32, v0+, default 0
        protocol: string, v0+, nullable v0+, default ''
        leader: string, v0+, nullable v0+, default ''
        current_state_timestamp: int64, v2+, default -1, ignorable
        members: []MemberMetadata, v0+
    """
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: list[GroupMetadataValue.MemberMetadata]
    def __init__(
        self,
        *,
        protocol_type: str = "",
        generation: int = 0,
        protocol: str | None = "",
        leader: str | None = "",
        current_state_timestamp: int = -1,
        members: list[GroupMetadataValue.MemberMetadata] = ...,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> GroupMetadataValue: ...
    class MemberMetadata(Struct):
        """A MemberMetadata struct of GroupMetadataValue.

        Fields:
            member_id: string, v0+, default ''
            group_instance_id: string, v3+, nullable v3+, default None, ignorable
            client_id: string, v0+, default ''
            client_host: string, v0+, default ''
            rebalance_timeout: int32, v1+, default 0, ignorable
            session_timeout: int32, v0+, default 0
            subscription: bytes, v0+, default b''
            assignment: bytes, v0+, default b''
        """
        member_id: str
        group_instance_id: str | None
        client_id: str
        client_host: str
        rebalance_timeout: int
        session_timeout: int
        subscription: bytes
        assignment: bytes
        def __init__(
            self,
            *,
            member_id: str = "",
            group_instance_id: str | None = None,
            client_id: str = "",
            client_host: str = "",
            rebalance_timeout: int = 0,
            session_timeout: int = 0,
            subscription: bytes = b'',
            assignment: bytes = b'',
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...

class TransactionLogKey(DataMessage):
    """Kafka's TransactionLogKey data message (v0, flexible vnone); on the wire its version comes first, as an int16 (encode_versioned, decode_versioned).

    Fields:
        transactional_id: string, v0+, default ''
    """
    transactional_id: str
    def __init__(
        self,
        *,
        transactional_id: str = "",
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> TransactionLogKey: ...

class TransactionLogValue(DataMessage):
    """Kafka's TransactionLogValue data message (v0-1, flexible v1+); on the wire its version comes first, as an int16 (encode_versioned, decode_versioned).

    Fields:
        producer_id: int64, v0+, default 0
        previous_producer_id: int64, v1+, tag 0, default -1, ignorable
        next_producer_id: int64, v1+, tag 1, default -1, ignorable
        producer_epoch: int16, v0+, default 0
        transaction_timeout_ms: int32, v0+, default 0
        transaction_status: int8, v0+, default 0
        transaction_partitions: []PartitionsSchema, v0+, nullable v0+
        transaction_last_update_timestamp_ms: int64, v0+, default 0
        transaction_start_timestamp_ms: int64, v0+, default 0
        client_transaction_version: int16, v1+, tag 2, default 0, ignorable
    """
    producer_id: int
    previous_producer_id: int
    next_producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_status: int
    transaction_partitions: list[TransactionLogValue.PartitionsSchema] | None
    transaction_last_update_timestamp_ms: int
    transaction_start_timestamp_ms: int
    client_transaction_version: int
    def __init__(
        self,
        *,
        producer_id: int = 0,
        previous_producer_id: int = -1,
        next_producer_id: int = -1,
        producer_epoch: int = 0,
        transaction_timeout_ms: int = 0,
        transaction_status: int = 0,
        transaction_partitions: list[TransactionLogValue.PartitionsSchema] | None = ...,
        transaction_last_update_timestamp_ms: int = 0,
        transaction_start_timestamp_ms: int = 0,
        client_transaction_version: int = 0,
        unknown_tagged_fields: dict[int, bytes] | None = None,
    ) -> None: ...
    @classmethod
    def decode(cls, data: Any, version: int) -> TransactionLogValue: ...
    class PartitionsSchema(Struct):
        """A PartitionsSchema struct of TransactionLogValue.

        Fields:
            topic: string, v0+, default ''
            partition_ids: []int32, v0+
        """
        topic: str
        partition_ids: list[int]
        def __init__(
            self,
            *,
            topic: str = "",
            partition_ids: list[int] = ...,
            unknown_tagged_fields: dict[int, bytes] | None = None,
        ) -> None: ...
