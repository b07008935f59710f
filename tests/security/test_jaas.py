"""``sasl.jaas.config`` parsed as Kafka's JaasConfig parses it (issue 15, item 3), on the
forms of Kafka's security docs."""

import pytest

from kproto.errors import ConfigError
from kproto.security.jaas import LOGIN_MODULES, ControlFlag, JaasEntry, parse, parse_entries

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
OAUTH = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"


def test_the_plain_client_form_of_kafkas_docs():
    config = f'{PLAIN} required username="alice" password="alice-secret";'
    assert parse(config) == JaasEntry(PLAIN, ControlFlag.REQUIRED,
                                      {"username": "alice", "password": "alice-secret"})
    assert LOGIN_MODULES["PLAIN"] == PLAIN


def test_the_plain_broker_form_with_user_options():
    config = f'''{PLAIN} required
        username="admin"
        password="admin-secret"
        user_admin="admin-secret"
        user_alice="alice-secret";'''
    options = parse(config).options
    assert options == {"username": "admin", "password": "admin-secret",
                       "user_admin": "admin-secret", "user_alice": "alice-secret"}


def test_the_scram_forms_of_kafkas_docs():
    entry = parse(f'{SCRAM} required username="alice" password="alice-secret";')
    assert entry.login_module == LOGIN_MODULES["SCRAM-SHA-512"] == SCRAM
    token = parse(f'{SCRAM} required username="tokenID123" password="lAYYSFmLs4bTjf+lTZ1LCHR/ZZFNA==" '
                  'tokenauth="true";')
    assert token.options["tokenauth"] == "true"
    assert token.options["password"] == "lAYYSFmLs4bTjf+lTZ1LCHR/ZZFNA=="


def test_the_unsecured_oauthbearer_form_of_kafkas_docs():
    entry = parse(f'{OAUTH} required unsecuredLoginStringClaim_sub="alice" '
                  'unsecuredLoginListClaim_scope=",read,write";')
    assert entry.login_module == LOGIN_MODULES["OAUTHBEARER"]
    assert entry.options == {"unsecuredLoginStringClaim_sub": "alice",
                             "unsecuredLoginListClaim_scope": ",read,write"}


@pytest.mark.parametrize("flag", list(ControlFlag))
def test_every_control_flag_in_any_case(flag):
    assert parse(f"{PLAIN} {flag.value.upper()};").control_flag is flag


def test_bare_words_single_quotes_escapes_and_comments():
    config = (f"/* a comment */ {PLAIN} optional // to the end of the line\n"
              r"""username=alice password='it\'s "x"\n\101' other=a.b-c$_d;""")
    assert parse(config).options == {"username": "alice", "password": "it's \"x\"\nA",
                                     "other": "a.b-c$_d"}


def test_a_broker_config_may_hold_several_entries_a_client_one():
    config = f'{PLAIN} required username="a" password="b"; {SCRAM} sufficient;'
    assert [e.login_module for e in parse_entries(config)] == [PLAIN, SCRAM]
    with pytest.raises(ConfigError, match="contains 2 login modules, should be 1 module"):
        parse(config)


def test_numbers_and_unquoted_punctuation_are_words_and_open_ends_run_out_as_in_java():
    """JaasConfig's StreamTokenizer: every char but whitespace, ';', '=', '/' and quotes is a
    word char; a quote left open ends at its line's end; a bare '/' starts a comment."""
    config = f"""{PLAIN} required lifetime=3600 scope=a,b+c username="alice
        password='pw' url=https://host/path
        ;"""
    assert parse(config).options == {"lifetime": "3600", "scope": "a,b+c", "username": "alice",
                                     "password": "pw", "url": "https:"}
    assert parse(f'{PLAIN} required x="\\101\\0\\477";').options == {"x": "A\0'7"}
    with pytest.raises(ConfigError, match="not terminated by semi-colon"):
        parse(f'{PLAIN} required /* open;')


@pytest.mark.parametrize("config, error", [
    ("", "Login module not specified in JAAS config"),
    (f"{PLAIN}", "Login module control flag not specified"),
    (f"{PLAIN} mandatory;", "Invalid login module control flag 'mandatory' in JAAS config at "
                            "position 56"),
    (f"{PLAIN} ;", "Login module control flag is not available in the JAAS config at position 56"),
    (f'{PLAIN} required username="a"', "not terminated by semi-colon"),
    (f'{PLAIN} required username;', "Value not specified for key 'username' in JAAS config at "
                                    "position 65"),
    (f'{PLAIN} required username="a;', "not terminated by semi-colon"),
    (f'{PLAIN} required username=;', "Value not specified for key 'username'"),
    ('"quoted" required; =x;', "Login module not specified at position 19"),
])
def test_malformed_configs_fail_with_kafkas_text_and_the_position(config, error):
    with pytest.raises(ConfigError, match=error.replace("(", r"\(")):
        parse(config)
