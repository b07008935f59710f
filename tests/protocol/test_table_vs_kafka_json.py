"""The schema table agrees with Apache Kafka's own message JSON, version by version.

For every API and every data message in the table and every version both cover, the
fields that exist in that version must match Kafka's in name (snake_case), type, order,
nullability, tag, default and ignorability, recursively; and valid and flexible versions
must match. Kafka's JSON lives outside the repository (``../shared/kafka-protocol/messages``,
or the directory ``KAFKA_MESSAGE_JSON_DIR`` names); without it the test skips, and a data
message whose JSON is not there (the ``__consumer_offsets`` records live in Kafka's
group-coordinator module, not with the clients' messages) skips alone. It is read here as
a test oracle only, never by kproto at runtime.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from kproto.protocol.messages import DATA, TABLE
from kproto.protocol.spec import DEFAULT_STRUCT, EMPTY_ARRAY, Data, Field, MessageSpec, Versions

JSON_DIR = Path(os.environ.get("KAFKA_MESSAGE_JSON_DIR") or
                Path(__file__).resolve().parents[2] / ".." / "shared" / "kafka-protocol" / "messages")

pytestmark = pytest.mark.skipif(not JSON_DIR.is_dir(), reason=f"Kafka's message JSON not found at {JSON_DIR}")

#: Versions the table carries although Kafka's JSON snapshot does not list them: old
#: ones Kafka 4.0 dropped (KIP-896) that old clients still send, or newer ones than the
#: snapshot (Produce v12 of Kafka 4.0, KIP-890 part 2).
EXTRA_VERSIONS: frozenset[tuple[str, int]] = frozenset({
    ("Produce", 12),  # Kafka 4.0: same as v11, KIP-890 part 2; the reference JSON stops at v11
})


def _load(name: str) -> dict[str, Any]:
    text = (JSON_DIR / f"{name}.json").read_text()
    return json.loads("\n".join(line for line in text.splitlines() if not line.strip().startswith("//")))


def _snake(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    return re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", s).lower()


def _versions(text: str | None) -> Versions:
    return Versions.parse(text) if text else Versions.parse("none")


def _json_default(f: dict[str, Any]) -> Any:
    typ, d = f["type"], f.get("default")
    d = None if d is None else str(d)
    if typ.startswith("[]"):
        return None if d == "null" else EMPTY_ARRAY
    if typ[0].isupper():
        return None if d == "null" else DEFAULT_STRUCT
    if d == "null":
        return None
    if typ in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        return int(d, 0) if d else 0
    if typ == "float64":
        return float(d) if d else 0.0
    if typ == "bool":
        return d is not None and d.lower() == "true"
    if typ == "string":
        return d or ""
    if typ == "bytes":
        return b""
    if typ == "records":
        return None
    if typ == "uuid":
        return uuid.UUID(int=0)
    raise AssertionError(typ)


def _json_view(fields: list[dict[str, Any]], version: int, common: dict[str, Any]) -> list[tuple]:
    out = []
    for f in fields:
        if version not in _versions(f["versions"]):
            continue
        assert f.get("flexibleVersions") is None, f"{f['name']}: per-field flexibleVersions is not modelled"
        children = f.get("fields")
        elem = f["type"].removeprefix("[]")
        if children is None and elem in common:
            children = common[elem]["fields"]
        tag = int(f["tag"]) if "tag" in f and version in _versions(f.get("taggedVersions")) else None
        out.append((
            _snake(f["name"]),
            f["type"],
            version in _versions(f.get("nullableVersions")),
            tag,
            _json_default(f),
            bool(f.get("ignorable", False)),
            _json_view(children, version, common) if children else [],
        ))
    return out


def _our_view(fields: tuple[Field, ...], version: int) -> list[tuple]:
    return [
        (f.name, f.type, version in f.nullable, f.tag, f.default, f.ignorable,
         _our_view(f.fields, version) if f.fields else [])
        for f in fields
        if version in f.versions
    ]


def _first_difference(ours: list[tuple], theirs: list[tuple], path: str) -> str:
    names = ("name", "type", "nullable", "tag", "default", "ignorable")
    for a, b in zip(ours, theirs, strict=False):  # lengths compared below
        for i, label in enumerate(names):
            if a[i] != b[i]:
                return f"{path}.{a[0]}: {label} {a[i]!r} (ours) != {b[i]!r} (Kafka)"
        if a[6] != b[6]:
            return _first_difference(a[6], b[6], f"{path}.{a[0]}")
    if len(ours) != len(theirs):
        return f"{path}: {len(ours)} fields (ours) != {len(theirs)} (Kafka): {[x[0] for x in ours]} vs {[x[0] for x in theirs]}"
    return "?"


def _check(msg: MessageSpec) -> None:
    data = _load(msg.name)
    if msg.is_data:
        assert data["type"] == "data" and "apiKey" not in data
    else:
        assert data["apiKey"] == msg.api_key
        assert data["type"] == ("request" if msg.is_request else "response")
    assert _versions(data["flexibleVersions"]) & msg.versions == msg.flexible & msg.versions
    json_versions = _versions(data["validVersions"])
    common = {c["name"]: c for c in data.get("commonStructs", [])}
    for version in msg.versions:
        if version not in json_versions:
            assert (msg.name.removesuffix("Request").removesuffix("Response"), version) in EXTRA_VERSIONS, (
                f"{msg.name} v{version} is not in Kafka's JSON and not listed in EXTRA_VERSIONS"
            )
            continue
        ours, theirs = _our_view(msg.fields, version), _json_view(data["fields"], version, common)
        assert ours == theirs, f"{msg.name} v{version}: {_first_difference(ours, theirs, msg.name)}"


@pytest.mark.parametrize("api", TABLE, ids=lambda a: a.name)
def test_table_matches_kafka_json(api: Any) -> None:
    assert _versions(_load(api.name + "Request")["validVersions"]) == api.versions or any(
        (api.name, v) in EXTRA_VERSIONS for v in api.versions
    ), f"{api.name}: valid versions differ from Kafka's"
    _check(api.request)
    _check(api.response)


# The reference set holds the clients' JSON files only: the consumer protocol's. The
# __consumer_offsets records are defined in Kafka's group-coordinator module, outside it;
# tests/protocol/test_data_messages.py writes their byte layouts out by hand instead.
_WITH_REFERENCE = ("ConsumerProtocolSubscription", "ConsumerProtocolAssignment")


@pytest.mark.parametrize("entry", [d for d in DATA if d.name in _WITH_REFERENCE], ids=lambda d: d.name)
def test_data_messages_match_kafka_json(entry: Data) -> None:
    """Issue 12: the data messages the reference set has (the consumer protocol) are Kafka's."""
    assert _versions(_load(entry.name)["validVersions"]) == entry.versions, f"{entry.name}: valid versions differ"
    _check(entry.message)


def test_table_covers_every_version_kafka_lists() -> None:
    """No version of a tabled API that Kafka's JSON lists is missing from the table."""
    for api in TABLE:
        json_versions = _versions(_load(api.name + "Request")["validVersions"])
        assert json_versions.lo >= api.versions.lo and json_versions.hi <= api.versions.hi, api.name
