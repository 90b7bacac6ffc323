"""The one exit-code table for every command, and the map from error class to exit code.

Adding a code is a compatibility change. ``--help`` prints :data:`EXIT_CODE_MEANINGS`; a test checks
that every :class:`CodefluxError` subclass has an explicit entry in :data:`EXIT_CODE_FOR_ERROR`.
"""

from __future__ import annotations

import enum

from codeflux.domain import errors as e

__all__ = ["EXIT_CODE_FOR_ERROR", "EXIT_CODE_MEANINGS", "ExitCode", "exit_code_for", "exit_code_table_text"]


class ExitCode(enum.IntEnum):
    OK = 0
    FAILED = 1
    USAGE = 2
    PREREQUISITE = 3
    DECISION_NEEDED = 4
    STALLED = 5
    OUTPUT_CLOSED = 141
    """The reader of standard output went away (`codeflux … | head`): 128 + SIGPIPE, as a shell reports a
    process that SIGPIPE ended; nothing is printed."""


EXIT_CODE_MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "done / completed",
    ExitCode.FAILED: "the operation failed",
    ExitCode.USAGE: "usage error (unknown command or flag, missing or invalid value)",
    ExitCode.PREREQUISITE: "prerequisite missing or refused by state (no credential store, newer database, ...)",
    ExitCode.DECISION_NEEDED: "a decision is needed and prompting is off (approval, plan approval, hard budget)",
    ExitCode.STALLED: "stalled (the ladder is exhausted or a circuit is broken)",
    ExitCode.OUTPUT_CLOSED: "the reader of the output went away (`| head`); nothing more is printed",
}

