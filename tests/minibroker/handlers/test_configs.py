"""Topic and broker configs through real clients: validation on every path, every Kafka
4.x topic config, dynamic broker configs (KIP-226) and what a restart keeps.

Issue 10, items 8 and 17. Kafka's names, defaults and sources are written out here by
hand (from Kafka 4.0/4.1's topic config docs), not read from minibroker's table, so the
table is checked against them.
"""

import json
import logging

import pytest

from kproto.admin import AdminClient as KAdminClient
from kproto.admin import ConfigResource as KConfigResource
from kproto.errors import InvalidConfigError, InvalidRequestError
from minibroker import MiniBroker

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import (  # noqa: E402
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)

# Kafka 4.0/4.1's topic configs: name -> (Kafka's default, a valid value that is not it).
KAFKA_TOPIC_CONFIGS = {
    "cleanup.policy": ("delete", "compact,delete"),
    "compression.gzip.level": ("-1", "5"),
    "compression.lz4.level": ("9", "3"),
    "compression.type": ("producer", "zstd"),
    "compression.zstd.level": ("3", "-5"),
    "delete.retention.ms": ("86400000", "1000"),
    "file.delete.delay.ms": ("60000", "0"),
    "flush.messages": ("9223372036854775807", "1000"),
    "flush.ms": ("9223372036854775807", "1000"),
    "follower.replication.throttled.replicas": ("", "0:0,1:0"),
    "index.interval.bytes": ("4096", "100"),
    "leader.replication.throttled.replicas": ("", "*"),
    "local.retention.bytes": ("-2", "1000"),
    "local.retention.ms": ("-2", "1000"),
    "max.compaction.lag.ms": ("9223372036854775807", "60000"),
    "max.message.bytes": ("1048588", "2000000"),
    "message.timestamp.after.max.ms": ("3600000", "1000"),
    "message.timestamp.before.max.ms": ("9223372036854775807", "1000"),
    "message.timestamp.type": ("CreateTime", "LogAppendTime"),
    "min.cleanable.dirty.ratio": ("0.5", "0.1"),
    "min.compaction.lag.ms": ("0", "1000"),
    "min.insync.replicas": ("1", "1"),  # 2 would refuse acks=all: still described as set
    "preallocate": ("false", "true"),
    "remote.log.copy.disable": ("false", "true"),
    "remote.log.delete.on.disable": ("false", "true"),
    "remote.storage.enable": ("false", "true"),
    "retention.bytes": ("-1", "100000"),
    "retention.ms": ("604800000", "86400000"),
    "segment.bytes": ("1073741824", "1048576"),
    "segment.index.bytes": ("10485760", "4096"),
    "segment.jitter.ms": ("0", "1000"),
    "segment.ms": ("604800000", "3600000"),
    "unclean.leader.election.enable": ("false", "true"),
}

# Values Kafka's validators refuse, each for its own reason.
BAD_VALUES = [
    ("segment.bytes", "3000000000"),  # not an INT: the broker could not restart after it (item 8)
    ("segment.bytes", "13"),  # below LegacyRecord.RECORD_OVERHEAD_V0
    ("retention.ms", "-2"),
    ("cleanup.policy", "compact,nope"),
    ("min.cleanable.dirty.ratio", "1.5"),
    ("preallocate", "yes"),
    ("compression.gzip.level", "0"),
    ("message.timestamp.type", "logappendtime"),
    ("max.compaction.lag.ms", "0"),
]


def wait(futures):
    return {key: future.result(10) for key, future in futures.items()}


def describe(admin, resource):
    (result,) = wait(admin.describe_configs([resource])).values()
    return result


def topics_file(path):
    return (path / "minibroker-topics.json").read_bytes()


