"""The admin client's client quota calls (issue 15, client quotas, items 5 and 6):
alter_client_quotas and describe_client_quotas with Java's shapes, sync and asyncio, against
minibroker; kafka-python's own codec of DescribeClientQuotas and AlterClientQuotas
(generated from Kafka's message JSON) is the oracle for what goes over the wire both ways.
"""

import asyncio

import pytest

from kproto.admin import (
    AdminClient,
    AIOAdminClient,
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ClientQuotaFilter,
    ClientQuotaFilterComponent,
)
from kproto.errors import InvalidRequestError, UnsupportedVersionError
from minibroker import MiniBroker

Op = ClientQuotaAlteration.Op
USER, CLIENT_ID = ClientQuotaEntity.USER, ClientQuotaEntity.CLIENT_ID
ALICE = ClientQuotaEntity({USER: "alice"})
ALICE_APP = ClientQuotaEntity({USER: "alice", CLIENT_ID: "app"})
DEFAULT_CLIENT = ClientQuotaEntity({CLIENT_ID: None})
ALICE_ANY_CLIENT = ClientQuotaEntity({CLIENT_ID: None, USER: "alice"})


@pytest.fixture(scope="module")
def broker():
    with MiniBroker() as b:
        yield b


@pytest.fixture
def admin(broker):
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as client:
        yield client
        everything = client.describe_client_quotas()
        if everything:  # leave the module's broker without quotas
            client.alter_client_quotas([ClientQuotaAlteration(e, [Op(k, None) for k in q]) for e, q in everything.items()])


def test_entities_compare_by_their_entries():
    """Issue 15, client quotas item 5: Java's ClientQuotaEntity is a map; order does not count."""
    assert ClientQuotaEntity({USER: "a", CLIENT_ID: None}) == ClientQuotaEntity({CLIENT_ID: None, USER: "a"})
    assert len({ALICE_ANY_CLIENT, ClientQuotaEntity({USER: "alice", CLIENT_ID: None})}) == 1
    assert ALICE_ANY_CLIENT.entries == {USER: "alice", CLIENT_ID: None}
    with pytest.raises(TypeError):
        ClientQuotaEntity({USER: 5})


def test_alter_then_describe_round_trip(admin):
    """Issue 15, client quotas item 5: set, describe with each kind of filter, remove."""
    assert admin.alter_client_quotas([
        ClientQuotaAlteration(ALICE, [Op("producer_byte_rate", 1024), Op("request_percentage", 12.5)]),
        ClientQuotaAlteration(ALICE_APP, [Op("consumer_byte_rate", 2048)]),
        ClientQuotaAlteration(DEFAULT_CLIENT, [Op("producer_byte_rate", 4096)]),
        ClientQuotaAlteration(ALICE_ANY_CLIENT, [Op("producer_byte_rate", 512)]),
    ]) == {ALICE: None, ALICE_APP: None, DEFAULT_CLIENT: None, ALICE_ANY_CLIENT: None}
    assert admin.describe_client_quotas() == {
        ALICE: {"producer_byte_rate": 1024.0, "request_percentage": 12.5},
        ALICE_APP: {"consumer_byte_rate": 2048.0},
        DEFAULT_CLIENT: {"producer_byte_rate": 4096.0},
        ALICE_ANY_CLIENT: {"producer_byte_rate": 512.0},
    }
    of = ClientQuotaFilterComponent
    assert set(admin.describe_client_quotas(ClientQuotaFilter.contains([of.of_entity(USER, "alice")]))) == {
        ALICE, ALICE_APP, ALICE_ANY_CLIENT}
    assert set(admin.describe_client_quotas(ClientQuotaFilter.contains_only([of.of_entity(USER, "alice")]))) == {ALICE}
    assert set(admin.describe_client_quotas(ClientQuotaFilter.contains([of.of_default_entity(CLIENT_ID)]))) == {
        DEFAULT_CLIENT, ALICE_ANY_CLIENT}
    assert set(admin.describe_client_quotas(ClientQuotaFilter.contains_only([of.of_entity_type(CLIENT_ID)]))) == {
        DEFAULT_CLIENT}
    admin.alter_client_quotas([ClientQuotaAlteration(ALICE, [Op("request_percentage", None)])])
    assert admin.describe_client_quotas(ClientQuotaFilter.contains_only([of.of_entity(USER, "alice")])) == {
        ALICE: {"producer_byte_rate": 1024.0}}


def test_validate_only_changes_nothing(admin):
    """Issue 15, client quotas item 5."""
    assert admin.alter_client_quotas([ClientQuotaAlteration(ALICE, [Op("producer_byte_rate", 1)])],
                                     validate_only=True) == {ALICE: None}
    assert admin.describe_client_quotas() == {}


