"""Coordinators: the state a broker keeps beyond its logs.

The classic group coordinator: :mod:`.groups` (the state machine, no I/O),
:mod:`.offsets` (committed offsets) and :mod:`.group_coordinator` (the asyncio driver
with the timers); :mod:`.producer_state` (idempotent producers' sequences and the
producer ids handed out); the transaction coordinator: :mod:`.transactions` (the state
machine, no I/O), :mod:`.txn_log` (the ``__transaction_state`` records) and
:mod:`.txn_coordinator` (the asyncio driver: the log, the markers, the timers).
"""

from minibroker.coordinator.group_coordinator import GroupCoordinator
from minibroker.coordinator.groups import (
    TRANSITIONS,
    Group,
    GroupConfig,
    GroupState,
    IllegalTransitionError,
    JoinResult,
    Member,
    MemberInfo,
    SyncResult,
)
from minibroker.coordinator.offsets import CommittedOffset, OffsetStore
from minibroker.coordinator.transactions import TransactionMetadata, TxnState
from minibroker.coordinator.txn_coordinator import TransactionCoordinator

__all__ = [
    "TRANSITIONS",
    "CommittedOffset",
    "Group",
    "GroupConfig",
    "GroupCoordinator",
    "GroupState",
    "IllegalTransitionError",
    "JoinResult",
    "Member",
    "MemberInfo",
    "OffsetStore",
    "SyncResult",
    "TransactionCoordinator",
    "TransactionMetadata",
    "TxnState",
]
