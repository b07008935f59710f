"""The data messages: Kafka's ``"type": "data"`` structures, versioned but with no API key.

They travel inside other bytes, each after its version as an int16: the consumer
protocol's subscription and assignment in a classic group's JoinGroup and SyncGroup
metadata (kproto's consumer writes them, minibroker's coordinator reads them), and the
keys and values of the ``__consumer_offsets`` records (minibroker writes and replays them,
byte for byte as Kafka does), and the keys and values of the ``__transaction_state``
records (``TransactionLogKey``, ``TransactionLogValue``: minibroker's transaction
coordinator writes and replays them). One entry per message, in the same DSL as the APIs;
the classes are built in :mod:`kproto.protocol.messages`.

The ``__consumer_offsets`` key's version says what the record is, as in Kafka 3.x's
``GroupMetadataManager``: 0 and 1 are an offset commit (:data:`OffsetCommitKey`, same
layout), 2 a group's metadata (:data:`GroupMetadataKey`); the value is read at its own
version.
"""

from __future__ import annotations

from kproto.protocol.spec import Data, data

__all__ = ["DATA"]

DATA: tuple[Data, ...] = (
    data(
        "ConsumerProtocolSubscription", "0-3", flexible="none",
        notes="""
            v1: owned_partitions (KIP-429, cooperative rebalancing). v2: generation_id, the
            generation owned_partitions are from. v3: rack_id (KIP-881, rack-aware assignors).
            Later versions may only append fields: a newer version is read as the newest known.
        """,
        fields="""
            topics            []string
            user_data         bytes             null  default=null
            owned_partitions  []TopicPartition  v1+  ignorable
              topic           string            v1+
              partitions      []int32           v1+
            generation_id     int32             v2+  default=-1  ignorable
            rack_id           string            v3+  null  default=null  ignorable
        """,
    ),
    data(
        "ConsumerProtocolAssignment", "0-3", flexible="none",
        notes="""
            v0-v3 share one layout; the version moves with the subscription's (v2, v3).
            Later versions may only append fields: a newer version is read as the newest known.
        """,
        fields="""
            assigned_partitions  []TopicPartition
              topic              string
              partitions         []int32
            user_data            bytes             null  default=null
        """,
    ),
    data(
        "OffsetCommitKey", "0-1", flexible="none",
        notes="""
            The key of an offset commit in __consumer_offsets; v0 and v1 share one layout
            (Kafka writes v1). Key version 2 is a GroupMetadataKey.
        """,
        fields="""
            group      string
            topic      string
            partition  int32
        """,
    ),
    data(
        "OffsetCommitValue", "0-4", flexible="4+",
        notes="""
            v1: expire_timestamp (only v1; KIP-211 dropped it again in v2). v3: leader_epoch
            (KIP-320). v4: flexible (KIP-915). A null value (a tombstone) deletes the commit.
        """,
        fields="""
            offset            int64
            leader_epoch      int32   v3+  default=-1  ignorable
            metadata          string
            commit_timestamp  int64
            expire_timestamp  int64   v1  default=-1  ignorable
        """,
    ),
    data(
        "GroupMetadataKey", "2", flexible="none",
        notes="""
            The key of a group's metadata in __consumer_offsets: version 2, after the two
            offset commit key versions.
        """,
        fields="""
            group  string
        """,
    ),
    data(
        "GroupMetadataValue", "0-4", flexible="4+",
        notes="""
            v1: rebalance_timeout. v2: current_state_timestamp. v3: group_instance_id
            (KIP-345, static membership). v4: flexible (KIP-915).
        """,
        fields="""
            protocol_type            string
            generation               int32
            protocol                 string            null
            leader                   string            null
            current_state_timestamp  int64             v2+  default=-1  ignorable
            members                  []MemberMetadata
              member_id              string
              group_instance_id      string            v3+  null  default=null  ignorable
              client_id              string
              client_host            string
              rebalance_timeout      int32             v1+  ignorable
              session_timeout        int32
              subscription           bytes
              assignment             bytes
        """,
    ),
    data(
        "TransactionLogKey", "0", flexible="none",
        notes="""
            The key of a transactional id's record in __transaction_state (KIP-98).
        """,
        fields="""
            transactional_id  string
        """,
    ),
    data(
        "TransactionLogValue", "0-1", flexible="1+",
        notes="""
            A transactional id's state in __transaction_state (KIP-98); a null value (a
            tombstone) removes the id. transaction_status is the state's id (Empty 0,
            Ongoing 1, PrepareCommit 2, PrepareAbort 3, CompleteCommit 4, CompleteAbort 5,
            Dead 6, PrepareEpochFence 7); transaction_partitions is null in Empty.
            v1: flexible (KIP-915), with tagged previous_producer_id, next_producer_id and
            client_transaction_version (KIP-890 part 2).
        """,
        fields="""
            producer_id                          int64
            previous_producer_id                 int64               v1+  tag=0  default=-1  ignorable
            next_producer_id                     int64               v1+  tag=1  default=-1  ignorable
            producer_epoch                       int16
            transaction_timeout_ms               int32
            transaction_status                   int8
            transaction_partitions               []PartitionsSchema  null
              topic                              string
              partition_ids                      []int32
            transaction_last_update_timestamp_ms int64
            transaction_start_timestamp_ms       int64
            client_transaction_version           int16               v1+  tag=2  ignorable
        """,
    ),
)
