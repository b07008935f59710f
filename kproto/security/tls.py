"""TLS for kproto's clients: the :class:`ssl.SSLContext` a client's settings describe, and
words for a handshake that failed.

The one owner of the ``ssl.*`` settings (:mod:`kproto.config` parses each alone):
:func:`client_context` builds the context every client, the CLI and Spark get through
``ClientConfig`` -> :class:`~kproto.io.Cluster` -> :class:`~kproto.io.Connection`.
Kafka's names in PEM form (KIP-651) and librdkafka's spellings of the same things::

    trust (CA certificates)   ssl.truststore.location | ssl.truststore.certificates (inline)
                              | ssl.ca.location                   none: the system's CAs
    client (mutual TLS)       ssl.keystore.location (key and chain in one PEM file)
                              | ssl.keystore.certificate.chain + ssl.keystore.key (inline)
                              | ssl.certificate.location + ssl.key.location
                              ssl.key.password for an encrypted key, whichever spelling

Giving two spellings of one thing is a :class:`~kproto.errors.ConfigError`, as is a store
password with PEM (Java's ``DefaultSslEngineFactory``: only the key has one). Hostname
verification is on unless ``ssl.endpoint.identification.algorithm`` is empty (Java's
rule); the certificate chain is always verified. ``ssl.enabled.protocols`` bounds the TLS
versions, ``ssl.protocol`` TLSv1.2 caps them at TLSv1.2 (Java's ``SslConfigs`` doc).
``ssl.context`` (a ready :class:`ssl.SSLContext`) wins over all of them.

Security settings for a protocol that does not use them (``ssl.*`` with ``PLAINTEXT``) are
not errors: Java's clients ignore them too, and log them as unused (so does
:class:`~kproto.io.Cluster`).

A handshake that fails on the broker's certificate is a
:class:`~kproto.errors.SslAuthenticationError` whose text :func:`describe_failure` writes:
the check that failed (hostname mismatch, untrusted issuer, expired) and the certificate
(subject, issuer, names, notAfter). Java's ``SslAuthenticationException`` is not retriable.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from kproto.errors import ConfigError

__all__ = ["TLS_PROTOCOLS", "VERSIONS", "certificate_summary", "client_context", "describe_failure", "pem_files",
           "version_bounds"]

TLS_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})

#: The TLS versions Kafka's ``ssl.enabled.protocols``/``ssl.protocol`` may name (both sides).
VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_TRUST = ("ssl.truststore.location", "ssl.truststore.certificates", "ssl.ca.location")
_KEYSTORE_FILE = ("ssl.keystore.location",)
_KEYSTORE_INLINE = ("ssl.keystore.certificate.chain", "ssl.keystore.key")
_LIBRDKAFKA_KEY = ("ssl.certificate.location", "ssl.key.location")


def _given(config: Mapping[str, Any], names: tuple[str, ...]) -> list[str]:
    return [n for n in names if config.get(n) is not None]


def _check(config: Mapping[str, Any]) -> None:
    """The rules between ``ssl.*`` settings (each was parsed alone by kproto.config)."""
    trust = _given(config, _TRUST)
    if len(trust) > 1:
        raise ConfigError(f"{' and '.join(trust)} both say which CAs to trust: give one")
    kinds = [g for g in (_given(config, _KEYSTORE_FILE), _given(config, _KEYSTORE_INLINE),
                         _given(config, _LIBRDKAFKA_KEY)) if g]
    if len(kinds) > 1:
        raise ConfigError(f"{' and '.join(n for g in kinds for n in g)} both say which client certificate "
                          "to present: give one spelling")
    for pair in (_KEYSTORE_INLINE, _LIBRDKAFKA_KEY):
        given = _given(config, pair)
        if len(given) == 1:
            missing = next(n for n in pair if n not in given)
            raise ConfigError(f"{given[0]} needs {missing} too (the certificate and its private key)")
    # DefaultSslEngineFactory: a PEM store has no password, only its key
    if config.get("ssl.truststore.password") is not None:
        raise ConfigError("ssl.truststore.password cannot be specified for PEM format (kproto reads PEM only)")
    if config.get("ssl.keystore.password") is not None:
        raise ConfigError("ssl.keystore.password cannot be specified with PEM format, only key password may be "
                          "specified (ssl.key.password)")


def version_bounds(enabled: Iterable[str], protocol: str) -> tuple[ssl.TLSVersion, ssl.TLSVersion]:
    """``(minimum, maximum)`` TLS versions of ``ssl.enabled.protocols`` and ``ssl.protocol``
    (``TLS``: the newest enabled), as Java's ``SslFactory``: ``ssl.protocol=TLSv1.2`` never
    uses TLSv1.3.

    Raises:
        ValueError: a version that is not one of :data:`VERSIONS`, none enabled, or an
            ``ssl.protocol`` older than every enabled version.
    """
    enabled = list(enabled)
    if not enabled or any(v not in VERSIONS for v in enabled):
        raise ValueError(f"ssl.enabled.protocols {','.join(enabled) or '(empty)'} is not supported; "
                         f"use {' and/or '.join(VERSIONS)}")
    if protocol != "TLS" and protocol not in VERSIONS:
        raise ValueError(f"ssl.protocol {protocol} is not supported; use TLS, TLSv1.2 or TLSv1.3")
    versions = sorted(VERSIONS[v] for v in enabled)
    newest = versions[-1] if protocol == "TLS" else min(versions[-1], VERSIONS[protocol])
    if newest < versions[0]:
        raise ValueError(f"ssl.protocol={protocol} allows none of ssl.enabled.protocols={','.join(enabled)}")
    return versions[0], newest


@contextmanager
def pem_files(*texts: str) -> Iterator[list[str]]:
    """Inline PEM as files (``load_cert_chain`` reads files only), readable by us alone and
    removed at once."""
    with tempfile.TemporaryDirectory(prefix="kproto-tls-") as directory:
        paths = []
        for i, text in enumerate(texts):
            path = os.path.join(directory, f"{i}.pem")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(text)
            paths.append(path)
        yield paths


def _load_trust(context: ssl.SSLContext, config: Mapping[str, Any]) -> None:
    inline = config.get("ssl.truststore.certificates")
    name = next(iter(_given(config, _TRUST)), None)
    if name is None:
        context.load_default_certs()  # Java's JVM cacerts, librdkafka's system CAs
        return
    try:
        if inline is not None:
            context.load_verify_locations(cadata=inline)
        else:
            context.load_verify_locations(cafile=config[name])
    except FileNotFoundError:
        raise ConfigError(f"{name}={config[name]!r}: no such file") from None
    except (ssl.SSLError, ValueError, OSError) as exc:
        shown = "the inline PEM" if inline is not None else repr(config[name])
        raise ConfigError(f"{name}: {shown} holds no PEM certificate that can be read ({exc})") from None


class _NoPassword(Exception):
    pass


def _no_password() -> str:
    # Without a password callback OpenSSL would prompt on the terminal for an encrypted key
    raise _NoPassword


def _load_client_certificate(context: ssl.SSLContext, config: Mapping[str, Any]) -> None:
    password = config.get("ssl.key.password")
    names: tuple[str, ...]
    files: tuple[str, str | None] | None
    if config.get("ssl.keystore.location") is not None:
        names, files = _KEYSTORE_FILE, (config["ssl.keystore.location"], None)
    elif config.get("ssl.certificate.location") is not None:
        names, files = _LIBRDKAFKA_KEY, (config["ssl.certificate.location"], config["ssl.key.location"])
    elif config.get("ssl.keystore.certificate.chain") is not None:
        names, files = _KEYSTORE_INLINE, None
    else:
        return
    what = " / ".join(names)
    secret = password if password is not None else _no_password
    try:
        if files is None:
            with pem_files(config["ssl.keystore.certificate.chain"], config["ssl.keystore.key"]) as (cert, key):
                context.load_cert_chain(cert, key, secret)
        else:
            context.load_cert_chain(files[0], files[1], secret)
    except _NoPassword:
        raise ConfigError(f"{what}: the private key is encrypted: set ssl.key.password") from None
    except FileNotFoundError as exc:
        raise ConfigError(f"{what}: no such file {exc.filename or ''}".rstrip()) from None
    except (ssl.SSLError, ValueError, OSError) as exc:
        reason = getattr(exc, "reason", None)
        if reason == "KEY_VALUES_MISMATCH":
            hint = "the private key is not the certificate's"
        elif password is not None and reason in (None, "PEM_LIB", "BAD_DECRYPT"):
            hint = "is ssl.key.password right?"
        else:
            hint = "is it a PEM certificate chain and private key?"
        raise ConfigError(f"{what}: cannot load the client certificate and key ({reason or exc}): {hint}") from None


def client_context(config: Mapping[str, Any]) -> ssl.SSLContext | None:
    """The context for a client's TLS connections, or None when ``security.protocol`` has
    no TLS (PLAINTEXT, SASL_PLAINTEXT).

    Raises:
        ConfigError: settings that contradict each other, a file that is missing or holds
            no PEM, a key that cannot be decrypted, or a key that is not the certificate's.
    """
    if config["security.protocol"] not in TLS_PROTOCOLS:
        return None
    given = config.get("ssl.context")
    if given is not None:
        return given  # the user's, as it is (its check_hostname too)
    _check(config)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # CERT_REQUIRED and check_hostname
    try:
        context.minimum_version, context.maximum_version = version_bounds(config["ssl.enabled.protocols"],
                                                                          config["ssl.protocol"])
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    # Java: an empty ssl.endpoint.identification.algorithm turns hostname verification off;
    # the chain is still verified
    context.check_hostname = config["ssl.endpoint.identification.algorithm"] == "https"
    _load_trust(context, config)
    _load_client_certificate(context, config)
    return context


def _name(rdns: Any) -> str:
    """A subject or issuer of ``getpeercert()``'s dict as ``CN=...,O=...``."""
    return ",".join(f"{_SHORT.get(k, k)}={v}" for rdn in reversed(rdns or ()) for k, v in rdn)


