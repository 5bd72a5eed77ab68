"""Run a command on a machine that forbids namespaces, as some hosts and containers do: a
system-call filter refuses them to the command and to every process it starts.

    python3 -m tools.no_namespaces user make check   # no user namespace, as a host with
                                                     # user.max_user_namespaces = 0
    python3 -m tools.no_namespaces all make check    # no namespace at all, as Docker's default
                                                     # seccomp profile without CAP_SYS_ADMIN

The grader's tests then show what such a machine gets: with `user`, the same (the grader,
as root, makes its sandboxes without a user namespace); with `all`, the tests that need
bubblewrap skip, saying why. x86-64 only, as the runs' own filter (`grading.zygote`).
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys

NEW_USER, OTHERS = 0x10000000, 0x20000 | 0x2000000 | 0x4000000 | 0x8000000 | 0x60000000 | 0x80
UNSHARE, CLONE, CLONE3, SETNS = 272, 56, 435, 308
LD, JEQ, JSET, RET, ALLOW = 0x20, 0x15, 0x45, 0x06, 0x7FFF0000


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def program(flags: int) -> bytes:
    """unshare and clone refused (EPERM) when they ask for a namespace of `flags`, setns
    refused, clone3 unknown (ENOSYS: glibc then uses clone)."""
    refuse = _op(RET, 0x50000 | errno.EPERM)
    code = [_op(LD, 0)]
    for number in (UNSHARE, CLONE):
        code += [_op(JEQ, number, 0, 4), _op(LD, 16), _op(JSET, flags, 1, 0), _op(RET, ALLOW),
                 refuse]
    code += [_op(JEQ, CLONE3, 0, 1), _op(RET, 0x50000 | errno.ENOSYS),
             _op(JEQ, SETNS, 0, 1), refuse, _op(RET, ALLOW)]
    return b"".join(code)


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[0] not in ("user", "all"):
        sys.exit("usage: python3 -m tools.no_namespaces user|all COMMAND...")
    code = program(NEW_USER if argv[0] == "user" else NEW_USER | OTHERS)
    buffer = ctypes.create_string_buffer(code)
    fprog = struct.pack("HxxxxxxP", len(code) // 8, ctypes.addressof(buffer))
    libc = ctypes.CDLL(None, use_errno=True)
    for option, arg, pointer in ((38, 1, None), (22, 2, ctypes.c_char_p(fprog))):
        if libc.prctl(option, ctypes.c_ulong(arg), pointer, ctypes.c_ulong(0),
                      ctypes.c_ulong(0)) != 0:
            sys.exit(f"the filter could not be installed: {os.strerror(ctypes.get_errno())}")
    os.execvp(argv[1], argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])
