"""Java ``.properties`` files, read as ``java.util.Properties.load`` reads them.

Kafka's tools read ``--command-config`` (and ``--producer.config``...) with
``Properties.load``, so a ``client.properties`` written for them is read here the same way.
The rules, from the ``Properties.load(Reader)`` documentation:

Facts:
    - A *natural line* ends at ``\\n``, ``\\r`` or ``\\r\\n``. Whitespace (space, ``\\t``,
      ``\\f``) at its start is skipped; a line of whitespace only is blank, and a line whose
      first other character is ``#`` or ``!`` is a comment. Both are ignored.
    - A *logical line* ends at the first natural line that does not end in an odd number of
      backslashes: ``a=b\\`` goes on with the next natural line, its leading whitespace
      dropped. A continuation line is not a comment, unless the logical line is still empty
      (a line that is only ``\\``), and a comment line never continues.
    - The key runs to the first unescaped ``=``, ``:`` or whitespace. After it, whitespace,
      at most one ``=`` or ``:``, and whitespace again are skipped; the rest of the line,
      trailing whitespace included, is the value. A line with a key only has the value ``""``.
    - In keys and values ``\\t``, ``\\n``, ``\\r``, ``\\f`` are those characters,
      ``\\uXXXX`` is a UTF-16 code unit (a surrogate pair makes one character), and a
      backslash before any other character stands for that character (``\\=``, ``\\:``,
      ``\\ ``, ``\\#``, ``\\\\``).
    - A key given twice keeps the last value.

Files are decoded as UTF-8, falling back to ISO-8859-1 (the encoding of
``Properties.load(InputStream)``, which Kafka's ``Utils.loadProps`` calls) when they are not
valid UTF-8, as Java 9's ``PropertyResourceBundle`` does; ASCII with ``\\u`` escapes, what
Java's ``store`` writes, reads the same either way.
"""

from __future__ import annotations

import re

__all__ = ["loads", "read_properties"]

_WHITESPACE = " \t\f"
_NEWLINE = re.compile(r"\r\n|\r|\n")
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> list[str]:
    """The logical lines of ``text``, comments and blank lines left out (``LineReader``)."""
    lines: list[str] = []
    pending: str | None = None  # a logical line that a trailing backslash continues
    for natural in _NEWLINE.split(text):
        stripped = natural.lstrip(_WHITESPACE)
        # LineReader (Java 9+) looks for a comment while the logical line is still empty
        # (len == 0), so after a line that is only "\\" the next line may be one
        if not pending and (not stripped or stripped[0] in "#!"):
            pending = None
            continue
        # Java counts the backslashes of this natural line only
        odd = (len(stripped) - len(stripped.rstrip("\\"))) % 2
        line = (pending or "") + (stripped[:-1] if odd else stripped)
        if odd:
            pending = line
            continue
        pending = None
        lines.append(line)
    if pending:  # a backslash at the very end of the file is dropped
        lines.append(pending)
    return lines


def _unescape(text: str) -> str:
    """``Properties.loadConvert``: Java's escapes resolved.

    Raises:
        ValueError: a malformed ``\\uXXXX``.
    """
    if "\\" not in text:
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        i += 1
        if c != "\\" or i == n:
            out.append(c)
            continue
        c = text[i]
        i += 1
        if c == "u":
            digits = text[i:i + 4]
            if len(digits) < 4 or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise ValueError("Malformed \\uxxxx encoding.")
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(c, c))
    # \uD83D\uDE00 is one character in Java's UTF-16 strings: join surrogate pairs
    return "".join(out).encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _split(line: str) -> tuple[str, str]:
    """A logical line's raw key and value (``Properties.load0``)."""
    escaped = False
    key_end = value_start = len(line)
    has_separator = False
    for i, c in enumerate(line):
        if not escaped and c in "=:":
            key_end, value_start, has_separator = i, i + 1, True
            break
        if not escaped and c in _WHITESPACE:
            key_end, value_start = i, i + 1
            break
        escaped = c == "\\" and not escaped
    while value_start < len(line):
        c = line[value_start]
        if c not in _WHITESPACE:
            if has_separator or c not in "=:":
                break
            has_separator = True
        value_start += 1
    return line[:key_end], line[value_start:]


def loads(text: str) -> dict[str, str]:
    """The properties in ``text`` (see the module docstring for the rules).

    Raises:
        ValueError: a malformed ``\\uXXXX`` escape.
    """
    properties: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split(line)
        properties[_unescape(key)] = _unescape(value)
    return properties


def read_properties(path: str) -> dict[str, str]:
    """The properties of the file at ``path``.

    Raises:
        OSError: the file cannot be read.
        ValueError: a malformed ``\\uXXXX`` escape (the message names the file).
    """
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("iso-8859-1")
    try:
        return loads(text)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
