"""``kproto transactions`` (issue 14, step 2, item 3): kafka-transactions.sh's actions and
columns against minibroker, with transactions made by kproto's and confluent-kafka's
producers and a hanging one written with a raw Produce that no coordinator knows of."""

import json
import time
import uuid

import pytest

from kproto import Producer, TopicPartition
from kproto.admin import NewTopic
from kproto.records import BatchBuilder
from tests.minibroker.txn.conftest import NO_VERIFICATION
from tests.minibroker.txn.txn_wire import produce, txn_batch

ck = pytest.importorskip("confluent_kafka")

DEADLINE = 20
HANGING_PID = 515151


def fresh(name):
    return f"{name}-{uuid.uuid4().hex[:8]}"


def rows(result):
    return [json.loads(line) for line in result.lines]


@pytest.fixture(scope="module")
def minibroker_config():
    """KIP-890's verification off: find-hanging needs a hanging transaction, which a raw
    transactional Produce leaves only where nothing verifies it (a broker before KIP-890)."""
    return NO_VERIFICATION


@pytest.fixture(scope="module")
def txns(broker, admin):
    """A committed transaction (kproto's) on partition 0 and an open one (confluent-kafka's)
    on partition 1 of a topic."""
    topic, done, opened = fresh("cli-txn"), fresh("done"), fresh("open")
    admin.create_topics([NewTopic(topic, 2, 1)])
    with Producer(bootstrap_servers=broker.bootstrap_servers, transactional_id=done) as p:
        p.init_transactions()
        p.begin_transaction()
        p.send(topic, b"committed", partition=0)
        p.commit_transaction()
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": opened,
                            "transaction.timeout.ms": 600_000})  # outlives a slow module's run
    producer.init_transactions(DEADLINE)
    producer.begin_transaction()
    producer.produce(topic, b"open", partition=1)
    assert producer.flush(DEADLINE) == 0
    deadline = time.monotonic() + DEADLINE  # EndTxn answers before the markers are written
    while admin.describe_transactions([done])[done].state != "CompleteCommit":
        assert time.monotonic() < deadline
    yield topic, done, opened
    producer.abort_transaction(DEADLINE)
    del producer


def hang(broker, admin, *, timestamp_ms=None):
    """A topic whose partition 0 holds a transaction no coordinator knows, written
    ``timestamp_ms`` (default now); returns the topic and the transaction's first offset."""
    topic = fresh("cli-hanging")
    admin.create_topics([NewTopic(topic, 1, 1)])
    batch = txn_batch(HANGING_PID, 0, 0, [b"hanging"])
    if timestamp_ms is not None:
        builder = BatchBuilder(2, 0, producer_id=HANGING_PID, producer_epoch=0, base_sequence=0,
                               is_transactional=True)
        builder.append(timestamp_ms, None, b"hanging")
        batch = builder.build()
    code, offset = produce(broker.port, topic, batch, transactional_id=fresh("unknown"))
    assert code == 0
    return topic, offset


def test_list_prints_kafkas_columns(cli, txns):
    """Issue 14 item 3: TransactionalId, Coordinator, ProducerId, TransactionState."""
    topic, done, opened = txns
    result = cli("transactions", "list")
    assert result.code == 0, result.err
    assert result.lines[0].split() == ["TRANSACTIONAL-ID", "COORDINATOR", "PRODUCER-ID", "TRANSACTION-STATE"]
    states = {line.split()[0]: line.split()[3] for line in result.lines[1:]}
    assert (states[done], states[opened]) == ("CompleteCommit", "Ongoing")
    listed = {r["transactional_id"]: r for r in rows(cli("transactions", "list", "--json"))}
    assert listed[opened]["coordinator"] == 0 and listed[opened]["transaction_state"] == "Ongoing"
    assert opened not in {r["transactional_id"] for r in rows(cli("transactions", "list", "--duration-filter",
                                                                  "3600000", "--json"))}


