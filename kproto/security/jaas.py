"""``sasl.jaas.config`` parsed as Kafka's ``JaasConfig`` parses it.

The value is JAAS's entry syntax without the ``Name { ... };`` wrapper::

    <LoginModule class> <flag> key="value" key=value ...;

with ``flag`` one of ``required``, ``requisite``, ``sufficient``, ``optional`` (any case).
Kafka reads it with ``java.io.StreamTokenizer`` set up by ``JaasConfig``: words of letters,
digits, ``.``, ``-``, ``_`` and ``$``; values quoted with ``"`` or ``'`` and Java's
escapes (``\\n``, ``\\t``, ``\\\\``, ``\\"``, octal); ``//`` and ``/* */`` comments. A bare
value that starts with a digit is a number to that tokenizer and Kafka refuses it ("Value
not specified for key ..."): quote numbers. A client's config has exactly one entry
(``JaasContext.loadClientContext``); a broker's listener config may hold several.

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


# StreamTokenizer's token kinds as JaasConfig sees them
_WORD, _QUOTED, _NUMBER, _CHAR = "word", "quoted", "number", "char"
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _is_word_start(c: str) -> bool:
    # StreamTokenizer: a-z, A-Z, U+00A0..U+00FF; JaasConfig adds '-', '_', '$'. Java's
    # tokenizer treats every char above U+00FF as a word char too.
    return c.isascii() and (c.isalpha() or c in "-_$") or c >= "\u00a0"


def _is_word_part(c: str) -> bool:
    return _is_word_start(c) or c.isdigit() and c.isascii() or c == "."


@dataclass
class _Token:
    kind: str
    text: str
    position: int


def _tokens(text: str) -> list[_Token]:
    tokens = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c <= " ":
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise ConfigError(f"Unterminated comment at position {i} in JAAS config")
            i = end + 2
        elif c in "\"'":
            start, value, i = i, [], i + 1
            while i < n and text[i] != c and text[i] not in "\r\n":
                if text[i] == "\\" and i + 1 < n:
                    i += 1
                    octal = ""
                    while len(octal) < 3 and i < n and text[i] in "01234567" and (
                        len(octal) < 2 or octal[0] in "0123"
                    ):
                        octal, i = octal + text[i], i + 1
                    if octal:
                        value.append(chr(int(octal, 8)))
                        continue
                    value.append(_ESCAPES.get(text[i], text[i]))
                else:
                    value.append(text[i])
                i += 1
            if i >= n or text[i] != c:
                raise ConfigError(
                    f"Unterminated quoted value starting at position {start} in JAAS config"
                )
            i += 1
            tokens.append(_Token(_QUOTED, "".join(value), start))
        elif _is_word_start(c):
            start = i
            while i < n and _is_word_part(text[i]):
                i += 1
            tokens.append(_Token(_WORD, text[start:i], start))
        elif c.isascii() and c.isdigit() or c == ".":
            start = i
            while i < n and (text[i].isascii() and text[i].isdigit() or text[i] == "."):
                i += 1
            tokens.append(_Token(_NUMBER, text[start:i], start))
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
        try:
            control_flag = ControlFlag((flag or "").lower())
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
