"""``.. metrics-table:: producer``: the metrics a client's ``metrics()`` provides
(kproto.metrics.PROVIDED), with their group and description.

The registry in code is the one source of truth; this directive renders it, so the guide
can never disagree with what the clients report.
"""

from docutils import nodes
from docutils.parsers.rst import Directive


def _cell(text, literal=False):
    entry = nodes.entry()
    entry += nodes.paragraph("", "", nodes.literal(text=text)) if literal else nodes.paragraph(text=text)
    return entry


class MetricsTable(Directive):
    required_arguments = 1  # producer, consumer or admin

    def run(self):
        from kproto.metrics import PROVIDED

        table = nodes.table()
        group = nodes.tgroup(cols=3)
        table += group
        for width in (30, 25, 45):
            group += nodes.colspec(colwidth=width)
        head = nodes.thead()
        row = nodes.row()
        for title in ("Group", "Name", "Meaning"):
            row += _cell(title)
        head += row
        group += head
        body = nodes.tbody()
        for name in PROVIDED[self.arguments[0]]:
            row = nodes.row()
            row += _cell(name.group, literal=True)
            row += _cell(name.name, literal=True)
            row += _cell(name.description)
            body += row
        group += body
        return [table]


def setup(app):
    app.add_directive("metrics-table", MetricsTable)
    return {"parallel_read_safe": True}