def test_describe_prints_the_transaction_of_an_id(cli, txns):
    """Issue 14 item 3: kafka-transactions.sh describe's columns, the partitions last."""
    topic, done, opened = txns
    result = cli("transactions", "describe", "--transactional-id", opened)
    assert result.code == 0, result.err
    assert result.lines[0].split() == ["COORDINATOR-ID", "TRANSACTIONAL-ID", "PRODUCER-ID", "PRODUCER-EPOCH",
                                       "TRANSACTION-STATE", "TRANSACTION-TIMEOUT-MS",
                                       "CURRENT-TRANSACTION-START-TIME-MS", "TRANSACTION-DURATION-MS",
                                       "TOPIC-PARTITIONS"]
    [row] = rows(cli("transactions", "describe", "--transactional-id", opened, "--json"))
    assert (row["transaction_state"], row["topic_partitions"]) == ("Ongoing", [f"{topic}-1"])
    assert row["transaction_duration_ms"] >= 0
    [row] = rows(cli("transactions", "describe", "--transactional-id", done, "--json"))
    assert (row["transaction_state"], row["topic_partitions"]) == ("CompleteCommit", [])


def test_describe_of_an_unknown_id_is_a_kafka_error(cli):
    """Issue 14 item 3: exit 1 and the error's Kafka name, as the other commands."""
    result = cli("transactions", "describe", "--transactional-id", "no-such-id")
    assert result.code == 1
    assert "TRANSACTIONAL_ID_NOT_FOUND" in result.err


def test_describe_producers_prints_each_producer_of_a_partition(cli, txns):
    """Issue 14 item 3: ProducerId ... CurrentTransactionStartOffset."""
    topic, done, opened = txns
    result = cli("transactions", "describe-producers", "--topic", topic, "--partition", "1")
    assert result.code == 0, result.err
    assert result.lines[0].split() == ["PRODUCER-ID", "PRODUCER-EPOCH", "LATEST-COORDINATOR-EPOCH", "LAST-SEQUENCE",
                                       "LAST-TIMESTAMP", "CURRENT-TRANSACTION-START-OFFSET"]
    [row] = rows(cli("transactions", "describe-producers", "--topic", topic, "--partition", "1", "--json"))
    assert (row["latest_coordinator_epoch"], row["current_transaction_start_offset"]) == (-1, 0)
    [row] = rows(cli("transactions", "describe-producers", "--topic", topic, "--partition", "0", "--json"))
    assert row["latest_coordinator_epoch"] >= 0 and row["current_transaction_start_offset"] is None


def test_find_hanging_finds_only_the_unclaimed_transaction_and_abort_ends_it(cli, broker, admin, txns):
    """Issue 14 item 3: the open transaction of a coordinator is not hanging; one no
    coordinator knows is, past --max-transaction-timeout; abort --start-offset ends it."""
    topic, done, opened = txns
    old = int(time.time() * 1000) - 20 * 60_000  # its producer wrote nothing for 20 minutes
    hanging_topic, start = hang(broker, admin, timestamp_ms=old)
    assert rows(cli("transactions", "find-hanging", "--topic", topic, "--max-transaction-timeout", "0",
                    "--json")) == []  # confluent-kafka's open transaction: its coordinator holds it
    assert rows(cli("transactions", "find-hanging", "--topic", hanging_topic, "--max-transaction-timeout", "30",
                    "--json")) == []  # not old enough yet
    result = cli("transactions", "find-hanging", "--topic", hanging_topic)
    assert result.code == 0, result.err
    assert result.lines[0].split() == ["TOPIC", "PARTITION", "PRODUCER-ID", "PRODUCER-EPOCH", "COORDINATOR-EPOCH",
                                       "START-OFFSET", "LAST-TIMESTAMP", "DURATION-MIN"]
    [row] = rows(cli("transactions", "find-hanging", "--broker-id", "0", "--json"))
    assert (row["topic"], row["partition"], row["producer_id"], row["start_offset"]) == \
        (hanging_topic, 0, HANGING_PID, start)
    assert row["duration_min"] >= 19

    result = cli("transactions", "abort", "--topic", hanging_topic, "--partition", "0", "--start-offset", str(start))
    assert result.code == 0, result.err
    assert f"producer {HANGING_PID}" in result.out
    assert rows(cli("transactions", "find-hanging", "--topic", hanging_topic, "--json")) == []
    tp = TopicPartition(hanging_topic, 0)
    assert admin.list_offsets({tp: "latest"}, isolation_level="read_committed")[tp].offset == start + 2


