"""Who may read and change client quotas (issue 15, review of the quotas): with the
authorizer on, DescribeClientQuotas needs DESCRIBE_CONFIGS and AlterClientQuotas
ALTER_CONFIGS on the cluster (Kafka's ``KafkaApis.handleDescribeClientQuotasRequest`` and
``ControllerApis.handleAlterClientQuotas``), else CLUSTER_AUTHORIZATION_FAILED, so a client
cannot lift its own quota."""

import pytest

from kproto.admin import (
    AccessControlEntry,
    AclBinding,
    AdminClient,
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ResourcePattern,
)
from kproto.errors import ClusterAuthorizationFailedError
from minibroker import MiniBroker
from minibroker.acl_store import AclStore
from minibroker.authorizer import AclBinding as BrokerAcl
from minibroker.authorizer import AclOperation, AclPermissionType, PatternType, ResourceType

ON = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
ANON = "User:ANONYMOUS"


def test_quotas_need_the_clusters_config_rights(tmp_path):
    AclStore([tmp_path]).save([BrokerAcl(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL, ANON, "*",
                                         AclOperation.ALTER, AclPermissionType.ALLOW)])  # may manage ACLs only
    entity = ClientQuotaEntity({"user": None})
    change = [ClientQuotaAlteration(entity, [ClientQuotaAlteration.Op("producer_byte_rate", 1.0)])]
    with MiniBroker(data_dir=tmp_path, config=ON) as broker, \
            AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        with pytest.raises(ClusterAuthorizationFailedError):
            admin.alter_client_quotas(change)
        with pytest.raises(ClusterAuthorizationFailedError):
            admin.describe_client_quotas()
        admin.create_acls([AclBinding(ResourcePattern("CLUSTER", "kafka-cluster"), AccessControlEntry(ANON, "*", op))
                           for op in ("ALTER_CONFIGS", "DESCRIBE_CONFIGS")])
        admin.alter_client_quotas(change)
        assert admin.describe_client_quotas() == {entity: {"producer_byte_rate": 1.0}}
