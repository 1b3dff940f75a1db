"""Write mdae_fmu/importers/terminals.json, the grammar's terminals as plain data for the
hand-written parser's lexer (`mdae_fmu.importers.terminal_table`), from lark's own tables.
Run it after editing modelica.lark (tests/importers/test_terminal_table.py fails until then):

    .venv/bin/python scripts/write_terminal_table.py
"""

from mdae_fmu.importers.flat_modelica import lalr_driver
from mdae_fmu.importers.terminal_table import TABLE, from_driver, grammar_digest, to_json

TABLE.write_text(to_json(from_driver(lalr_driver()), grammar_digest()), encoding="utf-8")
print(f"wrote {TABLE}")
