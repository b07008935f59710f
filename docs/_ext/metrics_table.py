"""``.. metrics-table:: producer``: the metrics a client's ``metrics()`` provides
(kproto.metrics.PROVIDED), with their group and description.

The registry in code is the one source of truth; this directive renders it, so the guide
can never disagree with what the clients report.
"""

from config_table import cell, table  # docs/_ext is on sys.path (conf.py)
from docutils.parsers.rst import Directive


class MetricsTable(Directive):
    required_arguments = 1  # producer, consumer or admin

    def run(self):
        from kproto.metrics import PROVIDED

        rows = [(cell(name.group, literal=True), cell(name.name, literal=True), cell(name.description))
                for name in PROVIDED[self.arguments[0]]]
        return [table(("Group", "Name", "Meaning"), (30, 25, 45), rows)]


def setup(app):
    app.add_directive("metrics-table", MetricsTable)
    return {"parallel_read_safe": True}
