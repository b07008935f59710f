"""A blocking socket client speaking kproto.protocol, for tests that need exact requests
to a broker (minibroker or Tansu), and ``size_prefixed`` for hand-made frames."""

import socket
import struct

from kproto.protocol import FrameReader, decode_response, encode_request

__all__ = ["RawClient", "size_prefixed"]


class RawClient:
    """A blocking socket speaking kproto.protocol: for tests that need exact requests."""

    def __init__(self, port: int, timeout: float = 10.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.frames = FrameReader()
        self.correlation_id = 0

    def send(self, api_key, version, body) -> int:
        self.correlation_id += 1
        self.sock.sendall(encode_request(api_key, version, self.correlation_id, "raw-test", body))
        return self.correlation_id

    def send_raw(self, payload: bytes) -> None:
        self.sock.sendall(payload)

    def receive_frame(self) -> bytes | None:
        """The next response frame, or None when the broker closed the connection."""
        while (frame := self.frames.next_frame()) is None:
            data = self.sock.recv(65536)
            if not data:
                return None
            self.frames.receive_data(data)
        return frame

    def receive(self, api_key, version):
        frame = self.receive_frame()
        assert frame is not None, "the broker closed the connection"
        return decode_response(api_key, version, frame)

    def request(self, api_key, version, body):
        sent = self.send(api_key, version, body)
        correlation_id, response = self.receive(api_key, version)
        assert correlation_id == sent
        return response

    def is_closed_by_peer(self) -> bool:
        try:
            return self.receive_frame() is None
        except (ConnectionResetError, TimeoutError):
            return False

    def close(self) -> None:
        self.sock.close()


def size_prefixed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def elect_leaders_raw(port, version, election_type, partitions):
    """One ElectLeaders (43) to the broker at ``port``: ``partitions`` {topic: [index]} or
    None (every partition)."""
    from kproto.protocol import ApiKey
    from kproto.protocol.messages import ElectLeadersRequest

    client = RawClient(port)
    try:
        return client.request(ApiKey.ELECT_LEADERS, version, ElectLeadersRequest(
            election_type=election_type, topic_partitions=None if partitions is None else [
                ElectLeadersRequest.TopicPartitions(topic=t, partitions=ps) for t, ps in partitions.items()]))
    finally:
        client.close()


def election_codes(response):
    """An ElectLeaders answer's error code per (topic, partition)."""
    return {(t.topic, p.partition_id): p.error_code for t in response.replica_election_results
            for p in t.partition_result}
