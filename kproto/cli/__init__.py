"""The ``kproto`` command line: Kafka's command-line tools, built on kproto's public API.

``kproto topics``, ``produce``, ``consume``, ``groups``, ``dump-log``, ``perf`` and
``broker`` do what Kafka's ``kafka-topics.sh``, console producer and consumer,
``kafka-consumer-groups.sh``, ``kafka-dump-log.sh``, perf tests and a broker do;
``kproto pipeline`` runs the main job (:mod:`kproto.pipeline`). Run
``kproto --help`` (or ``python -m kproto --help``); :func:`~kproto.cli.main.main` is the
entry point.
"""

from kproto.cli.main import main

__all__ = ["main"]
