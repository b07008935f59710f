"""``--command-config FILE`` (issue 15, item A): Java ``.properties`` files read as
``java.util.Properties.load`` reads them, and their settings in the client config of every
command's clients, the pipeline's included, with the command line winning."""

from __future__ import annotations

import pytest

from kproto.cli.main import main
from kproto.cli.properties import loads, read_properties
from kproto.config import ClientConfig
from kproto.errors import ConfigError

# -- the file format: the rules of Properties.load(Reader)'s documentation ---------------------


def test_the_separators_of_properties_load():
    """issue 15, A: key and value split at the first =, : or whitespace, as Java's examples."""
    text = "Truth = Beauty\n  Truth2:Beauty\nTruth3                    :Beauty\nTruth4 Beauty\nTruth5\t= :x\n"
    assert loads(text) == {"Truth": "Beauty", "Truth2": "Beauty", "Truth3": "Beauty", "Truth4": "Beauty",
                           "Truth5": ":x"}


def test_a_key_alone_has_an_empty_value():
    """issue 15, A: ``cheeses`` alone is the key cheeses with the value "" (Java's example)."""
    assert loads("cheeses\nempty=\n") == {"cheeses": "", "empty": ""}


def test_line_continuations():
    """issue 15, A: an odd number of trailing backslashes continues the line, the next
    line's leading whitespace dropped; an even number is escaped backslashes."""
    text = ("fruits                           apple, banana, pear, \\\n"
            "                                 cantaloupe, watermelon, \\\n"
            "                                 kiwi, mango\n"
            "even=a\\\\\n"
            "odd=a\\\\\\\n  b\n"
            "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n"
            "    username=\"alice\" \\\n    password=\"s3cret\";\n"
            "last=end\\")
    assert loads(text) == {
        "fruits": "apple, banana, pear, cantaloupe, watermelon, kiwi, mango",
        "even": "a\\", "odd": "a\\b",
        "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                            'username="alice" password="s3cret";',
        "last": "end"}


def test_comments_and_blank_lines():
    """issue 15, A: # and ! start comments (after whitespace too); a comment does not
    continue, and a continued line starting with # is not a comment."""
    text = "# comment \\\nkey=v\n   ! another\n\n \t \nx=1 \\\n# not a comment\n"
    assert loads(text) == {"key": "v", "x": "1 # not a comment"}


def test_a_continuation_of_an_empty_line_may_be_a_comment():
    """issue 15, review item 9: Java's LineReader looks for # or ! while the logical line
    is empty: after a line that is only a backslash the next line is a comment (and a
    blank line ends the empty logical line); after text it is not."""
    assert loads("\\\n#notcomment=1\nkey=v\n") == {"key": "v"}
    assert loads("  \\\n  !also=comment\n\\\n\nx=1\n") == {"x": "1"}
    assert loads("a=\\\n#value\n") == {"a": "#value"}


def test_escapes():
    """issue 15, A: \\t \\n \\r \\f, \\uXXXX (surrogate pairs joined), and a backslash
    before any other character standing for that character, in keys and values."""
    text = ("key\\ with\\ spaces = v\n\\:\\=\\#k=\\=v\\:\ntabs=a\\tb\\nc\\rd\\fe\n"
            "unicode=caf\\u00e9 \\uD83D\\uDE00\nother=\\q\\\\\n")
    assert loads(text) == {"key with spaces": "v", ":=#k": "=v:", "tabs": "a\tb\nc\rd\fe",
                           "unicode": "café 😀", "other": "q\\"}


def test_trailing_whitespace_is_kept_and_last_key_wins():
    assert loads("a=1\na = 2  \n") == {"a": "2  "}


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_every_line_terminator(newline):
    assert loads(newline.join(["a=1", "b=2\\", "  3", "c=4"])) == {"a": "1", "b": "23", "c": "4"}


def test_a_malformed_unicode_escape(tmp_path):
    path = tmp_path / "bad.properties"
    path.write_text("ok=1\nbad=\\u12x4\n")
    with pytest.raises(ValueError, match=r"bad\.properties: Malformed \\uxxxx encoding"):
        read_properties(str(path))


