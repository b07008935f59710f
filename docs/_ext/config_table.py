"""``.. config-table:: producer``: the settings of one kind of client, from kproto.config.

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


class ConfigTable(Directive):
    required_arguments = 1  # producer, consumer or admin

    def run(self):
        from kproto.config import CONFIGS

        client = self.arguments[0]
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
        for key in CONFIGS.values():
            if client in key.clients:
                row = nodes.row()
                name = nodes.entry()
                name += nodes.paragraph("", "", nodes.literal(text=key.name))
                row += name
                row += _cell(_shown(key.default_for(client)))
                row += _cell(key.doc)
                body += row
        group += body
        return [table]


def setup(app):
    app.add_directive("config-table", ConfigTable)
    return {"parallel_read_safe": True}