def test_abort_by_producer_takes_kafkas_coordinator_epoch_rule(cli, broker, admin):
    """Issue 14 item 3: --coordinator-epoch -1 (a producer without markers) is sent as 0."""
    topic, start = hang(broker, admin)
    result = cli("transactions", "abort", "--topic", topic, "--partition", "0", "--producer-id", str(HANGING_PID),
                 "--producer-epoch", "0", "--coordinator-epoch", "-1")
    assert result.code == 0, result.err
    tp = TopicPartition(topic, 0)
    [state] = admin.describe_producers([tp])[tp]
    assert (state.current_transaction_start_offset, state.coordinator_epoch) == (None, 0)


@pytest.mark.parametrize("args, message", [
    (["abort", "--topic", "t", "--partition", "0"], "--start-offset"),
    (["abort", "--topic", "t", "--partition", "0", "--producer-id", "1"], "--producer-epoch and --coordinator-epoch"),
    (["find-hanging"], "--topic or --broker-id"),
    (["find-hanging", "--broker-id", "0", "--partition", "0"], "--partition needs --topic"),
])
def test_incomplete_arguments_are_usage_errors(cli, args, message):
    """Issue 14 item 3: exit 2, the command named, as the other commands' usage errors."""
    result = cli("transactions", *args)
    assert result.code == 2
    assert message in result.err and "kproto transactions: error:" in result.err


def test_abort_of_an_offset_where_no_transaction_starts_fails(cli, txns):
    """Issue 14 item 3: exit 1, saying so."""
    topic, done, opened = txns
    result = cli("transactions", "abort", "--topic", topic, "--partition", "1", "--start-offset", "5")
    assert result.code == 1
    assert "no open transaction starts at offset 5" in result.err


def test_list_as_a_subprocess(run_process, broker, txns):
    """Issue 14 item 3: ``python -m kproto transactions list``, a real process."""
    topic, done, opened = txns
    finished = run_process("transactions", "list", "--json", "--bootstrap-servers", broker.bootstrap_servers)
    assert finished.returncode == 0, finished.stderr
    listed = {r["transactional_id"]: r["transaction_state"] for r in map(json.loads, finished.stdout.splitlines())}
    assert listed[opened] == "Ongoing"


def test_find_hanging_reports_a_partition_the_ids_transaction_does_not_count(cli, broker, admin):
    """Issue 14 item 3: a producer id that a transactional id still has, with an open
    transaction on a partition its coordinator does not count, hangs there (Kafka's rule)."""
    topic, tid = fresh("cli-unclaimed"), fresh("known")
    admin.create_topics([NewTopic(topic, 2, 1)])
    with Producer(bootstrap_servers=broker.bootstrap_servers, transactional_id=tid) as p:
        p.init_transactions()
        p.begin_transaction()
        p.send(topic, b"committed", partition=0)
        p.commit_transaction()
    listed = {t.transactional_id: t for t in admin.list_transactions()}[tid]
    builder = BatchBuilder(2, 0, producer_id=listed.producer_id, producer_epoch=0, base_sequence=0,
                           is_transactional=True)
    builder.append(int(time.time() * 1000) - 60 * 60_000, None, b"stray")
    code, start = produce(broker.port, topic, builder.build(), partition=1, transactional_id=tid)
    assert code == 0
    found = rows(cli("transactions", "find-hanging", "--topic", topic, "--json"))
    assert [(r["partition"], r["producer_id"], r["start_offset"]) for r in found] == [(1, listed.producer_id, start)]
    result = cli("transactions", "abort", "--topic", topic, "--partition", "1", "--start-offset", str(start))
    assert result.code == 0, result.err
