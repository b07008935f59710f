"""Schema table: idempotence and transactions (KIP-98), and the KIP-664 tools.

Written in the :mod:`kproto.protocol.spec` DSL; one entry per API key, in key order.
"""

from kproto.protocol.spec import Route, api

__all__ = ["APIS"]

APIS = (
    api(
        22, "InitProducerId", "0-5", flexible="2+", route=Route.TXN_COORDINATOR,
        notes="""
        Transactional producers ask their transaction coordinator; idempotent-only producers any broker.
        KIP-98. v1: same as v0. v2: first flexible version.
        v3: producer_id and producer_epoch to resume after INVALID_PRODUCER_EPOCH (KIP-360).
        v4: PRODUCER_FENCED (KIP-588). v5: TRANSACTION_ABORTABLE (KIP-890).
        """,
        request="""
        transactional_id        string  null
        transaction_timeout_ms  int32
        producer_id             int64   v3+  default=-1
        producer_epoch          int16   v3+  default=-1
        """,
        response="""
        throttle_time_ms  int32  ignorable
        error_code        int16
        producer_id       int64  default=-1
        producer_epoch    int16
        """,
    ),
    api(
        24, "AddPartitionsToTxn", "0-5", flexible="3+", route=Route.TXN_COORDINATOR,
        notes="""
        KIP-98. v1: same as v0. v2: PRODUCER_FENCED (KIP-588). v3: first flexible version.
        v4: broker-to-broker batches of transactions and verify_only (KIP-890); clients use v0-v3 and
        the v3_and_below_* fields. v5: TRANSACTION_ABORTABLE (KIP-890).
        """,
        request="""
        transactions                   []AddPartitionsToTxnTransaction  v4+
          transactional_id             string                           v4+
          producer_id                  int64                            v4+
          producer_epoch               int16                            v4+
          verify_only                  bool                             v4+
          topics                       []AddPartitionsToTxnTopic        v4+
            name                       string
            partitions                 []int32
        v3_and_below_transactional_id  string                           v0-3
        v3_and_below_producer_id       int64                            v0-3
        v3_and_below_producer_epoch    int16                            v0-3
        v3_and_below_topics            []AddPartitionsToTxnTopic        v0-3
        """,
        response="""
        throttle_time_ms               int32
        error_code                     int16                                v4+  ignorable
        results_by_transaction         []AddPartitionsToTxnResult           v4+
          transactional_id             string                               v4+
          topic_results                []AddPartitionsToTxnTopicResult      v4+
            name                       string
            results_by_partition       []AddPartitionsToTxnPartitionResult
              partition_index          int32
              partition_error_code     int16
        results_by_topic_v3_and_below  []AddPartitionsToTxnTopicResult      v0-3
        """,
    ),
    api(
        25, "AddOffsetsToTxn", "0-4", flexible="3+", route=Route.TXN_COORDINATOR,
        notes="""
        KIP-98. v1: same as v0. v2: PRODUCER_FENCED (KIP-588). v3: first flexible version.
        v4: TRANSACTION_ABORTABLE (KIP-890).
        """,
        request="""
        transactional_id  string
        producer_id       int64
        producer_epoch    int16
        group_id          string
        """,
        response="""
        throttle_time_ms  int32
        error_code        int16
        """,
    ),
    api(
        26, "EndTxn", "0-5", flexible="3+", route=Route.TXN_COORDINATOR,
        notes="""
        KIP-98. v1: same as v0. v2: PRODUCER_FENCED (KIP-588). v3: first flexible version.
        v4: TRANSACTION_ABORTABLE (KIP-890). v5: epoch bump on every transaction; producer id and epoch
        in the response (KIP-890 part 2; unstable in Kafka 3.x).
        """,
        request="""
        transactional_id  string
        producer_id       int64
        producer_epoch    int16
        committed         bool
        """,
        response="""
        throttle_time_ms  int32
        error_code        int16
        producer_id       int64  v5+  default=-1  ignorable
        producer_epoch    int16  v5+  default=-1  ignorable
        """,
    ),
    api(
        27, "WriteTxnMarkers", "0-1", flexible="1+", route=Route.LEADER,
        notes="""
        Broker to broker: the transaction coordinator writes commit/abort markers on partition leaders (KIP-98).
        v1: first flexible version.
        """,
        request="""
        markers                []WritableTxnMarker
          producer_id          int64
          producer_epoch       int16
          transaction_result   bool
          topics               []WritableTxnMarkerTopic
            name               string
            partition_indexes  []int32
          coordinator_epoch    int32
        """,
        response="""
        markers                []WritableTxnMarkerResult
          producer_id          int64
          topics               []WritableTxnMarkerTopicResult
            name               string
            partitions         []WritableTxnMarkerPartitionResult
              partition_index  int32
              error_code       int16
        """,
    ),
    api(
        28, "TxnOffsetCommit", "0-4", flexible="3+", route=Route.GROUP_COORDINATOR,
        notes="""
        Sent to the group coordinator (not the transaction coordinator). KIP-98.
        v1: same as v0. v2: committed_leader_epoch (KIP-320).
        v3: member_id, group_instance_id and generation_id for fencing (KIP-447); first flexible version.
        v4: TRANSACTION_ABORTABLE (KIP-890).
        """,
        request="""
        transactional_id            string
        group_id                    string
        producer_id                 int64
        producer_epoch              int16
        generation_id               int32                              v3+  default=-1
        member_id                   string                             v3+
        group_instance_id           string                             v3+  null  default=null
        topics                      []TxnOffsetCommitRequestTopic
          name                      string
          partitions                []TxnOffsetCommitRequestPartition
            partition_index         int32
            committed_offset        int64
            committed_leader_epoch  int32                              v2+  default=-1  ignorable
            committed_metadata      string                             null
        """,
        response="""
        throttle_time_ms     int32
        topics               []TxnOffsetCommitResponseTopic
          name               string
          partitions         []TxnOffsetCommitResponsePartition
            partition_index  int32
            error_code       int16
        """,
    ),
    api(
        61, "DescribeProducers", "0", flexible="0+", route=Route.LEADER,
        notes="""
        KIP-664: active producers of each partition (hanging-transaction tools).
        """,
        request="""
        topics               []TopicRequest
          name               string
          partition_indexes  []int32
        """,
        response="""
        throttle_time_ms                int32
        topics                          []TopicResponse
          name                          string
          partitions                    []PartitionResponse
            partition_index             int32
            error_code                  int16
            error_message               string               null  default=null
            active_producers            []ProducerState
              producer_id               int64
              producer_epoch            int32
              last_sequence             int32                default=-1
              last_timestamp            int64                default=-1
              coordinator_epoch         int32
              current_txn_start_offset  int64                default=-1
        """,
    ),
    api(
        65, "DescribeTransactions", "0", flexible="0+", route=Route.TXN_COORDINATOR,
        notes="""
        KIP-664: state of transactional ids held by this coordinator.
        """,
        request="""
        transactional_ids  []string
        """,
        response="""
        throttle_time_ms             int32
        transaction_states           []TransactionState
          error_code                 int16
          transactional_id           string
          transaction_state          string
          transaction_timeout_ms     int32
          transaction_start_time_ms  int64
          producer_id                int64
          producer_epoch             int16
          topics                     []TopicData
            topic                    string
            partitions               []int32
        """,
    ),
    api(
        66, "ListTransactions", "0-1", flexible="0+", route=Route.EACH_BROKER,
        notes="""
        KIP-664: each broker lists the transactions its coordinator holds.
        v1: duration_filter (KIP-994).
        """,
        request="""
        state_filters        []string
        producer_id_filters  []int64
        duration_filter      int64     v1+  default=-1
        """,
        response="""
        throttle_time_ms       int32
        error_code             int16
        unknown_state_filters  []string
        transaction_states     []TransactionState
          transactional_id     string
          producer_id          int64
          transaction_state    string
        """,
    ),
)
