"""Where a broker's client quotas (:class:`minibroker.quotas.ClientQuotas`) are kept.

A single broker with ``log.dirs`` keeps them in ``minibroker-client-quotas.json`` in the
first log directory, rewritten atomically (write, fsync, rename: :mod:`minibroker.storage`'s
helper) before a change counts, and read back on start; a damaged file stops the start
with :exc:`~minibroker.storage.CorruptStateFileError`, as the broker's other files do,
rather than drop every quota. Without ``log.dirs`` they are in memory only. A broker of a
MiniCluster keeps no file: its quotas are its metadata image's, which the controller's
ClientQuotaRecords change (the metadata log keeps them, as KRaft's does).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from minibroker.config import BrokerConfig
from minibroker.quotas import ClientQuotas, Entity, entity_of
from minibroker.storage import _load_json, _parsing, _write_atomically

__all__ = ["QUOTAS_FILE", "open_client_quotas"]

QUOTAS_FILE = "minibroker-client-quotas.json"

_REFUSAL = ("the broker does not start rather than forget client quotas; restore the file, or remove it "
            "to start without quotas")


def _load(path: Path) -> dict[Entity, dict[str, float]]:
    data = _load_json(path, _REFUSAL)
    with _parsing(path, _REFUSAL):
        return {entity_of((t, n) for t, n in item["entity"]): {str(k): float(v) for k, v in item["quotas"].items()}
                for item in data["entities"]}


def _save(path: Path, entities: Mapping[Entity, dict[str, float]]) -> None:
    data = {"version": 1, "entities": [{"entity": [list(pair) for pair in entity], "quotas": quotas}
                                       for entity, quotas in sorted(entities.items(), key=lambda item: repr(item[0]))]}
    _write_atomically(path, json.dumps(data, indent=1))


def open_client_quotas(config: BrokerConfig, log_dirs: list[Path], cluster: Any = None) -> ClientQuotas:
    """A broker's client quotas: its metadata image's in a cluster (``cluster``, its
    :class:`~minibroker.cluster.api.ClusterContext`), else those of its first log directory
    (none without one).

    Raises:
        CorruptStateFileError: the quotas file cannot be read.
        ValueError: ``quota.window.num`` or ``quota.window.size.seconds`` below 1.
    """
    window = config["quota.window.num"], config["quota.window.size.seconds"]
    if cluster is not None:
        return ClientQuotas(*window, entities=cluster.image.client_quotas)
    if not log_dirs:
        return ClientQuotas(*window)
    path = Path(log_dirs[0]) / QUOTAS_FILE
    return ClientQuotas(*window, entities=_load(path) if path.exists() else None,
                        save=lambda entities: _save(path, entities))
