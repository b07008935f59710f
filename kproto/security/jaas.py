"""``sasl.jaas.config`` parsed as Kafka's ``JaasConfig`` parses it.

The value is JAAS's entry syntax without the ``Name { ... };`` wrapper::

    <LoginModule class> <flag> key="value" key=value ...;

with ``flag`` one of ``required``, ``requisite``, ``sufficient``, ``optional`` (any case).
Kafka reads it with ``java.io.StreamTokenizer`` set up by ``JaasConfig``: a word is a run of
any characters but whitespace, ``;``, ``=``, ``/`` and quotes (so ``lifetime=3600`` is a key
and its value, but in ``url=https://host`` the ``//`` starts a comment: quote URLs); values
may be quoted
with ``"`` or ``'`` and Java's escapes (``\\n``, ``\\t``, ``\\\\``, ``\\"``, octal), a quote
left open ending at the end of its line; ``//`` and ``/* */`` comments. A client's config has
exactly one entry (``JaasContext.loadClientContext``); a broker's listener config may hold
several.

The modules Kafka users write (:data:`LOGIN_MODULES`): ``PlainLoginModule`` (username,
password; on a broker ``user_<name>="<password>"``), ``ScramLoginModule`` (username,
password, ``tokenauth``), ``OAuthBearerLoginModule`` (``unsecuredLoginStringClaim_sub`` ...).
Errors are :class:`~kproto.errors.ConfigError` with Kafka's text and the position.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from kproto.errors import ConfigError

__all__ = [
    "LOGIN_MODULES",
    "ControlFlag",
    "JaasEntry",
    "parse",
    "parse_entries",
]

# SASL mechanism -> the login module Kafka's docs configure for it
LOGIN_MODULES: Mapping[str, str] = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "OAUTHBEARER": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
}


class ControlFlag(enum.Enum):
    """javax.security.auth.login.AppConfigurationEntry.LoginModuleControlFlag."""

    REQUIRED = "required"
    REQUISITE = "requisite"
    SUFFICIENT = "sufficient"
    OPTIONAL = "optional"


@dataclass(frozen=True)
class JaasEntry:
    """One login module entry (javax's AppConfigurationEntry)."""

    login_module: str
    control_flag: ControlFlag
    options: dict[str, str] = field(default_factory=dict)


# StreamTokenizer's token kinds as JaasConfig sees them: words and quoted strings have an
# ``sval``, ordinary characters (';', '=', and U+0081..U+009F) do not
_WORD, _QUOTED, _CHAR = "word", "quoted", "char"
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _is_word_char(c: str) -> bool:
    # JaasConfig: resetSyntax, wordChars(32, 128) and (160, 255), then whitespace 0..' ',
    # ordinary ';' and '=', comment '/', quotes '"' and "'"; above 255 StreamTokenizer treats
    # every char as a word char
    return c > " " and c not in ";=/\"'" and not "\x81" <= c <= "\x9f"


@dataclass
class _Token:
    kind: str
    text: str
    position: int


def _quoted(text: str, i: int) -> tuple[str, int]:
    """The value of the quoted string opening at ``i`` and the index after it. As in
    StreamTokenizer, a string left open ends at the end of its line."""
    quote, value, i, n = text[i], [], i + 1, len(text)
    while i < n and text[i] != quote and text[i] not in "\r\n":
        if text[i] == "\\" and i + 1 < n:
            i += 1
            octal, digits = "", 3 if text[i] in "0123" else 2  # \0 to \377
            while len(octal) < digits and i < n and text[i] in "01234567":
                octal, i = octal + text[i], i + 1
            if octal:
                value.append(chr(int(octal, 8)))
                continue
            value.append(_ESCAPES.get(text[i], text[i]))
        else:
            value.append(text[i])
        i += 1
    return "".join(value), i + 1 if i < n and text[i] == quote else i


def _tokens(text: str) -> list[_Token]:
    tokens = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c <= " ":
            i += 1
        elif text.startswith("/*", i):  # slashStarComments; left open, it runs to the end
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif c == "/":  # slashSlashComments, and '/' is a comment char: to the end of the line
            while i < n and text[i] not in "\r\n":
                i += 1
        elif c in "\"'":
            value, end = _quoted(text, i)
            tokens.append(_Token(_QUOTED, value, i))
            i = end
        elif _is_word_char(c):
            start = i
            while i < n and _is_word_char(text[i]):
                i += 1
            tokens.append(_Token(_WORD, text[start:i], start))
        else:
            tokens.append(_Token(_CHAR, c, i))
            i += 1
    return tokens


def _text(token: _Token | None) -> str | None:
    """StreamTokenizer's ``sval``: set for words and quoted strings only."""
    return token.text if token is not None and token.kind in (_WORD, _QUOTED) else None


def parse_entries(config: str) -> list[JaasEntry]:
    """Every entry of ``config`` (JaasConfig's constructor)."""
    tokens = _tokens(config)
    entries, i = [], 0
    while i < len(tokens):
        module = tokens[i]
        if _text(module) is None:
            raise ConfigError(
                f"Login module not specified at position {module.position} in JAAS config"
            )
        i += 1
        if i >= len(tokens):
            raise ConfigError(
                f"Login module control flag not specified in JAAS config (after position "
                f"{module.position})"
            )
        flag_token = tokens[i]
        flag = _text(flag_token)
        if flag is None:
            raise ConfigError(
                f"Login module control flag is not available in the JAAS config at position "
                f"{flag_token.position}"
            )
        try:
            control_flag = ControlFlag(flag.lower())
        except ValueError:
            raise ConfigError(
                f"Invalid login module control flag '{flag_token.text}' in JAAS config at "
                f"position {flag_token.position}"
            ) from None
        i += 1
        options: dict[str, str] = {}
        while i < len(tokens) and not (tokens[i].kind == _CHAR and tokens[i].text == ";"):
            key_token = tokens[i]
            key = _text(key_token)
            value = _text(tokens[i + 2]) if i + 2 < len(tokens) else None
            is_eq = i + 1 < len(tokens) and tokens[i + 1].kind == _CHAR and tokens[i + 1].text == "="
            if key is None or not is_eq or value is None:
                raise ConfigError(
                    f"Value not specified for key '{key_token.text}' in JAAS config at "
                    f"position {key_token.position}"
                )
            options[key] = value
            i += 3
        if i >= len(tokens):
            raise ConfigError(
                f"JAAS config entry not terminated by semi-colon (position {len(config)})"
            )
        i += 1
        entries.append(JaasEntry(_text(module) or "", control_flag, options))
    if not entries:
        raise ConfigError("Login module not specified in JAAS config")
    return entries


def parse(config: str) -> JaasEntry:
    """The one entry of a client's ``sasl.jaas.config`` (JaasContext.loadClientContext)."""
    entries = parse_entries(config)
    if len(entries) != 1:
        raise ConfigError(
            f"JAAS config property contains {len(entries)} login modules, should be 1 module"
        )
    return entries[0]
