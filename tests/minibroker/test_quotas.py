"""Client quotas without I/O (issue 15, client quotas, items 1, 3 and 4): Kafka's precedence
of the eight entity levels (KIP-55), whose usage is shared, the ``Rate`` measured over
``quota.window.num`` samples, ``QuotaUtils.throttleTime``, Kafka's validation texts of
AlterClientQuotas and the filters of DescribeClientQuotas, and the quotas file.

The expected numbers are worked out here by hand from Kafka's formulas (``Rate.windowSize``,
``O*W/(W+X) = T``), not read from minibroker.
"""

import json

import pytest

from minibroker.config import BrokerConfig
from minibroker.quota_store import open_client_quotas
from minibroker.quotas import CLIENT_ID, USER, ClientQuotas, Rate, _user, throttle_time
from minibroker.storage import CorruptStateFileError

P = "producer_byte_rate"

# KIP-55's order, most specific first, for user "alice" and client id "app".
LEVELS = [
    ((USER, "alice"), (CLIENT_ID, "app")),
    ((USER, "alice"), (CLIENT_ID, None)),
    ((USER, "alice"),),
    ((USER, None), (CLIENT_ID, "app")),
    ((USER, None), (CLIENT_ID, None)),
    ((USER, None),),
    ((CLIENT_ID, "app"),),
    ((CLIENT_ID, None),),
]


def _set(quotas, entity, key=P, value=1000.0):
    [(_, code, message)] = quotas.alter([(entity, [(key, value)])])
    assert code == 0, message


def test_precedence_follows_the_eight_levels_of_kip_55():
    """Issue 15, client quotas item 1: with every level set, the most specific applies;
    removing it, the next one does, down to /clients/<default>."""
    quotas = ClientQuotas()
    for i, entity in enumerate(LEVELS):
        _set(quotas, entity, value=1000.0 * (i + 1))
    for i, entity in enumerate(LEVELS):
        assert quotas.quota(P, "alice", "app") == 1000.0 * (i + 1), entity
        quotas.alter([(entity, [(P, None)])])
    assert quotas.quota(P, "alice", "app") is None
    assert quotas.entities == {}


def test_a_level_applies_to_its_own_quota_type_only():
    """Issue 15, client quotas item 1: precedence is per quota type, so a user's producer
    quota does not hide a client id's consumer quota."""
    quotas = ClientQuotas()
    _set(quotas, ((USER, "alice"),), P, 500)
    _set(quotas, ((CLIENT_ID, "app"),), "consumer_byte_rate", 700)
    assert quotas.quota(P, "alice", "app") == 500
    assert quotas.quota("consumer_byte_rate", "alice", "app") == 700
    assert quotas.quota("request_percentage", "alice", "app") is None


def test_unauthenticated_connections_are_the_user_anonymous():
    """Issue 15, client quotas item 2: ctx.principal "User:ANONYMOUS" is the user ANONYMOUS
    (KafkaPrincipal.getName), which a user quota or the user default matches."""
    quotas = ClientQuotas()
    assert _user("User:ANONYMOUS") == "ANONYMOUS"
    assert _user("User:alice") == "alice"
    _set(quotas, ((USER, None),), value=300)
    assert quotas.quota(P, _user("User:ANONYMOUS"), "app") == 300
    _set(quotas, ((USER, "ANONYMOUS"),), value=200)
    assert quotas.quota(P, "ANONYMOUS", "app") == 200


def test_usage_is_shared_as_the_matching_level_groups_it():
    """Issue 15, client quotas item 1: a /users/<u> quota is shared by the user's client ids;
    a /clients/<default> quota is counted per client id (Kafka's quotaMetricTags)."""
    quotas = ClientQuotas()
    _set(quotas, ((USER, "alice"),), value=100)
    assert quotas.tags(P, "alice", "a") == quotas.tags(P, "alice", "b") == ("alice", "")
    _set(quotas, ((CLIENT_ID, None),), value=100)
    assert quotas.tags(P, "bob", "a") == ("", "a")
    assert quotas.tags(P, "bob", "b") == ("", "b")
    _set(quotas, ((USER, None), (CLIENT_ID, None)), value=100)
    assert quotas.tags(P, "bob", "a") == ("bob", "a")
    # Two client ids of alice: each alone is within 100 B/s, together they are not.
    assert quotas.record(P, "alice", "a", 600, 0) == 0   # 600 B over the 10 s window: 60 B/s
    assert quotas.record(P, "alice", "b", 600, 0) > 0    # 1200 B: 120 B/s


