"""Kafka's wire protocol, sans-I/O: bytes in, message objects out, bytes back.

Both kproto's clients and minibroker speak through this package, so every request and
every response encodes and decodes. No sockets, no asyncio, no clock here.

Layers, bottom up:

* :mod:`~kproto.protocol.types`: primitive wire types (integers, strings, arrays, tags...).
* :mod:`~kproto.protocol.spec`: the table's data model and its DSL.
* :mod:`~kproto.protocol.messages`: the schema table, one entry per API key and one per
  data message, and the classes built from it (``ProduceRequest``, ``FetchResponse``...,
  ``ConsumerProtocolSubscription``, ``OffsetCommitValue``...).
* :mod:`~kproto.protocol.schema`: the generic codec that compiles the table into
  per-version encoders and decoders (its code generator is ``_codegen``).
* :mod:`~kproto.protocol.frames`: headers, size prefixes and :class:`FrameReader`.

Example, client side::

    from kproto.protocol import ApiKey, encode_request, decode_response
    from kproto.protocol.messages import ApiVersionsRequest

    wire = encode_request(ApiKey.API_VERSIONS, 3, 1, "me", ApiVersionsRequest(
        client_software_name="kproto", client_software_version="0.1"))
    # ... send wire; a FrameReader hands back received_frame ...
    correlation_id, response = decode_response(ApiKey.API_VERSIONS, 3, received_frame)
"""

from kproto.protocol.frames import (
    DEFAULT_MAX_FRAME_SIZE,
    FrameReader,
    RequestHeader,
    UnsupportedApiVersionError,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    frame,
    request_header_version,
    response_header_version,
)
from kproto.protocol.messages import (
    APIS,
    DATA,
    TABLE,
    ApiKey,
    data_class,
    request_class,
    response_class,
)
from kproto.protocol.schema import DataMessage, EncodeError, Message, Struct, UnsupportedFieldError
from kproto.protocol.spec import Api, Data, Route, Versions

__all__ = [
    "APIS",
    "DATA",
    "TABLE",
    "Api",
    "ApiKey",
    "Data",
    "Route",
    "Versions",
    "Message",
    "DataMessage",
    "Struct",
    "EncodeError",
    "UnsupportedFieldError",
    "UnsupportedApiVersionError",
    "RequestHeader",
    "DEFAULT_MAX_FRAME_SIZE",
    "FrameReader",
    "frame",
    "encode_request",
    "decode_request",
    "encode_response",
    "decode_response",
    "request_header_version",
    "response_header_version",
    "request_class",
    "response_class",
    "data_class",
]