@pytest.mark.parametrize(("name", "value"), BAD_VALUES)
@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated")  # it is one of the APIs under test
def test_a_bad_value_is_invalid_config_and_changes_nothing(tmp_path, name, value):
    """Issue 10 item 8: AlterConfigs ``segment.bytes=3000000000`` was stored and written
    to the topics file, and the broker then could not restart. Every path refuses a bad
    value with INVALID_CONFIG: DescribeConfigs, the topics file and a restart see nothing."""
    with MiniBroker(data_dir=tmp_path) as broker:
        port = broker.port
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        wait(admin.create_topics([NewTopic("t", 1, 1, config={"retention.ms": "1000"})]))
        before, saved = describe(admin, ConfigResource("topic", "t")), topics_file(tmp_path)

        with pytest.raises(ck.KafkaException) as refused:
            wait(admin.alter_configs([ConfigResource("topic", "t", set_config={name: value})]))
        assert refused.value.args[0].code() == ck.KafkaError.INVALID_CONFIG
        with pytest.raises(ck.KafkaException) as refused:
            wait(admin.incremental_alter_configs([ConfigResource("topic", "t", incremental_configs=[
                ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)])]))
        assert refused.value.args[0].code() == ck.KafkaError.INVALID_CONFIG
        with pytest.raises(ck.KafkaException) as refused:
            wait(admin.create_topics([NewTopic("other", 1, 1, config={name: value})]))
        assert refused.value.args[0].code() == ck.KafkaError.INVALID_CONFIG
        with KAdminClient(bootstrap_servers=broker.bootstrap_servers) as kadmin:
            with pytest.raises(InvalidConfigError, match=name):
                kadmin.incremental_alter_configs({KConfigResource.topic("t"): [(name, "set", value)]})

        after = describe(admin, ConfigResource("topic", "t"))
        assert {k: (c.value, c.source) for k, c in after.items()} == {k: (c.value, c.source) for k, c in before.items()}
        assert topics_file(tmp_path) == saved
        assert "other" not in admin.list_topics(timeout=10).topics
    with MiniBroker(port=port, data_dir=tmp_path) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        assert describe(admin, ConfigResource("topic", "t"))["retention.ms"].value == "1000"


def test_min_compaction_lag_above_max_is_refused():
    """Issue 10 item 17: Kafka's LogConfig.validateValues, min.compaction.lag.ms <= max."""
    with MiniBroker() as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        with pytest.raises(ck.KafkaException, match="min.compaction.lag.ms"):
            wait(admin.create_topics([NewTopic("lag", 1, 1, config={
                "min.compaction.lag.ms": "5000", "max.compaction.lag.ms": "1000"})]))


def test_every_kafka_topic_config_is_accepted_and_described_with_its_source(tmp_path):
    """Issue 10 item 17: minibroker knew 15 topic configs and refused Kafka's others
    (``file.delete.delay.ms``, ``preallocate``, ``segment.jitter.ms``...). Each one is
    accepted, described with its value and source (confluent-kafka is strict about
    DescribeConfigs), kept across a restart, and back to Kafka's default once deleted."""
    wanted = {name: value for name, (_, value) in KAFKA_TOPIC_CONFIGS.items()}
    with MiniBroker(data_dir=tmp_path) as broker:
        port = broker.port
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        wait(admin.create_topics([NewTopic("all", 1, 1, config=wanted)]))
        configs = describe(admin, ConfigResource("topic", "all"))
        assert set(KAFKA_TOPIC_CONFIGS) <= set(configs)
        for name, value in wanted.items():
            assert (configs[name].value, configs[name].source) == (value, ConfigSource.DYNAMIC_TOPIC_CONFIG.value), name
    with MiniBroker(port=port, data_dir=tmp_path) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        assert {n: c.value for n, c in describe(admin, ConfigResource("topic", "all")).items() if n in wanted} == wanted
        wait(admin.incremental_alter_configs([ConfigResource("topic", "all", incremental_configs=[
            ConfigEntry(name, None, incremental_operation=AlterConfigOpType.DELETE) for name in wanted])]))
        with KAdminClient(bootstrap_servers=broker.bootstrap_servers) as kadmin:
            (described,) = kadmin.describe_configs([KConfigResource.topic("all")], include_synonyms=True).values()
    for name, (default, _) in KAFKA_TOPIC_CONFIGS.items():
        assert (described[name].value, described[name].source) == (default, ConfigSource.DEFAULT_CONFIG.value), name
    assert described["segment.jitter.ms"].synonyms == (("log.roll.jitter.ms", "0", ConfigSource.DEFAULT_CONFIG.value),)


