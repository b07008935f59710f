"""Tests for kproto.errors: the Kafka error-code table, for_code, and CorruptRecordError."""

from __future__ import annotations

import pickle
import re

import pytest

from kproto import errors
from kproto.errors import (
    CorruptMessageError,
    CorruptRecordError,
    KafkaCodeError,
    KafkaError,
    ProtocolError,
    UnknownServerError,
    for_code,
)

pytestmark = pytest.mark.codec

CODE_CLASSES = [
    obj
    for name in errors.__all__
    if isinstance(obj := getattr(errors, name), type)
    and issubclass(obj, KafkaCodeError)
    and obj is not KafkaCodeError
    and "code" in obj.__dict__
    and obj.__name__ == name  # not an alias (SaslAuthenticationError)
]


def test_table_covers_every_code_from_minus_1_to_133_except_none():
    codes = [cls.code for cls in CODE_CLASSES]
    assert codes == [-1, *range(1, 134)]  # declared in code order, no gaps, no NONE


def test_every_code_maps_to_its_class():
    for cls in CODE_CLASSES:
        assert for_code(cls.code) is cls


def test_names_are_unique_kafka_style_and_match_class_names():
    names = [cls.name for cls in CODE_CLASSES]
    assert len(set(names)) == len(names)
    for cls in CODE_CLASSES:
        assert re.fullmatch(r"[A-Z][A-Z0-9_]*", cls.name), cls.name
        stem = re.sub(r"_(ERROR|EXCEPTION)$", "", cls.name)
        expected = "".join(part.capitalize() for part in stem.split("_")) + "Error"
        assert cls.__name__ == expected
        assert "ErrorError" not in cls.__name__


def test_every_class_is_exported_documented_and_flagged():
    for cls in CODE_CLASSES:
        assert cls.__name__ in errors.__all__
        assert isinstance(cls.retriable, bool)
        doc = (cls.__doc__ or "").strip()
        assert doc and "\n" not in doc, cls.__name__


def test_all_names_exist():
    for name in errors.__all__:
        assert hasattr(errors, name), name


@pytest.mark.parametrize(
    "name, retriable",
    [
        ("UNKNOWN_SERVER_ERROR", False),
        ("OFFSET_OUT_OF_RANGE", False),
        ("CORRUPT_MESSAGE", True),
        ("UNKNOWN_TOPIC_OR_PARTITION", True),
        ("LEADER_NOT_AVAILABLE", True),
        ("NOT_LEADER_OR_FOLLOWER", True),
        ("REQUEST_TIMED_OUT", True),
        ("BROKER_NOT_AVAILABLE", False),
        ("NETWORK_EXCEPTION", True),
        ("COORDINATOR_LOAD_IN_PROGRESS", True),
        ("NOT_COORDINATOR", True),
        ("NOT_ENOUGH_REPLICAS", True),
        ("REBALANCE_IN_PROGRESS", False),
        ("TOPIC_AUTHORIZATION_FAILED", False),
        ("GROUP_AUTHORIZATION_FAILED", False),
        ("UNSUPPORTED_VERSION", False),
        ("NOT_CONTROLLER", True),
        ("INVALID_PRODUCER_EPOCH", False),
        ("CONCURRENT_TRANSACTIONS", True),
        ("KAFKA_STORAGE_ERROR", True),
        ("FENCED_LEADER_EPOCH", True),
        ("UNSUPPORTED_COMPRESSION_TYPE", False),
        ("PRODUCER_FENCED", False),
        ("UNKNOWN_TOPIC_ID", True),
        ("FENCED_MEMBER_EPOCH", False),
        ("SHARE_SESSION_NOT_FOUND", True),
        ("REBOOTSTRAP_REQUIRED", False),
        ("SHARE_SESSION_LIMIT_REACHED", True),
    ],
)
def test_retriable_flags_of_well_known_codes(name, retriable):
    by_name = {cls.name: cls for cls in CODE_CLASSES}
    assert by_name[name].retriable is retriable


