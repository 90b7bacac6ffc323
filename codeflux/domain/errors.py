"""The one error tree of codeflux.

Every error codeflux raises on purpose derives from :class:`CodefluxError`. Each family tells the
boundary (CLI exit code, RPC status) how to present it; messages are single-line, safe to show, and
never hold secrets, SQL or stack traces. Foreign exceptions (apsw, keyring, pygit2, httpx) are mapped
to these classes by the adapter that met them and chained with ``from``.

    CodefluxError
    ├── UsageError                       the caller asked for something malformed          (exit 2)
    │   ├── OutputExistsError            an output path already exists; never overwritten  (exit 2)
    │   ├── InvalidValueError            a domain value (id, capability need, operation) is malformed
    │   │   ├── InexactNumberError       a float or bool offered where money or a price must be exact
    │   │   └── CurrencyMismatchError    money in two currencies added, subtracted or compared
    │   ├── ToolRequestInvalidError      unknown tool/argument, missing, wrong type or too large
    │   ├── UnsafeArgumentError          a NUL byte or non-Unicode text in an operation; refused
    │   ├── PlanInvalidError             a plan does not fit the plan schema (fields, types, sizes, paths)
    │   ├── EndpointRefusedError         a provider base URL breaks the endpoint rules; never used
    │   └── PathRefusedError             a worktree path is absolute, has '..', '.git', a symlink…
    │       └── PathNotFoundError        a worktree path that must exist does not
    ├── PrerequisiteError                something needed is missing, or state refuses     (exit 3)
    │   ├── DataDirectoryError           data directory unusable (a file, not writable)
    │   ├── DatabaseMissingError         no database has been created yet
    │   ├── DatabaseNewerError           the database was written by a newer codeflux
    │   ├── DatabaseNeedsMigrationError  the database is older; it must be migrated first
    │   ├── MigrationFailedError         a migration failed or was interrupted; restored from backup
    │   ├── MigrationLockedError         another process is migrating this database
    │   ├── CoordinatorRunningError      another codeflux coordinator serves this data directory
    │   ├── MigrationChecksumError       an applied migration differs from the shipped file
    │   ├── CredentialStoreUnavailableError  no usable OS credential store
    │   ├── CredentialNotFoundError      no credential stored for that provider
    │   ├── RepositoryNotUsableError     not a git repository with a commit (the error says which)
    │   ├── WorktreeNotUsableError       a task worktree is missing, foreign, off its branch or base
    │   ├── CheckoutNotCleanError        the user's checkout has uncommitted changes or an operation
    │   ├── DetachedHeadError            the user's checkout has no current branch to land a change on
    │   ├── GitLockHeldError             another git process holds a lock the landing needs; nothing changed
    │   ├── LandingChangedSinceError     an interrupted accept meets paths changed since; named, nothing changed
    │   ├── ModelCallRefusedError        the task's state lets no model call start (paused, ended)
    │   ├── TaskLimitReachedError        4 tasks are active, or one already holds the repository
    │   ├── RepositoryChangedError       the repository is not the one the task was created for
    │   ├── TaskActionUnavailableError   the task's state does not offer that action (says why)
    │   ├── OutcomeUnresolvedError       an effect's outcome is unknown; record what happened first
    │   ├── ConfinementUnavailableError  the forced confinement mode cannot run on this machine
    │   ├── UnconfinedPreapprovalError   headless --allow of programs with no OS box, without the opt-in
    │   └── AuthorityRefusedError        the authority engine refused the operation; it did not run
    │       ├── CapabilityDeniedError    a recorded denial covers a capability the request needs
    │       ├── TaskInactiveError        the task is not running or validating; only reads may run
    │       ├── UnconfirmedDecisionError a browser decision without its card's confirmation value
    │       ├── UnconfinedStandingApprovalError  programs run unconfined: allow once, or opt in
    │       └── RepositoryApprovalRefusedError  allow-for-repository is not possible here (says why)
    ├── DecisionNeededError              a person must decide and prompting is off         (exit 4)
    │   ├── AcceptanceExampleNeededError  the plan has no executable example; ask for one first
    │   ├── ClarificationNeededError     the plan has open questions; answer them first (policy ask)
    │   ├── UncoveredExampleError        the plan's trace maps no step to an acceptance example
    │   ├── ApprovalRequiredError        the tool request waits for allow-once/allow-for-task/deny
    │   ├── BudgetExhaustedError         the task's hard budget is reached; it is paused until raised
    │   ├── BudgetDecisionNeededError    an overrun, unknown charge, unknown price or no budget
    │   ├── EndpointApprovalRequiredError  a non-default provider base URL is not approved yet
    │   ├── DirtyTreeNotAcknowledgedError  uncommitted changes not acknowledged (or changed since)
    │   ├── PlanNotApprovedError         the task's current plan revision has no approval yet
    │   ├── RungApprovalRequiredError    the ladder rung capable:max asks before its first call
│   └── WatchNotApprovedError        the watched command has no repository approval; nothing ran
    ├── StalledError                     retries are exhausted / circuit broken            (exit 5)
    ├── NotFoundError                    an entity of a kind with an id does not exist     (exit 1)
    ├── ConflictError                    the request conflicts with recorded state         (exit 1)
    │   ├── StaleRevisionError           compare-and-set on an aggregate revision failed
    │   ├── IdempotencyConflictError     same idempotency key, different request
    │   ├── PlanChangedError             the plan revision or its hash is not the current one
    │   ├── StageAlreadyRecordedError    the stage already has its outcome in this run's ledger
    │   ├── DiffChangedError             the task diff changed since it was reviewed
    │   ├── EvidenceOnOtherDiffError     the checks' evidence was gathered on another diff than the one accepted
    │   ├── DecisionAlreadyRecordedError  the tool request was already decided differently
    │   └── OutcomeAlreadyRecordedError  what happened to that effect was already recorded
    ├── TransitionNotAllowedError        a state machine refused a transition              (exit 1)
    ├── SecretLeakError                  output would have carried a secret; nothing written (exit 1)
    ├── OperationFailedError             a valid request failed for a stated reason        (exit 1)
    │   ├── IntegrityCheckFailedError    integrity-check found problems; the findings are printed
    │   ├── ToolFailedError              a tool met a stated failure (no match, hash mismatch, …)
    │   ├── GitOperationFailedError      git (libgit2) could not do what was asked
    │   ├── WorkerStartError             a worker process did not start or announce readiness
    │   ├── WorkerClosedError            a worker handle was used after stop()
│   └── PlannerFailedError           the planner gave no valid plan in three tries, or hit its bound
    ├── ProviderError                    a model provider call gave no usable reply         (exit 1)
    │   ├── ProviderRejectedError        the provider refused the request (4xx: key, model, body)
    │   │   └── ContextTooLongError      … because the request does not fit the model's context window
    │   │       └── ContextWindowFullError   not sent: the estimated input leaves too little of the window
    │   ├── ProviderUnavailableError     unreachable, rate limited or failing (429/5xx) after retries
    │   ├── ProviderReplyInvalidError    the reply was malformed, oversize or a redirect; refused
    │   ├── ProviderRequestInvalidError  a request the provider would reject was not sent (empty turn)
    │   ├── ProviderOutcomeUnknownError  the request may have been processed; no complete reply came
    │   └── ScriptExhaustedError         the scripted provider (not a model) has no turn left
    └── StoreError                       the database could not do what was asked          (exit 1)
        ├── StoreBusyError               another writer held the database past the timeout
        │   └── WriteLockHeldError       … past a run's write patience (60 s); not written (exit 3)
        ├── StoreCorruptError            the file is not a sound SQLite database
        │   └── StoredValueUnknownError  a stored value is not one this codeflux knows
        ├── StoreUnavailableError        the file cannot be opened, read or written
        ├── StorePolicyError             a connection setting did not read back as required
        └── StoreClosedError             the database handle was used after close()
"""

