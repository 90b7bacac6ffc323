"""The one error tree of codeflux.

Every error codeflux raises on purpose derives from :class:`CodefluxError`. Each family tells the
boundary (CLI exit code, RPC status) how to present it; messages are single-line, safe to show, and
never hold secrets, SQL or stack traces. Foreign exceptions (apsw, keyring, pygit2, httpx) are mapped
to these classes by the adapter that met them and chained with ``from``.

    CodefluxError
    ├── UsageError                       the caller asked for something malformed          (exit 2)
    │   ├── OutputExistsError            an output path already exists; never overwritten  (exit 2)
    │   ├── InvalidValueError            a domain value (id, capability need, operation) is malformed
    │   ├── ToolRequestInvalidError      unknown tool/argument, missing, wrong type or too large
    │   └── UnsafeArgumentError          a NUL byte or non-Unicode text in an operation; refused
    ├── PrerequisiteError                something needed is missing, or state refuses     (exit 3)
    │   ├── DataDirectoryError           data directory unusable (a file, not writable)
    │   ├── DatabaseMissingError         no database has been created yet
    │   ├── DatabaseNewerError           the database was written by a newer codeflux
    │   ├── DatabaseNeedsMigrationError  the database is older; it must be migrated first
    │   ├── MigrationFailedError         a migration failed or was interrupted; restored from backup
    │   ├── MigrationLockedError         another process is migrating this database
    │   ├── MigrationChecksumError       an applied migration differs from the shipped file
    │   ├── CredentialStoreUnavailableError  no usable OS credential store
    │   └── CredentialNotFoundError      no credential stored for that provider
    ├── DecisionNeededError              a person must decide and prompting is off         (exit 4)
    ├── StalledError                     retries are exhausted / circuit broken            (exit 5)
    ├── NotFoundError                    an entity of a kind with an id does not exist     (exit 1)
    ├── ConflictError                    the request conflicts with recorded state         (exit 1)
    │   ├── StaleRevisionError           compare-and-set on an aggregate revision failed
    │   └── IdempotencyConflictError     same idempotency key, different request
    ├── TransitionNotAllowedError        a state machine refused a transition              (exit 1)
    ├── SecretLeakError                  output would have carried a secret; nothing written (exit 1)
    ├── OperationFailedError             a valid request failed for a stated reason        (exit 1)
    │   └── IntegrityCheckFailedError    integrity-check found problems; the findings are printed
    └── StoreError                       the database could not do what was asked          (exit 1)
        ├── StoreBusyError               another writer held the database past the timeout
        ├── StoreCorruptError            the file is not a sound SQLite database
        ├── StoreUnavailableError        the file cannot be opened, read or written
        ├── StorePolicyError             a connection setting did not read back as required
        └── StoreClosedError             the database handle was used after close()
"""

from __future__ import annotations

__all__ = [
    "CodefluxError",
    "ConflictError",
    "CredentialNotFoundError",
    "CredentialStoreUnavailableError",
    "DataDirectoryError",
    "DatabaseMissingError",
    "DatabaseNeedsMigrationError",
    "DatabaseNewerError",
    "DecisionNeededError",
    "IdempotencyConflictError",
    "IntegrityCheckFailedError",
    "InvalidValueError",
    "MigrationChecksumError",
    "MigrationFailedError",
    "MigrationLockedError",
    "NotFoundError",
    "OperationFailedError",
    "OutputExistsError",
    "PrerequisiteError",
    "SecretLeakError",
    "StaleRevisionError",
    "StalledError",
    "StoreBusyError",
    "StoreClosedError",
    "StoreCorruptError",
    "StoreError",
    "StorePolicyError",
    "StoreUnavailableError",
    "ToolRequestInvalidError",
    "TransitionNotAllowedError",
    "UnsafeArgumentError",
    "UsageError",
]


class CodefluxError(Exception):
    """Root of every error codeflux raises on purpose. ``str(err)`` is safe to show a user."""


class UsageError(CodefluxError):
    """The request itself is malformed: a missing, empty or invalid argument."""


class OutputExistsError(UsageError):
    """An output path already exists; codeflux never overwrites a file it was asked to create."""

    def __init__(self, *, what: str) -> None:
        super().__init__(f"{what} already exists; choose a path that does not exist yet")
        self.what = what


class InvalidValueError(UsageError):
    """A domain value could not be built: ``kind`` names the value, ``reason`` what is wrong with it."""

    def __init__(self, *, kind: str, reason: str) -> None:
        super().__init__(f"invalid {kind}: {reason}")
        self.kind = kind
        self.reason = reason


class ToolRequestInvalidError(UsageError):
    """A tool request does not fit its descriptor; nothing was classified or run.

    ``problem`` is one of ``unknown-tool``, ``unknown-argument``, ``missing-argument``, ``wrong-type``,
    ``too-large``, ``invalid-value``; ``argument`` names the offending argument when there is one.
    Argument values are never echoed (they may hold file contents).
    """

    def __init__(self, *, tool: str, argument: str | None, problem: str, detail: str) -> None:
        where = f"{tool}" if argument is None else f"{tool}.{argument}"
        super().__init__(f"tool request {where}: {problem}: {detail}")
        self.tool = tool
        self.argument = argument
        self.problem = problem
        self.detail = detail


class UnsafeArgumentError(UsageError):
    """A value in an operation carries a NUL byte or is not valid Unicode text; refused before identity.

    ``field`` says where (``argv[2]``, ``env.PATH``, ``cwd``); the value itself is never echoed.
    """

    def __init__(self, *, field: str, reason: str) -> None:
        super().__init__(f"{field} {reason}; refused")
        self.field = field
        self.reason = reason


