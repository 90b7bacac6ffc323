"""Memory in use: what a checkout is now (root commit, file blobs, dependency set, toolchain), whether an entry
may be used in it, recall (search proposes, applicability disposes), automatic invalidation when an entry's
evidence stops holding, and the ``learn`` functions other code calls to record what it found.

Owns: :mod:`codeflux.memory.checkout`, :mod:`codeflux.memory.recall`, :mod:`codeflux.memory.learn`.
May import: :mod:`codeflux.domain`, :mod:`codeflux.store` and the standard library (git is run as a program with
hooks, fsmonitor and transports off; repository code is never run).
"""