def test_a_dynamic_broker_default_changes_the_topics_that_do_not_override_it(tmp_path):
    """Issue 10 item 17: AlterConfigs on the BROKER resource, cluster-wide default (name
    "") and per broker (its id), changes the defaults of topics without their own
    setting: DescribeConfigs' value and source, and the log itself."""
    with MiniBroker(data_dir=tmp_path, config={"log.retention.ms": 3600000}) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        wait(admin.create_topics([NewTopic("plain", 1, 1), NewTopic("own", 1, 1, config={"retention.ms": "1000"})]))
        kadmin = KAdminClient(bootstrap_servers=broker.bootstrap_servers)  # confluent-kafka cannot name ""
        kadmin.incremental_alter_configs({KConfigResource.broker(): [
            ("log.retention.ms", "set", "7200000"), ("log.cleanup.policy", "append", "compact")]})
        plain = describe(admin, ConfigResource("topic", "plain"))
        assert (plain["retention.ms"].value, plain["retention.ms"].source) == (
            "7200000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
        (synonyms,) = kadmin.describe_configs([KConfigResource.topic("plain")], include_synonyms=True).values()
        assert list(synonyms["retention.ms"].synonyms) == [  # confluent-kafka keys synonyms by name
            ("log.retention.ms", "7200000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value),
            ("log.retention.ms", "3600000", ConfigSource.STATIC_BROKER_CONFIG.value),
            ("log.retention.ms", "604800000", ConfigSource.DEFAULT_CONFIG.value)]
        assert plain["cleanup.policy"].value == "delete,compact"
        own = describe(admin, ConfigResource("topic", "own"))
        assert (own["retention.ms"].value, own["retention.ms"].source) == ("1000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)

        wait(admin.incremental_alter_configs([ConfigResource("broker", "0", incremental_configs=[
            ConfigEntry("log.retention.ms", "60000", incremental_operation=AlterConfigOpType.SET)])]))
        plain = describe(admin, ConfigResource("topic", "plain"))
        assert (plain["retention.ms"].value, plain["retention.ms"].source) == ("60000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
        broker_configs = describe(admin, ConfigResource("broker", "0"))
        assert broker_configs["log.retention.ms"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
        assert not broker_configs["log.retention.ms"].is_read_only and broker_configs["log.dirs"].is_read_only
        (default,) = kadmin.describe_configs([KConfigResource.broker()]).values()  # only what is set there
        kadmin.close()
        assert {n: (c.value, c.source) for n, c in default.items()} == {
            "log.retention.ms": ("7200000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value),
            "log.cleanup.policy": ("delete,compact", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)}

        state = broker._server.state  # what the logs use, not only what is described
        assert state.topics["plain"].partitions[0].log.config.retention_ms == 60000
        assert state.topics["plain"].partitions[0].log.config.compact
        assert state.topics["own"].partitions[0].log.config.retention_ms == 1000


def test_broker_configs_that_cannot_change_or_bad_values_are_refused_as_kafka_does():
    """Issue 10 item 17: read-only broker configs are INVALID_REQUEST "Cannot update
    these configs dynamically", and so is a bad value (Kafka's ConfigAdminManager,
    KAFKA-13609); nothing changes."""
    with MiniBroker() as broker, KAdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        for resource in (KConfigResource.broker(0), KConfigResource.broker()):
            with pytest.raises(InvalidRequestError, match="Cannot update these configs dynamically"):
                admin.incremental_alter_configs({resource: [("num.partitions", "set", "3")]})
            with pytest.raises(InvalidRequestError, match="log.segment.bytes"):
                admin.incremental_alter_configs({resource: [("log.segment.bytes", "set", "3000000000")]})
            with pytest.raises(InvalidRequestError, match="Cannot update these configs dynamically"):
                admin.alter_configs({resource: {"log.retention.ms": "1000", "log.dirs": "/tmp/x"}})
        with pytest.raises(InvalidRequestError, match="did you mean 'log.retention.ms'"):
            admin.incremental_alter_configs({KConfigResource.broker(0): [("log.retention.msec", "set", "1000")]})
        with pytest.raises(InvalidRequestError, match="min.compaction.lag.ms"):
            admin.incremental_alter_configs({KConfigResource.broker(0): [("log.cleaner.max.compaction.lag.ms", "set", "1000"),
                                                                         ("log.cleaner.min.compaction.lag.ms", "set", "5000")]})
        admin.incremental_alter_configs({KConfigResource.broker(0): [("log.retention.ms", "set", "1000")]}, validate_only=True)
        (configs,) = admin.describe_configs([KConfigResource.broker(0)]).values()
        assert configs["num.partitions"].value == "1" and configs["log.segment.bytes"].value == "1073741824"
        assert configs["log.cleaner.min.compaction.lag.ms"].value == "0"
        assert configs["log.retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value


def test_a_restart_keeps_dynamic_broker_configs(tmp_path):
    """Issue 10 item 17: dynamic broker configs are persisted, as Kafka keeps them in its
    metadata log, and topics started again follow them."""
    with MiniBroker(data_dir=tmp_path) as broker:
        port = broker.port
        with KAdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
            admin.create_topics([_ktopic("t")])
            admin.incremental_alter_configs({KConfigResource.broker(): [("log.segment.bytes", "set", "5000")],
                                             KConfigResource.broker(0): [("message.max.bytes", "set", "2000")]})
    with MiniBroker(port=port, data_dir=tmp_path) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        configs = describe(admin, ConfigResource("topic", "t"))
        assert (configs["segment.bytes"].value, configs["segment.bytes"].source) == (
            "5000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
        assert (configs["max.message.bytes"].value, configs["max.message.bytes"].source) == (
            "2000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
        assert broker._server.state.topics["t"].partitions[0].log.config.segment_bytes == 5000


def _ktopic(name):
    from kproto.admin import NewTopic as KNewTopic

    return KNewTopic(name, 1, 1)


def test_a_bad_stored_config_does_not_stop_the_broker(tmp_path, caplog):
    """Issue 10 item 8: a value already on disk (written before validation existed, or by
    hand) no longer keeps the broker from starting: it is logged and the default applies,
    as Kafka logs a stored config it cannot apply (KAFKA-19875, DynamicBrokerConfig)."""
    with MiniBroker(data_dir=tmp_path) as broker:
        port = broker.port
        with KAdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
            admin.create_topics([_ktopic("t")])
    topics = json.loads((tmp_path / "minibroker-topics.json").read_text())
    topics["t"]["configs"] = {"segment.bytes": "3000000000", "retention.ms": "1000"}
    (tmp_path / "minibroker-topics.json").write_text(json.dumps(topics))
    (tmp_path / "minibroker-broker-configs.json").write_text(json.dumps(
        {"default": {"log.retention.bytes": "lots", "log.roll.ms": "60000"}, "broker": {}}))
    with caplog.at_level(logging.ERROR, logger="minibroker"), MiniBroker(port=port, data_dir=tmp_path) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        configs = describe(admin, ConfigResource("topic", "t"))
    assert (configs["segment.bytes"].value, configs["segment.bytes"].source) == ("1073741824", ConfigSource.DEFAULT_CONFIG.value)
    assert configs["retention.ms"].value == "1000"
    assert configs["retention.bytes"].value == "-1" and configs["segment.ms"].value == "60000"
    assert any("segment.bytes" in r.getMessage() and "3000000000" in r.getMessage() for r in caplog.records)
    assert any("log.retention.bytes" in r.getMessage() for r in caplog.records)


def test_a_bad_static_broker_config_stops_the_start_with_its_name():
    """Issue 10 item 8: the broker's own settings use the same validators; Kafka refuses
    to start on a bad server.properties value, naming it."""
    with pytest.raises(ValueError, match="log.segment.bytes: Not a number of type INT"):
        MiniBroker(config={"log.segment.bytes": 3000000000})
    with pytest.raises(ValueError, match="log.cleanup.policy"):
        MiniBroker(config={"log.cleanup.policy": "forever"})


def test_a_dynamic_message_max_bytes_is_enforced_at_once():
    """Issue 10 item 17: a dynamic broker default is what Produce enforces, without a
    restart, on a topic that does not set its own ``max.message.bytes``."""
    with MiniBroker() as broker:
        with KAdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
            admin.create_topics([_ktopic("big")])
            admin.incremental_alter_configs({KConfigResource.broker(): [("message.max.bytes", "set", "1000")]})
        errors = []
        producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "retries": 0})
        for value in (b"x" * 5000, b"small"):  # one batch each
            producer.produce("big", value, on_delivery=lambda err, msg: errors.append(err))
            producer.flush(10)
    assert errors[0] is not None and errors[0].code() == ck.KafkaError.MSG_SIZE_TOO_LARGE
    assert errors[1] is None
