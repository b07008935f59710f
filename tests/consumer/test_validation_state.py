"""The consumer's position validation and read-replica routing, sans-I/O (issue 13 step 2,
items 4.2 and 4.3; KIP-320, KIP-392): :class:`SubscriptionState` decides, the fetcher
only asks brokers."""

import time

import pytest

from kproto.config import ClientConfig
from kproto.consumer.fetcher import Fetcher
from kproto.consumer.subscription import SubscriptionState
from kproto.errors import LogTruncationError, NotLeaderOrFollowerError, OffsetOutOfRangeError
from kproto.io import Cluster
from kproto.protocol.messages import FetchResponse, MetadataResponse
from kproto.structs import OffsetAndMetadata, TopicPartition

TP = TopicPartition("t", 0)


def _consuming(reset="earliest", position=20, epoch=3, leader_epoch=3):
    """A partition fetched under ``leader_epoch`` whose last record had ``epoch``."""
    s = SubscriptionState(reset)
    s.assign([TP])
    s.seek(TP, position)
    assert not s.maybe_validate(TP, leader_epoch)  # the first fetch: nothing to validate against
    s.state(TP).leader_epoch = epoch  # as draining records sets it
    return s


def test_a_leader_epoch_bump_holds_the_partition_until_validated():
    s = _consuming()
    assert s.fetchable() == [TP]
    assert not s.maybe_validate(TP, 3)
    assert s.maybe_validate(TP, 4)
    assert s.fetchable() == [] and s.awaiting_validation() == [TP]
    version = s.state(TP).version
    assert s.complete_validation(TP, version, 4, epoch=3, end_offset=25) is None  # the log reaches 20
    assert s.fetchable() == [TP] and s.state(TP).position == 20
    assert not s.maybe_validate(TP, 4)  # validated under epoch 4


def test_a_position_without_an_epoch_is_not_validated():
    s = _consuming(epoch=-1)
    assert not s.maybe_validate(TP, 4)
    assert s.fetchable() == [TP]


def test_truncation_with_a_reset_policy_goes_back_to_the_divergence_point():
    """Java's maybeCompleteValidation: the first offset known to diverge, with its epoch."""
    s = _consuming()
    s.maybe_validate(TP, 4)
    version = s.state(TP).version
    assert s.complete_validation(TP, version, 4, epoch=3, end_offset=12) is None
    state = s.state(TP)
    assert (state.position, state.leader_epoch, state.awaiting_validation) == (12, 3, False)
    assert state.version != version  # what was fetched for 20 is dropped


def test_truncation_with_reset_none_raises_log_truncation_and_keeps_waiting():
    s = _consuming(reset="none")
    s.maybe_validate(TP, 4)
    version = s.state(TP).version
    error = s.complete_validation(TP, version, 4, epoch=3, end_offset=12)
    assert isinstance(error, LogTruncationError) and isinstance(error, OffsetOutOfRangeError)
    assert error.partitions == {TP: 20}
    assert error.divergent_offsets == {TP: OffsetAndMetadata(12, "", 3)}
    assert s.fetchable() == []  # until the application seeks
    s.seek(TP, 12)
    assert s.fetchable() == [TP]


def test_an_unknown_epoch_resets_or_raises():
    s = _consuming()
    s.maybe_validate(TP, 4)
    assert s.complete_validation(TP, s.state(TP).version, 4, epoch=-1, end_offset=-1) is None
    assert s.awaiting_reset() == {TP: "earliest"}
    s = _consuming(reset="none")
    s.maybe_validate(TP, 4)
    error = s.complete_validation(TP, s.state(TP).version, 4, epoch=-1, end_offset=-1)
    assert isinstance(error, LogTruncationError) and error.divergent_offsets == {TP: None}


def test_an_answer_for_a_position_that_moved_is_ignored():
    s = _consuming()
    s.maybe_validate(TP, 4)
    version = s.state(TP).version
    s.seek(TP, 5)
    assert s.complete_validation(TP, version, 4, epoch=3, end_offset=1) is None
    assert s.state(TP).position == 5


def test_a_committed_offset_with_an_epoch_is_validated_and_a_listed_one_is_not():
    """Java's seekUnvalidated (committed offsets, seek(OffsetAndMetadata)) and seekValidated
    (ListOffsets resets)."""
    s = SubscriptionState("earliest")
    s.assign([TP])
    s.seek(TP, 10, 2)
    assert s.fetchable() == [] and s.maybe_validate(TP, 2)
    s.seek(TP, 10, 2, validate=False)
    assert s.fetchable() == [TP]


def test_a_diverging_epoch_in_a_fetch_answer_is_judged_like_a_validation():
    s = _consuming()
    assert s.diverged(TP, s.state(TP).version, 3, 15) is None
    assert s.state(TP).position == 15


