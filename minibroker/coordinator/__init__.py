"""Coordinators: the state a broker keeps beyond its logs.

For now the classic group coordinator: :mod:`.groups` (the state machine, no I/O),
:mod:`.offsets` (committed offsets) and :mod:`.group_coordinator` (the asyncio driver
with the timers); :mod:`.producer_state` (idempotent producers' sequences and the
producer ids handed out). The transaction coordinator comes later.
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
]
