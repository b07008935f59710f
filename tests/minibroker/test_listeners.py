"""Where minibroker listens: ``listeners``, ``advertised.listeners`` and the address arguments.

Every connection here goes to loopback, even from a broker bound to 0.0.0.0.
"""

from __future__ import annotations

import socket
import time

import pytest

from kproto.protocol import ApiKey
from kproto.protocol.messages import DescribeClusterRequest, MetadataRequest
from minibroker import MiniBroker
from minibroker.config import BrokerConfig, Listener, parse_listeners
from tests.support.raw_client import RawClient


def advertised(port: int) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """The brokers that Metadata and DescribeCluster name, asked on 127.0.0.1:``port``."""
    client = RawClient(port)
    try:
        metadata = client.request(ApiKey.METADATA, 12, MetadataRequest(topics=[]))
        cluster = client.request(ApiKey.DESCRIBE_CLUSTER, 0, DescribeClusterRequest())
    finally:
        client.close()
    return [(b.host, b.port) for b in metadata.brokers], [(b.host, b.port) for b in cluster.brokers]


# -- the syntax ---------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "expected"), [
    ("PLAINTEXT://127.0.0.1:9092", [Listener("127.0.0.1", 9092)]),
    ("plaintext://localhost:0", [Listener("localhost", 0)]),  # listener names are case-insensitive
    ("PLAINTEXT://:9092", [Listener("", 9092)]),
    ("  PLAINTEXT://[::1]:19092 ", [Listener("::1", 19092)]),
    ("PLAINTEXT://broker.example", [Listener("broker.example", None)]),
    ("CLIENT://127.0.0.1:0, sasl_ssl://:9093", [Listener("127.0.0.1", 0, "CLIENT"), Listener("", 9093, "SASL_SSL")]),
    ("", []),
])
def test_parse_listeners(value, expected):
    assert parse_listeners("listeners", value) == expected


@pytest.mark.parametrize(("value", "message"), [
    ("PLAINTEXT://a:1,plaintext://b:2", "Each listener must have a different name"),
    ("localhost:9092", "must look like NAME://host:port"),
    ("PLAINTEXT://::1:9092", "must look like"),  # IPv6 goes in brackets
    ("PLAINTEXT://host:65536", "port 65536"),
])
def test_bad_listeners_name_the_key(value, message):
    with pytest.raises(ValueError, match=f"^advertised.listeners.*{message}"):
        parse_listeners("advertised.listeners", value)
    with pytest.raises(ValueError, match=f"^listeners.*{message}"):
        BrokerConfig({"listeners": value})


@pytest.mark.parametrize(("settings", "message"), [
    # KafkaConfig's checks, issue 15 item 1
    ({"listeners": "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9092"}, "Each listener must have a different port"),
    ({"listeners": "CLIENT://127.0.0.1:0"}, "No security protocol defined for listener CLIENT"),
    ({"listeners": "PLAINTEXT://127.0.0.1:0", "advertised.listeners": "SSL://example.com:9093"},
     "advertised.listeners listener names must be equal to or a subset of the ones defined in listeners. Found SSL"),
    ({"listener.security.protocol.map": "CLIENT:TLS"}, "'TLS' for listener CLIENT is not a security protocol"),
])
def test_kafkas_listener_rules(settings, message):
    """Issue 15, item 1: several named listeners, checked as Kafka checks them."""
    with pytest.raises(ValueError, match=message):
        BrokerConfig(settings)


