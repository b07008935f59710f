"""Long commands show a live progress line on stderr when it is a terminal, and only then.

Issue 11 item D: ``perf`` drew one, but producing a file, consuming ``--max-messages``,
dumping a big segment and resetting a group's offsets ran silent. Each command runs as a
real process with its stderr on a pseudo-terminal (pty), then with stderr piped.
"""

from __future__ import annotations

import os
import pty
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kproto import Consumer, Producer
from minibroker import MiniBroker
from tests.cli.helpers import ROOT, TIMEOUT, command, process_env

RECORDS = 5000


@pytest.fixture(scope="module")
def disk_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MiniBroker, Path]]:
    """A broker on disk with a topic of RECORDS records and a group that read them all."""
    data = tmp_path_factory.mktemp("data")
    with MiniBroker(data_dir=data) as broker:
        with Producer(bootstrap_servers=broker.bootstrap_servers, linger_ms=5) as producer:
            for i in range(RECORDS):
                producer.send("pg-topic", b"record %d" % i, partition=0)
        with Consumer(bootstrap_servers=broker.bootstrap_servers, group_id="pg-group",
                      auto_offset_reset="earliest") as consumer:
            consumer.subscribe(["pg-topic"])
            seen = 0
            while seen < RECORDS:
                seen += len(consumer.poll(1.0))
            consumer.commit()
        yield broker, data


def _run(args: list[str], *, stderr_tty: bool, stdout_tty: bool = False, cwd: Path = ROOT) -> tuple[int, str]:
    """Run ``python -m kproto ARGS``; return its exit code and what it wrote to stderr."""
    ptys: list[int] = []
    readers: list[threading.Thread] = []
    seen = bytearray()

    def terminal() -> int:
        parent, child = pty.openpty()
        ptys.append(child)
        sink = seen if not ptys[1:] else bytearray()  # stderr's pty is the first one opened

        def drain() -> None:  # keep reading so the child never blocks on a full pty
            while True:
                try:
                    data = os.read(parent, 65536)
                except OSError:  # EIO: every writer closed
                    break
                if not data:
                    break
                sink.extend(data)
            os.close(parent)

        readers.append(threading.Thread(target=drain))
        return child

    stderr = terminal() if stderr_tty else subprocess.PIPE
    stdout = terminal() if stdout_tty else subprocess.DEVNULL
    with subprocess.Popen(command(*args), stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, cwd=cwd,
                          env={**process_env(), "COLUMNS": "120"}) as process:
        for child in ptys:
            os.close(child)  # the child holds its copies
        for reader in readers:
            reader.start()
        piped = process.stderr.read() if process.stderr is not None else b""
        code = process.wait(timeout=TIMEOUT)
    for reader in readers:
        reader.join(TIMEOUT)
    return code, (bytes(seen) + piped).decode(errors="replace")


def _commands(broker: MiniBroker, data: Path, tmp_path: Path) -> dict[str, list[str]]:
    lines = tmp_path / "lines.txt"
    lines.write_bytes(b"".join(b"line %d\n" % i for i in range(RECORDS)))
    segment = next((data / "pg-topic-0").glob("*.log"))
    bootstrap = ["--bootstrap-servers", broker.bootstrap_servers]
    return {
        "produce": [*bootstrap, "produce", "pg-lines", "--file", str(lines)],
        "consume": [*bootstrap, "consume", "pg-topic", "--from-beginning", "--max-messages", str(RECORDS)],
        "dump-log": ["dump-log", str(segment)],
        "reset-offsets": [*bootstrap, "groups", "reset-offsets", "pg-group", "--topic", "pg-topic",
                          "--to-earliest"],
    }


# What each command's line says (tqdm's or the plain one): its label.
LABELS = {"produce": "sent", "consume": "consumed", "dump-log": "dumped", "reset-offsets": "reset-offsets"}


@pytest.mark.parametrize("name", sorted(LABELS))
def test_progress_shows_on_a_terminal_and_not_in_a_pipe(name, disk_broker, tmp_path):
    """Issue 11 item D: each long command draws its line on a tty, never into a pipe."""
    commands = _commands(*disk_broker, tmp_path)
    code, on_tty = _run(commands[name], stderr_tty=True)
    assert code == 0, on_tty
    assert f"\r{LABELS[name]}:" in on_tty or f"{LABELS[name]}:" in on_tty.split("\r", 1)[-1], on_tty
    code, piped = _run(commands[name], stderr_tty=False)
    assert code == 0, piped
    assert "\r" not in piped and f"{LABELS[name]}:" not in piped


def test_streaming_commands_draw_no_line_between_their_results_on_a_terminal(disk_broker, tmp_path):
    """consume and dump-log print as they go: with stdout on the terminal too, no line."""
    commands = _commands(*disk_broker, tmp_path)
    for name in ("consume", "dump-log"):
        code, err = _run(commands[name], stderr_tty=True, stdout_tty=True)
        assert code == 0, err
        assert f"{LABELS[name]}:" not in err, err
