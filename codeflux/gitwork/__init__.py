"""Git work for tasks: opening repositories, per-task worktrees, diff identity, accept and reject.

Owns: discovery of a user's repository (HEAD, branch, identity, in-progress operations, the uncommitted
changes and the hash an acknowledgement binds to); task worktrees at ``<root>/<repo>/<task>`` on branch
``codeflux/task/<task>``, verified before every edit and diff, removed only when nothing unsaved is lost;
the diff of a worktree against its base (untracked files included) and its identity; landing an
accepted diff on the user's current branch (fast-forward or merge commit, nothing half-applied on a
conflict) and handing back a rejected patch for the caller to store; and a commit's tracked files written into a
fresh directory for reading before any worktree exists (the planner's view); and a repository's instruction
files read without leaving it (:mod:`codeflux.gitwork.instruction_files`).

May import: ``codeflux.domain`` and ``pygit2`` (plus the standard library). No SQL, no store, no
coordinator: the task service records outcomes. Everything runs through libgit2, which never runs
repository hooks, ``core.fsmonitor``, ``diff.external``, textconv or filter drivers; pygit2 exceptions
are mapped to the codeflux error tree in :mod:`codeflux.gitwork.checkout` and chained with ``from``.
The git CLI is not used at all: libgit2 covers every operation here. Every function blocks; the
caller runs them behind its executor boundary.
"""
