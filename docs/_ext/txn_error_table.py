"""``.. txn-error-table::``: what each broker error means in each request of a transactional
producer (retried inside, abortable, fatal; KIP-691), rendered from
:data:`kproto.producer.idempotence.TXN_ERRORS`, the table the producer itself follows, so
the guide cannot disagree with it.
"""

from docutils import nodes
from docutils.parsers.rst import Directive


def _cell(text):
    entry = nodes.entry()
    entry += nodes.paragraph(text=text)
    return entry


def _rows():
    from kproto.producer.idempotence import TXN_ERRORS, TxnStep

    kinds = {TxnStep.RETRY: 0, TxnStep.FIND_COORDINATOR: 0, TxnStep.ABORTABLE: 1, TxnStep.BUMP: 2, TxnStep.FATAL: 3}
    rows = []
    for request, (rules, otherwise) in TXN_ERRORS.items():
        columns = [[], [], [], []]
        for error, step in rules.items():
            columns[kinds[step]].append(error.name + (" (coordinator looked up again)"
                                                      if step is TxnStep.FIND_COORDINATOR else ""))
        columns[kinds[otherwise]].append("any other error")
        rows.append((request, *(", ".join(c) or "-" for c in columns)))
    return rows


class TxnErrorTable(Directive):
    def run(self):
        table = nodes.table()
        group = nodes.tgroup(cols=5)
        table += group
        for width in (14, 26, 20, 20, 20):
            group += nodes.colspec(colwidth=width)
        head = nodes.thead()
        row = nodes.row()
        for title in ("Request", "Retried inside", "Abortable", "Abortable if the epoch can be bumped "
                      "(KIP-360), else fatal", "Fatal"):
            row += _cell(title)
        head += row
        group += head
        body = nodes.tbody()
        for request, *columns in _rows():
            row = nodes.row()
            name = nodes.entry()
            name += nodes.paragraph("", "", nodes.literal(text=request))
            row += name
            for text in columns:
                row += _cell(text)
            body += row
        group += body
        return [table]


def setup(app):
    app.add_directive("txn-error-table", TxnErrorTable)
    return {"parallel_read_safe": True}
