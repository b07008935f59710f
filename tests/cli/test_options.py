"""Where the CLI's client settings come from, and the properties files it reads."""

from __future__ import annotations

import argparse

import pytest

from kproto.cli.options import CLI_DEFAULTS, client_settings
from kproto.cli.properties import read_properties


def namespace(**kwargs) -> argparse.Namespace:
    values = {"bootstrap_servers": None, "command_config": None, "properties": []}
    values.update(kwargs)
    return argparse.Namespace(**values)


def test_properties_files(tmp_path):
    path = tmp_path / "client.properties"
    path.write_text("# comment\n! another comment\n\nbootstrap.servers=a:9092,b:9092\n"
                    "  client.id : spaced  \nsasl.jaas.config=x=y;z\nclient.id=last-wins\n")
    assert read_properties(str(path)) == {"bootstrap.servers": "a:9092,b:9092", "client.id": "last-wins",
                                          "sasl.jaas.config": "x=y;z"}


def test_precedence_defaults_file_properties_flags(tmp_path, monkeypatch):
    monkeypatch.delenv("KPROTO_BOOTSTRAP_SERVERS", raising=False)
    path = tmp_path / "client.properties"
    path.write_text("request.timeout.ms=2000\nlinger.ms=50\nacks=1\nclient.id=from-file\n")
    args = namespace(command_config=str(path), properties=[("linger.ms", "7"), ("client.id", "from-property")])
    producer = client_settings(args, "producer", {"acks": "0", "compression.type": None})
    assert producer == {"socket.connection.setup.timeout.ms": 5000, "max.block.ms": 10000, "delivery.timeout.ms": 30000,
                        "request.timeout.ms": "2000", "linger.ms": "7", "acks": "0",
                        "client.id": "from-property", "bootstrap.servers": "127.0.0.1:9092"}
    assert CLI_DEFAULTS["default.api.timeout.ms"] == 10000  # an admin and consumer setting, left out
    admin = client_settings(args, "admin")
    assert "linger.ms" not in admin and "acks" not in admin and "max.block.ms" not in admin  # producer settings
    assert admin["request.timeout.ms"] == "2000" and admin["default.api.timeout.ms"] == 10000


@pytest.mark.parametrize(("flag", "in_file", "env", "expected"), [
    ("flag:1", "file:1", "env:1", "flag:1"),
    (None, "file:1", "env:1", "file:1"),
    (None, None, "env:1", "env:1"),
    (None, None, None, "127.0.0.1:9092"),
])
def test_bootstrap_servers(tmp_path, monkeypatch, flag, in_file, env, expected):
    path = tmp_path / "client.properties"
    path.write_text(f"bootstrap.servers={in_file}\n" if in_file else "")
    if env:
        monkeypatch.setenv("KPROTO_BOOTSTRAP_SERVERS", env)
    else:
        monkeypatch.delenv("KPROTO_BOOTSTRAP_SERVERS", raising=False)
    args = namespace(bootstrap_servers=flag, command_config=str(path))
    assert client_settings(args, "consumer")["bootstrap.servers"] == expected


def test_unknown_keys_are_kept_for_the_client_to_refuse():
    assert client_settings(namespace(properties=[("linger.mss", "1")]), "admin")["linger.mss"] == "1"