def test_a_refused_entity_raises_with_every_result(admin):
    """Issue 15, client quotas item 5: Kafka's text, the typed error, and the other
    entities' outcomes in ``.results`` (the valid one is set)."""
    with pytest.raises(InvalidRequestError, match="producer_byte_rate cannot be a fractional value") as caught:
        admin.alter_client_quotas([ClientQuotaAlteration(ALICE, [Op("producer_byte_rate", 10)]),
                                   ClientQuotaAlteration(ALICE_APP, [Op("producer_byte_rate", 1.5)])])
    assert caught.value.results[ALICE] is None
    assert isinstance(caught.value.results[ALICE_APP], InvalidRequestError)
    assert admin.describe_client_quotas() == {ALICE: {"producer_byte_rate": 10.0}}
    with pytest.raises(InvalidRequestError, match="Invalid configuration key nonsense"):
        admin.alter_client_quotas([ClientQuotaAlteration(ALICE, [Op("nonsense", 1)])])


def test_a_bad_filter_raises_the_brokers_error(admin):
    """Issue 15, client quotas item 5."""
    with pytest.raises(UnsupportedVersionError, match="Unsupported entity type group"):
        admin.describe_client_quotas(ClientQuotaFilter.contains([ClientQuotaFilterComponent.of_entity("group", "g")]))
    with pytest.raises(InvalidRequestError, match="cannot appear more than once"):
        admin.describe_client_quotas(ClientQuotaFilter.contains([ClientQuotaFilterComponent.of_entity(USER, "a"),
                                                                 ClientQuotaFilterComponent.of_entity_type(USER)]))


def test_the_asyncio_twin(broker):
    """Issue 15, client quotas item 5: AIOAdminClient has the same calls."""
    async def main():
        async with AIOAdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
            await admin.alter_client_quotas([ClientQuotaAlteration(ALICE, [Op("consumer_byte_rate", 300)])])
            found = await admin.describe_client_quotas(ClientQuotaFilter.all())
            await admin.alter_client_quotas([ClientQuotaAlteration(ALICE, [Op("consumer_byte_rate", None)])])
            return found, await admin.describe_client_quotas()

    assert asyncio.run(main()) == ({ALICE: {"consumer_byte_rate": 300.0}}, {})


# -- kafka-python's codec as the oracle ----------------------------------------------------

@pytest.fixture
def kafka_python(broker):
    pytest.importorskip("kafka")
    from kafka.admin import KafkaAdminClient

    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    yield lambda request: client._manager.run(client._manager.send, request)  # its own request path
    client.close()


def test_what_kproto_sets_kafka_python_reads(admin, kafka_python):
    """Issue 15, client quotas item 6: quotas set by kproto's admin, described through
    kafka-python's DescribeClientQuotas (its codec from Kafka's JSON), with a filter."""
    from kafka.protocol.admin import DescribeClientQuotasRequest as D

    admin.alter_client_quotas([ClientQuotaAlteration(ALICE_APP, [Op("producer_byte_rate", 777)]),
                               ClientQuotaAlteration(DEFAULT_CLIENT, [Op("request_percentage", 3.25)])])
    answer = kafka_python(D(components=[D.ComponentData(entity_type="client-id", match_type=2, match=None)], strict=False))
    assert answer.error_code == 0
    got = {frozenset((e.entity_type, e.entity_name) for e in entry.entity): {v.key: v.value for v in entry.values}
           for entry in answer.entries}
    assert got == {frozenset({("user", "alice"), ("client-id", "app")}): {"producer_byte_rate": 777.0},
                   frozenset({("client-id", None)}): {"request_percentage": 3.25}}
    bad = kafka_python(D(components=[D.ComponentData(entity_type="user", match_type=0, match=None)], strict=False))
    assert (bad.error_code, bad.error_message) == (42, "Request specified MATCH_TYPE_EXACT, but set match string to null.")


def test_what_kafka_python_sets_kproto_reads(admin, kafka_python):
    """Issue 15, client quotas item 6: AlterClientQuotas encoded by kafka-python (a set, a
    remove op, a refused entity), read back by kproto's admin."""
    from kafka.protocol.admin import AlterClientQuotasRequest as A

    def entry(entity, ops):
        return A.EntryData(entity=[A.EntryData.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                           ops=[A.EntryData.OpData(key=k, value=v, remove=r) for k, v, r in ops])

    answer = kafka_python(A(entries=[
        entry([("user", None)], [("producer_byte_rate", 5000.0, False), ("consumer_byte_rate", 6000.0, False)]),
        entry([("user", "bob"), ("client-id", None)], [("request_percentage", 1.5, False)]),
        entry([("user", "")], [("producer_byte_rate", 1.0, False)]),
    ], validate_only=False))
    assert [(e.error_code, e.error_message) for e in answer.entries] == [(0, None), (0, None), (42, "Empty user not supported")]
    kafka_python(A(entries=[entry([("user", None)], [("consumer_byte_rate", 0.0, True)])], validate_only=False))
    assert admin.describe_client_quotas() == {
        ClientQuotaEntity({USER: None}): {"producer_byte_rate": 5000.0},
        ClientQuotaEntity({USER: "bob", CLIENT_ID: None}): {"request_percentage": 1.5},
    }
