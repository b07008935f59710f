"""``.. config-table:: producer``: the settings of a client (kproto.config), of
minibroker (``broker``: minibroker.config), or minibroker's topic configs (``topic``:
minibroker.topic_configs, with their type, valid values and broker synonym).

The table in code is the one source of truth; this directive renders it, so the
reference can never disagree with what the clients accept.
"""

from docutils import nodes
from docutils.parsers.rst import Directive


def cell(text, literal=False):
    """A table cell of ``text`` (as code when ``literal``)."""
    entry = nodes.entry()
    entry += nodes.paragraph("", "", nodes.literal(text=text)) if literal else nodes.paragraph(text=text)
    return entry


def table(titles, widths, rows):
    """A docutils table: a head of ``titles``, columns of ``widths``, a row of cells per
    item of ``rows`` (each a sequence of entries, see :func:`cell`). Also the metrics table's."""
    out = nodes.table()
    group = nodes.tgroup(cols=len(titles))
    out += group
    for width in widths:
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    row = nodes.row()
    for title in titles:
        row += cell(title)
    head += row
    group += head
    body = nodes.tbody()
    for cells in rows:
        row = nodes.row()
        for entry in cells:
            row += entry
        body += row
    group += body
    return out


def _shown(value):
    if isinstance(value, tuple):
        return ",".join(value)
    if isinstance(value, bool):
        return str(value).lower()
    return "(none)" if value is None else str(value)


_TYPES = {1: "boolean", 2: "string", 3: "int", 5: "long", 6: "double", 7: "list"}


def _rows(kind):
    """(name, default, meaning) of a client's settings, or of minibroker's ("broker",
    "topic")."""
    if kind == "topic":
        from minibroker.topic_configs import TOPIC_CONFIGS

        def meaning(k):
            valid = f"; valid: {k.valid_values}" if k.valid_values else ""
            synonym = f"; broker default: {k.synonym}" if k.synonym else ""
            return f"{_TYPES[k.type]}{valid}{synonym}. {k.doc[0].upper()}{k.doc[1:]}."

        return [(k.name, k.default or '""', meaning(k)) for k in TOPIC_CONFIGS.values()]
    if kind == "broker":
        from minibroker.config import DEFAULTS

        return [(name, default, doc) for name, (default, _, doc) in DEFAULTS.items()]
    from kproto.config import CONFIGS

    return [(k.name, k.default_for(kind), k.doc) for k in CONFIGS.values() if kind in k.clients]


class ConfigTable(Directive):
    required_arguments = 1  # producer, consumer, admin, broker or topic

    def run(self):
        rows = [(cell(key, literal=True), cell(_shown(default)), cell(doc))
                for key, default, doc in _rows(self.arguments[0])]
        return [table(("Key", "Default", "Meaning"), (30, 20, 50), rows)]


def setup(app):
    app.add_directive("config-table", ConfigTable)
    return {"parallel_read_safe": True}