def test_utf8_and_the_iso_8859_1_of_properties_load_inputstream(tmp_path):
    """issue 15, A: UTF-8, else ISO-8859-1 (what Java's Properties.load(InputStream) reads)."""
    path = tmp_path / "client.properties"
    path.write_bytes("client.id=café\n".encode())
    assert read_properties(str(path)) == {"client.id": "café"}
    path.write_bytes("client.id=café\n".encode("iso-8859-1"))
    assert read_properties(str(path)) == {"client.id": "café"}


# -- the settings in the commands' clients --------------------------------------------------


def _properties(tmp_path, text: str) -> str:
    path = tmp_path / "client.properties"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("command", [
    ("topics", "list"),
    ("groups", "list"),
    ("transactions", "list"),
    ("consume", "cc-topic", "--from-beginning", "--max-messages", "1"),
    ("produce", "cc-topic"),
], ids=" ".join)
def test_every_command_sends_the_files_client_id(cli, broker, tmp_path, command):
    """issue 15, A: a setting of --command-config reaches the clients of each command
    (the broker sees the file's client.id)."""
    assert cli("produce", "cc-topic", stdin=b"seed\n").code == 0
    path = _properties(tmp_path, "# the team's settings\nclient.id = from\\\n   -file\nrequest.timeout.ms: 5000\n")
    seen = broker.requests.control(client_id="from-file")
    try:
        result = cli(*command, "--command-config", path, stdin=b"one\n")
        assert result.code == 0, result.err
        assert seen.count > 0
    finally:
        seen.remove()


def test_the_command_line_wins_over_the_file(cli, broker, tmp_path):
    """issue 15, A: --bootstrap-servers and --property win over the file's settings."""
    path = _properties(tmp_path, "bootstrap.servers=127.0.0.1:1\nclient.id=from-file\n")
    from_file = broker.requests.control(client_id="from-file")
    from_property = broker.requests.control(client_id="from-property")
    try:
        result = cli("topics", "list", "--command-config", path, "--property", "client.id=from-property")
        assert result.code == 0, result.err
        assert from_property.count > 0 and from_file.count == 0
    finally:
        from_file.remove()
        from_property.remove()


def test_the_files_bootstrap_servers_without_the_flag(cli, broker, tmp_path):
    path = _properties(tmp_path, f"bootstrap.servers={broker.bootstrap_servers}\n")
    result = cli("topics", "list", "--command-config", path, bootstrap=None)
    assert result.code == 0, result.err


def _config_error(client: str, settings: dict[str, str]) -> str | None:
    """What ClientConfig says of these settings (None: it takes them)."""
    try:
        ClientConfig(client, {"bootstrap.servers": "127.0.0.1:9092", **settings})
    except ConfigError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize(("command", "client"), [
    (("topics", "list"), "admin"),
    (("produce", "cc-topic"), "producer"),
    # consume checks the topic with an admin client before its consumer starts
    (("consume", "cc-topic", "--max-messages", "1", "--timeout-ms", "1000"), "admin"),
], ids=lambda v: " ".join(v) if isinstance(v, tuple) else v)
@pytest.mark.parametrize("text", ["linger.mss=5\n", "security.protocol=SASL_TLS\n"])
def test_a_setting_the_client_refuses_is_its_error(cli, tmp_path, command, client, text):
    """issue 15, A: a key no client takes, or a bad value, is ClientConfig's error, one line,
    exit code 1."""
    settings = loads(text)
    expected = _config_error(client, settings)
    assert expected is not None
    result = cli(*command, "--command-config", _properties(tmp_path, text))
    assert (result.code, result.err) == (1, f"kproto: error: ConfigError: {expected}\n")


