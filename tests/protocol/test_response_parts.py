"""encode_response_parts (protocol/frames.py): the pieces, sent in order with each
stand-in as its bytes, are exactly encode_response's frame."""

import pytest

from kproto.protocol import ApiKey, encode_response
from kproto.protocol.frames import encode_response_parts
from kproto.protocol.messages import FetchResponse, MetadataResponse
from kproto.protocol.schema import EncodeError


class StandIn:
    """Records not at hand: only their size, as a broker's log slices."""

    def __init__(self, data: bytes):
        self.data = data

    def __len__(self) -> int:
        return len(self.data)


def fetch_response(records: list) -> FetchResponse:
    return FetchResponse(session_id=0, responses=[FetchResponse.FetchableTopicResponse(topic="t", partitions=[
        FetchResponse.PartitionData(partition_index=i, high_watermark=10, records=r, aborted_transactions=[])
        for i, r in enumerate(records)])])


def joined(parts: list) -> bytes:
    return b"".join(p if isinstance(p, bytes) else p.data for p in parts)


@pytest.mark.parametrize("version", range(4, 18))
def test_pieces_make_the_plain_frame(version):
    blobs = [b"a" * 300, b"", b"b" * 70_000, None, b"c"]
    stand_ins = [StandIn(b) if b else b for b in blobs]  # empty and null stay as they are
    parts = encode_response_parts(ApiKey.FETCH, version, 42, fetch_response(stand_ins))
    assert joined(parts) == encode_response(ApiKey.FETCH, version, 42, fetch_response(blobs))
    assert [p for p in parts if not isinstance(p, bytes)] == [s for s in stand_ins if isinstance(s, StandIn)]
    assert all(isinstance(a, bytes) != isinstance(b, bytes) for a, b in zip(parts, parts[1:]))


def test_bytes_only_give_the_whole_frame_in_one_piece():
    body = MetadataResponse(brokers=[MetadataResponse.MetadataResponseBroker(node_id=1, host="h", port=9092)])
    assert encode_response_parts(ApiKey.METADATA, 12, 7, body) == [encode_response(ApiKey.METADATA, 12, 7, body)]
    records = fetch_response([b"xyz", memoryview(b"abc"), bytearray(b"q")])
    assert encode_response_parts(ApiKey.FETCH, 12, 7, records) == [encode_response(ApiKey.FETCH, 12, 7, records)]


def test_text_in_a_records_field_is_refused():
    with pytest.raises(EncodeError):
        encode_response_parts(ApiKey.FETCH, 12, 1, fetch_response(["not bytes"]))