def test_class_names_for_names_ending_in_error_or_exception():
    assert errors.UnknownServerError.code == -1
    assert errors.NetworkError.name == "NETWORK_EXCEPTION"
    assert errors.InvalidTopicError.name == "INVALID_TOPIC_EXCEPTION"
    assert errors.KafkaStorageError.name == "KAFKA_STORAGE_ERROR"
    assert errors.FetchSessionTopicIdError.name == "FETCH_SESSION_TOPIC_ID_ERROR"
    assert errors.NotLeaderOrFollowerError.code == 6


def test_unknown_code_keeps_its_number():
    cls = for_code(9999)
    assert issubclass(cls, KafkaCodeError)
    assert cls.code == 9999
    assert "9999" in cls.name
    assert cls.retriable is False  # as Java: an unknown code is UNKNOWN_SERVER_ERROR
    error = cls("boom")
    assert error.code == 9999 and "9999" in str(error)
    assert for_code(9999) is cls  # the same class every time


def test_none_is_not_an_error():
    assert for_code(0).code == 0
    assert 0 not in [cls.code for cls in CODE_CLASSES]


def test_str_contains_the_name():
    assert str(errors.NotLeaderOrFollowerError("partition t-0")) == (
        "[NOT_LEADER_OR_FOLLOWER] partition t-0"
    )
    bare = str(errors.TopicAuthorizationFailedError())
    assert bare.startswith("[TOPIC_AUTHORIZATION_FAILED] ")
    assert len(bare) > len("[TOPIC_AUTHORIZATION_FAILED] ")  # falls back to the docstring


def test_tree():
    assert issubclass(KafkaCodeError, KafkaError)
    assert issubclass(ProtocolError, KafkaError)
    assert not issubclass(ProtocolError, KafkaCodeError)
    assert issubclass(CorruptRecordError, CorruptMessageError)
    assert CorruptRecordError.code == 2 and CorruptRecordError.retriable is True
    assert for_code(2) is CorruptMessageError  # the refinement does not replace the code
    assert for_code(-1) is UnknownServerError


def test_declaring_a_code_twice_is_refused():
    with pytest.raises(TypeError, match="declared twice"):
        type("Again", (KafkaCodeError,), {"code": 6, "name": "AGAIN", "retriable": False})


def test_corrupt_record_error_carries_and_pickles_offsets():
    error = CorruptRecordError("bad CRC", 100, 199)
    assert (error.first_offset, error.last_offset) == (100, 199)
    assert "CORRUPT_MESSAGE" in str(error) and "bad CRC" in str(error)
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is CorruptRecordError
    assert (copy.first_offset, copy.last_offset) == (100, 199)
    assert str(copy) == str(error)
    plain = pickle.loads(pickle.dumps(CorruptRecordError("no offsets")))
    assert (plain.first_offset, plain.last_offset) == (None, None)


def test_code_errors_pickle():
    error = errors.LeaderNotAvailableError("t-3")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is errors.LeaderNotAvailableError and str(copy) == str(error)


# Where kafka-python's table (an independent reading of Kafka's) disagrees with Kafka's
# protocol guide, and why we follow Kafka.
_KAFKA_PYTHON_DIFFERS = {
    2: "CorruptRecordException extends RetriableException; kafka-python says not retriable",
}


def test_kafka_python_agrees_on_codes_and_retriable_flags():
    kafka_errors = pytest.importorskip("kafka.errors", reason="kafka-python is not installed")
    theirs = {}
    for name in dir(kafka_errors):
        obj = getattr(kafka_errors, name)
        if isinstance(obj, type) and isinstance(getattr(obj, "errno", None), int):
            theirs.setdefault(obj.errno, obj)
    ours = {cls.code: cls for cls in CODE_CLASSES}
    compared = 0
    for code, cls in theirs.items():
        if code == 0 or code not in ours or code in _KAFKA_PYTHON_DIFFERS:
            continue
        assert ours[code].retriable is bool(cls.retriable), (code, ours[code].name)
        compared += 1
    assert compared > 100