def test_an_empty_client_id_is_limited_by_user_levels_only():
    """Issue 15, client quotas item 1: Kafka's quotaLimit looks at no client-id level for
    an empty client id (its tags have no client id)."""
    quotas = ClientQuotas()
    _set(quotas, ((CLIENT_ID, None),), value=100)
    assert quotas.quota(P, "alice", "") is None
    _set(quotas, ((USER, None),), value=200)
    assert quotas.quota(P, "alice", "") == 200


def test_rate_counts_missing_windows_as_empty():
    """Issue 15, client quotas item 1: Rate.windowSize adds the windows missing to
    quota.window.num - 1 whole ones, so a first request is measured over 10 s."""
    rate = Rate(1000, 11)
    rate.record(1000, 0)
    assert rate.window_size(0) == 10_000
    assert rate.measure(0) == 100.0
    assert rate.window_size(2500) == 10_500  # 2.5 s passed, 2 whole windows: 8 empty ones added
    for t in range(1000, 21_000, 1000):  # one sample per window, 12 kept (one spare)
        rate.record(1000, t)
    # At 20.5 s the sample of 9 s had no event for 11 windows: purged; the oldest left
    # starts at 10 s, 10 whole windows ago, so the span is real: 10.5 s for 11 samples.
    assert rate.window_size(20_500) == 10_500
    assert rate.measure(20_500) == pytest.approx(11_000 / 10.5)


def test_rate_forgets_samples_older_than_the_window():
    """Issue 15, client quotas item 1: samples with no event in quota.window.num windows are
    reset (SampledStat.purgeObsoleteSamples)."""
    rate = Rate(1000, 2)
    rate.record(5000, 0)
    assert rate.measure(500) == 5000 / 1.5
    assert rate.measure(2000) == 0.0


def test_throttle_time_is_kafkas_formula():
    """Issue 15, client quotas item 1: X = (O - T) / T * W, rounded as Java's Math.round."""
    assert throttle_time(200, 100, 10_000) == 10_000
    assert throttle_time(150, 100, 11_000) == 5500
    assert throttle_time(100.0125, 100, 1000) == 0      # 0.125 ms
    assert throttle_time(150, 100, 1) == 1              # 0.5 ms rounds up (Python's round() gives 0)
    assert throttle_time(250, 100, 1) == 2              # 1.5 ms


def test_record_throttles_over_the_quota_with_the_formula():
    """Issue 15, client quotas item 1: a 2000 B Produce at a fresh 100 B/s quota is 200 B/s
    over a 10 s window: (200 - 100) / 100 * 10 s = 10 s; byte rates are not bounded."""
    quotas = ClientQuotas()
    _set(quotas, ((CLIENT_ID, "app"),), value=100)
    assert quotas.record(P, "ANONYMOUS", "app", 1000, 0) == 0      # exactly 100 B/s: acceptable
    assert quotas.record(P, "ANONYMOUS", "app", 1000, 0) == 10_000
    assert quotas.record(P, "ANONYMOUS", "app", 100_000, 0) == 1_010_000
    assert quotas.record(P, "ANONYMOUS", "other", 100_000, 0) == 0  # no quota for it


def test_request_throttle_is_bounded_by_one_window():
    """Issue 15, client quotas item 1: ClientRequestQuotaManager bounds the throttle by
    quota.window.size.seconds."""
    quotas = ClientQuotas(window_size_s=2)
    _set(quotas, ((CLIENT_ID, "app"),), "request_percentage", 1.0)
    assert quotas.record("request_percentage", "u", "app", 1000.0, 0) == 2000


def test_nothing_is_recorded_before_a_quota_of_that_type_exists():
    """Issue 15, client quotas item 1: quotasEnabled; the usage before the first quota is
    not counted."""
    quotas = ClientQuotas()
    assert quotas.record(P, "u", "app", 10**9, 0) == 0
    _set(quotas, ((CLIENT_ID, "app"),), value=100)
    assert quotas.record(P, "u", "app", 500, 0) == 0


def test_unrecord_takes_back_a_throttled_fetch():
    """Issue 15, client quotas item 2: a throttled Fetch is answered empty and its bytes
    taken back (unrecordQuotaSensor)."""
    quotas = ClientQuotas()
    key = "consumer_byte_rate"
    _set(quotas, ((CLIENT_ID, "c"),), key, 100)
    assert quotas.record(key, "u", "c", 900, 0) == 0
    assert quotas.record(key, "u", "c", 900, 0) > 0
    quotas.unrecord(key, "u", "c", 900, 0)
    assert quotas.record(key, "u", "c", 100, 0) == 0


def test_max_value_in_window_is_the_quota_times_the_whole_windows():
    quotas = ClientQuotas(window_num=11, window_size_s=1)
    _set(quotas, ((CLIENT_ID, "c"),), "consumer_byte_rate", 1000)
    assert quotas.max_value_in_window("consumer_byte_rate", "u", "c") == 10_000
    assert quotas.max_value_in_window("consumer_byte_rate", "u", "other") == float("inf")


