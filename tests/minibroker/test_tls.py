"""TLS listeners' settings and principals (minibroker/tls.py; issue 15, item 2)."""

from __future__ import annotations

import socket
import ssl
import time

import pytest

from kproto.protocol import ApiKey
from minibroker import MiniBroker
from minibroker.handlers import HANDLERS
from minibroker.tls import PrincipalMapper, subject_dn


def test_subject_in_rfc_2253_form():
    cert = {"subject": ((("countryName", "FR"),), (("organizationName", "a, b"),),
                        (("commonName", "x"), ("userId", "7")), (("emailAddress", "x@y"),))}
    assert subject_dn(cert) == "1.2.840.113549.1.9.1=#1603784079,CN=x+UID=7,O=a\\, b,C=FR"
    assert subject_dn({"subject": ((("commonName", " #lead "),),)}) == "CN=\\ #lead\\ "


@pytest.mark.parametrize(("rules", "dn", "name"), [
    ("DEFAULT", "CN=alice,O=kproto tests", "CN=alice,O=kproto tests"),
    ("RULE:^CN=(.*?),O=(.*?)$/$1@$2/L, DEFAULT", "CN=Alice,O=Org", "alice@org"),
    ("RULE:^CN=(.*?),O=(.*?)$/$1/U", "CN=alice,O=x", "ALICE"),
    ("RULE:^OU=(.*)$/$1/,DEFAULT", "CN=bob", "CN=bob"),  # the first rule does not match: the next
    ("RULE:^CN=(.*)\\/(.*),O=x$/$2/", "CN=a/b,O=x", "b"),  # an escaped slash in a pattern
])
def test_principal_mapping_rules(rules, dn, name):
    """Issue 15, item 2: Kafka's SslPrincipalMapper (DEFAULT, RULE:pattern/replacement/[LU])."""
    assert PrincipalMapper(rules).name(dn) == name


def test_principal_mapping_without_a_matching_rule_and_a_bad_rule():
    with pytest.raises(ValueError, match="No rules apply to CN=x, rules RULE:\\^OU=.*"):
        PrincipalMapper("RULE:^OU=(.*)$/$1/").name("CN=x")
    with pytest.raises(ValueError, match="Invalid rule: nonsense"):
        PrincipalMapper("nonsense")


def _principal_seen(monkeypatch):
    seen = []
    low, high, handler = HANDLERS[ApiKey.API_VERSIONS]

    async def recording(state, ctx, request):
        seen.append(ctx.principal)
        return await handler(state, ctx, request)

    monkeypatch.setitem(HANDLERS, ApiKey.API_VERSIONS, (low, high, recording))
    return seen


def _api_versions_over_tls(port, context, host="localhost"):
    from kproto.protocol import encode_request
    from kproto.protocol.messages import ApiVersionsRequest

    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        with context.wrap_socket(sock, server_hostname=host) as tls:
            tls.sendall(encode_request(ApiKey.API_VERSIONS, 3, 1, "tls-test", ApiVersionsRequest()))
            return tls.recv(4)


def test_mapping_rules_give_the_mtls_principal_and_protocols_are_enforced(pki, monkeypatch):
    """Issue 15, item 2: ssl.principal.mapping.rules turns the client certificate's subject
    into the principal; ssl.enabled.protocols=TLSv1.2 refuses a TLS 1.3-only client."""
    seen = _principal_seen(monkeypatch)
    config = {"listeners": "SSL://127.0.0.1:0", "ssl.keystore.certificate.chain": pki.server.cert_pem,
              "ssl.keystore.key": pki.server.key_pem, "ssl.truststore.certificates": pki.ca.cert_path.read_text(),
              "ssl.client.auth": "required", "ssl.principal.mapping.rules": "RULE:^CN=(.*?),O=.*$/$1/U",
              "ssl.enabled.protocols": "TLSv1.2", "ssl.protocol": "TLS"}
    with MiniBroker(config=config) as broker:
        context = ssl.create_default_context(cafile=str(pki.ca.cert_path))
        context.load_cert_chain(str(pki.client.cert_path), str(pki.client.key_path))
        assert len(_api_versions_over_tls(broker.port, context)) == 4
        assert seen == ["User:CLIENT"]
        context.minimum_version = ssl.TLSVersion.TLSv1_3
        with pytest.raises(ssl.SSLError):
            _api_versions_over_tls(broker.port, context)