@pytest.mark.parametrize("error_first", [False, True])
def test_read_replica_routing_holds_until_expiry_or_an_error(error_first):
    """KIP-392 (Java's TopicPartitionState.preferredReadReplica): used until
    metadata.max.age.ms after it was named, or until it errors."""
    s = SubscriptionState("earliest")
    s.assign([TP])
    assert s.read_replica(TP, now=0.0) == -1
    s.set_read_replica(TP, 2, until=100.0)
    assert s.read_replica(TP, now=50.0) == 2
    if error_first:
        assert s.clear_read_replica(TP)
        assert s.read_replica(TP, now=50.0) == -1
        assert not s.clear_read_replica(TP)
    else:
        assert s.read_replica(TP, now=100.0) == -1  # expired: back to the leader
        assert s.read_replica(TP, now=50.0) == -1


def _fetcher(offline=()):
    """A Fetcher over a Cluster that took a Metadata answer (leader 0 at epoch 5, replicas
    0, 1, 2), no network."""
    config = ClientConfig("consumer", bootstrap_servers="127.0.0.1:9", client_rack="b", metadata_max_age_ms=1000)
    cluster = Cluster(config)
    cluster._apply(MetadataResponse(
        brokers=[MetadataResponse.MetadataResponseBroker(node_id=n, host="127.0.0.1", port=9000 + n, rack="abc"[n])
                 for n in range(3)],
        topics=[MetadataResponse.MetadataResponseTopic(error_code=0, name="t", partitions=[
            MetadataResponse.MetadataResponsePartition(error_code=0, partition_index=0, leader_id=0, leader_epoch=5,
                                                       replica_nodes=[0, 1, 2], isr_nodes=[0, 1, 2],
                                                       offline_replicas=list(offline))])]), full=False)
    s = SubscriptionState("earliest")
    s.assign([TP])
    s.seek(TP, 0)
    stale = []
    fetcher = Fetcher(cluster, config, s, on_data=lambda: None, on_stale_metadata=lambda: stale.append(1))
    return fetcher, s, stale


def _answer(code=0, preferred=-1):
    return FetchResponse.PartitionData(partition_index=0, error_code=code, high_watermark=0, records=b"",
                                       preferred_read_replica=preferred)


def test_the_fetcher_follows_the_leaders_preferred_read_replica_until_it_errors():
    """KIP-392 routing in the fetcher (Java's AbstractFetch.selectReadReplica): a leader's
    preferred_read_replica is fetched from; an error from it goes back to the leader,
    not to the application."""
    fetcher, s, stale = _fetcher()
    now = time.monotonic()
    assert fetcher._read_replica(TP, now) == 0
    fetcher._handle(TP, s.state(TP).version, 0, _answer(preferred=1), node=0)
    assert fetcher._read_replica(TP, now) == 1
    assert fetcher._read_replica(TP, now + 0.5) == 1
    fetcher._handle(TP, s.state(TP).version, 0, _answer(NotLeaderOrFollowerError.code), node=1)
    assert fetcher._read_replica(TP, now) == 0 and fetcher._errors == {} and stale == []
    fetcher._handle(TP, s.state(TP).version, 0, _answer(preferred=2), node=0)
    assert fetcher._read_replica(TP, time.monotonic() + 1.5) == 0  # metadata.max.age.ms passed


def test_the_fetcher_does_not_read_from_an_offline_replica():
    fetcher, s, _ = _fetcher(offline=[1])
    fetcher._handle(TP, s.state(TP).version, 0, _answer(preferred=1), node=0)
    assert fetcher._read_replica(TP, time.monotonic()) == 0


@pytest.mark.parametrize("reset", ["earliest", "none"])
def test_a_fetch_answer_with_a_diverging_epoch_moves_the_position_back_or_raises(reset):
    """KIP-320 through Fetch v12+: the leader answers diverging_epoch instead of records
    when the log before the fetch offset is not what the consumer read."""
    fetcher, s, _ = _fetcher()
    s.default_reset = reset
    s.seek(TP, 20)
    s.state(TP).leader_epoch = 4
    answer = _answer()
    answer.diverging_epoch = FetchResponse.EpochEndOffset(epoch=3, end_offset=12)
    fetcher._handle(TP, s.state(TP).version, 20, answer, node=0)
    if reset == "none":
        error = fetcher._errors[TP]
        assert isinstance(error, LogTruncationError) and error.partitions == {TP: 20}
        assert s.fetchable() == []
    else:
        assert (s.state(TP).position, s.state(TP).leader_epoch) == (12, 3) and s.fetchable() == [TP]