@pytest.mark.parametrize("window_num,window_size", [(0, 1), (1, 0)])
def test_window_settings_below_one_are_refused(window_num, window_size):
    with pytest.raises(ValueError, match="at least 1"):
        ClientQuotas(window_num, window_size)
    with pytest.raises(ValueError, match="at least 1"):
        open_client_quotas(BrokerConfig({"quota.window.num": window_num, "quota.window.size.seconds": window_size}), [])


# -- AlterClientQuotas validation, with Kafka's texts (ClientQuotaControlManager) --------

@pytest.mark.parametrize("entity,ops,message", [
    ((), [(P, 1.0)], "Invalid empty client quota entity"),
    (((("group", "g"),)), [(P, 1.0)], "Unhandled client quota entity type: group"),
    (((USER, ""),), [(P, 1.0)], "Empty user not supported"),
    (((CLIENT_ID, ""),), [(P, 1.0)], "Empty client-id not supported"),
    (((USER, "u"),), [("bogus_rate", 1.0)], "Invalid configuration key bogus_rate"),
    (((USER, "u"),), [(P, 0.0)], "Quota producer_byte_rate must be greater than 0"),
    (((USER, "u"),), [(P, -5.0)], "Quota producer_byte_rate must be greater than 0"),
    (((USER, "u"),), [(P, 10.5)], "producer_byte_rate cannot be a fractional value."),
    (((USER, "u"),), [("consumer_byte_rate", 1e19)], "Proposed value for consumer_byte_rate is too large for a LONG."),
    (((USER, "u"), ("ip", "1.2.3.4")), [(P, 1.0)],
     "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"),
    (((USER, "u"),), [(P, 1.0), (P, 2.0)], "Ignoring duplicate entity ClientQuotaEntity(entries={user=u})"),
])
def test_alter_refuses_what_kafka_refuses(entity, ops, message):
    """Issue 15, client quotas item 3: INVALID_REQUEST (42) with Kafka's text, nothing set."""
    quotas = ClientQuotas()
    [(_, code, text)] = quotas.alter([(entity, ops)])
    assert (code, text) == (42, message)
    assert quotas.entities == {}


def test_alter_accepts_fractions_for_request_percentage_and_removes_by_null():
    """Issue 15, client quotas item 3: DOUBLE keys take fractions; a null value removes the
    key, and removing a key never set (even an unknown one) is no error, as in Kafka."""
    quotas = ClientQuotas()
    _set(quotas, ((USER, "u"),), "request_percentage", 12.5)
    _set(quotas, ((USER, "u"),), "controller_mutation_rate", 0.5)
    assert quotas.entities == {((USER, "u"),): {"request_percentage": 12.5, "controller_mutation_rate": 0.5}}
    assert quotas.alter([(((USER, "u"),), [("request_percentage", None), ("nonsense", None)])]) == [
        (((USER, "u"),), 0, None)]
    assert quotas.entities == {((USER, "u"),): {"controller_mutation_rate": 0.5}}


def test_alter_applies_the_valid_entities_of_a_request_and_validate_only_none():
    """Issue 15, client quotas item 3: each entity succeeds or fails alone; validate_only
    answers the same and changes nothing."""
    quotas = ClientQuotas()
    entries = [(((USER, "a"),), [(P, 10.0)]), (((USER, "b"),), [(P, 0.5)])]
    assert [code for _, code, _ in quotas.alter(entries, validate_only=True)] == [0, 42]
    assert quotas.entities == {}
    assert [code for _, code, _ in quotas.alter(entries)] == [0, 42]
    assert quotas.entities == {((USER, "a"),): {P: 10.0}}


def test_a_second_entry_for_an_entity_is_refused_and_answered_once():
    """Issue 15, client quotas item 3: Kafka answers one result per entity: the second entry
    of an entity overwrites the first's result with "Ignoring duplicate entity"."""
    quotas = ClientQuotas()
    results = quotas.alter([(((USER, "a"),), [(P, 10.0)]), (((USER, "a"),), [(P, 20.0)])])
    assert results == [(((USER, "a"),), 42, "Ignoring duplicate entity ClientQuotaEntity(entries={user=a})")]
    assert quotas.entities == {((USER, "a"),): {P: 10.0}}


# -- DescribeClientQuotas filters (ClientQuotasImage.describe) -----------------------------

def _filled():
    quotas = ClientQuotas()
    for entity in LEVELS:
        _set(quotas, entity)
    _set(quotas, ((USER, "bob"),))
    return quotas