def test_several_listeners_each_port_0_and_a_custom_name():
    """Issue 15, item 1: port 0 may repeat; a custom name maps to its protocol."""
    config = BrokerConfig({"listeners": "CLIENT://127.0.0.1:0,SECURE://127.0.0.1:0",
                           "listener.security.protocol.map": "CLIENT:PLAINTEXT,SECURE:SASL_PLAINTEXT",
                           "advertised.listeners": "SECURE://example.com:19093"})
    assert [str(listener) for listener in config.listeners] == ["CLIENT://127.0.0.1:0", "SECURE://127.0.0.1:0"]
    assert config.security_protocols == {"CLIENT": "PLAINTEXT", "SECURE": "SASL_PLAINTEXT"}
    assert config.advertised_listeners == {"CLIENT": Listener("127.0.0.1", 0, "CLIENT"),
                                           "SECURE": Listener("example.com", 19093, "SECURE")}


def test_listener_prints_in_kafka_syntax():
    assert str(Listener("::1", 0)) == "PLAINTEXT://[::1]:0"
    assert str(Listener("h", 1, "SASL_SSL")) == "SASL_SSL://h:1"
    assert str(Listener("", 9092)) == "PLAINTEXT://:9092"
    assert str(Listener("h", None)) == "PLAINTEXT://h"


def test_advertised_listeners_defaults_to_listeners():
    config = BrokerConfig({"listeners": "PLAINTEXT://localhost:9092"})
    assert config.advertised_listener == config.listener == Listener("localhost", 9092)
    config = BrokerConfig({"listeners": "PLAINTEXT://0.0.0.0:9092", "advertised.listeners": "PLAINTEXT://127.0.0.1"})
    assert (config.listener, config.advertised_listener) == (Listener("0.0.0.0", 9092), Listener("127.0.0.1", None))


def test_listeners_needs_a_port():
    with pytest.raises(ValueError, match="^listeners must name a host and port"):
        BrokerConfig({"listeners": "PLAINTEXT://localhost"})
    with pytest.raises(ValueError, match="^listeners must name a host and port"):
        BrokerConfig({"listeners": ""})


@pytest.mark.parametrize("settings", [
    {"listeners": "PLAINTEXT://0.0.0.0:9092"},  # advertised by default, as in Kafka
    {"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"},
    {"listeners": "PLAINTEXT://[::]:9092"},
])
def test_a_meta_address_is_never_advertised(settings):
    with pytest.raises(ValueError, match="^advertised.listeners cannot use the non-routable meta-address"):
        BrokerConfig(settings)


# -- precedence: arguments, then config keys, then defaults -------------------------------


def test_defaults_are_loopback_and_an_ephemeral_port():
    broker = MiniBroker()
    assert (broker.host, broker.port) == ("127.0.0.1", 0)


def test_arguments_win_over_the_parts_of_the_keys_they_name():
    config = {"listeners": "PLAINTEXT://localhost:9092", "advertised.listeners": "PLAINTEXT://example.com:19092"}
    broker = MiniBroker(port=0, config=config)
    assert (broker.host, broker.port) == ("localhost", 0)
    broker = MiniBroker(host="127.0.0.1", config=config, advertised_port=29092)
    assert (broker.host, broker.port) == ("127.0.0.1", 9092)
    assert broker._server.config["advertised.listeners"] == "PLAINTEXT://example.com:29092"


def test_a_lone_advertised_argument_edits_the_default_listeners():
    broker = MiniBroker(config={"listeners": "PLAINTEXT://localhost:9092"}, advertised_port=19092)
    assert broker._server.config["advertised.listeners"] == "PLAINTEXT://localhost:19092"


def test_bind_all_interfaces_without_an_advertised_host_is_refused():
    with pytest.raises(ValueError, match="advertised.listeners cannot use .* 0.0.0.0"):
        MiniBroker(host="0.0.0.0")


# -- what clients are told -------------------------------------------------------------


