"""Landlock and seccomp through a few documented system calls (``ctypes``), for the fallback box.

Only the launcher (:mod:`.launch`) calls :func:`restrict_self`, in its own single-threaded process,
right before it execs the program: the restriction is inherited by everything the program starts and
cannot be lifted. What it does:

1. ``PR_SET_NO_NEW_PRIVS`` (required for both, and no setuid program can gain privileges afterwards);
2. a Landlock ruleset handling every filesystem right the kernel knows: read and execute beneath the
   readable roots, full rights beneath the writable ones (worktree, task HOME/TMPDIR, the worktree's own
   ``.git/worktrees/<task>``), read/write on a handful of character devices; nothing else. At ABI ≥ 4
   TCP ``bind``/``connect`` are handled too (so denied) unless the network was granted; at ABI ≥ 6
   abstract Unix sockets and signals are scoped to the box. Landlock also stops the box from tracing
   (so reading the ``environ`` or memory of) any process outside it.
3. unless the network was granted, a seccomp filter that fails ``socket(AF_INET|AF_INET6, …)`` with
   ``EAFNOSUPPORT``, every ``connect()`` with ``EACCES`` (Landlock does not cover a connect to a Unix
   socket by path, such as the coordinator's or the session bus), and ``io_uring_setup`` (which could
   connect without the ``connect`` system call) with ``ENOSYS``; x32 system calls are refused.

Linux on x86-64 and aarch64 only; elsewhere :func:`seccomp_supported` is False and the mode is not offered.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = ["LandlockPolicy", "landlock_abi", "restrict_self", "seccomp_supported"]

_SYS: Final = {  # (landlock_create_ruleset, landlock_add_rule, landlock_restrict_self, socket, connect,
    #               io_uring_setup, seccomp audit arch)
    "x86_64": (444, 445, 446, 41, 42, 425, 0xC000003E),
    "aarch64": (444, 445, 446, 198, 203, 425, 0xC00000B7),
}
_PR_SET_NO_NEW_PRIVS: Final = 38
_PR_SET_SECCOMP: Final = 22
_SECCOMP_MODE_FILTER: Final = 2
_LANDLOCK_CREATE_RULESET_VERSION: Final = 1
_LANDLOCK_RULE_PATH_BENEATH: Final = 1

# filesystem rights, by the ABI that introduced them
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_REMOVE_DIR, _REMOVE_FILE, _MAKE_CHAR, _MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
_MAKE_REG, _MAKE_SOCK, _MAKE_FIFO, _MAKE_BLOCK, _MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
_REFER, _TRUNCATE, _IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1

_READ: Final = _EXECUTE | _READ_FILE | _READ_DIR
_DEVICE: Final = _READ_FILE | _WRITE_FILE | _IOCTL_DEV
_DEVICES: Final = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")

# classic BPF
_BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_JGE_K, _BPF_RET_K = 0x20, 0x15, 0x35, 0x06
_SECCOMP_RET_ALLOW: Final = 0x7FFF0000
_SECCOMP_RET_ERRNO: Final = 0x00050000
_AF_INET, _AF_INET6 = 2, 10


@dataclass(frozen=True, slots=True, kw_only=True)
class LandlockPolicy:
    """What the box may read and write, and whether the network was granted."""

    readable: tuple[str, ...]
    writable: tuple[str, ...]
    network: bool


def _numbers() -> tuple[int, int, int, int, int, int, int] | None:
    return _SYS.get(platform.machine())


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, or 0 (or a negative errno) when it offers none."""
    numbers = _numbers()
    if numbers is None:
        return 0
    try:
        return int(_libc().syscall(numbers[0], None, ctypes.c_size_t(0), _LANDLOCK_CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0


def seccomp_supported() -> bool:
    return _numbers() is not None and hasattr(_libc(), "prctl")


def _handled_fs(abi: int) -> int:
    rights = (_EXECUTE | _WRITE_FILE | _READ_FILE | _READ_DIR | _REMOVE_DIR | _REMOVE_FILE | _MAKE_CHAR
              | _MAKE_DIR | _MAKE_REG | _MAKE_SOCK | _MAKE_FIFO | _MAKE_BLOCK | _MAKE_SYM)
    if abi >= 2:
        rights |= _REFER
    if abi >= 3:
        rights |= _TRUNCATE
    if abi >= 5:
        rights |= _IOCTL_DEV
    return rights


def restrict_self(policy: LandlockPolicy, *, abi: int) -> None:
    """Apply the policy to this process for good; ``OSError`` if any step fails (then nothing may run)."""
    numbers = _numbers()
    if numbers is None or abi < 1:
        raise OSError(errno.ENOSYS, "Landlock is not available")
    create, add_rule, restrict, *_ = numbers
    libc = _libc()
    handled = _handled_fs(abi)
    attribute = struct.pack("=Q", handled)
    if abi >= 4:
        attribute += struct.pack("=Q", 0 if policy.network else _NET_BIND_TCP | _NET_CONNECT_TCP)
    if abi >= 6:
        attribute += struct.pack("=Q", _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL)
    buffer = ctypes.create_string_buffer(attribute, len(attribute))
    ruleset = int(libc.syscall(create, buffer, ctypes.c_size_t(len(attribute)), 0))
    if ruleset < 0:
        raise _os_error("landlock_create_ruleset")
    try:
        for path in policy.readable:
            _add_path_rule(libc, add_rule, ruleset, path, _READ)
        for path in policy.writable:
            _add_path_rule(libc, add_rule, ruleset, path, handled)
        for path in _DEVICES:
            _add_path_rule(libc, add_rule, ruleset, path, _DEVICE & handled)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise _os_error("prctl(PR_SET_NO_NEW_PRIVS)")
        if int(libc.syscall(restrict, ruleset, 0)) != 0:
            raise _os_error("landlock_restrict_self")
    finally:
        os.close(ruleset)
    if not policy.network:
        _install_network_filter(libc, numbers)


def _add_path_rule(libc: ctypes.CDLL, add_rule: int, ruleset: int, path: str, rights: int) -> None:
    try:
        descriptor = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a path that is not there grants nothing
    try:
        if not os.path.isdir(f"/proc/self/fd/{descriptor}"):
            rights &= _EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE | _IOCTL_DEV  # rights a file can carry
        rule = struct.pack("=Qi", rights, descriptor)  # struct landlock_path_beneath_attr is packed
        buffer = ctypes.create_string_buffer(rule, len(rule))
        if int(libc.syscall(add_rule, ruleset, _LANDLOCK_RULE_PATH_BENEATH, buffer, 0)) != 0:
            raise _os_error(f"landlock_add_rule({path!r})")
    finally:
        os.close(descriptor)


def _install_network_filter(libc: ctypes.CDLL, numbers: Sequence[int]) -> None:
    _, _, _, socket_nr, connect_nr, io_uring_nr, arch = numbers
    enosys = _SECCOMP_RET_ERRNO | errno.ENOSYS
    program = [  # (code, jump if true, jump if false, k); jumps count from the next instruction
        (_BPF_LD_W_ABS, 0, 0, 4),                                  # 0: load the arch
        (_BPF_JEQ_K, 1, 0, arch),                                  # 1: ours → 3
        (_BPF_RET_K, 0, 0, enosys),                                # 2: another ABI (i386, say): refused
        (_BPF_LD_W_ABS, 0, 0, 0),                                  # 3: load the system call number
        (_BPF_JGE_K, 0, 1, 0x40000000),                            # 4: x32 → 5, else → 6
        (_BPF_RET_K, 0, 0, enosys),                                # 5
        (_BPF_JEQ_K, 0, 1, connect_nr),                            # 6: connect → 7, else → 8
        (_BPF_RET_K, 0, 0, _SECCOMP_RET_ERRNO | errno.EACCES),     # 7
        (_BPF_JEQ_K, 0, 1, io_uring_nr),                           # 8: io_uring_setup → 9, else → 10
        (_BPF_RET_K, 0, 0, enosys),                                # 9
        (_BPF_JEQ_K, 0, 5, socket_nr),                             # 10: socket → 11, else → 16
        (_BPF_LD_W_ABS, 0, 0, 16),                                 # 11: load args[0] (the family)
        (_BPF_JEQ_K, 2, 0, _AF_INET),                              # 12: AF_INET → 15
        (_BPF_JEQ_K, 1, 0, _AF_INET6),                             # 13: AF_INET6 → 15
        (_BPF_RET_K, 0, 0, _SECCOMP_RET_ALLOW),                    # 14: another family
        (_BPF_RET_K, 0, 0, _SECCOMP_RET_ERRNO | errno.EAFNOSUPPORT),  # 15
        (_BPF_RET_K, 0, 0, _SECCOMP_RET_ALLOW),                    # 16: every other system call
    ]
    raw = b"".join(struct.pack("=HBBI", code, jt, jf, k) for code, jt, jf, k in program)
    filters = ctypes.create_string_buffer(raw, len(raw))
    fprog = struct.pack("@HP", len(program), ctypes.addressof(filters))  # struct sock_fprog, native layout
    fprog_buffer = ctypes.create_string_buffer(fprog, len(fprog))
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, fprog_buffer, 0, 0) != 0:
        raise _os_error("prctl(PR_SET_SECCOMP)")


def _os_error(what: str) -> OSError:
    number = ctypes.get_errno()
    return OSError(number, f"{what}: {os.strerror(number)}")
