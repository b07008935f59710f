"""Serializers and deserializers for keys and values: plain callables.

A serializer is ``f(value) -> bytes | None``; a deserializer ``f(data) -> object``; both
are given to the clients as ``key.serializer`` / ``value.deserializer`` etc. None passes
through untouched in both directions (a null key, a tombstone), so a serializer never
sees it. The ones here cover the common cases; any callable works.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = [
    "bytes_deserializer",
    "bytes_serializer",
    "json_deserializer",
    "json_serializer",
    "string_deserializer",
    "string_serializer",
]


def bytes_serializer(value: Any) -> bytes:
    """bytes, bytearray and memoryview as they are; anything else is a TypeError."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return value
    raise TypeError(f"expected bytes, got {type(value).__name__}; configure a serializer for it")


def bytes_deserializer(data: bytes) -> bytes:
    return data


def string_serializer(encoding: str = "utf-8") -> Callable[[str], bytes]:
    """A serializer of str in ``encoding``."""
    def serialize(value: str) -> bytes:
        return value.encode(encoding)
    return serialize


def string_deserializer(encoding: str = "utf-8") -> Callable[[bytes], str]:
    """A deserializer to str from ``encoding``."""
    def deserialize(data: bytes) -> str:
        return bytes(data).decode(encoding)
    return deserialize


def json_serializer(**dumps_options: Any) -> Callable[[Any], bytes]:
    """A serializer to compact UTF-8 JSON (``json.dumps`` options may be given)."""
    options = {"separators": (",", ":"), "ensure_ascii": False, **dumps_options}

    def serialize(value: Any) -> bytes:
        return json.dumps(value, **options).encode()
    return serialize


def json_deserializer(**loads_options: Any) -> Callable[[bytes], Any]:
    """A deserializer from JSON (``json.loads`` options may be given)."""
    def deserialize(data: bytes) -> Any:
        return json.loads(data, **loads_options)
    return deserialize
