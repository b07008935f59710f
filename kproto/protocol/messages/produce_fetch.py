"""Schema table: the data path. Produce, Fetch, ListOffsets, Metadata, DeleteRecords,
OffsetForLeaderEpoch.

Written in the :mod:`kproto.protocol.spec` DSL; one entry per API key, in key order.
"""

from kproto.protocol.spec import Route, api

__all__ = ["APIS"]

APIS = (
    api(
        0, "Produce", "0-12", flexible="9+", route=Route.LEADER,
        notes="""
        v1: throttle_time_ms in the response. v2: log_append_time_ms (KIP-32).
        v3: transactional_id; record batch v2 only from here (KIP-98).
        v4: may return KAFKA_STORAGE_ERROR (KIP-112). v5: log_start_offset (KIP-107). v6: same as v5.
        v7: zstd batches allowed (KIP-110). v8: record_errors and error_message (KIP-467).
        v9: first flexible version (KIP-482). v10: current_leader and node_endpoints tags (KIP-951).
        v11: TRANSACTION_ABORTABLE (KIP-890). v12: same as v11; with transaction version 2 the leader adds
        the partition to the transaction itself (KIP-890 part 2, Kafka 4.0; not in the reference JSON,
        which stops at v11). A client uses v12 only with transaction.version >= 2 finalized
        (ProduceRequest.LAST_STABLE_VERSION_BEFORE_TRANSACTION_V2 = 11).
        acks=0 requests get no response at all.
        Kafka 4.0 brokers refuse v0-v2 (KIP-896); kept for old brokers and clients (kafka-python sends v0-v8).
        """,
        request="""
        transactional_id  string                  v3+  null  default=null
        acks              int16
        timeout_ms        int32
        topic_data        []TopicProduceData
          name            string
          partition_data  []PartitionProduceData
            index         int32
            records       records                 null
        """,
        response="""
        responses                        []TopicProduceResponse
          name                           string
          partition_responses            []PartitionProduceResponse
            index                        int32
            error_code                   int16
            base_offset                  int64
            log_append_time_ms           int64                        v2+  default=-1  ignorable
            log_start_offset             int64                        v5+  default=-1  ignorable
            record_errors                []BatchIndexAndErrorMessage  v8+  ignorable
              batch_index                int32                        v8+
              batch_index_error_message  string                       v8+  null  default=null
            error_message                string                       v8+  null  default=null  ignorable
            current_leader               LeaderIdAndEpoch             v10+  tag=0
              leader_id                  int32                        v10+  default=-1
              leader_epoch               int32                        v10+  default=-1
        throttle_time_ms                 int32                        v1+  ignorable
        node_endpoints                   []NodeEndpoint               v10+  tag=0
          node_id                        int32                        v10+
          host                           string                       v10+
          port                           int32                        v10+
          rack                           string                       v10+  null  default=null
        """,
    ),
    api(
        1, "Fetch", "0-17", flexible="12+", route=Route.LEADER,
        notes="""
        v1: throttle_time_ms. v2: message format v1 (KIP-32). v3: max_bytes (KIP-74).
        v4: isolation_level, aborted_transactions, last_stable_offset (KIP-98). v5: log_start_offset (KIP-107).
        v6: KAFKA_STORAGE_ERROR. v7: fetch sessions (KIP-227). v8: same as v7.
        v9: current_leader_epoch (KIP-320). v10: zstd (KIP-110). v11: rack_id, preferred_read_replica (KIP-392).
        v12: first flexible version; last_fetched_epoch, diverging_epoch, current_leader, snapshot_id (KIP-595).
        v13: topic ids replace names (KIP-516). v14: OFFSET_MOVED_TO_TIERED_STORAGE (KIP-405).
        v15: replica_state replaces replica_id (KIP-903). v16: node_endpoints (KIP-951).
        v17: replica_directory_id (KIP-853).
        Kafka 4.0 brokers refuse v0-v3 (KIP-896); kept here (kafka-python sends v0-v11).
        The response's records are opaque bytes, decoded as a zero-copy memoryview.
        """,
        request="""
        cluster_id                string            v12+  null  tag=0  default=null  ignorable
        replica_id                int32             v0-14  default=-1
        replica_state             ReplicaState      v15+  tag=1
          replica_id              int32             v15+  default=-1
          replica_epoch           int64             v15+  default=-1
        max_wait_ms               int32
        min_bytes                 int32
        max_bytes                 int32             v3+  default=0x7fffffff  ignorable
        isolation_level           int8              v4+  ignorable
        session_id                int32             v7+  ignorable
        session_epoch             int32             v7+  default=-1  ignorable
        topics                    []FetchTopic
          topic                   string            v0-12  ignorable
          topic_id                uuid              v13+  ignorable
          partitions              []FetchPartition
            partition             int32
            current_leader_epoch  int32             v9+  default=-1  ignorable
            fetch_offset          int64
            last_fetched_epoch    int32             v12+  default=-1
            log_start_offset      int64             v5+  default=-1  ignorable
            partition_max_bytes   int32
            replica_directory_id  uuid              v17+  tag=0  ignorable
        forgotten_topics_data     []ForgottenTopic  v7+
          topic                   string            v7-12  ignorable
          topic_id                uuid              v13+  ignorable
          partitions              []int32           v7+
        rack_id                   string            v11+  ignorable
        """,
        response="""
        throttle_time_ms            int32                     v1+  ignorable
        error_code                  int16                     v7+  ignorable
        session_id                  int32                     v7+
        responses                   []FetchableTopicResponse
          topic                     string                    v0-12  ignorable
          topic_id                  uuid                      v13+  ignorable
          partitions                []PartitionData
            partition_index         int32
            error_code              int16
            high_watermark          int64
            last_stable_offset      int64                     v4+  default=-1  ignorable
            log_start_offset        int64                     v5+  default=-1  ignorable
            diverging_epoch         EpochEndOffset            v12+  tag=0
              epoch                 int32                     v12+  default=-1
              end_offset            int64                     v12+  default=-1
            current_leader          LeaderIdAndEpoch          v12+  tag=1
              leader_id             int32                     v12+  default=-1
              leader_epoch          int32                     v12+  default=-1
            snapshot_id             SnapshotId                v12+  tag=2
              end_offset            int64                     default=-1
              epoch                 int32                     default=-1
            aborted_transactions    []AbortedTransaction      v4+  null  ignorable
              producer_id           int64                     v4+
              first_offset          int64                     v4+
            preferred_read_replica  int32                     v11+  default=-1
            records                 records                   null
        node_endpoints              []NodeEndpoint            v16+  tag=0
          node_id                   int32                     v16+
          host                      string                    v16+
          port                      int32                     v16+
          rack                      string                    v16+  null  default=null
        """,
    ),
    api(
        2, "ListOffsets", "0-10", flexible="6+", route=Route.LEADER,
        notes="""
        v0: old max_num_offsets/offsets array form. v1: one offset plus its timestamp (KIP-79).
        v2: isolation_level (KIP-98). v3: same as v2. v4: current_leader_epoch and leader_epoch (KIP-320).
        v5: OFFSET_NOT_AVAILABLE. v6: first flexible version. v7: max-timestamp lookup, -3 (KIP-734).
        v8: local log start, -4 (KIP-405). v9: last tiered offset, -5 (KIP-1005).
        v10: timeout_ms for async remote lookups (KIP-1075).
        """,
        request="""
        replica_id                int32
        isolation_level           int8                    v2+
        topics                    []ListOffsetsTopic
          name                    string
          partitions              []ListOffsetsPartition
            partition_index       int32
            current_leader_epoch  int32                   v4+  default=-1  ignorable
            timestamp             int64
            max_num_offsets       int32                   v0  default=1
        timeout_ms                int32                   v10+  ignorable
        """,
        response="""
        throttle_time_ms       int32                           v2+  ignorable
        topics                 []ListOffsetsTopicResponse
          name                 string
          partitions           []ListOffsetsPartitionResponse
            partition_index    int32
            error_code         int16
            old_style_offsets  []int64                         v0
            timestamp          int64                           v1+  default=-1
            offset             int64                           v1+  default=-1
            leader_epoch       int32                           v4+  default=-1
        """,
    ),
    api(
        3, "Metadata", "0-12", flexible="9+", route=Route.ANY,
        notes="""
        v0: an empty topic list means all topics; from v1 null means all and empty means none.
        v1: rack, controller_id, is_internal. v2: cluster_id. v3: throttle_time_ms.
        v4: allow_auto_topic_creation. v5: offline_replicas. v6: same as v5.
        v7: leader_epoch (KIP-320). v8: authorized operations (KIP-430).
        v9: first flexible version. v10: topic ids (KIP-516). v11: cluster authorized operations moved to
        DescribeCluster (KIP-700). v12: lookup by topic id.
        Kafka 4.0 still serves v0 for old clients (kafka-python sends v0/v1).
        """,
        request="""
        topics                                 []MetadataRequestTopic  null=v1+
          topic_id                             uuid                    v10+  ignorable
          name                                 string                  null=v10+
        allow_auto_topic_creation              bool                    v4+  default=true
        include_cluster_authorized_operations  bool                    v8-10
        include_topic_authorized_operations    bool                    v8+
        """,
        response="""
        throttle_time_ms               int32                        v3+  ignorable
        brokers                        []MetadataResponseBroker
          node_id                      int32
          host                         string
          port                         int32
          rack                         string                       v1+  null  default=null  ignorable
        cluster_id                     string                       v2+  null  default=null  ignorable
        controller_id                  int32                        v1+  default=-1  ignorable
        topics                         []MetadataResponseTopic
          error_code                   int16
          name                         string                       null=v12+
          topic_id                     uuid                         v10+  ignorable
          is_internal                  bool                         v1+  ignorable
          partitions                   []MetadataResponsePartition
            error_code                 int16
            partition_index            int32
            leader_id                  int32
            leader_epoch               int32                        v7+  default=-1  ignorable
            replica_nodes              []int32
            isr_nodes                  []int32
            offline_replicas           []int32                      v5+  ignorable
          topic_authorized_operations  int32                        v8+  default=-2147483648
        cluster_authorized_operations  int32                        v8-10  default=-2147483648
        """,
    ),
    api(
        21, "DeleteRecords", "0-2", flexible="2+", route=Route.LEADER,
        notes="""
        KIP-107. v1: same as v0. v2: first flexible version.
        """,
        request="""
        topics               []DeleteRecordsTopic
          name               string
          partitions         []DeleteRecordsPartition
            partition_index  int32
            offset           int64
        timeout_ms           int32
        """,
        response="""
        throttle_time_ms     int32
        topics               []DeleteRecordsTopicResult
          name               string
          partitions         []DeleteRecordsPartitionResult
            partition_index  int32
            low_watermark    int64
            error_code       int16
        """,
    ),
    api(
        23, "OffsetForLeaderEpoch", "0-4", flexible="4+", route=Route.LEADER,
        notes="""
        KIP-101. v1: leader_epoch in the response (KIP-279). v2: current_leader_epoch, throttle_time_ms (KIP-320).
        v3: replica_id (-2 for consumers, -1 debug). v4: first flexible version.
        """,
        request="""
        replica_id                int32                       v3+  default=-2  ignorable
        topics                    []OffsetForLeaderTopic
          topic                   string
          partitions              []OffsetForLeaderPartition
            partition             int32
            current_leader_epoch  int32                       v2+  default=-1  ignorable
            leader_epoch          int32
        """,
        response="""
        throttle_time_ms  int32                         v2+  ignorable
        topics            []OffsetForLeaderTopicResult
          topic           string
          partitions      []EpochEndOffset
            error_code    int16
            partition     int32
            leader_epoch  int32                         v1+  default=-1  ignorable
            end_offset    int64                         default=-1
        """,
    ),
)
