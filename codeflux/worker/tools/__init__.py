"""The tools a worker executes, one module per family, behind one dispatcher.

``reading`` (read_file, list_directory), ``search`` (glob, grep), ``writing`` (write_file, edit_file,
delete_file), ``patching`` (apply_patch), ``git`` (inspect_diff, git_status, git_log) and ``command``
(run_command). Every file access goes through :func:`codeflux.worker.paths.resolve_worktree_path` and
then ``beneath`` (directory file descriptors, ``O_NOFOLLOW``); every program runs in its own process
group, killed when it ends. :mod:`~codeflux.worker.tools.dispatch` turns a wire request into a bound
request and every expected failure into a typed FAILED result.
"""
