"""The layers only import downwards: one table says, for every module of kproto and
minibroker, which layers it may import (DESIGN, principle 1; STYLE, "The tree tells the
architecture"; issue 12, "so none of this grows back").

Each module belongs to the layer with the longest prefix matching its name. Every
``import`` and ``from ... import`` in it (at any depth, ``TYPE_CHECKING`` ones too, as a
cycle there is still a cycle in the design) is resolved to the module it names, and
that module's layer must be the module's own or one that its row allows. So kproto never
imports minibroker (minibroker's pytest plugin lives in minibroker), kproto's library
never imports ``kproto.cli`` (only the ``__main__`` entry points do), minibroker speaks to
kproto through the codec and the protocol only, and a new module must find its row here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.codec

ROOT = Path(__file__).resolve().parents[1]

# The kproto layers minibroker may use: the broker shares the codec, the schemas and SASL's
# mechanisms with the clients (DESIGN, principle 1), never the clients themselves.
_SHARED = ("kproto.base", "kproto.codec", "kproto.protocol", "kproto.security")
_CLIENTS = ("kproto.producer", "kproto.consumer", "kproto.admin")
_BELOW_CLIENTS = (*_SHARED, "kproto.config", "kproto.io", "kproto.observability")

# layer -> (the module name prefixes that make it, the other layers it may import)
LAYERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # kproto, bottom up
    "kproto.base": (("kproto.errors", "kproto.structs", "kproto._habits", "kproto._loop",
                     "kproto._streams", "kproto.serialization", "kproto.acl"), ()),
    # Kafka's byte formats: batches (the codec), compression, the log's files on disk, and
    # records in Arrow's form (kproto.arrow: the codec's columns wrapped, for consumer and Spark)
    "kproto.codec": (("kproto._codec", "kproto._codec_py", "kproto.codec", "kproto.records",
                      "kproto.compression", "kproto.log_files", "kproto.arrow"), ("kproto.base",)),
    "kproto.protocol": (("kproto.protocol",), ("kproto.base", "kproto.codec")),
    "kproto.config": (("kproto.config",), ("kproto.base", "kproto.codec")),
    # SASL's mechanisms without I/O, shared by the clients and minibroker's listeners
    "kproto.security": (("kproto.security",), ("kproto.base",)),
    # connections, cluster metadata, retries, and the requests the clients share
    "kproto.io": (("kproto.io", "kproto.group_offsets"), ("kproto.base", "kproto.codec", "kproto.protocol",
                                                          "kproto.config", "kproto.security")),
    # metrics and interceptors: what every client records into and calls (issue 16)
    "kproto.observability": (("kproto.metrics", "kproto.interceptors"), ("kproto.base",)),
    # the three clients stand side by side: none imports another
    "kproto.producer": (("kproto.producer",), _BELOW_CLIENTS),
    "kproto.consumer": (("kproto.consumer",), _BELOW_CLIENTS),
    "kproto.admin": (("kproto.admin",), _BELOW_CLIENTS),
    "kproto": (("kproto", "kproto.aio"), (*_BELOW_CLIENTS, *_CLIENTS)),  # the faces: kproto/__init__, aio
    "kproto.spark": (("kproto.spark",), (*_BELOW_CLIENTS, *_CLIENTS)),
    "kproto.pipeline": (("kproto.pipeline",), (*_BELOW_CLIENTS, *_CLIENTS, "kproto", "kproto.spark")),
    "kproto.cli": (("kproto.cli",), (*_BELOW_CLIENTS, *_CLIENTS, "kproto", "kproto.spark", "kproto.pipeline")),
    # `python -m kproto`, `python -m kproto.pipeline`: scripts that run the command line
    "kproto entry points": (("kproto.__main__", "kproto.pipeline.__main__"), ("kproto.cli",)),
    # minibroker, bottom up
    "minibroker.config": (("minibroker.config", "minibroker.topic_configs", "minibroker.authorizer",
                           "minibroker.faults", "minibroker.quotas", "minibroker.scram_users"), _SHARED),
    "minibroker.log": (("minibroker.log",), (*_SHARED, "minibroker.config")),
    # the cluster's metadata, the controller and a partition's replica state: no I/O but files
    "minibroker.cluster core": (("minibroker.cluster",), (*_SHARED, "minibroker.config", "minibroker.log")),
    # a follower's replication: a follower is a Kafka client of its leader (Fetch,
    # OffsetForLeaderEpoch, ListOffsets over kproto's Connection), so these two modules
    # relax "minibroker speaks to kproto through the codec and the protocol only" on purpose
    # (remote: a broker process's way to the controller, over kproto's Connection too;
    # txn_markers: a transaction coordinator's WriteTxnMarkers to another broker;
    # security: those connections' TLS/SASL, kproto's client settings from the broker's)
    "minibroker.cluster replication": (("minibroker.cluster.fetcher", "minibroker.cluster.replica_manager",
                                        "minibroker.cluster.remote", "minibroker.cluster.txn_markers",
                                        "minibroker.cluster.security"),
                                       (*_SHARED, "kproto.config", "kproto.io", "minibroker.config",
                                        "minibroker.log", "minibroker.cluster core")),
    "minibroker.coordinator": (("minibroker.coordinator",), (*_SHARED, "minibroker.config", "minibroker.log")),
    # the broker's files: topics, producer ids, dynamic configs, client quotas, SCRAM users, ACLs
    "minibroker.storage": (("minibroker.storage", "minibroker.quota_store", "minibroker.scram_credentials",
                            "minibroker.acl_store"), (*_SHARED, "minibroker.config", "minibroker.log")),
    "minibroker.state": (("minibroker.state",), (*_SHARED, "minibroker.config", "minibroker.log",
                                                 "minibroker.coordinator", "minibroker.storage",
                                                 "minibroker.cluster core")),
    "minibroker.handlers": (("minibroker.handlers",), (*_SHARED, "minibroker.config", "minibroker.log",
                                                       "minibroker.coordinator", "minibroker.state",
                                                       "minibroker.cluster core")),
    # a connection's listener, TLS and SASL (issue 15): over the handlers (the principal
    # they are given), under the server that drives them
    "minibroker.security": (("minibroker.listeners", "minibroker.tls", "minibroker.sasl"),
                            (*_SHARED, "minibroker.config", "minibroker.handlers")),
    "minibroker.server": (("minibroker.server",), (*_SHARED, "minibroker.config", "minibroker.log",
                                                   "minibroker.coordinator", "minibroker.state",
                                                   "minibroker.handlers", "minibroker.security",
                                                   "minibroker.cluster core")),
    # a MiniCluster's brokers and the cluster itself: top of minibroker, over the server and
    # the cluster's replication (fetcher, replica manager), and SASL (the controller endpoint's)
    "minibroker.cluster nodes": (("minibroker.cluster.node", "minibroker.cluster.minicluster",
                                  "minibroker.cluster.controller_server", "minibroker.cluster.process"),
                                 (*_SHARED, "minibroker.config", "minibroker.background", "minibroker.log",
                                  "minibroker.coordinator", "minibroker.storage", "minibroker.state", "minibroker.handlers",
                                  "minibroker.security", "minibroker.server", "minibroker.cluster core",
                                  "minibroker.cluster replication")),
    # the sync faces' loop thread (MiniBroker, MiniCluster): the standard library only
    "minibroker.background": (("minibroker.background",), ()),
    # MiniBroker, `python -m minibroker` and the pytest plugin for users' suites
    "minibroker": (("minibroker", "minibroker.broker", "minibroker.__main__", "minibroker.pytest_plugin"),
                   (*_SHARED, "minibroker.config", "minibroker.background", "minibroker.storage",
                    "minibroker.server", "minibroker.cluster nodes")),
}

# (module, imported module) pairs against the table, each with its reason.
EXCEPTIONS = {
    ("kproto.io.connection", "kproto"):
        "kproto.__version__, the client's software version in ApiVersions (KIP-511), read at "
        "call time; kproto/__init__ sets it before importing anything, and it has no other home",
    ("minibroker.cluster", "minibroker.cluster.minicluster"):
        "the package's face exports MiniCluster, imported on first use (a module __getattr__), so "
        "importing the cluster's core modules does not import the broker",
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    parts = name.split(".")
    base = ROOT.joinpath(*parts)
    return base.with_suffix(".py").is_file() or base.with_suffix(".pyx").is_file() or base.is_dir()


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import of ``path``, ``from package import name`` resolved
    to the submodule when ``name`` is one."""
    if path.suffix == ".pyx":  # Python's import statements, without Cython's cimports
        lines = [line.strip() for line in path.read_text().splitlines()]
        source = "\n".join(line if line.startswith(("import ", "from ")) and " cimport " not in line else ""
                           for line in lines)
    else:
        source = path.read_text()
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.append((node.lineno, sub if is_module(sub) else base))
    return sorted(set(found))


