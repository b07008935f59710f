"""The one backoff policy (kproto.io.retry.Backoff): KIP-580's exponential backoff with jitter."""

from __future__ import annotations

import statistics

from kproto.io.retry import Backoff


def test_delays_double_from_the_initial_wait_up_to_the_maximum() -> None:
    policy = Backoff(0.1, 1.0, jitter=0.0)
    assert [policy.delay(n) for n in range(0, 7)] == [0.0, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0]


def test_jitter_spreads_each_delay_by_twenty_percent_around_its_value() -> None:
    """KIP-580: retries of many clients after one outage must not stay in lock-step."""
    policy = Backoff(0.1, 1.0)
    delays = [policy.delay(3) for _ in range(2000)]
    assert min(delays) >= 0.4 * 0.8 and max(delays) <= 0.4 * 1.2
    assert len(set(delays)) > 1000  # spread, not a constant
    assert abs(statistics.mean(delays) - 0.4) < 0.01


def test_a_long_outage_neither_overflows_nor_passes_the_maximum() -> None:
    policy = Backoff(0.05, 1.0)
    assert 0.8 <= policy.delay(10_000) <= 1.2


def test_built_from_a_client_config_with_kafkas_names() -> None:
    config = {"retry.backoff.ms": 100, "retry.backoff.max.ms": 1000,
              "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 1000}
    assert (Backoff.retry(config).initial, Backoff.retry(config).maximum) == (0.1, 1.0)
    assert (Backoff.reconnect(config).initial, Backoff.reconnect(config).maximum) == (0.05, 1.0)
    # Java: a maximum below the initial wait means the initial wait (no shrinking backoff).
    assert Backoff.retry({"retry.backoff.ms": 500, "retry.backoff.max.ms": 100}).maximum == 0.5
