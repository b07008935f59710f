"""``.. config-table:: producer``: the settings of a client (kproto.config) or of
minibroker (``broker``: minibroker.config).

The table in code is the one source of truth; this directive renders it, so the
reference can never disagree with what the clients accept.
"""

from docutils import nodes
from docutils.parsers.rst import Directive


def _cell(text):
    entry = nodes.entry()
    entry += nodes.paragraph(text=text)
    return entry


def _shown(value):
    if isinstance(value, tuple):
        return ",".join(value)
    if isinstance(value, bool):
        return str(value).lower()
    return "(none)" if value is None else str(value)


def _rows(kind):
    """(name, default, meaning) of a client's settings, or of minibroker's ("broker")."""
    if kind == "broker":
        from minibroker.config import DEFAULTS

        return [(name, default, doc) for name, (default, _, doc) in DEFAULTS.items()]
    from kproto.config import CONFIGS

    return [(k.name, k.default_for(kind), k.doc) for k in CONFIGS.values() if kind in k.clients]


class ConfigTable(Directive):
    required_arguments = 1  # producer, consumer, admin or broker

    def run(self):
        kind = self.arguments[0]
        table = nodes.table()
        group = nodes.tgroup(cols=3)
        table += group
        for width in (30, 20, 50):
            group += nodes.colspec(colwidth=width)
        head = nodes.thead()
        row = nodes.row()
        for title in ("Key", "Default", "Meaning"):
            row += _cell(title)
        head += row
        group += head
        body = nodes.tbody()
        for key, default, doc in _rows(kind):
            row = nodes.row()
            name = nodes.entry()
            name += nodes.paragraph("", "", nodes.literal(text=key))
            row += name
            row += _cell(_shown(default))
            row += _cell(doc)
            body += row
        group += body
        return [table]


def setup(app):
    app.add_directive("config-table", ConfigTable)
    return {"parallel_read_safe": True}
