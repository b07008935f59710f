"""Fixtures of the exactly-once tests (issue 14): nothing left behind by a test."""

from tests.support.leaks import nothing_left_behind  # noqa: F401  (autouse)
