"""Schema table: consumer groups. Offsets, the classic join/sync protocol, group admin,
and the KIP-848 consumer protocol.

Written in the :mod:`kproto.protocol.spec` DSL; one entry per API key, in key order.
"""

from kproto.protocol.spec import Route, api

__all__ = ["APIS"]

APIS = (
    api(
        8, "OffsetCommit", "0-9", flexible="8+", route=Route.GROUP_COORDINATOR,
        notes="""
        v1: generation_id, member_id and a per-partition commit_timestamp. v2: retention_time_ms
        replaces commit_timestamp. v3: throttle_time_ms. v4: same as v3.
        v5: retention_time_ms removed (KIP-211). v6: committed_leader_epoch (KIP-320).
        v7: group_instance_id (KIP-345). v8: first flexible version. v9: new consumer protocol (KIP-848).
        """,
        request="""
        group_id                       string
        generation_id_or_member_epoch  int32                           v1+  default=-1  ignorable
        member_id                      string                          v1+  ignorable
        group_instance_id              string                          v7+  null  default=null
        retention_time_ms              int64                           v2-4  default=-1  ignorable
        topics                         []OffsetCommitRequestTopic
          name                         string
          partitions                   []OffsetCommitRequestPartition
            partition_index            int32
            committed_offset           int64
            committed_leader_epoch     int32                           v6+  default=-1  ignorable
            commit_timestamp           int64                           v1  default=-1
            committed_metadata         string                          null
        """,
        response="""
        throttle_time_ms     int32                            v3+  ignorable
        topics               []OffsetCommitResponseTopic
          name               string
          partitions         []OffsetCommitResponsePartition
            partition_index  int32
            error_code       int16
        """,
    ),
    api(
        9, "OffsetFetch", "0-9", flexible="6+", route=Route.GROUP_COORDINATOR,
        notes="""
        v0: offsets from ZooKeeper. v1: from __consumer_offsets. v2: null topics means all, top-level
        error_code. v3: throttle_time_ms. v4: same as v3. v5: committed_leader_epoch (KIP-320).
        v6: first flexible version. v7: require_stable (KIP-447).
        v8: several groups per request (KIP-709). v9: member_id and member_epoch (KIP-848).
        """,
        request="""
        group_id               string                      v0-7
        topics                 []OffsetFetchRequestTopic   v0-7  null=v2-7
          name                 string                      v0-7
          partition_indexes    []int32                     v0-7
        groups                 []OffsetFetchRequestGroup   v8+
          group_id             string                      v8+
          member_id            string                      v9+  null  default=null  ignorable
          member_epoch         int32                       v9+  default=-1  ignorable
          topics               []OffsetFetchRequestTopics  v8+  null
            name               string                      v8+
            partition_indexes  []int32                     v8+
        require_stable         bool                        v7+
        """,
        response="""
        throttle_time_ms              int32                            v3+  ignorable
        topics                        []OffsetFetchResponseTopic       v0-7
          name                        string                           v0-7
          partitions                  []OffsetFetchResponsePartition   v0-7
            partition_index           int32                            v0-7
            committed_offset          int64                            v0-7
            committed_leader_epoch    int32                            v5-7  default=-1  ignorable
            metadata                  string                           v0-7  null
            error_code                int16                            v0-7
        error_code                    int16                            v2-7  ignorable
        groups                        []OffsetFetchResponseGroup       v8+
          group_id                    string                           v8+
          topics                      []OffsetFetchResponseTopics      v8+
            name                      string                           v8+
            partitions                []OffsetFetchResponsePartitions  v8+
              partition_index         int32                            v8+
              committed_offset        int64                            v8+
              committed_leader_epoch  int32                            v8+  default=-1  ignorable
              metadata                string                           v8+  null
              error_code              int16                            v8+
          error_code                  int16                            v8+
        """,
    ),
    api(
        10, "FindCoordinator", "0-6", flexible="3+", route=Route.ANY,
        notes="""
        v1: key_type (0 group, 1 transaction; KIP-98), error_message. v2: same as v1.
        v3: first flexible version. v4: batched coordinator_keys (KIP-699).
        v5: TRANSACTION_ABORTABLE (KIP-890). v6: share groups, key type 2 (KIP-932).
        """,
        request="""
        key               string    v0-3
        key_type          int8      v1+
        coordinator_keys  []string  v4+
        """,
        response="""
        throttle_time_ms  int32          v1+  ignorable
        error_code        int16          v0-3
        error_message     string         v1-3  null  ignorable
        node_id           int32          v0-3
        host              string         v0-3
        port              int32          v0-3
        coordinators      []Coordinator  v4+
          key             string         v4+
          node_id         int32          v4+
          host            string         v4+
          port            int32          v4+
          error_code      int16          v4+
          error_message   string         v4+  null  ignorable
        """,
    ),
    api(
        11, "JoinGroup", "0-9", flexible="6+", route=Route.GROUP_COORDINATOR,
        notes="""
        v1: rebalance_timeout_ms (KIP-62). v2: throttle_time_ms. v3: same as v2.
        v4: an empty member_id gets MEMBER_ID_REQUIRED and must rejoin with the id (KIP-394).
        v5: group_instance_id, static membership (KIP-345). v6: first flexible version.
        v7: protocol_type in the response (KIP-559). v8: reason (KIP-800). v9: skip_assignment (KIP-814).
        """,
        request="""
        group_id              string
        session_timeout_ms    int32
        rebalance_timeout_ms  int32                       v1+  default=-1  ignorable
        member_id             string
        group_instance_id     string                      v5+  null  default=null
        protocol_type         string
        protocols             []JoinGroupRequestProtocol
          name                string
          metadata            bytes
        reason                string                      v8+  null  default=null  ignorable
        """,
        response="""
        throttle_time_ms     int32                      v2+  ignorable
        error_code           int16
        generation_id        int32                      default=-1
        protocol_type        string                     v7+  null  default=null  ignorable
        protocol_name        string                     null=v7+
        leader               string
        skip_assignment      bool                       v9+
        member_id            string
        members              []JoinGroupResponseMember
          member_id          string
          group_instance_id  string                     v5+  null  default=null  ignorable
          metadata           bytes
        """,
    ),
    api(
        12, "Heartbeat", "0-4", flexible="4+", route=Route.GROUP_COORDINATOR,
        notes="""
        v1: throttle_time_ms. v2: same as v1. v3: group_instance_id (KIP-345). v4: first flexible version.
        """,
        request="""
        group_id           string
        generation_id      int32
        member_id          string
        group_instance_id  string  v3+  null  default=null
        """,
        response="""
        throttle_time_ms  int32  v1+  ignorable
        error_code        int16
        """,
    ),
    api(
        13, "LeaveGroup", "0-5", flexible="4+", route=Route.GROUP_COORDINATOR,
        notes="""
        v1: throttle_time_ms. v2: same as v1. v3: batch of members with group_instance_id (KIP-345).
        v4: first flexible version. v5: reason (KIP-800).
        """,
        request="""
        group_id             string
        member_id            string            v0-2
        members              []MemberIdentity  v3+
          member_id          string            v3+
          group_instance_id  string            v3+  null  default=null
          reason             string            v5+  null  default=null  ignorable
        """,
        response="""
        throttle_time_ms     int32             v1+  ignorable
        error_code           int16
        members              []MemberResponse  v3+
          member_id          string            v3+
          group_instance_id  string            v3+  null
          error_code         int16             v3+
        """,
    ),
    api(
        14, "SyncGroup", "0-5", flexible="4+", route=Route.GROUP_COORDINATOR,
        notes="""
        v1: throttle_time_ms. v2: same as v1. v3: group_instance_id (KIP-345). v4: first flexible version.
        v5: protocol_type and protocol_name both ways (KIP-559).
        """,
        request="""
        group_id           string
        generation_id      int32
        member_id          string
        group_instance_id  string                        v3+  null  default=null
        protocol_type      string                        v5+  null  default=null  ignorable
        protocol_name      string                        v5+  null  default=null  ignorable
        assignments        []SyncGroupRequestAssignment
          member_id        string
          assignment       bytes
        """,
        response="""
        throttle_time_ms  int32   v1+  ignorable
        error_code        int16
        protocol_type     string  v5+  null  default=null  ignorable
        protocol_name     string  v5+  null  default=null  ignorable
        assignment        bytes
        """,
    ),
    api(
        15, "DescribeGroups", "0-5", flexible="5+", route=Route.GROUP_COORDINATOR,
        notes="""
        v1: throttle_time_ms. v2: same as v1. v3: authorized operations (KIP-430).
        v4: group_instance_id of members (KIP-345). v5: first flexible version.
        """,
        request="""
        groups                         []string
        include_authorized_operations  bool      v3+
        """,
        response="""
        throttle_time_ms         int32                   v1+  ignorable
        groups                   []DescribedGroup
          error_code             int16
          group_id               string
          group_state            string
          protocol_type          string
          protocol_data          string
          members                []DescribedGroupMember
            member_id            string
            group_instance_id    string                  v4+  null  default=null  ignorable
            client_id            string
            client_host          string
            member_metadata      bytes
            member_assignment    bytes
          authorized_operations  int32                   v3+  default=-2147483648
        """,
    ),
    api(
        16, "ListGroups", "0-5", flexible="3+", route=Route.EACH_BROKER,
        notes="""
        Each broker lists the groups it coordinates; ask every broker for the full list.
        v1: throttle_time_ms. v2: same as v1. v3: first flexible version.
        v4: states_filter and group_state (KIP-518). v5: types_filter and group_type (KIP-848).
        """,
        request="""
        states_filter  []string  v4+
        types_filter   []string  v5+
        """,
        response="""
        throttle_time_ms  int32          v1+  ignorable
        error_code        int16
        groups            []ListedGroup
          group_id        string
          protocol_type   string
          group_state     string         v4+  ignorable
          group_type      string         v5+  ignorable
        """,
    ),
    api(
        42, "DeleteGroups", "0-2", flexible="2+", route=Route.GROUP_COORDINATOR,
        notes="""
        KIP-229. v1: same as v0. v2: first flexible version.
        """,
        request="""
        groups_names  []string
        """,
        response="""
        throttle_time_ms  int32
        results           []DeletableGroupResult
          group_id        string
          error_code      int16
        """,
    ),
    api(
        47, "OffsetDelete", "0", flexible="none", route=Route.GROUP_COORDINATOR,
        notes="""
        KIP-496: delete committed offsets of a group with no active subscription to them.
        """,
        request="""
        group_id             string
        topics               []OffsetDeleteRequestTopic
          name               string
          partitions         []OffsetDeleteRequestPartition
            partition_index  int32
        """,
        response="""
        error_code           int16
        throttle_time_ms     int32                            ignorable
        topics               []OffsetDeleteResponseTopic
          name               string
          partitions         []OffsetDeleteResponsePartition
            partition_index  int32
            error_code       int16
        """,
    ),
    api(
        68, "ConsumerGroupHeartbeat", "0-1", flexible="0+", route=Route.GROUP_COORDINATOR,
        notes="""
        The KIP-848 consumer group protocol: join with member_epoch 0, leave with -1, static leave with -2.
        v1: subscribed_topic_regex (KIP-848; unstable in Kafka 3.x).
        """,
        request="""
        group_id                string
        member_id               string
        member_epoch            int32
        instance_id             string             null  default=null
        rack_id                 string             null  default=null
        rebalance_timeout_ms    int32              default=-1
        subscribed_topic_names  []string           null  default=null
        subscribed_topic_regex  string             v1+  null  default=null
        server_assignor         string             null  default=null
        topic_partitions        []TopicPartitions  null  default=null
          topic_id              uuid
          partitions            []int32
        """,
        response="""
        throttle_time_ms       int32
        error_code             int16
        error_message          string             null  default=null
        member_id              string             null  default=null
        member_epoch           int32
        heartbeat_interval_ms  int32
        assignment             Assignment         null  default=null
          topic_partitions     []TopicPartitions
            topic_id           uuid
            partitions         []int32
        """,
    ),
    api(
        69, "ConsumerGroupDescribe", "0", flexible="0+", route=Route.GROUP_COORDINATOR,
        notes="""
        KIP-848: describe groups that use the new consumer protocol.
        """,
        request="""
        group_ids                      []string
        include_authorized_operations  bool
        """,
        response="""
        throttle_time_ms            int32
        groups                      []DescribedGroup
          error_code                int16
          error_message             string             null  default=null
          group_id                  string
          group_state               string
          group_epoch               int32
          assignment_epoch          int32
          assignor_name             string
          members                   []Member
            member_id               string
            instance_id             string             null  default=null
            rack_id                 string             null  default=null
            member_epoch            int32
            client_id               string
            client_host             string
            subscribed_topic_names  []string
            subscribed_topic_regex  string             null  default=null
            assignment              Assignment
              topic_partitions      []TopicPartitions
                topic_id            uuid
                topic_name          string
                partitions          []int32
            target_assignment       Assignment
          authorized_operations     int32              default=-2147483648
        """,
    ),
)