EXIT_CODE_FOR_ERROR: dict[type[e.CodefluxError], ExitCode] = {
    e.CodefluxError: ExitCode.FAILED,
    e.UsageError: ExitCode.USAGE,
    e.OutputExistsError: ExitCode.USAGE,
    e.InvalidValueError: ExitCode.USAGE,
    e.ToolRequestInvalidError: ExitCode.USAGE,
    e.UnsafeArgumentError: ExitCode.USAGE,
    e.PlanInvalidError: ExitCode.USAGE,
    e.InexactNumberError: ExitCode.USAGE,
    e.CurrencyMismatchError: ExitCode.USAGE,
    e.EndpointRefusedError: ExitCode.USAGE,
    e.PathRefusedError: ExitCode.USAGE,
    e.PathNotFoundError: ExitCode.USAGE,
    e.PrerequisiteError: ExitCode.PREREQUISITE,
    e.DataDirectoryError: ExitCode.PREREQUISITE,
    e.DatabaseMissingError: ExitCode.PREREQUISITE,
    e.DatabaseNewerError: ExitCode.PREREQUISITE,
    e.DatabaseNeedsMigrationError: ExitCode.PREREQUISITE,
    e.MigrationFailedError: ExitCode.PREREQUISITE,
    e.MigrationLockedError: ExitCode.PREREQUISITE,
    e.CoordinatorRunningError: ExitCode.PREREQUISITE,
    e.MigrationChecksumError: ExitCode.PREREQUISITE,
    e.CredentialStoreUnavailableError: ExitCode.PREREQUISITE,
    e.CredentialNotFoundError: ExitCode.PREREQUISITE,
    e.RepositoryNotUsableError: ExitCode.PREREQUISITE,
    e.WorktreeNotUsableError: ExitCode.PREREQUISITE,
    e.CheckoutNotCleanError: ExitCode.PREREQUISITE,
    e.DetachedHeadError: ExitCode.PREREQUISITE,
    e.GitLockHeldError: ExitCode.PREREQUISITE,
    e.LandingChangedSinceError: ExitCode.PREREQUISITE,
    e.ModelCallRefusedError: ExitCode.PREREQUISITE,
    e.TaskLimitReachedError: ExitCode.PREREQUISITE,
    e.RepositoryChangedError: ExitCode.PREREQUISITE,
    e.AuthorityRefusedError: ExitCode.PREREQUISITE,
    e.CapabilityDeniedError: ExitCode.PREREQUISITE,
    e.TaskInactiveError: ExitCode.PREREQUISITE,
    e.UnconfirmedDecisionError: ExitCode.PREREQUISITE,
    e.UnconfinedStandingApprovalError: ExitCode.PREREQUISITE,
    e.RepositoryApprovalRefusedError: ExitCode.PREREQUISITE,
    e.ConfinementUnavailableError: ExitCode.PREREQUISITE,
    e.UnconfinedPreapprovalError: ExitCode.PREREQUISITE,
    e.TaskActionUnavailableError: ExitCode.PREREQUISITE,
    e.OutcomeUnresolvedError: ExitCode.PREREQUISITE,
    e.DecisionNeededError: ExitCode.DECISION_NEEDED,
    e.ApprovalRequiredError: ExitCode.DECISION_NEEDED,
    e.AcceptanceExampleNeededError: ExitCode.DECISION_NEEDED,
    e.ClarificationNeededError: ExitCode.DECISION_NEEDED,
    e.UncoveredExampleError: ExitCode.DECISION_NEEDED,
    e.DirtyTreeNotAcknowledgedError: ExitCode.DECISION_NEEDED,
    e.PlanNotApprovedError: ExitCode.DECISION_NEEDED,
    e.BudgetExhaustedError: ExitCode.DECISION_NEEDED,
    e.BudgetDecisionNeededError: ExitCode.DECISION_NEEDED,
    e.EndpointApprovalRequiredError: ExitCode.DECISION_NEEDED,
    e.RungApprovalRequiredError: ExitCode.DECISION_NEEDED,
    e.WatchNotApprovedError: ExitCode.DECISION_NEEDED,
    e.StalledError: ExitCode.STALLED,
    e.NotFoundError: ExitCode.FAILED,
    e.ConflictError: ExitCode.FAILED,
    e.StaleRevisionError: ExitCode.FAILED,
    e.IdempotencyConflictError: ExitCode.FAILED,
    e.PlanChangedError: ExitCode.FAILED,
    e.StageAlreadyRecordedError: ExitCode.FAILED,
    e.DiffChangedError: ExitCode.FAILED,
    e.EvidenceOnOtherDiffError: ExitCode.FAILED,
    e.DecisionAlreadyRecordedError: ExitCode.FAILED,
    e.OutcomeAlreadyRecordedError: ExitCode.FAILED,
    e.TransitionNotAllowedError: ExitCode.FAILED,
    e.SecretLeakError: ExitCode.FAILED,
    e.OperationFailedError: ExitCode.FAILED,
    e.IntegrityCheckFailedError: ExitCode.FAILED,
    e.ToolFailedError: ExitCode.FAILED,
    e.GitOperationFailedError: ExitCode.FAILED,
    e.WorkerStartError: ExitCode.FAILED,
    e.WorkerClosedError: ExitCode.FAILED,
    e.PlannerFailedError: ExitCode.FAILED,
    e.ProviderError: ExitCode.FAILED,
    e.ProviderRejectedError: ExitCode.FAILED,
    e.ContextTooLongError: ExitCode.FAILED,
    e.ContextWindowFullError: ExitCode.FAILED,
    e.ProviderUnavailableError: ExitCode.FAILED,
    e.ProviderReplyInvalidError: ExitCode.FAILED,
    e.ProviderRequestInvalidError: ExitCode.FAILED,
    e.ProviderOutcomeUnknownError: ExitCode.FAILED,
    e.ScriptExhaustedError: ExitCode.FAILED,
    e.StoreError: ExitCode.FAILED,
    e.StoreBusyError: ExitCode.FAILED,
    e.WriteLockHeldError: ExitCode.PREREQUISITE,
    e.StoreCorruptError: ExitCode.FAILED,
    e.StoredValueUnknownError: ExitCode.FAILED,
    e.StoreUnavailableError: ExitCode.FAILED,
    e.StorePolicyError: ExitCode.FAILED,
    e.StoreClosedError: ExitCode.FAILED,
}


def exit_code_for(error: e.CodefluxError) -> ExitCode:
    for cls in type(error).__mro__:
        if cls in EXIT_CODE_FOR_ERROR:
            return EXIT_CODE_FOR_ERROR[cls]
    return ExitCode.FAILED


def exit_code_table_text() -> str:
    lines = ["exit codes:"]
    lines += [f"  {code.value}  {meaning}" for code, meaning in EXIT_CODE_MEANINGS.items()]
    return "\n".join(lines)
