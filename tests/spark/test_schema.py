"""kproto.spark.schema: the Spark and Arrow spellings agree (what Spark checks at run time)."""

import pytest
from pyspark.sql.pandas.types import to_arrow_schema, to_arrow_type
from pyspark.sql.types import StructType

from kproto.spark.schema import ARROW_RECORD_FIELDS, RECORD_TYPE, arrow_schema, kafka_schema


@pytest.mark.parametrize("include_headers", [False, True])
def test_arrow_schema_is_what_spark_expects_of_a_data_source(include_headers):
    assert arrow_schema(include_headers).equals(to_arrow_schema(kafka_schema(include_headers), timezone="UTC"))


def test_kafka_schema_has_spark_connector_columns_in_order():
    assert kafka_schema().simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
        "timestamp:timestamp,timestampType:int>")
    assert kafka_schema(True).fields[-1].simpleString() == "headers:array<struct<key:string,value:binary>>"


def test_record_fields_match_the_record_type():
    expected = to_arrow_type(RECORD_TYPE, timezone="UTC")
    assert [(f.name, f.type) for f in expected] == list(ARROW_RECORD_FIELDS.items())
    assert isinstance(RECORD_TYPE, StructType)
