"""The schema table: every API kproto speaks, its data messages, and the classes built from them.

The table is split by API family (:mod:`.connection`, :mod:`.produce_fetch`, :mod:`.groups`,
:mod:`.txn`, :mod:`.admin`, :mod:`.controller`), each written in the :mod:`kproto.protocol.spec` DSL with one
entry per API key in key order; :data:`TABLE` joins them in key order. Kafka's data
messages (no API key: the consumer protocol, the ``__consumer_offsets`` records) are in
:mod:`.data`, joined in :data:`DATA`. Classes are generated from the table at import
(:func:`kproto.protocol.schema.build_message`, :func:`~kproto.protocol.schema.build_data_message`)
and bound below under Kafka's message names, e.g.::

    from kproto.protocol.messages import MetadataRequest, OffsetCommitKey

    req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="orders")])
    body = req.encode(12)
    assert MetadataRequest.decode(body, 12) == req

    key = OffsetCommitKey(group="g", topic="orders", partition=0).encode_versioned(1)
    assert OffsetCommitKey.decode_versioned(key) == (1, OffsetCommitKey(group="g", topic="orders", partition=0))

Every class documents its fields (``help(MetadataRequest)``).
"""

from __future__ import annotations

import enum

from kproto.protocol.messages import admin, connection, controller, data, groups, produce_fetch, txn
from kproto.protocol.schema import DataMessage, Message, build_data_message, build_message
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
    "AddOffsetsToTxnRequest", "AddOffsetsToTxnResponse",
    "AddPartitionsToTxnRequest", "AddPartitionsToTxnResponse",
    "AllocateProducerIdsRequest", "AllocateProducerIdsResponse",
    "AlterClientQuotasRequest", "AlterClientQuotasResponse",
    "AlterConfigsRequest", "AlterConfigsResponse",
    "AlterPartitionRequest", "AlterPartitionResponse",
    "AlterUserScramCredentialsRequest", "AlterUserScramCredentialsResponse",
    "ApiVersionsRequest", "ApiVersionsResponse",
    "BrokerHeartbeatRequest", "BrokerHeartbeatResponse",
    "BrokerRegistrationRequest", "BrokerRegistrationResponse",
    "ConsumerGroupDescribeRequest", "ConsumerGroupDescribeResponse",
    "ConsumerGroupHeartbeatRequest", "ConsumerGroupHeartbeatResponse",
    "CreateAclsRequest", "CreateAclsResponse",
    "CreatePartitionsRequest", "CreatePartitionsResponse",
    "CreateTopicsRequest", "CreateTopicsResponse",
    "DeleteAclsRequest", "DeleteAclsResponse",
    "DeleteGroupsRequest", "DeleteGroupsResponse",
    "DeleteRecordsRequest", "DeleteRecordsResponse",
    "DeleteTopicsRequest", "DeleteTopicsResponse",
    "DescribeAclsRequest", "DescribeAclsResponse",
    "DescribeClientQuotasRequest", "DescribeClientQuotasResponse",
    "DescribeClusterRequest", "DescribeClusterResponse",
    "DescribeConfigsRequest", "DescribeConfigsResponse",
    "DescribeGroupsRequest", "DescribeGroupsResponse",
    "DescribeLogDirsRequest", "DescribeLogDirsResponse",
    "DescribeProducersRequest", "DescribeProducersResponse",
    "DescribeTransactionsRequest", "DescribeTransactionsResponse",
    "DescribeUserScramCredentialsRequest", "DescribeUserScramCredentialsResponse",
    "ElectLeadersRequest", "ElectLeadersResponse",
    "EndTxnRequest", "EndTxnResponse",
    "FetchRequest", "FetchResponse",
    "FindCoordinatorRequest", "FindCoordinatorResponse",
    "HeartbeatRequest", "HeartbeatResponse",
    "IncrementalAlterConfigsRequest", "IncrementalAlterConfigsResponse",
    "InitProducerIdRequest", "InitProducerIdResponse",
    "JoinGroupRequest", "JoinGroupResponse",
    "LeaveGroupRequest", "LeaveGroupResponse",
    "ListGroupsRequest", "ListGroupsResponse",
    "ListOffsetsRequest", "ListOffsetsResponse",
    "ListTransactionsRequest", "ListTransactionsResponse",
    "MetadataRequest", "MetadataResponse",
    "OffsetCommitRequest", "OffsetCommitResponse",
    "OffsetDeleteRequest", "OffsetDeleteResponse",
    "OffsetFetchRequest", "OffsetFetchResponse",
    "OffsetForLeaderEpochRequest", "OffsetForLeaderEpochResponse",
    "ProduceRequest", "ProduceResponse",
    "SaslAuthenticateRequest", "SaslAuthenticateResponse",
    "SaslHandshakeRequest", "SaslHandshakeResponse",
    "SyncGroupRequest", "SyncGroupResponse",
    "TxnOffsetCommitRequest", "TxnOffsetCommitResponse",
    "WriteTxnMarkersRequest", "WriteTxnMarkersResponse",
]

