"""The ``kafka.``-prefixed options of the kproto source and sink in their clients' config,
as Spark's Kafka connector passes them (issue 15, item A)."""

from __future__ import annotations

import re

import pytest

from kproto import AdminClient
from kproto.admin import NewTopic
from kproto.config import ClientConfig
from kproto.errors import ConfigError
from kproto.spark import register


def test_kafka_options_reach_the_clients_of_the_source_and_the_sink(spark, broker):
    """issue 15, A: ``kafka.client.id`` reaches the sink's producers, the source's admin
    client (driver) and its fetches (executors); ``kafka.security.protocol`` reaches the
    clients' config, which refuses a protocol it does not know in its own words."""
    register(spark)
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("kafka-options", 1, 1)])
    options = {"kafka.bootstrap.servers": broker.bootstrap_servers, "kafka.client.id": "spark-job",
               "kafka.request.timeout.ms": "15000"}
    seen = broker.requests.control(client_id="spark-job")
    try:
        spark.createDataFrame([("a",), ("b",)], "value string").write.format("kproto").options(**options) \
            .option("topic", "kafka-options").mode("append").save()
        written = seen.count
        assert written > 0
        rows = spark.read.format("kproto").options(**options).option("subscribe", "kafka-options").load().collect()
        assert sorted(bytes(r.value) for r in rows) == [b"a", b"b"]
        assert seen.count > written
    finally:
        seen.remove()
    refused = {**options, "kafka.security.protocol": "SASL_TLS"}  # no such protocol
    with pytest.raises(ConfigError) as expected:
        ClientConfig("consumer", {k[len("kafka."):]: v for k, v in refused.items()})
    with pytest.raises(Exception, match=re.escape(str(expected.value))):
        spark.read.format("kproto").options(**refused).option("subscribe", "kafka-options").load().collect()


def test_the_source_and_sink_over_sasl_ssl(spark, pki, tmp_path):
    """issue 15: a job reads and writes a broker that takes only SASL_SSL clients, with the
    settings written as Spark's Kafka connector takes them (``kafka.security.protocol``,
    ``kafka.ssl.truststore.location``, ``kafka.sasl.jaas.config`` as Java users write it);
    with a wrong password the query fails with the client's authentication error."""
    from minibroker import MiniBroker

    keystore = tmp_path / "server.pem"
    keystore.write_text(pki.server.key_pem + pki.server.cert_pem)
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'
    config = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0", "ssl.keystore.location": str(keystore),
              "listener.name.sasl_ssl.plain.sasl.jaas.config": jaas}
    register(spark)
    with MiniBroker(config=config) as broker:
        with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
            admin.create_topics([NewTopic("secured", 1, 1)])
        login = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
                 'username="alice" password="{}";')
        options = {"kafka.bootstrap.servers": broker.bootstrap_servers_for("SASL_SSL"),
                   "kafka.security.protocol": "SASL_SSL", "kafka.ssl.truststore.type": "PEM",
                   "kafka.ssl.truststore.location": str(pki.ca.cert_path), "kafka.sasl.mechanism": "PLAIN",
                   "kafka.sasl.jaas.config": login.format("alice-secret")}
        spark.createDataFrame([("a",), ("b",)], "value string").write.format("kproto").options(**options) \
            .option("topic", "secured").mode("append").save()
        rows = spark.read.format("kproto").options(**options).option("subscribe", "secured").load().collect()
        assert sorted(bytes(r.value) for r in rows) == [b"a", b"b"]
        wrong = {**options, "kafka.sasl.jaas.config": login.format("wrong")}
        with pytest.raises(Exception, match="Invalid username or password"):
            spark.read.format("kproto").options(**wrong).option("subscribe", "secured").load().collect()