def layer_of(name: str) -> str | None:
    """The layer of the longest prefix of ``name``; a top-level package (``kproto``,
    ``minibroker``) stands for its ``__init__`` only, so a new module needs its own row."""
    best, best_len = None, -1
    for layer, (prefixes, _) in LAYERS.items():
        for prefix in prefixes:
            below = "." in prefix and name.startswith(prefix + ".")
            if (name == prefix or below) and len(prefix) > best_len:
                best, best_len = layer, len(prefix)
    return best


SOURCES = sorted(p for top in ("kproto", "minibroker") for ext in ("*.py", "*.pyx") for p in (ROOT / top).rglob(ext))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_import_is_allowed_by_the_layer_table(path):
    name = module_name(path)
    layer = layer_of(name)
    assert layer is not None, f"{name} is in no layer of LAYERS: give it a row"
    allowed = {layer, *LAYERS[layer][1]}
    bad = []
    for line, imported in imported_modules(path):
        if imported.partition(".")[0] not in ("kproto", "minibroker") or (name, imported) in EXCEPTIONS:
            continue
        target = layer_of(imported)
        if target not in allowed:
            bad.append(f"{path.relative_to(ROOT)}:{line}: {name} ({layer}) imports {imported} ({target})")
    assert not bad, "imports the layer table does not allow:\n" + "\n".join(bad)


def test_the_table_names_only_layers_and_modules_that_exist():
    for layer, (prefixes, allowed) in LAYERS.items():
        assert set(allowed) <= set(LAYERS), layer
        for prefix in prefixes:
            assert is_module(prefix), prefix
    for name, imported in EXCEPTIONS:
        assert is_module(name) and is_module(imported), (name, imported)


def test_kproto_never_imports_minibroker_nor_its_library_the_cli():
    """The two rules of issue 12 and DESIGN principle 1, read off the table."""
    for layer, (_, allowed) in LAYERS.items():
        if layer.startswith("kproto"):
            assert not [a for a in allowed if a.startswith("minibroker")], layer
            if layer not in ("kproto.cli", "kproto entry points"):
                assert "kproto.cli" not in allowed, layer
