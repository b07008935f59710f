"""The test certificates (tests/support/certs.py) the TLS tests are made with."""

import signal

from tests.support.certs import CertificateAuthority


def test_names_with_dots_get_their_own_files(tmp_path):
    """A certificate for "a.example" twice, then "a": three pairs of files (issue 15)."""
    signal.alarm(10)
    ca = CertificateAuthority.create(tmp_path)
    made = [ca.issue("a.example"), ca.issue("a.example"), ca.issue("a")]
    signal.alarm(0)
    assert len({m.cert_path for m in made}) == 3 and all(m.key_path.exists() for m in made)
