"""Message classes misused: each line whose comment starts with ``error:`` must make
``mypy --strict`` report an error containing the comment's text at that line, and no other
line may (tests/typing/test_message_stubs.py). Not run, only type-checked."""

from kproto.protocol.messages import ApiKey, MetadataRequest, MetadataResponse, ProduceRequest


def wrong_field_names() -> None:
    MetadataRequest(topic=[])  # error: Unexpected keyword argument "topic" for "MetadataRequest"
    MetadataRequest.Topic(name="t")  # error: "type[MetadataRequest]" has no attribute "Topic"
    ProduceRequest.TopicProduceData(nme="t")  # error: Unexpected keyword argument "nme" for "TopicProduceData"


def wrong_types(response: MetadataResponse) -> None:
    MetadataRequest.MetadataRequestTopic(name=3)  # error: Argument "name" to "MetadataRequestTopic" has incompatible type "int"; expected "str | None"
    ProduceRequest(acks="all")  # error: Argument "acks" to "ProduceRequest" has incompatible type "str"; expected "int"
    MetadataRequest(topics=["orders"])  # error: List item 0 has incompatible type "str"; expected "MetadataRequestTopic"
    response.throttle_time_ms = None  # error: Incompatible types in assignment (expression has type "None", variable has type "int")
    response.topics[0].name.upper()  # error: Item "None" of "str | None" has no attribute "upper"


def wrong_use(response: MetadataResponse) -> list[object]:
    MetadataRequest([])  # error: Too many positional arguments for "MetadataRequest"
    return [
        response.broker_list,  # error: "MetadataResponse" has no attribute "broker_list"
        ApiKey.METADATA_REQUEST,  # error: "type[ApiKey]" has no attribute "METADATA_REQUEST"
    ]