def test_an_encrypted_key_needs_its_password(pki, tmp_path):
    issued = pki.ca.issue("localhost", hosts=("localhost",), key_password="s3cret")
    keystore = tmp_path / "keystore.pem"
    keystore.write_text(issued.key_pem + issued.cert_pem)
    config = {"listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": str(keystore)}
    with pytest.raises(ValueError, match="listener SSL: cannot load the key and certificate from"):
        MiniBroker(config=config)
    MiniBroker(config={**config, "ssl.key.password": "s3cret"})  # made, not started: nothing to stop


@pytest.mark.parametrize(("settings", "message"), [
    ({"ssl.keystore.type": "JKS"}, "ssl.keystore.type=JKS is not supported; minibroker reads PEM"),
    ({"ssl.enabled.protocols": "TLSv1.1"}, "ssl.enabled.protocols TLSv1.1 is not supported"),
    ({"ssl.client.auth": "maybe"}, "ssl.client.auth must be none, requested or required"),
    ({"listener.name.ssl.ssl.protocol": "SSLv3"}, "ssl.protocol SSLv3 is not supported"),
])
def test_bad_tls_settings_name_the_key_and_listener(pki, settings, message):
    config = {"listeners": "SSL://127.0.0.1:0", "ssl.keystore.certificate.chain": pki.server.cert_pem,
              "ssl.keystore.key": pki.server.key_pem, **settings}
    with pytest.raises(ValueError, match=f"listener SSL: {message}"):
        MiniBroker(config=config)


def test_describe_configs_hides_the_key_password(pki):
    """Issue 15, item 2: ssl.key.password and ssl.keystore.key are described as sensitive,
    without their values (Kafka's PASSWORD type)."""
    from kproto.protocol.messages import DescribeConfigsRequest
    from tests.support.raw_client import RawClient

    config = {"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", "ssl.keystore.certificate.chain": pki.server.cert_pem,
              "ssl.keystore.key": pki.server.key_pem, "ssl.key.password": "unused"}
    with MiniBroker(config=config) as broker:
        c = RawClient(broker.port)
        try:
            resource = DescribeConfigsRequest.DescribeConfigsResource(
                resource_type=4, resource_name="0", configuration_keys=["ssl.key.password", "ssl.keystore.key",
                                                                        "ssl.client.auth"])
            answer = c.request(ApiKey.DESCRIBE_CONFIGS, 4, DescribeConfigsRequest(resources=[resource],
                                                                                  include_synonyms=True))
        finally:
            c.close()
    described = {e.name: e for e in answer.results[0].configs}
    for name in ("ssl.key.password", "ssl.keystore.key"):
        assert (described[name].value, described[name].is_sensitive) == (None, True)
        assert all(s.value is None for s in described[name].synonyms)
    assert (described["ssl.client.auth"].value, described["ssl.client.auth"].is_sensitive) == ("none", False)


def test_sasl_ssl_takes_client_auth_only_with_its_listener_prefix(pki):
    """Issue 15, item 2 (KIP-684): ssl.client.auth=required binds SSL listeners; a SASL_SSL
    listener asks for client certificates only when its own listener.name. key says so."""
    config = {"listeners": "SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0,STRICT://127.0.0.1:0",
              "listener.security.protocol.map": "SSL:SSL,SASL_SSL:SASL_SSL,STRICT:SASL_SSL",
              "ssl.keystore.certificate.chain": pki.server.cert_pem, "ssl.keystore.key": pki.server.key_pem,
              "ssl.truststore.location": str(pki.ca.cert_path), "ssl.client.auth": "required",
              "listener.name.strict.ssl.client.auth": "required"}
    context = ssl.create_default_context(cafile=str(pki.ca.cert_path))  # no client certificate
    with MiniBroker(config=config) as broker:
        assert len(_api_versions_over_tls(broker._server.ports["SASL_SSL"], context)) == 4
        for name in ("SSL", "STRICT"):
            try:  # TLS 1.3: the client's handshake ends before the server refuses it
                answer = _api_versions_over_tls(broker._server.ports[name], context)
            except (ssl.SSLError, ConnectionError):
                answer = b""
            assert answer == b"", name


def test_stopping_with_a_tls_handshake_under_way(pki):
    """Issue 15, item 2: a client that connects to an SSL listener and sends nothing holds
    a TLS handshake open; stopping the broker cancels it and returns."""
    import threading

    config = {"listeners": "SSL://127.0.0.1:0", "ssl.keystore.certificate.chain": pki.server.cert_pem,
              "ssl.keystore.key": pki.server.key_pem}
    broker = MiniBroker(config=config).start()
    silent = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
    try:
        time.sleep(0.2)  # the connection reaches its handshake
        stopper = threading.Thread(target=broker.stop, daemon=True)
        stopper.start()
        stopper.join(10)
        assert not stopper.is_alive(), "stop() hung on the connection in its TLS handshake"
    finally:
        silent.close()