@pytest.mark.parametrize("components,strict,expected", [
    ([], False, LEVELS + [((USER, "bob"),)]),
    ([], True, []),
    ([(USER, 0, "alice")], False, LEVELS[:3]),
    ([(USER, 0, "alice")], True, [LEVELS[2]]),
    ([(USER, 1, None)], False, LEVELS[3:6]),
    ([(USER, 1, None)], True, [LEVELS[5]]),
    ([(USER, 2, None)], True, [LEVELS[2], LEVELS[5], ((USER, "bob"),)]),
    ([(USER, 2, None), (CLIENT_ID, 2, None)], False, [LEVELS[0], LEVELS[1], LEVELS[3], LEVELS[4]]),
    ([(CLIENT_ID, 0, "app")], False, [LEVELS[0], LEVELS[3], LEVELS[6]]),
    ([(CLIENT_ID, 1, None), (USER, 0, "alice")], True, [LEVELS[1]]),
    ([(CLIENT_ID, 0, "nobody")], False, []),
])
def test_describe_filters_strict_and_not(components, strict, expected):
    """Issue 15, client quotas item 3: match types exact, default and any; strict keeps
    entities with exactly the filtered types."""
    found = _filled().describe(components, strict)
    assert sorted(found, key=repr) == sorted((tuple(sorted(e)) for e in expected), key=repr)


@pytest.mark.parametrize("components,code,message", [
    ([("", 0, "x")], 42, "Invalid empty entity type."),
    ([(USER, 0, "a"), (USER, 2, None)], 42, "Entity type user cannot appear more than once in the filter."),
    ([("group", 0, "g")], 35, "Unsupported entity type group"),
    ([(USER, 0, None)], 42, "Request specified MATCH_TYPE_EXACT, but set match string to null."),
    ([(USER, 1, "a")], 42, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."),
    ([(USER, 2, "a")], 42, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."),
    ([(USER, 7, None)], 42, "Unknown match type 7"),
    ([("ip", 2, None), (USER, 2, None)], 42, "Invalid entity filter component combination. IP filter component "
                                             "should not be used with user or clientId filter component."),
])
def test_describe_refuses_bad_filters_with_kafkas_texts(components, code, message):
    """Issue 15, client quotas item 3."""
    from minibroker.quotas import QuotaError

    with pytest.raises(QuotaError) as caught:
        _filled().describe(components, False)
    assert (caught.value.code, caught.value.message) == (code, message)


# -- the quotas file -------------------------------------------------------------------------

def _stored(directory):
    return open_client_quotas(BrokerConfig({}), [directory])


def test_quotas_survive_in_their_file(tmp_path):
    """Issue 15, client quotas item 4: written at every change, read back on start."""
    quotas = _stored(tmp_path)
    _set(quotas, ((USER, "alice"), (CLIENT_ID, None)), P, 2048)
    _set(quotas, ((CLIENT_ID, "app"),), "request_percentage", 33.5)
    assert _stored(tmp_path).entities == quotas.entities
    quotas.alter([(((CLIENT_ID, "app"),), [("request_percentage", None)])])
    assert _stored(tmp_path).entities == {((CLIENT_ID, None), (USER, "alice")): {P: 2048.0}}
    assert not list(tmp_path.glob("*.tmp"))


def test_validate_only_and_refusals_leave_the_file_alone(tmp_path):
    quotas = _stored(tmp_path)
    quotas.alter([(((USER, "a"),), [(P, 10.0)])], validate_only=True)
    quotas.alter([(((USER, "a"),), [(P, 0.0)])])
    assert not (tmp_path / "minibroker-client-quotas.json").exists()


@pytest.mark.parametrize("content", [b"{not json", json.dumps({"entities": [{"entity": 5}]}).encode()])
def test_a_damaged_quotas_file_stops_the_start(tmp_path, content):
    """Issue 15, client quotas item 4: as the broker's other files, a damaged one refuses to
    start rather than drop every quota."""
    (tmp_path / "minibroker-client-quotas.json").write_bytes(content)
    with pytest.raises(CorruptStateFileError, match="minibroker-client-quotas.json"):
        _stored(tmp_path)


def test_a_change_the_file_cannot_keep_changes_nothing(tmp_path):
    """Issue 15, client quotas item 4: the file is written before the change counts; an
    error writing it (a full disk) leaves the quotas as they were."""
    quotas = _stored(tmp_path)
    _set(quotas, ((USER, "a"),), P, 10.0)
    (tmp_path / "minibroker-client-quotas.json.tmp").mkdir()  # the atomic write's temporary name is taken
    with pytest.raises(OSError):
        quotas.alter([(((USER, "a"),), [(P, 20.0)])])
    assert quotas.entities == {((USER, "a"),): {P: 10.0}}
    assert _stored(tmp_path).entities == quotas.entities
