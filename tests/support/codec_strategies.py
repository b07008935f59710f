"""Hypothesis strategies for records and batches, shared by the codec tests."""

from hypothesis import strategies as st

MAX_TS = 1 << 45

byte_values = st.one_of(st.none(), st.binary(max_size=64))
headers = st.lists(st.tuples(st.text(max_size=8), byte_values), max_size=3)
timestamps = st.integers(min_value=-1, max_value=MAX_TS)


@st.composite
def batch_specs(draw, magics=(0, 1, 2), codecs=(0, 1, 2, 3, 4)):
    """(builder kwargs, list of (timestamp, key, value, headers)) for a valid batch."""
    magic = draw(st.sampled_from(magics))
    codec = draw(st.sampled_from([c for c in codecs if not (c == 4 and magic < 2)]))
    kwargs = {"magic": magic, "compression": codec, "base_offset": draw(st.integers(0, 1 << 40))}
    if magic == 2:
        idempotent = draw(st.booleans())
        if idempotent:
            kwargs["producer_id"] = draw(st.integers(0, 1 << 50))
            kwargs["producer_epoch"] = draw(st.integers(0, 32767))
            kwargs["base_sequence"] = draw(st.integers(0, (1 << 31) - 1))
            kwargs["is_transactional"] = draw(st.booleans())
        kwargs["partition_leader_epoch"] = draw(st.integers(-1, 1000))
    if magic >= 1:
        kwargs["timestamp_type"] = draw(st.sampled_from([0, 1]))
    first_ts = draw(timestamps)
    n = draw(st.integers(1, 12))
    records = []
    for _ in range(n):
        ts = first_ts + draw(st.integers(0, 10_000)) if magic else -1
        records.append((ts, draw(byte_values), draw(byte_values), draw(headers) if magic == 2 else None))
    return kwargs, records


def build(backend, kwargs, records):
    """Build a batch with ``backend`` (a codec module)."""
    kw = dict(kwargs)
    builder = backend.BatchBuilder(kw.pop("magic"), kw.pop("compression"), **kw)
    for ts, key, value, hdrs in records:
        builder.append(ts, key, value, hdrs)
    return builder.build()