def test_security_protocol_from_the_file_reaches_clientconfig(cli, tmp_path):
    """issue 15, A: ``security.protocol=SSL`` in the file is what ClientConfig decides on:
    today its "only PLAINTEXT" error, word for word. (Once SSL lands in kproto.config, the
    command tries TLS against this PLAINTEXT broker and fails: exit code 1 either way.)"""
    expected = _config_error("admin", {"security.protocol": "SSL"})
    result = cli("topics", "list", "--command-config", _properties(tmp_path, "security.protocol=SSL\n"))
    assert result.code == 1
    if expected is not None:
        assert "only PLAINTEXT" in expected
        assert result.err == f"kproto: error: ConfigError: {expected}\n"


def test_an_unreadable_file(cli, tmp_path):
    result = cli("topics", "list", "--command-config", str(tmp_path / "missing.properties"))
    assert result.code == 1 and "missing.properties" in result.err


def test_the_pipeline_checks_the_file_before_starting_anything(tmp_path, capsys):
    """issue 15, A: ``kproto pipeline --command-config`` gives the settings to the job's
    clients: a setting its clients refuse fails at once, before minibroker and Spark."""
    pytest.importorskip("pyspark")
    path = _properties(tmp_path, "client.id=pipeline\nsecurity.protocol=SASL_TLS\n")
    code = main(["pipeline", "--command-config", path, "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1
    assert err == f"kproto: error: ConfigError: {_config_error('admin', {'security.protocol': 'SASL_TLS'})}\n"
    assert not (tmp_path / "out").exists()


def test_the_pipeline_gives_each_client_the_keys_of_its_kind():
    """issue 15, A: one settings file serves the job's admin client, producer, and the Spark
    source and sink (as ``kafka.`` options); a key of one kind does not reach another."""
    from kproto.config import settings_of_kind
    from kproto.pipeline import _spark_options, check_client_config

    config = {"bootstrap.servers": "b:9092", "client.id": "job", "acks": "1", "fetch.min.bytes": 10,
              "default.api.timeout.ms": "5000"}
    check_client_config(config)
    assert settings_of_kind("admin", config) == {"bootstrap.servers": "b:9092", "client.id": "job",
                                                 "default.api.timeout.ms": "5000"}
    assert _spark_options("producer", config) == {"kafka.bootstrap.servers": "b:9092", "kafka.client.id": "job",
                                                  "kafka.acks": "1"}
    assert _spark_options("consumer", config) == {"kafka.bootstrap.servers": "b:9092", "kafka.client.id": "job",
                                                  "kafka.fetch.min.bytes": "10",
                                                  "kafka.default.api.timeout.ms": "5000"}
    with pytest.raises(ConfigError, match="unknown admin config 'linger.mss'"):
        check_client_config({"linger.mss": "1"})
    with pytest.raises(ConfigError, match="acks='2'"):  # a producer's value, checked though the admin goes first
        check_client_config({"acks": "2"})


@pytest.mark.parametrize(("setting", "message"), [
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
      "sasl.oauthbearer.token.provider": lambda: "token"},
     r"sasl.oauthbearer.token.provider=<function .*Spark options, which are strings, and a function cannot"),
    ({"security.protocol": "SSL", "ssl.enabled.protocols": ["TLSv1.2", "TLSv1.3"]},
     r"ssl.enabled.protocols=\['TLSv1.2', 'TLSv1.3'\].* a list cannot be one: give it as one comma-separated "
     r"string, 'TLSv1.2,TLSv1.3'"),
])
def test_the_pipeline_refuses_values_the_spark_options_cannot_carry(setting, message):
    """issue 15, review item 8: the Spark source and sink get their settings as strings:
    a callable token provider or a list is refused before anything starts, naming the key
    and why, not after every event was produced."""
    from kproto.pipeline import check_client_config

    with pytest.raises(ConfigError, match=message):
        check_client_config({"bootstrap.servers": "b:9092", **setting})
    check_client_config({"bootstrap.servers": "b:9092", "fetch.min.bytes": 10, "enable.idempotence": True,
                         "ssl.enabled.protocols": "TLSv1.2,TLSv1.3"})
