"""TLS for SSL and SASL_SSL listeners: the server's context from Kafka's ``ssl.*`` settings,
and the principal of a client certificate.

Settings (Kafka's ``SslConfigs`` / ``BrokerSecurityConfigs``), PEM only (KIP-651): the key
and certificate chain from ``ssl.keystore.location`` (one PEM file holding both) or inline
from ``ssl.keystore.certificate.chain`` and ``ssl.keystore.key``, the key decrypted with
``ssl.key.password``; trusted CAs from ``ssl.truststore.location`` or inline
``ssl.truststore.certificates`` (else the system's, as Java's default truststore);
``ssl.client.auth`` none / requested / required; ``ssl.enabled.protocols`` and
``ssl.protocol`` among TLSv1.2 and TLSv1.3. ``ssl.cipher.suites`` is not supported: Kafka
names suites as Java (IANA) does and Python's ``ssl`` takes OpenSSL's names.

Principal (Kafka's ``DefaultKafkaPrincipalBuilder`` on an SSL listener): ``User:`` and the
client certificate's subject as ``X500Principal.getName()`` writes it (RFC 2253: the most
specific attribute first, ``CN=alice,O=example``), passed through
``ssl.principal.mapping.rules`` (``SslPrincipalMapper``); ``User:ANONYMOUS`` without a
client certificate.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Callable
from typing import Any

from kproto.security import tls

__all__ = ["PrincipalMapper", "server_context", "subject_dn"]

_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


def server_context(get: Callable[[str], Any], listener: str) -> ssl.SSLContext:
    """The SSLContext of one listener.

    Args:
        get: the listener's value of an ``ssl.*`` key (per-listener overrides applied).
        listener: the listener name, for error messages.

    Raises:
        ValueError: a setting that is missing, unsupported, or whose files cannot be read
            (naming the key and the listener).
    """
    where = f"listener {listener}"
    for key in ("ssl.keystore.type", "ssl.truststore.type"):
        if str(get(key)).upper() != "PEM":
            raise ValueError(f"{where}: {key}={get(key)} is not supported; minibroker reads PEM (KIP-651)")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _protocols(context, get, where)
    _keystore(context, get, where)
    client_auth = str(get("ssl.client.auth")).lower()
    if client_auth not in _CLIENT_AUTH:
        raise ValueError(f"{where}: ssl.client.auth must be none, requested or required, not {client_auth!r}")
    context.verify_mode = _CLIENT_AUTH[client_auth]
    if client_auth != "none":
        _truststore(context, get, where)
    return context


def _protocols(context: ssl.SSLContext, get: Callable[[str], Any], where: str) -> None:
    enabled = [p.strip() for p in str(get("ssl.enabled.protocols")).split(",") if p.strip()]
    try:
        context.minimum_version, context.maximum_version = tls.version_bounds(enabled, str(get("ssl.protocol")))
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def _keystore(context: ssl.SSLContext, get: Callable[[str], Any], where: str) -> None:
    location, chain, key = get("ssl.keystore.location"), get("ssl.keystore.certificate.chain"), get("ssl.keystore.key")
    password = get("ssl.key.password") or None
    if location and (chain or key):
        raise ValueError(f"{where}: give ssl.keystore.location or ssl.keystore.certificate.chain with "
                         "ssl.keystore.key, not both")
    try:
        if location:
            context.load_cert_chain(location, password=password)
        elif chain and key:
            # load_cert_chain reads files only: the inline PEM goes through private files
            with tls.pem_files(chain, key) as (chain_path, key_path):
                context.load_cert_chain(chain_path, key_path, password=password)
        else:
            raise ValueError(f"{where}: an SSL listener needs its certificate and key: ssl.keystore.location, or "
                             "ssl.keystore.certificate.chain and ssl.keystore.key")
    except (OSError, ssl.SSLError) as exc:  # SSLError is an OSError; both say which check failed
        source = location or "ssl.keystore.certificate.chain/ssl.keystore.key"
        raise ValueError(f"{where}: cannot load the key and certificate from {source}: {exc}") from None


def _truststore(context: ssl.SSLContext, get: Callable[[str], Any], where: str) -> None:
    location, certificates = get("ssl.truststore.location"), get("ssl.truststore.certificates")
    try:
        if location:
            context.load_verify_locations(cafile=location)
        elif certificates:
            context.load_verify_locations(cadata=certificates)
        else:
            context.load_default_certs(ssl.Purpose.CLIENT_AUTH)  # Java's default truststore
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(f"{where}: cannot load the trusted certificates from "
                         f"{location or 'ssl.truststore.certificates'}: {exc}") from None


# X500Principal.getName(RFC2253) keywords; other attributes go as their OID
_KEYWORDS = {"commonName": "CN", "countryName": "C", "localityName": "L", "stateOrProvinceName": "ST",
             "organizationName": "O", "organizationalUnitName": "OU", "streetAddress": "STREET",
             "domainComponent": "DC", "userId": "UID"}
_EMAIL_OID = "1.2.840.113549.1.9.1"


def _escape(value: str) -> str:
    """An attribute value escaped as RFC 2253 section 2.4 asks."""
    out = re.sub(r'([,+"\\<>;])', r"\\\1", value)
    if out.startswith(("#", " ")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def subject_dn(cert: dict[str, Any]) -> str:
    """The subject of a certificate (:meth:`ssl.SSLSocket.getpeercert`'s dict) in RFC 2253
    form, as Java's ``X500Principal.getName()``: RDNs most specific first, multi-valued RDNs
    joined by ``+``, an emailAddress as its OID and the hex of its DER IA5String."""
    rdns = []
    for rdn in reversed(cert.get("subject", ())):
        parts = []
        for name, value in rdn:
            if name == "emailAddress":
                data = value.encode("ascii", "replace")
                parts.append(f"{_EMAIL_OID}=#16{len(data):02x}{data.hex()}")
            else:
                parts.append(f"{_KEYWORDS.get(name, name)}={_escape(value)}")
        rdns.append("+".join(parts))
    return ",".join(rdns)


# SslPrincipalMapper.RULE_PATTERN: DEFAULT, or RULE:pattern/replacement/[LU]
_RULE = re.compile(r"\s*(?:(?P<default>DEFAULT)|RULE:(?P<pattern>(?:\\.|[^\\/])*)/(?P<replacement>(?:\\.|[^\\/])*)"
                   r"/(?P<case>[LU]?)|(?P<bad>[^,]*?))\s*(?:,\s*|$)")


class PrincipalMapper:
    """``ssl.principal.mapping.rules`` (Kafka's ``SslPrincipalMapper``): each rule in order;
    the first that matches the whole subject gives the name.

    Raises:
        ValueError: a rule that is neither DEFAULT nor ``RULE:pattern/replacement/[LU]``.
    """

    def __init__(self, rules: str) -> None:
        self.rules: list[tuple[re.Pattern[str], str, str] | None] = []  # None: DEFAULT
        self._text = rules
        position = 0
        while position < len(rules):
            match = _RULE.match(rules, position)
            if match is None or match.end() == position:
                break
            position = match.end()
            if match["default"]:
                self.rules.append(None)
            elif match["pattern"] is not None:
                # Java's $1 in a replacement is Python's \g<1>
                replacement = re.sub(r"\$(\d+)", r"\\g<\1>", match["replacement"])
                self.rules.append((re.compile(match["pattern"]), replacement, match["case"]))
            elif match["bad"]:
                raise ValueError(f"ssl.principal.mapping.rules: Invalid rule: {match['bad']}")
        if not self.rules:
            self.rules.append(None)

    def name(self, distinguished_name: str) -> str:
        """The principal name of a subject.

        Raises:
            ValueError: no rule applies (Kafka's ``NoMatchingRule``).
        """
        for rule in self.rules:
            if rule is None:
                return distinguished_name
            pattern, replacement, case = rule
            if pattern.fullmatch(distinguished_name):
                result = pattern.sub(replacement, distinguished_name)
                return result.lower() if case == "L" else result.upper() if case == "U" else result
        raise ValueError(f"No rules apply to {distinguished_name}, rules {self._text}")
