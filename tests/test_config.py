"""kproto.config: Kafka's names and Java's defaults, checked values, helpful errors."""

import pytest

from kproto.config import CONFIGS, ClientConfig
from kproto.errors import ConfigError


def test_java_defaults_and_both_spellings():
    c = ClientConfig("producer", {"bootstrap.servers": "h:1", "linger.ms": "7"}, batch_size=100, linger_ms=9)
    assert c["linger.ms"] == 9 and c["batch.size"] == 100  # keywords win over the dict
    assert c["acks"] == -1 and c["enable.idempotence"] is True and c["max.in.flight.requests.per.connection"] == 5
    assert c["delivery.timeout.ms"] == 120000 and c["buffer.memory"] == 33554432
    consumer = ClientConfig("consumer", bootstrap_servers=["a:1", "b:2"])
    assert consumer["bootstrap.servers"] == "a:1,b:2"
    assert consumer["receive.buffer.bytes"] == 65536 and consumer["auto.offset.reset"] == "latest"
    assert consumer["partition.assignment.strategy"] == ("range", "cooperative-sticky")
    assert ClientConfig("producer", bootstrap_servers="h")["receive.buffer.bytes"] == 32768


@pytest.mark.parametrize("value, acks", [("all", -1), (-1, -1), ("0", 0), (1, 1), ("ALL", -1)])
def test_acks_spellings(value, acks):
    assert ClientConfig("producer", bootstrap_servers="h", acks=value)["acks"] == acks


@pytest.mark.parametrize("client, settings, message", [
    ("producer", {"linger_mss": 1}, "did you mean 'linger.ms'"),
    ("consumer", {"linger_ms": 1}, "linger.ms is a producer setting"),
    ("producer", {"acks": 2}, "acks=2"),
    ("producer", {"compression_type": "brotli"}, "compression.type"),
    ("consumer", {"enable_auto_commit": "yes"}, "true or false"),
    ("producer", {"batch_size": -1}, ">= 0"),
    ("consumer", {"partition_assignment_strategy": "sticky-ish"}, "unknown assignor"),
    ("admin", {"security_protocol": "SASL_TLS"}, "expected one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
])
def test_bad_settings_raise_config_error_naming_the_problem(client, settings, message):
    with pytest.raises(ConfigError, match=message):
        ClientConfig(client, bootstrap_servers="h:1", **settings)


def test_bootstrap_servers_is_required_and_config_error_is_a_value_error():
    with pytest.raises(ValueError, match="bootstrap.servers is required"):
        ClientConfig("admin")


def test_every_key_is_documented_and_its_default_parses():
    for key in CONFIGS.values():
        assert key.doc and key.clients
        for client in key.clients:
            default = key.default_for(client)
            if default is not None:
                assert key.parse(default) == default, key.name


def test_secrets_are_hidden_in_the_repr():
    """Issue 15 item 1: passwords and keys never reach a log through the config's repr
    (Java's Password type prints [hidden])."""
    c = ClientConfig("admin", bootstrap_servers="h:1", security_protocol="SASL_SSL", sasl_mechanism="PLAIN",
                     sasl_username="alice", sasl_password="s3cret", ssl_key_password="k3y")
    assert "s3cret" not in repr(c) and "k3y" not in repr(c) and "'alice'" in repr(c)
    assert c["sasl.password"] == "s3cret"


def test_secrets_are_hidden_in_errors_too():
    """Issue 15 review: a secret with a bad value is named, its value not shown (Java's
    Password type prints [hidden] everywhere); a token's repr hides the token."""
    from kproto.security.sasl import OAuthBearerToken

    for name, value in (("sasl.password", b"hunter2-secret"), ("ssl.key.password", 12345678)):
        with pytest.raises(ConfigError) as raised:
            ClientConfig("admin", {"bootstrap.servers": "h:1", name: value})
        assert name in str(raised.value) and str(value) not in str(raised.value) and "[hidden]" in str(raised.value)
    assert "eyJhbGciOiJub25lIn0" not in repr(OAuthBearerToken("eyJhbGciOiJub25lIn0.eyJzdWIiOiJhIn0.", 1.0))


def test_hostname_verification_is_not_turned_off_by_none():
    """Issue 15 review: ``ssl.endpoint.identification.algorithm=None`` (Python's "not
    set") keeps the default, https: only an explicit empty string or "none" (librdkafka's
    word) turns the check off, so a missing value never fails open."""
    def algorithm(value):
        return ClientConfig("admin", {"bootstrap.servers": "h:1",
                                      "ssl.endpoint.identification.algorithm": value})["ssl.endpoint.identification.algorithm"]

    assert algorithm(None) == "https"
    assert algorithm("") == algorithm("none") == ""
