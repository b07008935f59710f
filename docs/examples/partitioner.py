"""A custom partitioner: ``f(key, num_partitions, topic) -> partition``.

``num_partitions`` is the topic's partition count (an int), not a list of partitions
(kafka-python passes lists); the function returns a partition id in
``range(num_partitions)``. Run it: ``python docs/examples/partitioner.py``.
"""

import zlib

from kproto import Producer
from minibroker import MiniBroker


def vip_first(key: bytes | None, num_partitions: int, topic: str) -> int:
    """VIP keys to partition 0, every other record spread over the other partitions."""
    if key is not None and key.startswith(b"vip-"):
        return 0
    return 1 + zlib.crc32(key or b"") % (num_partitions - 1)


with MiniBroker(config={"num.partitions": 4}) as broker:
    with Producer(bootstrap_servers=broker.bootstrap_servers, partitioner_class=vip_first) as producer:
        vip = producer.send("orders", b"order", key=b"vip-7").result(10)
        other = producer.send("orders", b"order", key=b"customer-9").result(10)
    print(f"vip-7 -> partition {vip.partition}, customer-9 -> partition {other.partition}")
    assert vip.partition == 0 and other.partition in (1, 2, 3)