from __future__ import annotations

import shlex
from typing import Final

__all__ = [
    "INTERNAL_ERROR_MESSAGE",
    "AcceptanceExampleNeededError",
    "ApprovalRequiredError",
    "AuthorityRefusedError",
    "BudgetDecisionNeededError",
    "BudgetExhaustedError",
    "CapabilityDeniedError",
    "CheckoutNotCleanError",
    "ClarificationNeededError",
    "CodefluxError",
    "ConfinementUnavailableError",
    "ConflictError",
    "ContextTooLongError",
    "ContextWindowFullError",
    "CoordinatorRunningError",
    "CredentialNotFoundError",
    "CredentialStoreUnavailableError",
    "CurrencyMismatchError",
    "DataDirectoryError",
    "DatabaseMissingError",
    "DatabaseNeedsMigrationError",
    "DatabaseNewerError",
    "DecisionAlreadyRecordedError",
    "DecisionNeededError",
    "DetachedHeadError",
    "DiffChangedError",
    "DirtyTreeNotAcknowledgedError",
    "EndpointApprovalRequiredError",
    "EndpointRefusedError",
    "EvidenceOnOtherDiffError",
    "GitLockHeldError",
    "GitOperationFailedError",
    "IdempotencyConflictError",
    "InexactNumberError",
    "IntegrityCheckFailedError",
    "InvalidValueError",
    "LandingChangedSinceError",
    "MigrationChecksumError",
    "MigrationFailedError",
    "MigrationLockedError",
    "ModelCallRefusedError",
    "NotFoundError",
    "OperationFailedError",
    "OutcomeAlreadyRecordedError",
    "OutcomeUnresolvedError",
    "OutputExistsError",
    "PathNotFoundError",
    "PathRefusedError",
    "PlanChangedError",
    "PlanInvalidError",
    "PlanNotApprovedError",
    "PlannerFailedError",
    "PrerequisiteError",
    "ProviderError",
    "ProviderOutcomeUnknownError",
    "ProviderRejectedError",
    "ProviderReplyInvalidError",
    "ProviderRequestInvalidError",
    "ProviderUnavailableError",
    "RepositoryApprovalRefusedError",
    "RepositoryChangedError",
    "RepositoryNotUsableError",
    "RungApprovalRequiredError",
    "ScriptExhaustedError",
    "SecretLeakError",
    "StageAlreadyRecordedError",
    "StaleRevisionError",
    "StalledError",
    "StoreBusyError",
    "StoreClosedError",
    "StoreCorruptError",
    "StoreError",
    "StorePolicyError",
    "StoreUnavailableError",
    "StoredValueUnknownError",
    "TaskActionUnavailableError",
    "TaskInactiveError",
    "TaskLimitReachedError",
    "ToolFailedError",
    "ToolRequestInvalidError",
    "TransitionNotAllowedError",
    "UnconfinedPreapprovalError",
    "UnconfinedStandingApprovalError",
    "UnconfirmedDecisionError",
    "UncoveredExampleError",
    "UnsafeArgumentError",
    "UsageError",
    "WatchNotApprovedError",
    "WorkerClosedError",
    "WorkerStartError",
    "WorktreeNotUsableError",
    "WriteLockHeldError",
    "safe_error_message",
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


class InexactNumberError(InvalidValueError):
    """A float or a bool was offered where money, a rate or a token count must be exact; refused.

    ``kind`` names the value (``money``, ``price``, ``scale factor``), ``got`` the offered type. Exact
    inputs are integers, :class:`fractions.Fraction` values or decimal strings such as ``"3.00"``.
    """

    def __init__(self, *, kind: str, got: str) -> None:
        super().__init__(
            kind=kind,
            reason=f"a {got} is not exact; give an integer, a Fraction or a decimal string such as '3.00'",
        )
        self.got = got


class CurrencyMismatchError(InvalidValueError):
    """Two amounts in different currencies met in one operation (``+``, ``-``, a comparison, a range)."""

    def __init__(self, *, operation: str, left: str, right: str) -> None:
        super().__init__(kind="money", reason=f"cannot {operation} {left} and {right} amounts")
        self.operation = operation
        self.left = left
        self.right = right


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


class PathRefusedError(UsageError):
    """A worktree-relative path was refused before anything was touched.

    ``reason`` says why in words (``contains a '..' component``, ``passes through a symbolic link``);
    ``failure_kind`` is the stable tool-result reason. The path itself is never echoed.
    """

    failure_kind = "path-refused"

    def __init__(self, *, reason: str) -> None:
        super().__init__(f"path refused: {reason}")
        self.reason = reason


class PathNotFoundError(PathRefusedError):
    """A worktree-relative path that had to exist does not (or the worktree itself is gone)."""

    failure_kind = "not-found"

    def __init__(self, *, reason: str = "it does not exist") -> None:
        super().__init__(reason=reason)


class PlanInvalidError(UsageError):
    """A plan (from a model, a person or a script) does not fit the plan schema; nothing was recorded.

    ``problems`` lists each problem as ``location: what is wrong`` (the message shows the first few);
    the offered values are never echoed.
    """

    _SHOWN = 3

    def __init__(self, *, problems: tuple[str, ...]) -> None:
        shown = "; ".join(problems[: self._SHOWN]) + ("; …" if len(problems) > self._SHOWN else "")
        super().__init__(f"the plan was refused: {shown or 'it does not fit the plan schema'}")
        self.problems = problems


class EndpointRefusedError(UsageError):
    """A provider base URL breaks the endpoint rules (scheme, loopback-only http, userinfo, query, fragment).

    The URL itself is never echoed: userinfo or a query string may carry a credential.
    """

    def __init__(self, *, provider: str, reason: str) -> None:
        super().__init__(f"the {provider} endpoint is refused: {reason}")
        self.provider = provider
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


class CoordinatorRunningError(PrerequisiteError):
    """Another ``codeflux start`` holds the instance lock of this data directory (one coordinator per database)."""

    def __init__(self, *, holder: str) -> None:
        super().__init__(f"another codeflux coordinator already serves this data directory ({holder}); "
                         "use that one, or stop it first")
        self.holder = holder


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


class RepositoryNotUsableError(PrerequisiteError):
    """``path`` cannot be opened as a repository; ``problem`` says which requirement failed.

    ``problem`` is one of ``not-a-directory``, ``not-a-repository``, ``bare``, ``no-commits``,
    ``unreadable``; ``detail`` says what to do in words.
    """

    def __init__(self, *, path: str, problem: str, detail: str) -> None:
        super().__init__(f"{path} cannot be used as a repository ({problem}): {detail}")
        self.path = path
        self.problem = problem
        self.detail = detail


class WorktreeNotUsableError(PrerequisiteError):
    """Task ``task_id``'s worktree cannot be created or used; ``problem`` names the failed check.

    ``problem`` is one of ``missing``, ``path-exists``, ``not-a-worktree``, ``foreign-repository``,
    ``wrong-branch``, ``not-descended-from-base``, ``branch-exists``, ``name-taken``, ``base-missing``,
    ``overlaps-repository``. Nothing was edited or diffed.
    """

    def __init__(self, *, task_id: str, problem: str, detail: str) -> None:
        super().__init__(f"the worktree of task {task_id} cannot be used ({problem}): {detail}")
        self.task_id = task_id
        self.problem = problem
        self.detail = detail


class CheckoutNotCleanError(PrerequisiteError):
    """The user's checkout cannot take a change: uncommitted ``paths`` and/or in-progress ``operations``.

    ``paths`` lists every path in the way, sorted (the message shows the first few); ``operations``
    lists git operations in progress (``merge``, ``rebase``, …). Nothing was changed.
    """

    _SHOWN = 5

    def __init__(self, *, paths: tuple[str, ...], operations: tuple[str, ...] = ()) -> None:
        problems = []
        if operations:
            problems.append(f"a {' and a '.join(operations)} in progress")
        if paths:
            shown = ", ".join(paths[: self._SHOWN]) + (", …" if len(paths) > self._SHOWN else "")
            noun = "path" if len(paths) == 1 else "paths"
            problems.append(f"{len(paths)} {noun} with changes in the way ({shown})")
        advice = "commit, stash or finish them" if paths else f"finish or abort the {' and the '.join(operations)}"
        super().__init__(f"the checkout has {' and '.join(problems) or 'changes'}; {advice}, then try again")
        self.paths = paths
        self.operations = operations


class DetachedHeadError(PrerequisiteError):
    """The user's checkout is on a detached HEAD (at ``head``), so there is no branch to land a change on."""

    def __init__(self, *, head: str) -> None:
        super().__init__(
            f"the checkout has a detached HEAD (at {head[:12]}); check out the branch the change should "
            "land on, then try again"
        )
        self.head = head


class GitLockHeldError(PrerequisiteError):
    """Another git process holds ``lock`` (an IDE, a shell prompt running ``git status``, ...); codeflux waited
    ``waited_seconds`` for it and changed nothing."""

    def __init__(self, *, lock: str, waited_seconds: int) -> None:
        waited = f" (waited {waited_seconds} s)" if waited_seconds else ""
        super().__init__(
            f"another git process holds {lock}{waited}; nothing was changed — let it finish "
            "(or remove the lock if no git process runs), then try again"
        )
        self.lock = lock
        self.waited_seconds = waited_seconds


class LandingChangedSinceError(PrerequisiteError):
    """An interrupted accept cannot be finished or rolled back: ``paths`` hold content that is neither the
    branch's nor the accepted one (changed after the interruption), or the branch moved meanwhile."""

    _SHOWN = 5

    def __init__(self, *, paths: tuple[str, ...], branch: str) -> None:
        shown = ", ".join(paths[: self._SHOWN]) + (", …" if len(paths) > self._SHOWN else "")
        super().__init__(
            f"an interrupted accept on {branch.removeprefix('refs/heads/')} cannot be rolled back: {shown} changed "
            "after it was interrupted (neither the old nor the accepted content); keep your change elsewhere and "
            "restore those paths with `git checkout -- PATH`, then try again"
        )
        self.paths = paths
        self.branch = branch


class AuthorityRefusedError(PrerequisiteError):
    """The authority engine refused a tool request; nothing ran. ``request_id`` names the request."""

    def __init__(self, message: str, *, request_id: str) -> None:
        super().__init__(message)
        self.request_id = request_id


class CapabilityDeniedError(AuthorityRefusedError):
    """A recorded denial (``denial_id``) covers ``need``, a capability the request needs."""

    def __init__(self, *, request_id: str, need: str, denial_id: str) -> None:
        super().__init__(
            f"tool request {request_id} needs {need}, which was denied for this task ({denial_id})",
            request_id=request_id,
        )
        self.need = need
        self.denial_id = denial_id


class ConfinementUnavailableError(PrerequisiteError):
    """The confinement ``mode`` that was asked for cannot run here (``reason`` says why and how to fix it)."""

    def __init__(self, *, mode: str, reason: str) -> None:
        super().__init__(f"confinement {mode} is not available on this machine: {reason}")
        self.mode = mode
        self.reason = reason


class UnconfinedStandingApprovalError(AuthorityRefusedError):
    """Commands run unconfined here, so a program may only be allowed once at a time without an opt-in."""

    def __init__(self, *, request_id: str) -> None:
        super().__init__(
            f"tool request {request_id} runs a program, and this machine cannot confine programs "
            "(see `codeflux doctor`): allow it once instead (each run asks again)",
            request_id=request_id,
        )


class RepositoryApprovalRefusedError(AuthorityRefusedError):
    """"Allow for this repository" is not possible for this request; ``why`` says why (no OS box, no
    recorded repository)."""

    def __init__(self, *, request_id: str, why: str) -> None:
        super().__init__(f"tool request {request_id} cannot be allowed for the repository: {why}",
                         request_id=request_id)
        self.why = why


class UnconfinedPreapprovalError(PrerequisiteError):
    """A headless run pre-approves programs on a machine that cannot confine them, without the opt-in."""

    def __init__(self, *, count: int) -> None:
        super().__init__(
            f"--allow pre-approves {count} program(s), and this machine cannot confine programs (see `codeflux "
            "doctor`): add --allow-unconfined to run them with no OS box anyway, or decide each one yourself"
        )
        self.count = count


class TaskInactiveError(AuthorityRefusedError):
    """The task is in ``state``, where only reads inside the worktree may run."""

    def __init__(self, *, request_id: str, task_id: str, state: str) -> None:
        super().__init__(
            f"tool request {request_id} was refused: task {task_id} is {state}; only reads run "
            "unless the task is running or validating",
            request_id=request_id,
        )
        self.task_id = task_id
        self.state = state


class UnconfirmedDecisionError(AuthorityRefusedError):
    """A decision on the browser connection did not carry the confirmation value of the card it answers
    (``reason``: "missing" or "unknown" — not issued for that card, or already used); nothing was decided."""

    def __init__(self, *, decision: str, subject: str, reason: str) -> None:
        super().__init__(
            f"this {decision} decision was not made: it must answer the card codeflux is showing now "
            f"(its confirmation is {reason}); reload the task and decide again",
            request_id=subject,
        )
        self.decision = decision
        self.reason = reason


class ModelCallRefusedError(PrerequisiteError):
    """Task ``task_id`` is ``state``, where no model call may start (paused, waiting for a person, ended)."""

    def __init__(self, *, task_id: str, state: str) -> None:
        super().__init__(
            f"task {task_id} is {state}; a model call starts only while it is forecasting, running or validating"
        )
        self.task_id = task_id
        self.state = state


class TaskLimitReachedError(PrerequisiteError):
    """Task ``task_id`` cannot become active; nothing changed.

    ``limit`` is ``active-tasks`` (``holders`` are the ``maximum`` tasks already active) or ``repository``
    (``holders`` is the one task already active in the same repository).
    """

    def __init__(self, *, task_id: str, limit: str, holders: tuple[str, ...], maximum: int) -> None:
        listed = ", ".join(holders)
        if limit == "repository":
            text = (f"task {task_id} cannot start: task {listed} is already active in the same repository; "
                    "pause, finish or cancel it first")
        else:
            text = (f"task {task_id} cannot start: {maximum} tasks are already active ({listed}); "
                    "pause, finish or cancel one of them first")
        super().__init__(text)
        self.task_id = task_id
        self.limit = limit
        self.holders = holders
        self.maximum = maximum


class RepositoryChangedError(PrerequisiteError):
    """The repository at ``path`` is not the one task ``task_id`` was created for: its identity (location
    and first commits) is ``found``, the task's is ``expected``. Nothing changed."""

    def __init__(self, *, task_id: str, path: str, expected: str, found: str) -> None:
        super().__init__(
            f"{path} is not the repository task {task_id} was created for (identity {found[:12]}, expected "
            f"{expected[:12]}); it moved or its history was replaced"
        )
        self.task_id = task_id
        self.path = path
        self.expected = expected
        self.found = found


class TaskActionUnavailableError(PrerequisiteError):
    """Task ``task_id`` is ``state``, which does not offer ``action``; ``reason`` says why. Nothing changed."""

    def __init__(self, *, task_id: str, action: str, state: str, reason: str) -> None:
        super().__init__(f"task {task_id}: {reason}")
        self.task_id = task_id
        self.action = action
        self.state = state
        self.reason = reason


class OutcomeUnresolvedError(PrerequisiteError):
    """Task ``task_id`` has effects whose outcome is unknown (``items``); ``action`` waits until the person
    records for each whether it happened. Nothing changed, and the effects are never run again."""

    def __init__(self, *, task_id: str, action: str, items: tuple[str, ...]) -> None:
        listed = ", ".join(items)
        super().__init__(
            f"task {task_id}: {action} waits until you record what happened to {listed} "
            f"(`codeflux task record-outcome {task_id} --item ITEM --happened|--did-not-happen`)"
        )
        self.task_id = task_id
        self.action = action
        self.items = items


class DecisionNeededError(CodefluxError):
    """A person has to decide (approval, plan approval, budget) and prompting is off."""


class AcceptanceExampleNeededError(DecisionNeededError):
    """Plan revision ``revision`` of ``task_id`` cannot be approved: neither the requirement nor the plan has an
    executable acceptance example, so nothing could ever show the change done. The person is asked first."""

    def __init__(self, *, task_id: str, revision: int) -> None:
        super().__init__(
            f"task {task_id}: plan revision {revision} has no executable acceptance example, so it cannot be "
            "approved — how would anyone know the change is done? Send it back saying which test should pass or "
            "which command should print what (`codeflux task send-back`), or add one yourself (`codeflux task plan "
            f"{task_id} --add-example 'test: PATH::NAME'`, or Edit examples on the plan card)"
        )
        self.task_id = task_id
        self.revision = revision


class ClarificationNeededError(DecisionNeededError):
    """Plan revision ``revision`` of ``task_id`` has open questions (``numbers``, from 1) and the clarification
    policy is ``ask``: it cannot be approved until each is answered (which records a new revision)."""

    def __init__(self, *, task_id: str, revision: int, numbers: tuple[int, ...]) -> None:
        listed = ", ".join(str(number) for number in numbers)
        super().__init__(
            f"task {task_id}: plan revision {revision} has {len(numbers)} open question(s) ({listed}), so it cannot "
            f"be approved yet; answer each with `codeflux task answer {task_id} --question N --text TEXT` "
            "(`codeflux task show` lists them)"
        )
        self.task_id = task_id
        self.revision = revision
        self.numbers = numbers


class UncoveredExampleError(DecisionNeededError):
    """Plan revision ``revision``'s trace maps no step to acceptance examples ``numbers`` (from 1): no step would
    make them hold, so the plan is not approved; the person sends it back first."""

    def __init__(self, *, task_id: str, revision: int, numbers: tuple[int, ...]) -> None:
        listed = ", ".join(str(number) for number in numbers)
        super().__init__(
            f"task {task_id}: plan revision {revision} has no step serving acceptance example(s) {listed}, so it "
            "cannot be approved; send it back asking for a step that makes each hold (`codeflux task send-back`)"
        )
        self.task_id = task_id
        self.revision = revision
        self.numbers = numbers


class ApprovalRequiredError(DecisionNeededError):
    """Tool request ``request_id`` needs ``needs`` and waits for allow-once, allow-for-task or deny."""

    def __init__(self, *, request_id: str, needs: tuple[str, ...]) -> None:
        super().__init__(
            f"tool request {request_id} needs {', '.join(needs) or 'a decision'}; "
            "decide allow-once, allow-for-task or deny first"
        )
        self.request_id = request_id
        self.needs = needs


class BudgetExhaustedError(DecisionNeededError):
    """Task ``task_id`` reached its hard budget: no new paid call starts, calls in flight settle, and the
    task is paused until the person raises the limit, finishes or stops it. ``reason`` gives the figures."""

    def __init__(self, *, task_id: str, reason: str) -> None:
        super().__init__(
            f"task {task_id} reached its hard budget: {reason}; raise the limit, finish or stop the task"
        )
        self.task_id = task_id
        self.reason = reason


class BudgetDecisionNeededError(DecisionNeededError):
    """Task ``task_id``'s paid calls wait for a person: an overrun or unknown charge awaits
    acknowledgement, the call's price is unknown, or no budget is set. ``reason`` says which."""

    def __init__(self, *, task_id: str, reason: str) -> None:
        super().__init__(f"task {task_id} needs a budget decision: {reason}")
        self.task_id = task_id
        self.reason = reason


class EndpointApprovalRequiredError(DecisionNeededError):
    """``base_url`` (normalized, so it holds no userinfo, query or fragment) is not ``provider``'s default
    endpoint and was not approved; nothing was sent to it."""

    def __init__(self, *, provider: str, base_url: str) -> None:
        super().__init__(
            f"the {provider} endpoint {base_url} is not the default and has not been approved; approve that exact "
            f"base URL first: `codeflux provider approve-endpoint --name {provider} --base-url {shlex.quote(base_url)}`"
        )
        self.provider = provider
        self.base_url = base_url


class RungApprovalRequiredError(DecisionNeededError):
    """Ladder rung ``rung`` (``capable:max``) asks before its first call in task ``task_id``."""

    def __init__(self, *, task_id: str, rung: str) -> None:
        super().__init__(f"task {task_id}: the {rung} rung asks before its first call; approve it to spend on it: "
                         f"`codeflux budget approve-rung --task {task_id} --rung {rung}`")
        self.task_id = task_id
        self.rung = rung


class WatchNotApprovedError(DecisionNeededError):
    """``codeflux watch`` found no live repository approval of exactly its command on ``repository`` (the
    repository's folder name), so nothing ran; ``grant`` says how a person allows it."""

    def __init__(self, *, repository: str, grant: str) -> None:
        super().__init__(f"the watched command is not allowed for the repository {repository}: {grant}")
        self.repository = repository
        self.grant = grant


class DirtyTreeNotAcknowledgedError(DecisionNeededError):
    """The checkout at ``path`` has ``change_count`` uncommitted changes listed under ``current_hash``;
    ``acknowledged_hash`` is None (nothing acknowledged) or the hash of a list that no longer holds."""

    def __init__(self, *, path: str, change_count: int, current_hash: str, acknowledged_hash: str | None) -> None:
        if acknowledged_hash is None:
            noun = "change" if change_count == 1 else "changes"
            text = (f"{path} has {change_count} uncommitted {noun}; look at the list and acknowledge exactly "
                    f"it (hash {current_hash}) first")
        else:
            text = (f"the uncommitted changes in {path} changed since they were acknowledged (acknowledged "
                    f"{acknowledged_hash}, now {current_hash}); look at the list again and acknowledge it")
        super().__init__(text)
        self.path = path
        self.change_count = change_count
        self.current_hash = current_hash
        self.acknowledged_hash = acknowledged_hash


class PlanNotApprovedError(DecisionNeededError):
    """Task ``task_id`` cannot go on: its current plan revision ``revision`` (None: no plan yet) has no
    approval."""

    def __init__(self, *, task_id: str, revision: int | None) -> None:
        if revision is None:
            text = f"task {task_id} has no plan yet; a plan must be drafted and approved first"
        else:
            text = f"task {task_id}: plan revision {revision} is not approved; read it and approve or send it back"
        super().__init__(text)
        self.task_id = task_id
        self.revision = revision


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


class PlanChangedError(ConflictError):
    """A decision named plan revision ``offered_revision`` with hash ``offered_sha256``, but task ``task_id``'s
    current plan is ``current_revision`` / ``current_sha256`` (None: no plan). Nothing was recorded."""

    def __init__(
        self, *, task_id: str, offered_revision: int, offered_sha256: str, current_revision: int | None,
        current_sha256: str | None,
    ) -> None:
        now = "it has no plan" if current_revision is None else (
            f"the current plan is revision {current_revision} ({(current_sha256 or '')[:12]})")
        super().__init__(
            f"task {task_id}: plan revision {offered_revision} ({offered_sha256[:12]}) is not the current plan; "
            f"{now}; read the current plan first"
        )
        self.task_id = task_id
        self.offered_revision = offered_revision
        self.offered_sha256 = offered_sha256
        self.current_revision = current_revision
        self.current_sha256 = current_sha256


class StageAlreadyRecordedError(ConflictError):
    """Stage ``stage`` of task ``task_id``'s run ``attempt`` already has its outcome ``outcome``; ledger rows
    never change."""

    def __init__(self, *, task_id: str, attempt: int, stage: str, outcome: str) -> None:
        super().__init__(f"task {task_id} run {attempt}: stage {stage} is already recorded as {outcome}")
        self.task_id = task_id
        self.attempt = attempt
        self.stage = stage
        self.outcome = outcome


class EvidenceOnOtherDiffError(ConflictError):
    """The diff to accept (``diff``) is not the one the task's checks gathered their evidence on (``evidence``):
    the worktree changed after validation. Nothing was landed."""

    def __init__(self, *, task_id: str, evidence: str, diff: str) -> None:
        super().__init__(
            f"task {task_id}: the evidence was gathered on diff {evidence[:12]}, but the diff is now {diff[:12]} "
            "(the worktree changed after the checks ran); nothing was landed — undo the change in the worktree, or "
            f"check it again with `codeflux task retry {task_id} --feedback …`, or reject it"
        )
        self.task_id = task_id
        self.evidence = evidence
        self.diff = diff


class DiffChangedError(ConflictError):
    """The task diff's identity is ``current`` now, not the ``reviewed`` one; nothing was landed."""

    def __init__(self, *, reviewed: str, current: str) -> None:
        super().__init__(
            f"the task diff changed since it was reviewed (reviewed {reviewed[:12]}, now {current[:12]}); "
            "review the current diff first"
        )
        self.reviewed = reviewed
        self.current = current


class DecisionAlreadyRecordedError(ConflictError):
    """Tool request ``request_id`` is no longer pending: its decision is already ``outcome``."""

    def __init__(self, *, request_id: str, outcome: str) -> None:
        super().__init__(f"tool request {request_id} was already decided ({outcome}); it cannot be decided again")
        self.request_id = request_id
        self.outcome = outcome


class OutcomeAlreadyRecordedError(ConflictError):
    """What happened to ambiguous effect ``item`` of task ``task_id`` was already recorded as ``outcome``."""

    def __init__(self, *, task_id: str, item: str, outcome: str) -> None:
        super().__init__(f"task {task_id}: the outcome of {item} was already recorded ({outcome}); it stays")
        self.task_id = task_id
        self.item = item
        self.outcome = outcome


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


class ToolFailedError(OperationFailedError):
    """A tool ran into a stated failure; ``failure_kind`` is its stable kebab-case reason.

    The message is one safe line for people (it names what went wrong, never file contents).
    """

    def __init__(self, *, failure_kind: str, message: str) -> None:
        super().__init__(message)
        self.failure_kind = failure_kind
        self.message = message


class GitOperationFailedError(OperationFailedError):
    """libgit2 could not ``operation``; ``problem`` is the kind of failure (``not-found``, ``failed``, …).

    ``detail`` keeps libgit2's own message for logs; it is not part of ``str(err)`` because it may name
    paths or refs the caller did not ask about.
    """

    def __init__(self, *, operation: str, problem: str, detail: str) -> None:
        super().__init__(f"git could not {operation} ({problem})")
        self.operation = operation
        self.problem = problem
        self.detail = detail


class WorkerStartError(OperationFailedError):
    """A worker process did not start, or did not announce readiness in time; nothing ran in it."""

    def __init__(self, *, reason: str) -> None:
        super().__init__(f"the worker did not start: {reason}")
        self.reason = reason


class WorkerClosedError(OperationFailedError):
    """A worker handle was used after ``stop()``."""

    def __init__(self) -> None:
        super().__init__("the worker was stopped; start a new one")


class PlannerFailedError(OperationFailedError):
    """The planner's model gave no plan that fits the schema in its tries, or planning reached its bound
    (``stopped`` says which: tool calls or model calls); nothing was recorded.

    ``problems`` are the schema's findings on the last reply (locations and what is wrong, never the
    offered values).
    """

    def __init__(self, *, task_id: str, attempts: int, problems: tuple[str, ...], stopped: str | None = None) -> None:
        if stopped is not None:
            message = f"task {task_id}: planning stopped without a plan: {stopped}; nothing was recorded"
        else:
            shown = "; ".join(problems[:3]) or "the reply held no plan"
            message = f"task {task_id}: the planner gave no valid plan after {attempts} attempts ({shown})"
        super().__init__(message)
        self.task_id = task_id
        self.attempts = attempts
        self.problems = problems
        self.stopped = stopped


class ProviderError(CodefluxError):
    """A call to model provider ``provider`` gave no usable reply.

    ``may_have_been_processed`` tells the gateway whether the provider may have done (and billed) the
    work: when it is true the call is never retried automatically and its usage counts as unknown.
    Every text field was redacted by the adapter before it reached this error.
    """

    def __init__(self, message: str, *, provider: str, may_have_been_processed: bool) -> None:
        super().__init__(message)
        self.provider = provider
        self.may_have_been_processed = may_have_been_processed


class ProviderRejectedError(ProviderError):
    """The provider refused the request with a 4xx status (bad key, unknown model, malformed body).

    ``error_type`` is the provider's error type when it sent one; ``detail`` its redacted message.
    """

    def __init__(self, *, provider: str, status: int, error_type: str | None, detail: str) -> None:
        kind = f", {error_type}" if error_type else ""
        super().__init__(
            f"{provider} refused the request (HTTP {status}{kind}): {detail}",
            provider=provider,
            may_have_been_processed=False,
        )
        self.status = status
        self.error_type = error_type
        self.detail = detail


class ContextTooLongError(ProviderRejectedError):
    """The provider refused the request because it does not fit the model's context window ("prompt is too
    long", ``context_length_exceeded``, a body over the size limit). Nothing was processed: the loop compacts
    the conversation and asks once more instead of failing."""


class ContextWindowFullError(ContextTooLongError):
    """Not sent: the request's estimated input leaves less of ``model``'s ``window``-token context window for output
    than ``minimum`` (what a turn needs, or what was asked when that is less). Nothing was sent or charged; like a
    provider's "too long" refusal, the loop compacts the conversation and asks once more."""

    def __init__(self, *, provider: str, model: str, window: int, input_tokens: int, minimum: int) -> None:
        room = max(window - input_tokens, 0)
        detail = (f"the request to {model} does not fit its {window:,}-token context window: about {input_tokens:,} "
                  f"estimated input tokens leave {room:,} for output, fewer than {minimum:,}; not sent (compact the "
                  "conversation or use a model with a larger window)")
        ProviderError.__init__(self, detail, provider=provider, may_have_been_processed=False)
        self.status = 0  # no HTTP status: codeflux refused it before sending
        self.error_type = "context-window-full"
        self.detail = detail
        self.model = model
        self.window = window
        self.input_tokens = input_tokens
        self.minimum = minimum


class ProviderUnavailableError(ProviderError):
    """The provider could not be reached, or kept answering 429/5xx, after ``attempts`` attempts.

    ``status`` is the last HTTP status (None for a connection failure); ``retry_after_s`` is what the
    provider asked for when that was longer than codeflux will wait.
    """

    def __init__(
        self, *, provider: str, reason: str, status: int | None, attempts: int, retry_after_s: int | None
    ) -> None:
        later = f"; the provider asked to wait {retry_after_s} s" if retry_after_s is not None else ""
        noun = "attempt" if attempts == 1 else "attempts"
        super().__init__(
            f"{provider} is unavailable: {reason} (after {attempts} {noun}){later}",
            provider=provider,
            may_have_been_processed=False,
        )
        self.reason = reason
        self.status = status
        self.attempts = attempts
        self.retry_after_s = retry_after_s


class ProviderReplyInvalidError(ProviderError):
    """The provider's reply was refused: ``problem`` is ``malformed``, ``too-large`` or ``redirect``.

    After a 2xx status the provider may have billed the work, which ``may_have_been_processed`` says.
    """

    def __init__(self, *, provider: str, problem: str, detail: str, may_have_been_processed: bool) -> None:
        super().__init__(
            f"{provider} reply refused ({problem}): {detail}",
            provider=provider,
            may_have_been_processed=may_have_been_processed,
        )
        self.problem = problem
        self.detail = detail


class ProviderRequestInvalidError(ProviderError):
    """codeflux refused to send a request the provider would reject (``problem`` says why, e.g. an empty
    assistant turn). Nothing was sent, so nothing was billed."""

    def __init__(self, *, provider: str, problem: str) -> None:
        super().__init__(f"{provider} request not sent: {problem}", provider=provider, may_have_been_processed=False)
        self.problem = problem


class ProviderOutcomeUnknownError(ProviderError):
    """The request may have been processed (and billed) but no complete reply arrived: a stream cut
    mid-way, a read timeout after sending. It is never retried automatically."""

    def __init__(self, *, provider: str, reason: str) -> None:
        super().__init__(
            f"{provider} call outcome unknown: {reason}; not retried, since the provider may have "
            "processed it",
            provider=provider,
            may_have_been_processed=True,
        )
        self.reason = reason


class ScriptExhaustedError(ProviderError):
    """The scripted provider (not a model) was called after its last scripted turn."""

    def __init__(self, *, turns: int) -> None:
        super().__init__(
            f"scripted (not a model) has no turn left: all {turns} scripted turns were used",
            provider="scripted",
            may_have_been_processed=False,
        )
        self.turns = turns


class StoreError(CodefluxError):
    """The database could not do what was asked."""


class StoreBusyError(StoreError):
    """Another writer held the database longer than the busy timeout."""


class WriteLockHeldError(StoreBusyError):
    """Another process (a ``sqlite3`` shell, a backup, another codeflux) held the database's write lock for longer
    than a run's write patience (``waited_seconds``); the write waiting for it did not happen. ``detail`` (None: the
    store's own "nothing of this step was written") says what was not written and what becomes of it."""

    def __init__(self, *, waited_seconds: float, detail: str | None = None) -> None:
        said = "nothing of this step was written" if detail is None else detail
        super().__init__(f"another process held the database's write lock for over {waited_seconds:g} s: {said}; "
                         "let it finish, then try again")
        self.waited_seconds = waited_seconds
        self.detail = detail


class StoreCorruptError(StoreError):
    """The file is not a sound SQLite database."""


class StoredValueUnknownError(StoreCorruptError):
    """A stored ``kind`` holds a value this codeflux does not know (a damaged or newer database).

    Raised by the store's row decoders instead of coercing the value to something it is not."""

    def __init__(self, *, kind: str, value: str) -> None:
        super().__init__(f"the stored {kind} {value[:40]!r} is not one this codeflux knows;"
                         " run `codeflux integrity-check`")
        self.kind = kind
        self.value = value


class StoreUnavailableError(StoreError):
    """The database file cannot be opened, read or written (permissions, I/O, read-only media)."""


class StorePolicyError(StoreError):
    """A required connection setting (WAL, FULL sync, foreign keys, …) did not read back as set."""


class StoreClosedError(StoreError):
    """The database handle was used after it was closed."""


INTERNAL_ERROR_MESSAGE: Final = "codeflux could not complete the call (an internal error; see `codeflux logs`)"


def safe_error_message(error: BaseException) -> str:
    """The one line a person may see for ``error``: its own first line for a :class:`CodefluxError` (they are
    written to be safe), never anything of another exception (its text may hold paths, SQL or secrets)."""
    if isinstance(error, CodefluxError):
        text = str(error)
        return text.splitlines()[0][:500] if text else type(error).__name__
    return INTERNAL_ERROR_MESSAGE
