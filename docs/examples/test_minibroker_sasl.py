"""SASL users on a minibroker listener, tested with confluent-kafka. Run it:
``python -m pytest docs/examples/test_minibroker_sasl.py``."""

from collections.abc import Mapping
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # not re-exported by its stubs
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from minibroker import MiniBroker


@pytest.fixture(scope="session")
def minibroker_config() -> Mapping[str, Any]:
    return {
        # two listeners: PLAINTEXT for the admin, SASL_PLAINTEXT for the users
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        # PLAIN's users, as Kafka's PlainLoginModule takes them
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";',
    }


def round_trip(config: dict[str, Any]) -> bytes | None:
    producer = Producer(config)
    producer.produce("greetings", b"hello", partition=0)
    assert producer.flush(10) == 0
    consumer = Consumer({**config, "group.id": "example"})
    try:
        consumer.assign([TopicPartition("greetings", 0, OFFSET_BEGINNING)])
        message = None
        while message is None:
            message = consumer.poll(1.0)
        return message.value()
    finally:
        consumer.close()


def test_a_plain_user(kafka_broker: MiniBroker) -> None:
    assert round_trip({"bootstrap.servers": kafka_broker.bootstrap_servers_for("SASL_PLAINTEXT"),
                       "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                       "sasl.username": "alice", "sasl.password": "alice-secret"}) == b"hello"


def test_a_scram_user_made_by_the_admin_client(kafka_broker: MiniBroker) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers_for("PLAINTEXT")})
    bob = UserScramCredentialUpsertion("bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"bob-secret")
    admin.alter_user_scram_credentials([bob])["bob"].result(10)  # AlterUserScramCredentials
    assert round_trip({"bootstrap.servers": kafka_broker.bootstrap_servers_for("SASL_PLAINTEXT"),
                       "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
                       "sasl.username": "bob", "sasl.password": "bob-secret"}) == b"hello"
