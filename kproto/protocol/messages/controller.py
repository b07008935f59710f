"""Schema table: the broker-to-controller APIs of KRaft (KIP-500, KIP-631).

Brokers send these to the active controller, never to other brokers, and clients never
send them: Kafka serves them on the controller listener only. Written in the
:mod:`kproto.protocol.spec` DSL; one entry per API key, in key order.
"""

from kproto.protocol.spec import Route, api

__all__ = ["APIS"]

APIS = (
    api(
        56, "AlterPartition", "0-3", flexible="0+", route=Route.CONTROLLER,
        notes="""
        A partition leader proposes a new ISR (KIP-497; was AlterIsr). v1: leader_recovery_state (KIP-704).
        v2: topic ids instead of names (KIP-841). v3: new_isr_with_epochs, the broker epoch of each ISR
        member (KIP-903).
        """,
        request="""
        broker_id                  int32
        broker_epoch               int64                 default=-1
        topics                     []TopicData
          topic_name               string                v0-1  ignorable
          topic_id                 uuid                  v2+   ignorable
          partitions               []PartitionData
            partition_index        int32
            leader_epoch           int32
            new_isr                []int32               v0-2
            new_isr_with_epochs    []BrokerState         v3+
              broker_id            int32                 v3+
              broker_epoch         int64                 v3+   default=-1
            leader_recovery_state  int8                  v1+
            partition_epoch        int32
        """,
        response="""
        throttle_time_ms           int32
        error_code                 int16
        topics                     []TopicData
          topic_name               string                v0-1  ignorable
          topic_id                 uuid                  v2+   ignorable
          partitions               []PartitionData
            partition_index        int32
            error_code             int16
            leader_id              int32
            leader_epoch           int32
            isr                    []int32
            leader_recovery_state  int8                  v1+   ignorable
            partition_epoch        int32
        """,
    ),
    api(
        62, "BrokerRegistration", "0-4", flexible="0+", route=Route.CONTROLLER,
        notes="""
        A starting broker joins the cluster and gets its broker epoch (KIP-631).
        v1: is_migrating_zk_broker (KIP-866). v2: log_dirs (KIP-858). v3: previous_broker_epoch (KIP-966).
        v4: features with min_supported_version 0 are sent too (KIP-1022).
        """,
        request="""
        broker_id                  int32
        cluster_id                 string
        incarnation_id             uuid
        listeners                  []Listener
          name                     string
          host                     string
          port                     uint16
          security_protocol        int16
        features                   []Feature
          name                     string
          min_supported_version    int16
          max_supported_version    int16
        rack                       string                null
        is_migrating_zk_broker     bool                  v1+
        log_dirs                   []uuid                v2+   ignorable
        previous_broker_epoch      int64                 v3+   default=-1  ignorable
        """,
        response="""
        throttle_time_ms           int32
        error_code                 int16
        broker_epoch               int64                 default=-1
        """,
    ),
    api(
        63, "BrokerHeartbeat", "0-1", flexible="0+", route=Route.CONTROLLER,
        notes="""
        A broker is alive and says how far it applied the metadata log (KIP-631).
        v1: offline_log_dirs (KIP-858).
        """,
        request="""
        broker_id                  int32
        broker_epoch               int64                 default=-1
        current_metadata_offset    int64
        want_fence                 bool
        want_shut_down             bool
        offline_log_dirs           []uuid                v1+   tag=0
        """,
        response="""
        throttle_time_ms           int32
        error_code                 int16
        is_caught_up               bool                  default=false
        is_fenced                  bool                  default=true
        should_shut_down           bool
        """,
    ),
    api(
        67, "AllocateProducerIds", "0", flexible="0+", route=Route.CONTROLLER,
        notes="""
        A broker gets a block of producer ids for InitProducerId (KIP-730).
        """,
        request="""
        broker_id                  int32
        broker_epoch               int64                 default=-1
        """,
        response="""
        throttle_time_ms           int32
        error_code                 int16
        producer_id_start          int64
        producer_id_len            int32
        """,
    ),
)
