# ruff: noqa: F821  (reveal_type is mypy's, known to it without an import)
"""Message classes used as they should be: passes ``mypy --strict`` with the generated stubs,
and each ``reveal_type`` is checked by ``tests/typing/test_message_stubs.py`` against the
comment after it. Not run, only type-checked."""

from kproto.protocol import decode_response
from kproto.protocol.messages import ApiKey, FetchResponse, MetadataRequest, MetadataResponse


def build_a_request() -> bytes:
    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="orders")],
                              allow_auto_topic_creation=False)
    reveal_type(request.topics)  # list[MetadataRequest.MetadataRequestTopic] | None
    reveal_type(MetadataRequest.API_KEY)  # Literal[3]
    return request.encode(12)


def read_a_response(body: bytes) -> list[str]:
    response = MetadataResponse.decode(body, 12)
    reveal_type(response)  # MetadataResponse
    reveal_type(response.brokers[0])  # MetadataResponse.MetadataResponseBroker
    reveal_type(response.brokers[0].rack)  # str | None
    reveal_type(response.topics[0].topic_id)  # UUID
    reveal_type(response.topics[0].partitions[0].replica_nodes)  # list[int]
    reveal_type(response.unknown_tagged_fields)  # dict[int, bytes] | None
    return [t.name for t in response.topics if t.name is not None and not t.error_code]


def records_of(response: FetchResponse) -> list[bytes]:
    return [bytes(p.records) for t in response.responses for p in t.partitions if p.records is not None]


def frame_to_response(frame: bytes) -> None:
    reveal_type(ApiKey.METADATA)  # Literal[ApiKey.METADATA]?
    correlation_id, response = decode_response(ApiKey.METADATA, 12, frame)
    reveal_type(response)  # Message
