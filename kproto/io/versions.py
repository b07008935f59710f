"""Which versions of each API kproto's clients send: the schema table's, narrowed where a
client does not handle a version yet, each narrowing with its reason.

The schema table (:data:`kproto.protocol.APIS`) says which versions kproto can encode
and decode; the broker (minibroker) answers all of those. A client also has to *use*
what a version adds: a Fetch v13 names topics by id, so a client that keeps topic names
cannot send it. Those limits are written here, once, instead of as ``max_version=``
literals at each call: :meth:`kproto.io.Connection.version_for` intersects the table's
range, this one and the broker's (ApiVersions).

A call may still narrow further where one request needs more than the API's minimum
(``ListOffsets`` with the max-timestamp lookup needs v7, KIP-734); it says why there.
"""

from __future__ import annotations

from kproto.protocol import APIS, ApiKey, Versions
from kproto.protocol.spec import MAX_VERSION

__all__ = ["CLIENT_VERSIONS", "TRANSACTION_V2_FIRST", "TV1_LAST_VERSIONS", "client_versions"]

#: ``{api_key: versions the clients send}``, only for APIs where that is less than the table's.
CLIENT_VERSIONS: dict[int, Versions] = {
    # v3: record batches (magic 2) only, and transactional ids (KIP-98); the producer and
    # the codec write nothing older. A transactional producer caps it at 11 unless it uses
    # transaction version 2 (TV1_LAST_VERSIONS).
    ApiKey.PRODUCE: Versions(3, MAX_VERSION),
    # v4: record batches, isolation_level, last_stable_offset and aborted_transactions
    # (KIP-98), which read_committed needs. v13+ name topics by id (KIP-516): the clients
    # fetch by name, so one request shape serves every broker.
    ApiKey.FETCH: Versions(4, 12),
    # v0's answer is a list of offsets (old_style_offsets), which the clients do not read.
    # v9 only adds the -5 lookup (KIP-1005) and v10 a timeout_ms for tiered-storage
    # lookups (KIP-1075), which the clients do not fill in.
    ApiKey.LIST_OFFSETS: Versions(1, 8),
    # v0: an empty topic list means every topic; from v1 null does, and empty means none.
    ApiKey.METADATA: Versions(1, MAX_VERSION),
    # v9+: KIP-848's member epochs, which the classic group protocol does not have.
    ApiKey.OFFSET_COMMIT: Versions(0, 8),
    # v4+ batches several transactions for broker-to-broker verification (KIP-890 part 1):
    # a client adds its own partitions in the v0-v3 form (Java's AddPartitionsToTxnRequest.Builder).
    ApiKey.ADD_PARTITIONS_TO_TXN: Versions(0, 3),
}

#: The last versions of the transaction protocol before KIP-890 part 2 (Java's
#: ``ProduceRequest`` and ``EndTxnRequest.LAST_STABLE_VERSION_BEFORE_TRANSACTION_V2``): a
#: transactional producer sends nothing newer unless the coordinator finalizes
#: ``transaction.version`` 2 (:data:`TRANSACTION_V2_FIRST` is then what it needs).
TV1_LAST_VERSIONS: dict[int, int] = {ApiKey.PRODUCE: 11, ApiKey.END_TXN: 4}
#: The first versions with transaction version 2's meaning: Produce v12 makes the leader
#: add the partition to the transaction, EndTxn v5 bumps the epoch and answers it.
TRANSACTION_V2_FIRST: dict[int, int] = {ApiKey.PRODUCE: 12, ApiKey.END_TXN: 5}


def client_versions(api_key: int) -> Versions:
    """The versions of ``api_key`` the clients send: the table's, narrowed as above."""
    ours = APIS[api_key].versions
    narrowed = CLIENT_VERSIONS.get(api_key)
    return ours if narrowed is None else ours & narrowed
