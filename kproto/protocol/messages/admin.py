"""Schema table: administration. Topics, ACLs, configs, log dirs, partitions, quotas, cluster.

Written in the :mod:`kproto.protocol.spec` DSL; one entry per API key, in key order.
"""

from kproto.protocol.spec import Route, api

__all__ = ["APIS"]

APIS = (
    api(
        19, "CreateTopics", "0-7", flexible="5+", route=Route.CONTROLLER,
        notes="""
        v1: validate_only. v2: throttle_time_ms. v3: same as v2.
        v4: num_partitions / replication_factor -1 means broker defaults (KIP-464).
        v5: first flexible version; configs in the response (KIP-525). v6: THROTTLING_QUOTA_EXCEEDED (KIP-599).
        v7: topic_id in the response (KIP-516).
        """,
        request="""
        topics                []CreatableTopic
          name                string
          num_partitions      int32
          replication_factor  int16
          assignments         []CreatableReplicaAssignment
            partition_index   int32
            broker_ids        []int32
          configs             []CreatableTopicConfig
            name              string
            value             string                        null
        timeout_ms            int32                         default=60000
        validate_only         bool                          v1+
        """,
        response="""
        throttle_time_ms           int32                    v2+  ignorable
        topics                     []CreatableTopicResult
          name                     string
          topic_id                 uuid                     v7+  ignorable
          error_code               int16
          error_message            string                   v1+  null  ignorable
          topic_config_error_code  int16                    v5+  tag=0  ignorable
          num_partitions           int32                    v5+  default=-1  ignorable
          replication_factor       int16                    v5+  default=-1  ignorable
          configs                  []CreatableTopicConfigs  v5+  null  ignorable
            name                   string                   v5+
            value                  string                   v5+  null
            read_only              bool                     v5+
            config_source          int8                     v5+  default=-1  ignorable
            is_sensitive           bool                     v5+
        """,
    ),
    api(
        20, "DeleteTopics", "0-6", flexible="4+", route=Route.CONTROLLER,
        notes="""
        v1: throttle_time_ms. v2: same as v1. v3: TOPIC_DELETION_DISABLED. v4: first flexible version.
        v5: error_message, THROTTLING_QUOTA_EXCEEDED (KIP-599). v6: topics by name or id (KIP-516).
        """,
        request="""
        topics       []DeleteTopicState  v6+
          name       string              v6+  null  default=null
          topic_id   uuid                v6+
        topic_names  []string            v0-5  ignorable
        timeout_ms   int32
        """,
        response="""
        throttle_time_ms  int32                   v1+  ignorable
        responses         []DeletableTopicResult
          name            string                  null=v6+
          topic_id        uuid                    v6+  ignorable
          error_code      int16
          error_message   string                  v5+  null  default=null  ignorable
        """,
    ),
    api(
        29, "DescribeAcls", "0-3", flexible="2+", route=Route.ANY,
        notes="""
        KIP-140. v1: pattern types (KIP-290). v2: first flexible version. v3: USER resource type (KIP-373).
        """,
        request="""
        resource_type_filter  int8
        resource_name_filter  string  null
        pattern_type_filter   int8    v1+  default=3
        principal_filter      string  null
        host_filter           string  null
        operation             int8
        permission_type       int8
        """,
        response="""
        throttle_time_ms     int32
        error_code           int16
        error_message        string                  null
        resources            []DescribeAclsResource
          resource_type      int8
          resource_name      string
          pattern_type       int8                    v1+  default=3
          acls               []AclDescription
            principal        string
            host             string
            operation        int8
            permission_type  int8
        """,
    ),
    api(
        30, "CreateAcls", "0-3", flexible="2+", route=Route.ANY,
        notes="""
        KIP-140. v1: pattern types (KIP-290). v2: first flexible version. v3: USER resource type (KIP-373).
        """,
        request="""
        creations                []AclCreation
          resource_type          int8
          resource_name          string
          resource_pattern_type  int8           v1+  default=3
          principal              string
          host                   string
          operation              int8
          permission_type        int8
        """,
        response="""
        throttle_time_ms  int32
        results           []AclCreationResult
          error_code      int16
          error_message   string               null
        """,
    ),
    api(
        31, "DeleteAcls", "0-3", flexible="2+", route=Route.ANY,
        notes="""
        KIP-140. v1: pattern types (KIP-290). v2: first flexible version. v3: USER resource type (KIP-373).
        """,
        request="""
        filters                 []DeleteAclsFilter
          resource_type_filter  int8
          resource_name_filter  string              null
          pattern_type_filter   int8                v1+  default=3
          principal_filter      string              null
          host_filter           string              null
          operation             int8
          permission_type       int8
        """,
        response="""
        throttle_time_ms     int32
        filter_results       []DeleteAclsFilterResult
          error_code         int16
          error_message      string                    null
          matching_acls      []DeleteAclsMatchingAcl
            error_code       int16
            error_message    string                    null
            resource_type    int8
            resource_name    string
            pattern_type     int8                      v1+  default=3
            principal        string
            host             string
            operation        int8
            permission_type  int8
        """,
    ),
    api(
        32, "DescribeConfigs", "0-4", flexible="4+", route=Route.ANY,
        notes="""
        Broker and broker-logger resources must go to that broker; topic resources to any broker. KIP-133.
        v1: include_synonyms, config_source (KIP-226). v2: same as v1.
        v3: include_documentation, config_type (KIP-569). v4: first flexible version.
        """,
        request="""
        resources              []DescribeConfigsResource
          resource_type        int8
          resource_name        string
          configuration_keys   []string                   null
        include_synonyms       bool                       v1+
        include_documentation  bool                       v3+
        """,
        response="""
        throttle_time_ms   int32
        results            []DescribeConfigsResult
          error_code       int16
          error_message    string                           null
          resource_type    int8
          resource_name    string
          configs          []DescribeConfigsResourceResult
            name           string
            value          string                           null
            read_only      bool
            is_default     bool                             v0
            config_source  int8                             v1+  default=-1  ignorable
            is_sensitive   bool
            synonyms       []DescribeConfigsSynonym         v1+  ignorable
              name         string                           v1+
              value        string                           v1+  null
              source       int8                             v1+
            config_type    int8                             v3+  ignorable
            documentation  string                           v3+  null  ignorable
        """,
    ),
    api(
        33, "AlterConfigs", "0-2", flexible="2+", route=Route.ANY,
        notes="""
        Broker resources go to that broker. Deprecated for IncrementalAlterConfigs (KIP-339). KIP-133.
        v1: same as v0. v2: first flexible version.
        """,
        request="""
        resources        []AlterConfigsResource
          resource_type  int8
          resource_name  string
          configs        []AlterableConfig
            name         string
            value        string                  null
        validate_only    bool
        """,
        response="""
        throttle_time_ms  int32
        responses         []AlterConfigsResourceResponse
          error_code      int16
          error_message   string                          null
          resource_type   int8
          resource_name   string
        """,
    ),
    api(
        35, "DescribeLogDirs", "0-4", flexible="2+", route=Route.EACH_BROKER,
        notes="""
        Each broker describes its own log directories. KIP-113.
        v1: same as v0. v2: first flexible version. v3: top-level error_code (KIP-769).
        v4: total_bytes and usable_bytes (KIP-827).
        """,
        request="""
        topics        []DescribableLogDirTopic  null
          topic       string
          partitions  []int32
        """,
        response="""
        throttle_time_ms       int32
        error_code             int16                       v3+  ignorable
        results                []DescribeLogDirsResult
          error_code           int16
          log_dir              string
          topics               []DescribeLogDirsTopic
            name               string
            partitions         []DescribeLogDirsPartition
              partition_index  int32
              partition_size   int64
              offset_lag       int64
              is_future_key    bool
          total_bytes          int64                       v4+  default=-1  ignorable
          usable_bytes         int64                       v4+  default=-1  ignorable
        """,
    ),
    api(
        37, "CreatePartitions", "0-3", flexible="2+", route=Route.CONTROLLER,
        notes="""
        KIP-195. v1: same as v0. v2: first flexible version. v3: THROTTLING_QUOTA_EXCEEDED (KIP-599).
        """,
        request="""
        topics          []CreatePartitionsTopic
          name          string
          count         int32
          assignments   []CreatePartitionsAssignment  null
            broker_ids  []int32
        timeout_ms      int32
        validate_only   bool
        """,
        response="""
        throttle_time_ms  int32
        results           []CreatePartitionsTopicResult
          name            string
          error_code      int16
          error_message   string                         null  default=null
        """,
    ),
    api(
        43, "ElectLeaders", "0-2", flexible="2+", route=Route.CONTROLLER,
        notes="""
        KIP-183 (preferred leader election); v1: election_type, PREFERRED=0 or UNCLEAN=1, and a
        top-level error_code (KIP-460). v2: first flexible version. Null topic_partitions: every
        partition (the answer lists only those where an election was needed).
        """,
        request="""
        election_type     int8                v1+
        topic_partitions  []TopicPartitions   null
          topic           string
          partitions      []int32
        timeout_ms        int32               default=60000
        """,
        response="""
        throttle_time_ms          int32
        error_code                int16                      v1+
        replica_election_results  []ReplicaElectionResult
          topic                   string
          partition_result        []PartitionResult
            partition_id          int32
            error_code            int16
            error_message         string                     null
        """,
    ),
    api(
        44, "IncrementalAlterConfigs", "0-1", flexible="1+", route=Route.ANY,
        notes="""
        KIP-339: set, delete, append or subtract single config values. Broker resources go to that broker.
        v1: first flexible version.
        """,
        request="""
        resources             []AlterConfigsResource
          resource_type       int8
          resource_name       string
          configs             []AlterableConfig
            name              string
            config_operation  int8
            value             string                  null
        validate_only         bool
        """,
        response="""
        throttle_time_ms  int32
        responses         []AlterConfigsResourceResponse
          error_code      int16
          error_message   string                          null
          resource_type   int8
          resource_name   string
        """,
    ),
    api(
        48, "DescribeClientQuotas", "0-1", flexible="1+", route=Route.ANY,
        notes="""
        KIP-546. v1: first flexible version.
        """,
        request="""
        components     []ComponentData
          entity_type  string
          match_type   int8
          match        string           null
        strict         bool
        """,
        response="""
        throttle_time_ms  int32
        error_code        int16
        error_message     string        null
        entries           []EntryData   null
          entity          []EntityData
            entity_type   string
            entity_name   string        null
          values          []ValueData
            key           string
            value         float64
        """,
    ),
    api(
        49, "AlterClientQuotas", "0-1", flexible="1+", route=Route.ANY,
        notes="""
        KIP-546. v1: first flexible version.
        """,
        request="""
        entries          []EntryData
          entity         []EntityData
            entity_type  string
            entity_name  string        null
          ops            []OpData
            key          string
            value        float64
            remove       bool
        validate_only    bool
        """,
        response="""
        throttle_time_ms  int32
        entries           []EntryData
          error_code      int16
          error_message   string        null
          entity          []EntityData
            entity_type   string
            entity_name   string        null
        """,
    ),
    api(
        50, "DescribeUserScramCredentials", "0", flexible="0+", route=Route.ANY,
        notes="""
        KIP-554: the SCRAM mechanisms and iterations of users (never their keys). users null or empty: all.
        """,
        request="""
        users         []UserName  null
          name        string
        """,
        response="""
        throttle_time_ms    int32
        error_code          int16
        error_message       string                                 null
        results             []DescribeUserScramCredentialsResult
          user              string
          error_code        int16
          error_message     string                                 null
          credential_infos  []CredentialInfo
            mechanism       int8
            iterations      int32
        """,
    ),
    api(
        51, "AlterUserScramCredentials", "0", flexible="0+", route=Route.ANY,
        notes="""
        KIP-554: delete or upsert SCRAM credentials; the client sends the salt and salted password, the
        broker derives the stored and server keys. mechanism 1 SCRAM-SHA-256, 2 SCRAM-SHA-512.
        """,
        request="""
        deletions          []ScramCredentialDeletion
          name             string
          mechanism        int8
        upsertions         []ScramCredentialUpsertion
          name             string
          mechanism        int8
          iterations       int32
          salt             bytes
          salted_password  bytes
        """,
        response="""
        throttle_time_ms  int32
        results           []AlterUserScramCredentialsResult
          user            string
          error_code      int16
          error_message   string                            null
        """,
    ),
    api(
        60, "DescribeCluster", "0-1", flexible="0+", route=Route.ANY,
        notes="""
        KIP-700: brokers, controller and cluster authorized operations (moved out of Metadata).
        v1: endpoint_type, to describe controllers (KIP-919).
        """,
        request="""
        include_cluster_authorized_operations  bool
        endpoint_type                          int8  v1+  default=1
        """,
        response="""
        throttle_time_ms               int32
        error_code                     int16
        error_message                  string                   null  default=null
        endpoint_type                  int8                     v1+  default=1
        cluster_id                     string
        controller_id                  int32                    default=-1
        brokers                        []DescribeClusterBroker
          broker_id                    int32
          host                         string
          port                         int32
          rack                         string                   null  default=null
        cluster_authorized_operations  int32                    default=-2147483648
        """,
    ),
)
