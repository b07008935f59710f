"""Client quotas at the edges of Java's arithmetic (issue 15, review of the quotas): values
Kafka accepts and computes with doubles (NaN, infinities, a window of zero length) never
make minibroker fail a request, and error texts print a default entity as Java's maps do.

Kafka's ``ClientQuotaControlManager.validateQuotaKeyValue`` lets NaN through, and
``QuotaUtils.throttleTime`` rounds with ``Math.round``, which gives 0 for NaN and clamps
infinities; ``Rate.measure`` divides by a window that ``quota.window.num=1`` can make 0 ms
long, which a double division answers with Infinity or NaN rather than an exception.
"""

import math

from minibroker import MiniBroker
from minibroker.quotas import (
    CLIENT_ID,
    REQUEST,
    USER,
    ClientQuotas,
    Rate,
    describe_entity,
    throttle_time,
)

P = "producer_byte_rate"


def test_throttle_time_rounds_as_javas_math_round():
    """NaN rounds to 0 and infinities to Long's bounds, as ``Math.round(double)``."""
    assert throttle_time(float("nan"), 100.0, 1000) == 0
    assert throttle_time(200.0, float("nan"), 1000) == 0
    assert throttle_time(float("inf"), 100.0, 0) == 0  # Infinity * 0 is NaN
    assert throttle_time(1e6, 5e-324, 1000) == 2**63 - 1  # Infinity, clamped


def test_a_nan_quota_throttles_nothing():
    """A NaN ``request_percentage`` (accepted, as by Kafka) is never a reason to fail."""
    quotas = ClientQuotas()
    [(_, code, message)] = quotas.alter([(((CLIENT_ID, None),), [(REQUEST, float("nan"))])])
    assert code == 0, message
    assert quotas.record(REQUEST, "ANONYMOUS", "app", 50.0, 1_000) == 0


def test_a_window_of_one_sample_measures_without_failing():
    """``quota.window.num=1``: the first record sees a 0 ms window; Java's division gives
    Infinity (nothing to throttle by, the throttle being NaN, so 0) instead of an error."""
    rate = Rate(samples=1, window_ms=1000)
    rate.record(100.0, 5_000)
    assert math.isinf(rate.measure(5_000))
    quotas = ClientQuotas(window_num=1, window_size_s=1)
    [(_, code, _)] = quotas.alter([(((USER, None),), [(P, 10.0)])])
    assert code == 0
    assert quotas.record(P, "ANONYMOUS", "app", 1_000.0, 5_000) == 0


def test_a_default_entity_prints_as_null():
    """``ClientQuotaEntity.toString`` prints Java's map: a default entity is ``null``."""
    assert describe_entity(((USER, None),)) == "ClientQuotaEntity(entries={user=null})"
    assert describe_entity(((USER, "u"), (CLIENT_ID, None))) == "ClientQuotaEntity(entries={user=u, client-id=null})"


def test_a_broker_with_a_nan_quota_keeps_serving(tmp_path):
    """Over the wire, and across a restart: a NaN quota on the default client id does not
    cost any request its connection, and it can be removed."""
    from kproto.admin import AdminClient, ClientQuotaAlteration, ClientQuotaEntity

    entity = ClientQuotaEntity({"client-id": None})
    for run in range(2):
        with MiniBroker(data_dir=tmp_path) as broker, AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
            if run == 0:
                admin.alter_client_quotas([ClientQuotaAlteration(entity, [ClientQuotaAlteration.Op(REQUEST, float("nan"))])])
            assert admin.list_topics() == []
            if run == 1:
                admin.alter_client_quotas([ClientQuotaAlteration(entity, [ClientQuotaAlteration.Op(REQUEST, None)])])
                assert admin.describe_client_quotas() == {}
