"""The only module that speaks SQL: connection policy, migrations, one module per aggregate, the event
journal, backup, integrity checks and read-only inspection.

Rows leave the store as domain values: each row type has one decoder in its module (enums through
:mod:`~codeflux.store.decoding`, parsed structures instead of JSON text, domain id types), and a stored
value this codeflux does not know is a :class:`~codeflux.domain.errors.StoredValueUnknownError`, never a
silent guess. The record types callers name live in :mod:`codeflux.domain`.

May import: codeflux.domain, apsw, platformdirs and the standard library.
"""
