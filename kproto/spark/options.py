"""Reading the options of kproto's data sources, with Spark's Kafka connector's names.

Spark hands a Python data source its options lower-cased (``startingoffsets``), every
value a string; the helpers here look names up case-insensitively and parse values as
the connector does, so error messages can use the documented spelling.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql.types import StructType

__all__ = ["check_schema", "flag", "get", "kafka_options", "number"]


def get(options: Mapping[str, str], name: str, default: str | None = None) -> str | None:
    """The option ``name`` (any case), or ``default``."""
    lowered = name.lower()
    for key, value in options.items():
        if key.lower() == lowered:
            return value
    return default


def kafka_options(options: Mapping[str, str], refused: Mapping[str, str]) -> dict[str, str]:
    """The ``kafka.*`` options without their prefix, as Spark's connector takes them.

    Raises:
        ValueError: ``kafka.bootstrap.servers`` is missing, or an option in ``refused``
            (name -> why) is given.
    """
    kafka = {k[len("kafka."):]: v for k, v in options.items() if k.lower().startswith("kafka.")}
    for key in kafka:
        if key in refused:
            raise ValueError(f"Kafka option 'kafka.{key}' is not supported: {refused[key]}")
    if "bootstrap.servers" not in kafka:
        raise ValueError("option kafka.bootstrap.servers is required")
    return kafka


def flag(options: Mapping[str, str], name: str, default: bool) -> bool:
    """A boolean option: ``true`` or ``false`` in any case.

    Raises:
        ValueError: another value.
    """
    value = get(options, name)
    if value is None:
        return default
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise ValueError(f"option {name} must be true or false, not {value!r}")
    return text == "true"


def number(options: Mapping[str, str], name: str, default: int | None = None, minimum: int = 0) -> int | None:
    """An integer option, at least ``minimum``.

    Raises:
        ValueError: not an integer, or too small.
    """
    value = get(options, name)
    if value is None:
        return default
    try:
        n = int(str(value).strip())
    except ValueError:
        raise ValueError(f"option {name} must be an integer, not {value!r}") from None
    if n < minimum:
        raise ValueError(f"option {name} must be >= {minimum}, not {n}")
    return n


def check_schema(given: StructType, fixed: StructType, source: str) -> None:
    """Refuse a user-given schema other than the source's fixed one (as Spark's Kafka source does).

    Raises:
        ValueError: the schemas differ.
    """
    if given is not None and given != fixed:
        raise ValueError(f"the {source} source has a fixed schema {fixed.simpleString()}; "
                         f"a user-specified schema {given.simpleString()} is not supported")
