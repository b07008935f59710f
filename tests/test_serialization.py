"""kproto.serialization: the provided serializers round-trip and refuse what they cannot hold."""

import pytest

from kproto.serialization import (
    bytes_deserializer,
    bytes_serializer,
    json_deserializer,
    json_serializer,
    string_deserializer,
    string_serializer,
)


def test_round_trips():
    assert string_deserializer()(string_serializer()("héllo")) == "héllo"
    assert string_serializer("latin-1")("é") == b"\xe9"
    value = {"user": "ü", "n": [1, 2.5, None]}
    data = json_serializer()(value)
    assert data == '{"user":"ü","n":[1,2.5,null]}'.encode() and json_deserializer()(data) == value
    assert bytes_deserializer(bytes_serializer(b"x")) == b"x"
    assert string_deserializer()(memoryview(b"ok")) == "ok"


def test_bytes_serializer_refuses_other_types():
    with pytest.raises(TypeError, match="configure a serializer"):
        bytes_serializer("text")
