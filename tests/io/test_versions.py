"""The versions kproto's clients send (kproto.io.versions): the schema table's, narrowed
once with reasons, and what Connection.version_for picks with them (issue 12, "version
caps read from the table instead of literals")."""

import asyncio

import pytest

from kproto.errors import UnsupportedVersionError
from kproto.io import Connection
from kproto.io.versions import CLIENT_VERSIONS, client_versions
from kproto.protocol import APIS, ApiKey
from minibroker import MiniBroker


@pytest.fixture(scope="module")
def broker():
    with MiniBroker() as b:
        yield b


def test_every_narrowing_is_inside_the_table_and_narrows_it():
    for key in CLIENT_VERSIONS:
        ours = client_versions(key)
        assert ours, APIS[key].name  # never empty: the clients send something
        assert ours != APIS[key].versions, f"{APIS[key].name}: a narrowing that narrows nothing"


def test_apis_without_a_narrowing_use_the_tables_versions():
    assert client_versions(ApiKey.CREATE_TOPICS) == APIS[ApiKey.CREATE_TOPICS].versions
    assert client_versions(ApiKey.JOIN_GROUP) == APIS[ApiKey.JOIN_GROUP].versions


def test_version_for_picks_the_clients_highest_the_broker_offers(broker):
    """minibroker offers Fetch v4-17 and ListOffsets v1-10: the clients stop at v12
    (topic names) and v8; the table's top elsewhere."""
    async def main():
        conn = Connection("127.0.0.1", broker.port)
        await conn.open()
        try:
            assert conn.api_versions[ApiKey.FETCH][1] > 12
            assert conn.version_for(ApiKey.FETCH) == 12
            assert conn.version_for(ApiKey.LIST_OFFSETS) == 8
            assert conn.version_for(ApiKey.METADATA) == APIS[ApiKey.METADATA].versions.hi
            assert conn.version_for(ApiKey.FETCH, max_version=9) == 9  # a caller may narrow further
            with pytest.raises(UnsupportedVersionError):
                conn.version_for(ApiKey.FETCH, min_version=13)  # but not past the clients' range
        finally:
            await conn.close()

    asyncio.run(main())
