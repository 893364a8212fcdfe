#!/usr/bin/python3
"""reaper.py CMD [ARG...]: runs CMD as a child subreaper, reaping orphans.

In a virtme-ng guest, PID 1 (virtme-ng-init) does not reap the orphans that
re-parent to it, so a process a test killed stays a zombie and the test,
which checks that it is gone, fails. On a normal host init reaps them. This
process takes init's place for CMD's descendants and exits with CMD's status
(128+N when a signal N killed it).
"""
import ctypes
import os
import sys

PR_SET_CHILD_SUBREAPER = 36

if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
    sys.exit("reaper: prctl(PR_SET_CHILD_SUBREAPER): %s" % os.strerror(ctypes.get_errno()))
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)
while True:
    wpid, status = os.wait()
    if wpid == pid:
        sys.exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))
