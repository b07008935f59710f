"""``kproto pipeline`` (also ``python -m kproto.pipeline``): the main job, as a command.

The job itself is :mod:`kproto.pipeline`, a library module that knows nothing of the
command line; this module parses the options, checks what the job needs on this machine
(pyspark, pyarrow, Java), starts the embedded broker and Spark, draws the progress line
and prints the summary.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import shutil
import sys
import tempfile
from contextlib import ExitStack

from kproto.cli.options import (
    UsageError,
    add_command,
    add_connection_options,
    command_settings,
    positive_int,
)
from kproto.cli.progress import progress
from kproto.pipeline import (
    DEFAULT_EVENTS,
    MICRO_BATCHES,
    check_client_config,
    embedded_broker,
    format_report,
    run_pipeline,
    spark_session,
)

__all__ = ["register"]

_EXAMPLES = [
    "kproto pipeline                    # minibroker and Spark local[2], 30,000 events",
    "kproto pipeline --events 200000 --output /tmp/activity --seed 7",
    "kproto pipeline --bootstrap-servers kafka:9092 --master spark://spark:7077 --replication-factor 3 "
    "--output hdfs:///tmp/activity",
    "kproto pipeline --command-config client.properties   # security.protocol, sasl.*... for every client",
]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``kproto pipeline`` to the ``kproto`` command."""
    parser = add_command(subparsers, "pipeline", examples=_EXAMPLES,
                         help="the main job: an activity stream through Kafka into a Spark streaming job",
                         description="The main job: minibroker (or --bootstrap-servers), a stream of page "
                         "views and clicks, a Spark Structured Streaming job reading it with "
                         "format(\"kproto\") (events per page and minute, top users) that writes Kafka "
                         "and Parquet, and a summary. Needs pyspark and pyarrow (the spark extra) and Java 17.")
    add_connection_options(parser, bootstrap_help="a Kafka cluster to use (default: bootstrap.servers of "
                                                  "--command-config, else start minibroker for the run)")
    parser.add_argument("--master", default="local[2]", help="Spark master URL (default: local[2])")
    parser.add_argument("--events", type=positive_int, default=DEFAULT_EVENTS,
                        help=f"events to generate (default: {DEFAULT_EVENTS})")
    parser.add_argument("--max-offsets-per-trigger", type=positive_int, metavar="N",
                        help=f"records per micro-batch (default: the stream in {MICRO_BATCHES})")
    parser.add_argument("--output", metavar="DIR", help="a new or empty directory for the Parquet (default: a new "
                                                        "temporary directory, kept)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the generated events (default: 1)")
    parser.add_argument("--replication-factor", type=positive_int, default=-1, metavar="N",
                        help="replication factor of the topics the job creates (default: the cluster's "
                             "default.replication.factor)")
    parser.set_defaults(run=_run)


def _missing_requirement() -> str | None:
    """What the Spark job lacks on this machine, said so that the user can fix it."""
    if importlib.util.find_spec("pyspark") is None or importlib.util.find_spec("pyarrow") is None:
        return 'the pipeline needs pyspark and pyarrow: python3 -m pip install "kproto[spark]"'
    if not os.environ.get("JAVA_HOME") and shutil.which("java") is None:
        return "Spark needs Java 17 or later: install it, or set JAVA_HOME"
    return None


def _output_dir(path: str | None) -> str:
    """``--output``, checked to be new or empty when it is local; else a new temporary directory."""
    if path is None:
        return tempfile.mkdtemp(prefix="kproto-pipeline-")
    if "://" not in path:
        if os.path.isdir(path) and os.listdir(path):
            raise UsageError(f"--output {path} is not empty: the Parquet and the query's checkpoint need a new "
                             "or empty directory")
        path = os.path.abspath(path)
    return path


def _run(args: argparse.Namespace) -> int:
    missing = _missing_requirement()
    if missing:
        print(f"kproto pipeline: error: {missing}", file=sys.stderr)
        return 1
    # The job's clients (admin, producer, the Spark source and sink) take these settings, each
    # the keys of its kind; --bootstrap-servers wins over the file's, as in Kafka's tools.
    settings = command_settings(args)
    check_client_config(settings)  # a bad setting fails now, not after Spark has started
    output = _output_dir(args.output)
    if not logging.getLogger().handlers:
        # py4j reports a call that Ctrl-C interrupted with logging.exception on the root
        # logger, which would print a traceback or two before the command exits with 130.
        logging.getLogger().addHandler(logging.NullHandler())
    with ExitStack() as stack:  # unwinds on errors and Ctrl-C too: the query, then Spark, then the broker
        servers = args.bootstrap_servers or settings.pop("bootstrap.servers", None)
        if not servers:
            servers = stack.enter_context(embedded_broker())
            print(f"minibroker listening on {servers}", file=sys.stderr)
        print(f"starting Spark ({args.master})", file=sys.stderr)
        spark = stack.enter_context(spark_session(args.master))
        report = run_pipeline(spark, servers, events=args.events, seed=args.seed, output=output,
                              max_offsets_per_trigger=args.max_offsets_per_trigger,
                              replication_factor=args.replication_factor, progress=progress,
                              client_config=settings)
    print(format_report(report))
    return 0
