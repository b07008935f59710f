"""minibroker without pytest: configured with Kafka's settings, its logs on disk, and its
log messages shown. Run it: ``python docs/examples/minibroker_in_a_script.py``."""

import logging
import tempfile

from kproto import Consumer, ConsumerRecord, Producer
from minibroker import MiniBroker

# kproto and minibroker log through the standard logging module and print nothing until
# the application configures it. Here: warnings from everything, and what the broker does.
logging.basicConfig(level=logging.WARNING, format="%(name)s %(levelname)s %(message)s")
logging.getLogger("minibroker").setLevel(logging.INFO)   # "minibroker listening on ..."

with tempfile.TemporaryDirectory() as data_dir:
    with MiniBroker(data_dir=data_dir, config={"num.partitions": 3}) as broker:
        with Producer(bootstrap_servers=broker.bootstrap_servers) as producer:
            producer.send("orders", b"order-1", key=b"customer-1")
        with Consumer(bootstrap_servers=broker.bootstrap_servers, group_id="billing",
                      auto_offset_reset="earliest") as consumer:
            consumer.subscribe(["orders"])
            records: list[ConsumerRecord] = []
            while not records:
                records = consumer.poll(1.0)
            print(f"read {records[0].value!r} from partition {records[0].partition} of 3")