#: Every entry of the table, in API key order.
TABLE: tuple[Api, ...] = tuple(
    sorted(connection.APIS + produce_fetch.APIS + groups.APIS + txn.APIS + admin.APIS + controller.APIS, key=lambda a: a.key)
)
#: The table by API key.
APIS: dict[int, Api] = {a.key: a for a in TABLE}
if len(APIS) != len(TABLE):  # pragma: no cover - a table bug, caught at import
    raise RuntimeError("the schema table declares an API key twice")

#: Kafka's API keys by Java's ``ApiKeys`` names, for the APIs in the table.
ApiKey = enum.IntEnum(  # type: ignore[misc]
    "ApiKey",
    {"".join("_" + c if c.isupper() and i else c for i, c in enumerate(a.name)).upper(): a.key for a in TABLE},
    module=__name__,
)

#: Request and response classes by API key.
REQUESTS: dict[int, type[Message]] = {a.key: build_message(a.request) for a in TABLE}
RESPONSES: dict[int, type[Message]] = {a.key: build_message(a.response) for a in TABLE}


#: Every data message of the table, in name order.
DATA: tuple[Data, ...] = tuple(sorted(data.DATA, key=lambda d: d.name))
#: The data message classes by name.
DATA_CLASSES: dict[str, type[DataMessage]] = {d.name: build_data_message(d.message) for d in DATA}
if len(DATA_CLASSES) != len(DATA):  # pragma: no cover - a table bug, caught at import
    raise RuntimeError("the schema table declares a data message twice")


def request_class(api_key: int) -> type[Message]:
    """Return the request class of ``api_key``.

    Raises:
        KeyError: the table has no such API.
    """
    return REQUESTS[api_key]


def response_class(api_key: int) -> type[Message]:
    """Return the response class of ``api_key``.

    Raises:
        KeyError: the table has no such API.
    """
    return RESPONSES[api_key]


def data_class(name: str) -> type[DataMessage]:
    """Return the class of the data message ``name`` (``"OffsetCommitValue"``).

    Raises:
        KeyError: the table has no such data message.
    """
    return DATA_CLASSES[name]