def test_bound_to_every_interface_advertising_loopback_with_kafka_python():
    kafka = pytest.importorskip("kafka")
    config = {"listeners": "PLAINTEXT://0.0.0.0:0", "advertised.listeners": "PLAINTEXT://127.0.0.1:0"}
    with MiniBroker(config=config) as broker:
        assert broker.host == "0.0.0.0" and broker.port > 0
        assert broker.bootstrap_servers == f"127.0.0.1:{broker.port}"
        assert advertised(broker.port) == ([("127.0.0.1", broker.port)], [("127.0.0.1", broker.port)])

        producer = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=5000, max_block_ms=5000)
        try:
            offsets = [producer.send("anywhere", value=b"v%d" % i, partition=0).get(10).offset for i in range(3)]
        finally:
            producer.close(5)
        assert offsets == [0, 1, 2]
        consumer = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest",
                                       consumer_timeout_ms=5000, request_timeout_ms=5000)
        try:
            consumer.assign([kafka.TopicPartition("anywhere", 0)])
            got = [m.value for _, m in zip(range(3), consumer)]
        finally:
            consumer.close()
        assert got == [b"v0", b"v1", b"v2"]


def test_bound_to_every_interface_advertising_loopback_with_confluent_kafka():
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient

    with MiniBroker(host="0.0.0.0", advertised_host="127.0.0.1") as broker:
        bootstrap = broker.bootstrap_servers
        producer = ck.Producer({"bootstrap.servers": bootstrap})
        producer.produce("ck-anywhere", value=b"hello", partition=0)
        assert producer.flush(15) == 0
        consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
        try:
            consumer.assign([ck.TopicPartition("ck-anywhere", 0, ck.OFFSET_BEGINNING)])
            deadline = time.monotonic() + 15
            message = None
            while message is None and time.monotonic() < deadline:
                message = consumer.poll(1)
            assert message is not None and message.error() is None and message.value() == b"hello"
        finally:
            consumer.close()
        admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: a collected client cancels its futures
        cluster = admin.describe_cluster().result(10)
        assert [(n.host, n.port) for n in cluster.nodes] == [("127.0.0.1", broker.port)]


def test_an_advertised_port_other_than_the_bound_one_is_what_clients_are_told():
    # As behind a port mapping: clients are sent to 19092 whatever port is bound.
    with MiniBroker(config={"advertised.listeners": "PLAINTEXT://localhost:19092"}) as broker:
        assert broker.bootstrap_servers == "localhost:19092"
        assert advertised(broker.port) == ([("localhost", 19092)], [("localhost", 19092)])


def test_an_empty_advertised_host_is_the_canonical_host_name():
    # Kafka advertises InetAddress.getLocalHost().getCanonicalHostName() for "PLAINTEXT://:port".
    with MiniBroker(config={"listeners": "PLAINTEXT://:0"}) as broker:
        assert broker.host == "0.0.0.0"
        assert advertised(broker.port)[0] == [(socket.getfqdn(), broker.port)]


def test_ipv6_bootstrap_servers_are_bracketed():
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback here")
    with MiniBroker(config={"listeners": "PLAINTEXT://[::1]:0"}) as broker:
        assert broker.bootstrap_servers == f"[::1]:{broker.port}"


def test_each_listener_advertises_its_own_endpoint():
    """Issue 15, item 1: Metadata and DescribeCluster answer with the endpoints of the
    listener the request came in on (Kafka: the request's listener name)."""
    config = {"listeners": "CLIENT://127.0.0.1:0,OTHER://127.0.0.1:0",
              "listener.security.protocol.map": "CLIENT:PLAINTEXT,OTHER:PLAINTEXT",
              "advertised.listeners": "OTHER://localhost:0"}
    with MiniBroker(config=config) as broker:
        other = broker._server.ports["OTHER"]
        assert broker.bootstrap_servers == f"127.0.0.1:{broker.port}"
        assert broker.bootstrap_servers_for("other") == f"localhost:{other}"
        assert advertised(broker.port) == ([("127.0.0.1", broker.port)], [("127.0.0.1", broker.port)])
        assert advertised(other) == ([("localhost", other)], [("localhost", other)])
        with pytest.raises(KeyError, match="no listener 'SSL'"):
            broker.bootstrap_servers_for("SSL")