_SHORT = {"commonName": "CN", "organizationName": "O", "organizationalUnitName": "OU", "countryName": "C",
          "localityName": "L", "stateOrProvinceName": "ST"}


def certificate_summary(der: bytes) -> dict[str, Any]:
    """Subject, issuer, names and validity of a DER certificate, as ``getpeercert()``
    shows a verified one (empty when it cannot be decoded)."""
    # The standard library decodes certificates only for a verified peer; for one that
    # failed verification, CPython's own decoder (what getpeercert() uses) is the one
    # at hand without a dependency. Without it the error still names the failed check.
    decode = getattr(getattr(ssl, "_ssl", None), "_test_decode_cert", None)
    if decode is None:
        return {}
    with pem_files(ssl.DER_cert_to_PEM_cert(der)) as (path,):
        try:
            return decode(path)
        except (ssl.SSLError, ValueError, OSError):
            return {}


def describe_failure(error: ssl.SSLCertVerificationError, host: str, port: int, der: bytes | None) -> str:
    """The text of a failed certificate verification: which check, and which certificate.

    ``der`` is the broker's certificate when it could be fetched (see
    :meth:`kproto.io.Connection.open`), else None.
    """
    message = error.verify_message or str(error)
    info = certificate_summary(der) if der else {}
    names = [v for _, v in info.get("subjectAltName", ())]
    subject, issuer = _name(info.get("subject")), _name(info.get("issuer"))
    about = f"certificate subject {subject!r} issued by {issuer!r}" if subject else "certificate"
    code = error.verify_code
    if "Hostname mismatch" in message or "IP address mismatch" in message:
        names_text = ", ".join(names) if names else "no subjectAltName"
        check = (f"hostname verification failed: the broker's {about} is for {names_text}, not {host!r} "
                 "(ssl.endpoint.identification.algorithm=https)")
    elif code in (10,):  # X509_V_ERR_CERT_HAS_EXPIRED
        after = info.get("notAfter")
        check = f"the broker's {about} has expired" + (f" (notAfter {after})" if after else "")
    elif code in (9,):  # X509_V_ERR_CERT_NOT_YET_VALID
        check = f"the broker's {about} is not valid yet (notBefore {info.get('notBefore', '?')})"
    elif code in (2, 18, 19, 20, 21):  # unknown issuer, self-signed, no local issuer, leaf unverifiable
        check = (f"the broker's {about} is not signed by a trusted CA ({message}): check ssl.truststore.* / "
                 "ssl.ca.location")
    else:
        check = f"the broker's {about} failed verification: {message}"
    return f"TLS handshake with {host}:{port} failed: {check}"