# Bound by name so the classes can be imported and grepped; a test checks this list
# against the table.
ProduceRequest, ProduceResponse = REQUESTS[0], RESPONSES[0]
FetchRequest, FetchResponse = REQUESTS[1], RESPONSES[1]
ListOffsetsRequest, ListOffsetsResponse = REQUESTS[2], RESPONSES[2]
MetadataRequest, MetadataResponse = REQUESTS[3], RESPONSES[3]
OffsetCommitRequest, OffsetCommitResponse = REQUESTS[8], RESPONSES[8]
OffsetFetchRequest, OffsetFetchResponse = REQUESTS[9], RESPONSES[9]
FindCoordinatorRequest, FindCoordinatorResponse = REQUESTS[10], RESPONSES[10]
JoinGroupRequest, JoinGroupResponse = REQUESTS[11], RESPONSES[11]
HeartbeatRequest, HeartbeatResponse = REQUESTS[12], RESPONSES[12]
LeaveGroupRequest, LeaveGroupResponse = REQUESTS[13], RESPONSES[13]
SyncGroupRequest, SyncGroupResponse = REQUESTS[14], RESPONSES[14]
DescribeGroupsRequest, DescribeGroupsResponse = REQUESTS[15], RESPONSES[15]
ListGroupsRequest, ListGroupsResponse = REQUESTS[16], RESPONSES[16]
SaslHandshakeRequest, SaslHandshakeResponse = REQUESTS[17], RESPONSES[17]
ApiVersionsRequest, ApiVersionsResponse = REQUESTS[18], RESPONSES[18]
CreateTopicsRequest, CreateTopicsResponse = REQUESTS[19], RESPONSES[19]
DeleteTopicsRequest, DeleteTopicsResponse = REQUESTS[20], RESPONSES[20]
DeleteRecordsRequest, DeleteRecordsResponse = REQUESTS[21], RESPONSES[21]
InitProducerIdRequest, InitProducerIdResponse = REQUESTS[22], RESPONSES[22]
OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse = REQUESTS[23], RESPONSES[23]
AddPartitionsToTxnRequest, AddPartitionsToTxnResponse = REQUESTS[24], RESPONSES[24]
AddOffsetsToTxnRequest, AddOffsetsToTxnResponse = REQUESTS[25], RESPONSES[25]
EndTxnRequest, EndTxnResponse = REQUESTS[26], RESPONSES[26]
WriteTxnMarkersRequest, WriteTxnMarkersResponse = REQUESTS[27], RESPONSES[27]
TxnOffsetCommitRequest, TxnOffsetCommitResponse = REQUESTS[28], RESPONSES[28]
DescribeAclsRequest, DescribeAclsResponse = REQUESTS[29], RESPONSES[29]
CreateAclsRequest, CreateAclsResponse = REQUESTS[30], RESPONSES[30]
DeleteAclsRequest, DeleteAclsResponse = REQUESTS[31], RESPONSES[31]
DescribeConfigsRequest, DescribeConfigsResponse = REQUESTS[32], RESPONSES[32]
AlterConfigsRequest, AlterConfigsResponse = REQUESTS[33], RESPONSES[33]
DescribeLogDirsRequest, DescribeLogDirsResponse = REQUESTS[35], RESPONSES[35]
SaslAuthenticateRequest, SaslAuthenticateResponse = REQUESTS[36], RESPONSES[36]
CreatePartitionsRequest, CreatePartitionsResponse = REQUESTS[37], RESPONSES[37]
DeleteGroupsRequest, DeleteGroupsResponse = REQUESTS[42], RESPONSES[42]
ElectLeadersRequest, ElectLeadersResponse = REQUESTS[43], RESPONSES[43]
IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse = REQUESTS[44], RESPONSES[44]
OffsetDeleteRequest, OffsetDeleteResponse = REQUESTS[47], RESPONSES[47]
DescribeClientQuotasRequest, DescribeClientQuotasResponse = REQUESTS[48], RESPONSES[48]
AlterClientQuotasRequest, AlterClientQuotasResponse = REQUESTS[49], RESPONSES[49]
DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse = REQUESTS[50], RESPONSES[50]
AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse = REQUESTS[51], RESPONSES[51]
AlterPartitionRequest, AlterPartitionResponse = REQUESTS[56], RESPONSES[56]
DescribeClusterRequest, DescribeClusterResponse = REQUESTS[60], RESPONSES[60]
DescribeProducersRequest, DescribeProducersResponse = REQUESTS[61], RESPONSES[61]
BrokerRegistrationRequest, BrokerRegistrationResponse = REQUESTS[62], RESPONSES[62]
BrokerHeartbeatRequest, BrokerHeartbeatResponse = REQUESTS[63], RESPONSES[63]
DescribeTransactionsRequest, DescribeTransactionsResponse = REQUESTS[65], RESPONSES[65]
ListTransactionsRequest, ListTransactionsResponse = REQUESTS[66], RESPONSES[66]
AllocateProducerIdsRequest, AllocateProducerIdsResponse = REQUESTS[67], RESPONSES[67]
ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse = REQUESTS[68], RESPONSES[68]
ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse = REQUESTS[69], RESPONSES[69]
ConsumerProtocolSubscription = DATA_CLASSES["ConsumerProtocolSubscription"]
ConsumerProtocolAssignment = DATA_CLASSES["ConsumerProtocolAssignment"]
OffsetCommitKey = DATA_CLASSES["OffsetCommitKey"]
OffsetCommitValue = DATA_CLASSES["OffsetCommitValue"]
GroupMetadataKey = DATA_CLASSES["GroupMetadataKey"]
GroupMetadataValue = DATA_CLASSES["GroupMetadataValue"]
TransactionLogKey = DATA_CLASSES["TransactionLogKey"]
TransactionLogValue = DATA_CLASSES["TransactionLogValue"]
