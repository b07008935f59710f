"""Test certificates: a private CA and the server and client certificates it signs.

Made with ``cryptography`` (the ``test`` extra), in PEM files under a directory, as
Kafka's KIP-651 PEM settings and librdkafka's ``ssl.*.location`` settings read them.
EC P-256 keys, so that making a handful costs milliseconds, not RSA's seconds.

::

    ca = CertificateAuthority.create(tmp_path / "pki", "kproto test CA")
    server = ca.issue("localhost", hosts=("localhost", "127.0.0.1"))
    client = ca.issue("alice", client=True)
    server.cert_path, server.key_path, ca.cert_path   # PEM files

A leaf's ``not_before``/``not_after`` may be set in the past to make an expired
certificate; ``key_password`` writes the key encrypted (PKCS#8, as Kafka's
``ssl.key.password`` expects).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["CertificateAuthority", "Issued"]


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kproto tests"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey, password: str | None = None) -> None:
    encryption = (serialization.BestAvailableEncryption(password.encode()) if password
                  else serialization.NoEncryption())
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption))


@dataclass(frozen=True)
class Issued:
    """A certificate and its key, in PEM files (and as PEM text)."""

    common_name: str
    cert_path: Path
    key_path: Path
    key_password: str | None

    @property
    def cert_pem(self) -> str:
        return self.cert_path.read_text()

    @property
    def key_pem(self) -> str:
        return self.key_path.read_text()

    @property
    def subject(self) -> str:
        """The subject as Kafka's default principal builder shows it (RFC 2253,
        ``X500Principal.getName()``): ``CN=alice,O=kproto tests``."""
        cert = x509.load_pem_x509_certificate(self.cert_path.read_bytes())
        return cert.subject.rfc4514_string()


@dataclass(frozen=True)
class CertificateAuthority:
    """A self-signed CA whose certificate is at :attr:`cert_path`."""

    directory: Path
    cert_path: Path
    _key: ec.EllipticCurvePrivateKey
    _cert: x509.Certificate

    @classmethod
    def create(cls, directory: str | Path, common_name: str = "kproto test CA") -> CertificateAuthority:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        key = ec.generate_private_key(ec.SECP256R1())
        now = _now()
        cert = (x509.CertificateBuilder()
                .subject_name(_name(common_name)).issuer_name(_name(common_name))
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - dt.timedelta(days=1)).not_valid_after(now + dt.timedelta(days=30))
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                             content_commitment=False, key_encipherment=False,
                                             data_encipherment=False, key_agreement=False,
                                             encipher_only=False, decipher_only=False), critical=True)
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                .sign(key, hashes.SHA256()))
        path = directory / f"{_slug(common_name)}.crt"
        path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return cls(directory, path, key, cert)

    def issue(self, common_name: str, *, hosts: tuple[str, ...] = (), client: bool = False,
              not_before: dt.datetime | None = None, not_after: dt.datetime | None = None,
              key_password: str | None = None, server_and_client: bool = False) -> Issued:
        """A certificate for ``common_name`` signed by this CA.

        Args:
            hosts: subjectAltName entries (DNS names, or IP addresses), for a server.
            client: for TLS client authentication (extended key usage clientAuth)
                rather than a server (serverAuth).
            not_before, not_after: the validity (default: from yesterday for 30 days).
            key_password: encrypt the key file with it.
            server_and_client: for both (a broker's, which its inter-broker connections
                present as their client certificate).
        """
        key = ec.generate_private_key(ec.SECP256R1())
        now = _now()
        builder = (x509.CertificateBuilder()
                   .subject_name(_name(common_name)).issuer_name(self._cert.subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(not_before or now - dt.timedelta(days=1))
                   .not_valid_after(not_after or now + dt.timedelta(days=30))
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage(
                       [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH] if server_and_client
                       else [ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH]),
                       critical=False)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()),
                                  critical=False))
        if hosts:
            names: list[x509.GeneralName] = []
            for host in hosts:
                try:
                    names.append(x509.IPAddress(ipaddress.ip_address(host)))
                except ValueError:
                    names.append(x509.DNSName(host))
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        # names, not suffixes: a common name may hold dots ("a.example"), which with_suffix would cut
        stem, n = _slug(common_name), 0
        while (self.directory / f"{stem}.crt").exists():  # several certificates for one name
            n += 1
            stem = f"{_slug(common_name)}-{n}"
        cert_path, key_path = self.directory / f"{stem}.crt", self.directory / f"{stem}.key"
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(key_path, key, key_password)
        return Issued(common_name, cert_path, key_path, key_password)


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