class PrerequisiteError(CodefluxError):
    """Something the request needs is missing or refuses; retrying unchanged will not help."""


class DataDirectoryError(PrerequisiteError):
    """The data directory cannot be used (it is a file, or it is not writable)."""


class DatabaseMissingError(PrerequisiteError):
    """No database exists yet at the data directory."""


class DatabaseNewerError(PrerequisiteError):
    """The database was written by a newer codeflux; this one must not touch it."""

    def __init__(self, *, database_version: int, supported_version: int) -> None:
        super().__init__(
            f"the database has schema version {database_version} but this codeflux supports up to "
            f"{supported_version}; it needs a newer codeflux"
        )
        self.database_version = database_version
        self.supported_version = supported_version


class DatabaseNeedsMigrationError(PrerequisiteError):
    """The database is older than this codeflux and must be migrated before this command."""

    def __init__(self, *, database_version: int, supported_version: int) -> None:
        super().__init__(
            f"the database has schema version {database_version}; this codeflux needs "
            f"{supported_version}; run `codeflux migrate` (it takes a backup first)"
        )
        self.database_version = database_version
        self.supported_version = supported_version


class MigrationFailedError(PrerequisiteError):
    """A migration failed or was interrupted; the database was restored from the named backup."""

    def __init__(self, *, version: int, reason: str, backup_path: str | None) -> None:
        where = f"; the database was restored from {backup_path}" if backup_path else ""
        super().__init__(f"migration {version:06d} did not complete ({reason}){where}")
        self.version = version
        self.reason = reason
        self.backup_path = backup_path


class MigrationLockedError(PrerequisiteError):
    """Another process holds the migration lock of this database."""


class MigrationChecksumError(PrerequisiteError):
    """An applied migration's recorded sha256 differs from the file this codeflux ships."""

    def __init__(self, *, version: int) -> None:
        super().__init__(
            f"migration {version:06d} was applied from different content than this codeflux ships; "
            "restore a backup made by this version or use the codeflux that created the database"
        )
        self.version = version


class CredentialStoreUnavailableError(PrerequisiteError):
    """No usable OS credential store; codeflux never falls back to storing keys elsewhere."""


class CredentialNotFoundError(PrerequisiteError):
    """No credential is stored for the named provider."""

    def __init__(self, *, provider: str) -> None:
        super().__init__(
            f"no credential is stored for provider {provider}; "
            f"run `codeflux provider set --name {provider}`"
        )
        self.provider = provider


class DecisionNeededError(CodefluxError):
    """A person has to decide (approval, plan approval, budget) and prompting is off."""


class StalledError(CodefluxError):
    """The work cannot make progress: the ladder is exhausted or a circuit is broken."""


class NotFoundError(CodefluxError):
    """An entity of ``kind`` with ``entity_id`` does not exist."""

    def __init__(self, *, kind: str, entity_id: str) -> None:
        super().__init__(f"no {kind} with id {entity_id}")
        self.kind = kind
        self.entity_id = entity_id


class ConflictError(CodefluxError):
    """The request conflicts with what is already recorded."""


class StaleRevisionError(ConflictError):
    """A compare-and-set on an aggregate's revision found another revision."""

    def __init__(self, *, kind: str, entity_id: str, expected: int, actual: int | None) -> None:
        found = "it no longer exists" if actual is None else f"it is at revision {actual}"
        super().__init__(f"{kind} {entity_id} changed: expected revision {expected}, {found}")
        self.kind = kind
        self.entity_id = entity_id
        self.expected = expected
        self.actual = actual


class IdempotencyConflictError(ConflictError):
    """An idempotency key was reused for a different request."""

    def __init__(self, *, scope: str, key: str) -> None:
        super().__init__(f"idempotency key {key!r} in {scope} was already used for a different request")
        self.scope = scope
        self.key = key


class TransitionNotAllowedError(CodefluxError):
    """A state machine refused a transition; the error knows the machine and both states."""

    def __init__(self, *, machine: str, from_state: str, to_state: str) -> None:
        super().__init__(f"{machine} cannot go from {from_state} to {to_state}")
        self.machine = machine
        self.from_state = from_state
        self.to_state = to_state


class SecretLeakError(CodefluxError):
    """An output would have contained a secret; nothing was written."""


class OperationFailedError(CodefluxError):
    """A valid request failed for the stated reason."""


class IntegrityCheckFailedError(OperationFailedError):
    """The integrity check ran and found ``finding_count`` problems (each one printed before this)."""

    def __init__(self, *, finding_count: int) -> None:
        noun = "problem" if finding_count == 1 else "problems"
        super().__init__(
            f"found {finding_count} {noun}; keep a copy of the database file before changing anything, "
            "then restore the newest good backup"
        )
        self.finding_count = finding_count


class StoreError(CodefluxError):
    """The database could not do what was asked."""


class StoreBusyError(StoreError):
    """Another writer held the database longer than the busy timeout."""


class StoreCorruptError(StoreError):
    """The file is not a sound SQLite database."""


class StoreUnavailableError(StoreError):
    """The database file cannot be opened, read or written (permissions, I/O, read-only media)."""


class StorePolicyError(StoreError):
    """A required connection setting (WAL, FULL sync, foreign keys, …) did not read back as set."""


class StoreClosedError(StoreError):
    """The database handle was used after it was closed."""
