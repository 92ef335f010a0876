"""Who a process is, beyond its number.

A pid in a file is only a number: after the process ends (and at once after a reboot) the
kernel gives it to another process, perhaps one of the user's that has nothing to do with
autoresearch. So `.autoresearch/engine.json` records, next to each pid it names, an identity
that a reused number does not share, and the server signals that pid only while the live
process still has it. The engine writes the same identity (src/engine/run/engine-lock.ts):

    {"boot": <contents of /proc/sys/kernel/random/boot_id, stripped>,
     "start": <field 22 of /proc/<pid>/stat: starttime, clock ticks after boot, as a string>}

Without /proc (macOS, the BSDs), boot is "" and start is `ps -o lstart= -p PID` under
LC_ALL=C, stripped (a start time to the second, which, with the pid, is as good as it gets there).
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def boot_id() -> str:
    """This boot's random id ('' without /proc): the same pid and start tick in another boot are another process."""
    try:
        return BOOT_ID.read_text().strip()
    except OSError:
        return ""


def identity(pid: int) -> dict[str, str] | None:
    """{boot, start} of the live process `pid`; None when there is none, or only a zombie."""
    if type(pid) is not int or pid <= 0:
        return None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:
        return _ps_identity(pid)
    # The command name (field 2) is in parentheses and may hold spaces or ')': split after the last one.
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] in ("Z", "X"):
        return None
    return {"boot": boot_id(), "start": fields[19]}


def _ps_identity(pid: int) -> dict[str, str] | None:
    """The identity from ps, for systems without /proc."""
    try:
        out = subprocess.run(
            ["ps", "-o", "stat=,lstart=", "-p", str(pid)],
            capture_output=True,
            text=True,
            timeout=10,
            env={**os.environ, "LC_ALL": "C"},
        )
    except (OSError, subprocess.SubprocessError):
        return None
    fields = out.stdout.split()
    if out.returncode != 0 or len(fields) < 2 or fields[0].startswith("Z"):
        return None
    return {"boot": "", "start": " ".join(fields[1:])}


def valid(recorded) -> bool:
    """Whether a value read from engine.json has the shape of an identity (a forged file may hold anything)."""
    return (
        isinstance(recorded, dict)
        and isinstance(recorded.get("boot"), str)
        and isinstance(recorded.get("start"), str)
        and recorded["start"].strip() != ""
    )


def same_process(pid: int, recorded) -> bool:
    """Whether `pid` is live (not a zombie) and is the very process whose identity was recorded."""
    if not valid(recorded):
        return False
    now = identity(pid)
    # ps pads lstart's day of month; compare words, not spacing.
    return (
        now is not None
        and now["boot"] == recorded["boot"].strip()
        and now["start"].split() == recorded["start"].split()
    )


def signal_if_same(pid: int, recorded, sig: int) -> bool:
    """Sends `sig` to `pid` only if it is the recorded process; True when sent.

    Where the system has pidfds (Linux 5.3+), the check and the signal concern the same
    process even if `pid` ends and is reused in between: the pidfd is opened first, then the
    identity checked, then the signal sent through the pidfd.
    """
    pidfd = None
    if hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal"):
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            return False
        except OSError:
            pidfd = None  # a kernel without pidfds: check, then signal by number
    try:
        if not same_process(pid, recorded):
            return False
        if pidfd is not None:
            signal.pidfd_send_signal(pidfd, sig)
        else:
            os.kill(pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False
    finally:
        if pidfd is not None:
            os.close(pidfd)


def group_leader_is(pgid: int, recorded) -> bool:
    """Whether process group `pgid` is still led by the recorded process (a training run's group: pgid == its pid)."""
    if not same_process(pgid, recorded):
        return False
    try:
        return os.getpgid(pgid) == pgid
    except (ProcessLookupError, PermissionError):
        return False


def exists(pid: int) -> bool:
    """Whether some process (not a zombie) holds the number pid now."""
    return identity(pid) is not None
