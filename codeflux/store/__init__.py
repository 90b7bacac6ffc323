"""The only module that speaks SQL: connection policy, migrations, one module per aggregate, the event
journal, backup, integrity checks and read-only inspection.

May import: codeflux.domain, apsw, platformdirs and the standard library.
"""
