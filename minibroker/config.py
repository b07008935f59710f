"""Broker configuration: Kafka's broker config names, their defaults, and validation.

Only the keys minibroker implements are accepted; any other key is an error that names
the closest known key, so a typo never silently does nothing.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

__all__ = ["BrokerConfig", "DEFAULTS"]

# name -> (default, type, doc). Defaults are Kafka's unless said otherwise.
DEFAULTS: dict[str, tuple[Any, type, str]] = {
    "broker.id": (0, int, "This broker's node id."),
    "num.partitions": (1, int, "Partitions of an auto-created topic, or of a CreateTopics with -1."),
    "default.replication.factor": (1, int, "Replication factor used when a CreateTopics asks for -1."),
    "auto.create.topics.enable": (True, bool, "Create unknown topics asked for in Metadata."),
    "message.max.bytes": (1048588, int, "Largest record batch a Produce may append (MESSAGE_TOO_LARGE above)."),
    "socket.request.max.bytes": (104857600, int, "Largest request frame; a larger one closes the connection."),
    "cluster.id": ("minibroker-cluster", str, "Cluster id reported in Metadata (minibroker's own default)."),
}


def _coerce(name: str, value: Any, kind: type) -> Any:
    if kind is bool and isinstance(value, str):
        if value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise ValueError(f"{name} must be true or false, not {value!r}")
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {kind.__name__}, not {value!r}") from None


class BrokerConfig:
    """Validated broker settings; read them as ``config["num.partitions"]``."""

    def __init__(self, values: Mapping[str, Any] | None = None):
        self._values = {name: default for name, (default, _, _) in DEFAULTS.items()}
        for name, value in (values or {}).items():
            if name not in DEFAULTS:
                close = difflib.get_close_matches(name, list(DEFAULTS), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ValueError(f"unknown or not yet supported broker config {name!r}{hint}")
            self._values[name] = _coerce(name, value, DEFAULTS[name][1])

    def __getitem__(self, name: str) -> Any:
        return self._values[name]
