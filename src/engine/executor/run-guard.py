"""The run guard: the one process between an executor and a training run, on whichever side runs it.

Both executors start it as `python -I -S -c <this file> <config JSON>`, the leader of a process
group of its own: the subprocess executor once, as the engine's child, sending it one run per line
of stdin (config `serve`); the kernel executor's runner once per run, inside the kernel. It makes
the rules for untrusted training code hold in one place:

- Credentials: the run's environment is the guard's minus every variable named as a secret
  (config `secret_names`: exact names, or prefixes ending in `_`) and every variable whose value
  hashes to a secret the engine knows (`secret_sha256`: the server token under any name).
- Nothing outlives the run: the guard is a child subreaper (PR_SET_CHILD_SUBREAPER), so every
  process the run starts, even one that left the group with setsid and double-forked, stays its
  descendant. When the run's command exits, or the guard is told to stop (SIGTERM/SIGINT/SIGHUP:
  the deadline, a stop, the engine's death through PR_SET_PDEATHSIG), every descendant is
  frozen and killed. Without /proc (not Linux) only the command's own group is killed.
- Its own cgroup (Linux, where one is writable: root, or a delegated subtree): each run's command
  starts in a fresh cgroup v2 folder, capped at `limits.processes` (pids.max, default 4096: the
  cap that holds for root, whom RLIMIT_NPROC does not bind), killed whole (cgroup.kill) when the
  run ends and removed. The spawn report names it, so the engine can kill it should this guard
  be killed. Where none is writable the guard says so once and tracks processes as above.
- The sandbox (config `sandbox`: auto, on, off): bubblewrap, with the root read-only, the
  workspace writable except `.git`, `.autoresearch` and the read-only files (and, for a run in a
  worktree inside the workspace's state, the workspace's own: config `protect_paths`), caches and temp
  folders writable, Jupyter's runtime folders and the home folder's secrets hidden, a PID
  namespace of its own, and no network unless `network` is true. /dev is passed through, so
  GPUs are. `auto` falls back to no sandbox, saying why, where bubblewrap cannot run.
- Least privilege inside it: no capabilities (--cap-drop ALL; bubblewrap also sets no_new_privs),
  a user namespace of its own in which a root guard's run is nobody (uid 65534), so mount,
  umount, remount and chown fail, and no nested user namespaces (--disable-userns). Where the
  kernel refuses the user namespace, `auto` runs without it and says so (report `missing`);
  `on` refuses.
- Limits (config `limits`), set in the command's process before exec: no core dumps, the
  largest file it may write (`file_size_bytes`: SIGXFSZ, or EFBIG in Python, past it) and the
  processes of its user (`processes`; the kernel does not apply it to uid 0).

What happened goes to `report_fd` as JSON lines (the command's group and cgroups when it starts;
at the end {"sandbox", "why", "missing", "limits", "left", "exit_code", "signal", "limit"}), and a
line for people to the run's output. A one-run guard exits as its command did (the same code or signal).
Standard library only, Python 3.6+: it runs in whatever interpreter the kernel has.

Map of this file, by the three rules it enforces, then the run that applies them:
1. What the run may reach: its environment without the secrets, and the sandbox (bubblewrap:
   what is read-only, hidden or writable; no network; no capabilities; nobody in a user namespace).
2. Its limits: the rlimits set before exec (core dumps, file size, processes) and its cgroup
   (pids.max), found, made and entered.
3. Its lifetime: the guard a subreaper that stops with its caller; at the end every descendant,
   and the cgroup, frozen, killed and removed.
Then one run (`run`), what it reports (`finish`) and the guard's loop (`serve`, `main`).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

# --- 1. What the run may reach: credentials and the sandbox --------------------------------------

# What a training run never needs to read, relative to the home folder: keys, tokens and the
# configuration of tools that hold them.
HOME_SECRETS = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".pypirc",
    ".npmrc",
    ".config/gh",
    ".config/gcloud",
    ".config/hub",
    ".config/git",
    ".gitconfig",
    ".anthropic",
    ".config/anthropic",
    ".claude",
    ".jupyter",
    ".local/share/jupyter/runtime",
    "Library/Jupyter/runtime",
)
# Caches a training run may write (compiled kernels, downloaded tokenizers, prepared data), when they exist.
CACHE_VARS = (
    "XDG_CACHE_HOME",
    "AUTORESEARCH_CACHE",
    "TORCH_HOME",
    "HF_HOME",
    "TRITON_CACHE_DIR",
    "TORCHINDUCTOR_CACHE_DIR",
    "CUDA_CACHE_PATH",
)
HOME_CACHES = (".cache", ".nv", ".triton")
# Inside the sandbox a root guard's run is this uid and gid (nobody): the files of the root
# outside show up as its own, so the workspace stays writable, yet it holds no capability.
NOBODY = 65534
# Test hook (never set in use): makes the guard act as on a kernel that refuses user namespaces,
# so both sides of the fallback can be tested on a machine that has them.
NO_USERNS_HOOK = "AUTORESEARCH_TEST_NO_USERNS"
# Why this guard's bubblewrap cannot make a user namespace, once a run found out (later runs of
# `auto` go without at once).
NO_USERNS = []


def clean_env(env, names, hashes):
    """The environment less what names a secret, or holds one."""
    exact = {n for n in names if not n.endswith("_")}
    prefixes = tuple(n for n in names if n.endswith("_"))
    out = {}
    for key, value in env.items():
        if key in exact or key.startswith(prefixes):
            continue
        if hashes and value and sha256(value) in hashes:
            continue
        out[key] = value
    return out


def sha256(text):
    import hashlib  # only when there are secrets to look for: it costs a few ms to import

    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def runtime_dirs(env, home):
    """Where Jupyter keeps its runtime files (server tokens, kernel connection keys) on this host."""
    dirs = [env.get("JUPYTER_RUNTIME_DIR")]
    if env.get("JUPYTER_DATA_DIR"):
        dirs.append(os.path.join(env["JUPYTER_DATA_DIR"], "runtime"))
    if env.get("XDG_DATA_HOME"):
        dirs.append(os.path.join(env["XDG_DATA_HOME"], "jupyter", "runtime"))
    if env.get("XDG_RUNTIME_DIR"):
        dirs.append(os.path.join(env["XDG_RUNTIME_DIR"], "jupyter"))
    dirs.append(os.path.join(home, ".local", "share", "jupyter", "runtime"))
    return [d for d in dirs if d]


def bwrap_argv(bwrap, cfg, env, status_fd, userns=True):
    """bubblewrap's command line for the sandbox the config asks for (the command follows `--`)."""
    cwd = os.path.realpath(cfg["cwd"])
    home = os.path.realpath(env.get("HOME") or os.path.expanduser("~"))
    argv = [
        bwrap,
        "--die-with-parent",
        "--new-session",
        "--unshare-pid",
        "--cap-drop",
        "ALL",
    ]
    if userns:
        argv += ["--unshare-user", "--disable-userns"]
        if os.geteuid() == 0:
            argv += ["--uid", str(NOBODY), "--gid", str(NOBODY)]
    argv += [
        "--json-status-fd",
        str(status_fd),
        "--ro-bind",
        "/",
        "/",
        "--dev-bind",
        "/dev",
        "/dev",
        "--proc",
        "/proc",
    ]
    if not cfg.get("network"):
        argv.append("--unshare-net")
    writable = ["/tmp", "/var/tmp"] + [env.get(v) for v in CACHE_VARS] + [os.path.join(home, c) for c in HOME_CACHES]
    for path in (os.path.join(home, ".cache"), env.get("AUTORESEARCH_CACHE")):
        try:
            if path:
                os.makedirs(path, exist_ok=True)  # a cache that does not exist yet could not be made inside
        except OSError:
            pass
    for path in [p for p in writable if p and os.path.isdir(p)] + [cwd]:
        argv += ["--bind", path, path]
    # A worktree in the workspace's state: the workspace's history and state read-only (later
    # mounts cover earlier ones), then the worktree itself writable again, inside them.
    inside = False
    for path in cfg.get("protect_paths", []):
        real = os.path.realpath(path)
        if os.path.lexists(real):
            argv += ["--ro-bind", real, real]
            inside = inside or cwd.startswith(real + os.sep)
    if inside:
        argv += ["--bind", cwd, cwd]
    for rel in cfg.get("protect", []) + cfg.get("readonly", []):
        path = os.path.join(cwd, rel)
        if os.path.lexists(path):
            argv += ["--ro-bind", path, path]
    for path in [os.path.join(home, s) for s in HOME_SECRETS] + runtime_dirs(env, home):
        real = os.path.realpath(path)
        if cwd == real or cwd.startswith(real + os.sep):
            continue  # the workspace itself lives there: hiding it would hide the run
        if os.path.isdir(real):
            argv += ["--tmpfs", real]
        elif os.path.exists(real):
            argv += ["--ro-bind", "/dev/null", real]
    return argv + ["--chdir", cwd, "--", "/bin/sh", "-c", cfg["cmd"]]


def start_sandboxed(bwrap, cfg, env, report, cg=None):
    """
    The sandboxed command, or why bubblewrap could not set the sandbox up. Without a user
    namespace (refused by the kernel) `auto` goes on with the rest, naming it in report["missing"];
    `on` refuses (the why says what is missing and how to have it).
    """
    if os.environ.get(NO_USERNS_HOOK) and not NO_USERNS:
        NO_USERNS.append("user namespaces refused: test hook %s is set" % NO_USERNS_HOOK)
    if not NO_USERNS:
        child = start_bwrap(lambda fd: bwrap_argv(bwrap, cfg, env, fd, userns=True), cfg, env, report, cg)
        if not isinstance(child, str):
            return child
        NO_USERNS.append(child)
    if cfg.get("sandbox") == "on":
        return (
            "no user namespace for the run (%s), without which it keeps its uid and may make "
            "namespaces of its own; allow user namespaces (sysctl user.max_user_namespaces, "
            "kernel.unprivileged_userns_clone, or the container's seccomp or AppArmor profile)" % NO_USERNS[0]
        )
    child = start_bwrap(lambda fd: bwrap_argv(bwrap, cfg, env, fd, userns=False), cfg, env, report, cg)
    if not isinstance(child, str):
        report["missing"] = [
            "user namespace (%s): the run keeps uid %d, without capabilities, and may make namespaces of its own"
            % (NO_USERNS[0], os.geteuid())
        ]
    return child


def start_bwrap(argv_for, cfg, env, report, cg=None):
    """bubblewrap on the command line argv_for(its status fd) gives, or why it failed."""
    r, w = os.pipe()
    try:
        child = subprocess.Popen(
            argv_for(w),
            cwd=cfg["cwd"],
            env=env,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            pass_fds=(w,),
            preexec_fn=before_exec(cfg, report, cg),
        )
    finally:
        os.close(w)
    # bwrap writes {"child-pid": N} once the sandbox stands; a failed set-up exits without it.
    status = os.fdopen(r, "rb")
    try:
        first = status.readline()
    except Stop:
        # Stopped while the sandbox was being set up: it must not be left to run on its own.
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        status.close()
        raise
    if b"child-pid" in first:
        # From here on the command's stderr is the run's: copy bwrap's pipe through. The status
        # pipe stays open (bwrap writes its exit code there last: a closed one would SIGPIPE it).
        forward(child.stderr)
        STATUS_PIPES.append(status)
        return child
    status.close()
    err = child.stderr.read().decode("utf-8", "replace").strip().splitlines()
    child.wait()
    return err[-1] if err else "exit code %s" % child.returncode


FORWARDS = []
STATUS_PIPES = []


def forward(pipe):
    """Copies a pipe to this process's stderr in a thread (the sandboxed command's stderr)."""
    import threading

    def copy():
        fd = pipe.fileno()
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                return
            os.write(2, chunk)

    thread = threading.Thread(target=copy, daemon=True)
    thread.start()
    FORWARDS.append(thread)


# --- 2. Its limits: rlimits and its cgroup -------------------------------------------------------

# Each run's cgroup folder starts so: the engine removes only folders named so.
CGROUP_PREFIX = "autoresearch-run-"
DEFAULT_PROCESSES = 4096
# The run's cgroup. Found once per guard: where runs' cgroups can go (HOMES), the note said once.
HOMES = []
NOTED = []


def unescape(field):
    """A mountinfo path, its octal escapes (a space is \\040) undone."""
    return field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def read_text(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def write_text(path, text):
    """Writes a cgroup file; False if it could not be (missing, refused, not allowed)."""
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError:
        return False
    try:
        os.write(fd, text.encode())
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def cgroup_home(point, root, own, controller):
    """
    The folder a run's cgroup goes in: this process's own cgroup, or the nearest writable one
    above it; of those, the first whose children get `controller` (None: any) if one does.
    """
    if root == "/" or own == root or own.startswith(root + "/"):
        rel = own[len(root) :] if root != "/" else own
    else:
        rel = ""  # this mount does not show our own cgroup: its top is the nearest
    folder = os.path.normpath(point + "/" + rel.lstrip("/"))
    writable = []
    while True:
        if os.access(os.path.join(folder, "cgroup.procs"), os.W_OK) and os.access(folder, os.W_OK):
            writable.append(folder)
        if folder == point or not folder.startswith(point):
            break
        folder = os.path.dirname(folder)
    for folder in writable:
        if controller is None or controller in read_text(os.path.join(folder, "cgroup.subtree_control")).split():
            return folder, True
    return (writable[0], False) if writable else (None, False)


def cgroup_homes():
    """(the cgroup v2 folder for runs' cgroups, the v1 pids one where v2 cannot cap processes); None for none."""
    if HOMES:
        return HOMES[0]
    own = {}
    for line in read_text("/proc/self/cgroup").splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and parts[0] == "0" and parts[1] == "":
            own["v2"] = parts[2]
        elif len(parts) == 3 and "pids" in parts[1].split(","):
            own["pids"] = parts[2]
    v2 = v1 = None
    v2_pids = False
    for line in read_text("/proc/self/mountinfo").splitlines():
        left, _, right = line.partition(" - ")
        f, r = left.split(), right.split()
        if len(f) < 5 or len(r) < 3:
            continue
        if r[0] == "cgroup2" and v2 is None and "v2" in own:
            v2, v2_pids = cgroup_home(unescape(f[4]), unescape(f[3]), own["v2"], "pids")
        elif r[0] == "cgroup" and v1 is None and "pids" in own and "pids" in r[2].split(","):
            v1, _ = cgroup_home(unescape(f[4]), unescape(f[3]), own["pids"], None)
    HOMES.append((v2, v2_pids, None if v2_pids else v1))
    return HOMES[0]


def make_cgroup(cfg, cg):
    """Makes the run's cgroup folders into cg (dirs, kill: the v2 one, pids: the capped one, max), or notes why none."""
    v2, _, v1 = cgroup_homes()
    name = "%s%d-%s" % (CGROUP_PREFIX, os.getpid(), "%08x" % int.from_bytes(os.urandom(4), "big"))
    cg["dirs"] = []
    for home in (v2, v1):
        if home is None:
            continue
        try:
            os.mkdir(os.path.join(home, name))
            cg["dirs"].append(os.path.join(home, name))
        except OSError:
            pass
    if v2 and cg["dirs"] and cg["dirs"][0].startswith(v2):
        cg["kill"] = cg["dirs"][0]
    cap = (cfg.get("limits") or {}).get("processes") or DEFAULT_PROCESSES
    capped = [d for d in cg["dirs"] if os.path.exists(os.path.join(d, "pids.max"))]
    if capped and write_text(os.path.join(capped[0], "pids.max"), str(int(cap))):
        cg["pids"], cg["max"] = capped[0], int(cap)
    if not NOTED:
        NOTED.append(True)
        if not cg["dirs"]:
            cg["note"] = (
                "cgroup: none writable here (run as root, or delegate one); what a run leaves is found by process"
            )
        elif "pids" not in cg:
            cg["note"] = "cgroup: no pids controller here; the run's processes are not capped by the cgroup"


def enter_cgroup(cg):
    """The command's last step before it starts (preexec): into the run's cgroups; None without one."""
    files = [os.path.join(d, "cgroup.procs") for d in cg.get("dirs", [])]
    if not files:
        return None

    def enter():
        for f in files:
            write_text(f, str(os.getpid()))

    return enter


def check_cgroup(cg, pid):
    """Drops the run's cgroups if the command did not get into them (moving there was refused)."""
    if cg.get("dirs") and os.path.basename(cg["dirs"][0]) not in read_text("/proc/%d/cgroup" % pid):
        remove_cgroup(cg)
        cg["note"] = "cgroup: the run could not be moved into its own; what a run leaves is found by process"


def before_exec(cfg, report, cg):
    """The command's last steps before exec (subprocess's preexec_fn, one: each costs Python's vfork): into its cgroups, then its limits."""
    enter = enter_cgroup(cg or {})
    limit = limiter(cfg, report)

    def steps():
        if enter:
            enter()
        limit()

    return steps


def limiter(cfg, report):
    """
    What the command's process runs before exec (subprocess's preexec_fn): its limits, soft and
    hard alike so that it cannot raise them, none above the hard limit the guard itself has.
    """
    import resource

    wanted = [(resource.RLIMIT_CORE, 0, None)]
    limits = cfg.get("limits") or {}
    if limits.get("file_size_bytes"):
        wanted.append((resource.RLIMIT_FSIZE, int(limits["file_size_bytes"]), "file_size_bytes"))
    if limits.get("processes"):
        wanted.append((resource.RLIMIT_NPROC, int(limits["processes"]), "processes"))
    pairs, applied = [], {}
    for res, value, name in wanted:
        hard = resource.getrlimit(res)[1]
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        pairs.append((res, value))
        if name:
            applied[name] = value
    report["limits"] = applied

    def apply():
        for res, value in pairs:
            resource.setrlimit(res, (value, value))

    return apply


# --- 3. Its lifetime: nothing it starts outlives it ----------------------------------------------

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36


class Stop(Exception):
    """Raised by the signal handler: the run is to end now."""


def prctl(option, value):
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(option, ctypes.c_ulong(value), 0, 0, 0) == 0
    except (ImportError, OSError, AttributeError):
        return False  # not Linux, or a Python built without ctypes


def prepare(cfg):
    """Once per guard: the subreaper, the caller's death as a stop; False if the caller is already gone."""
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    prctl(PR_SET_DUMPABLE, 0)  # its environment (the caller's, secrets included) unreadable to the run
    return not (prctl(PR_SET_PDEATHSIG, signal.SIGTERM) and cfg.get("parent") and os.getppid() != cfg["parent"])


def on_signal(signum, frame):
    ignore_signals()  # one stop is enough; the cleanup must not be cut short by a second
    raise Stop()


def ignore_signals():
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)


def proc_table():
    """{pid: (ppid, comm)} of every process /proc shows, or None without /proc."""
    table = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                stat = f.read().decode("utf-8", "replace")
        except OSError:
            continue  # gone meanwhile
        comm = stat[stat.find("(") + 1 : stat.rfind(")")]
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields and fields[0] != "Z":
            table[int(name)] = (int(fields[1]), comm)
    return table


def descendants(root):
    """The live processes below root (children, theirs, and orphans reparented to this subreaper)."""
    table = proc_table()
    if table is None:
        return None
    below, found, todo = {}, [], [root]
    for pid, (ppid, _) in table.items():
        below.setdefault(ppid, []).append(pid)
    while todo:
        for child in below.get(todo.pop(), []):
            found.append((child, table[child][1]))
            todo.append(child)
    return found


def signal_all(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass  # gone, or not ours to signal


def reap():
    """Collects every exited child; returns {pid: status} of those collected."""
    done = {}
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return done
        if pid == 0:
            return done
        done[pid] = status


def kill_everything(child):
    """Freezes, then kills, every descendant (and the command's group); returns how many there were."""
    me = os.getpid()
    seen = set()
    # What is already on its way out (the sandbox's processes, which die with its first one) is
    # not a leftover: give it a moment before counting.
    until = time.monotonic() + 0.2
    while descendants(me) and time.monotonic() < until:
        reap()
        time.sleep(0.01)
    for _ in range(100):
        # SIGSTOP first, so nothing forks faster than it is found; then look again.
        new = [pid for pid, _ in (descendants(me) or []) if pid not in seen]
        if not new:
            break
        seen.update(new)
        signal_all(new, signal.SIGSTOP)
    if child is not None:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except OSError:
            pass
    signal_all(seen, signal.SIGKILL)
    # Collect them: killed children left unreaped would be zombies of whoever inherits them.
    until = time.monotonic() + 2.0
    while time.monotonic() < until:
        reap()
        try:
            os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break  # no child left, dead or alive
        time.sleep(0.01)
    return len(seen)


def output_links():
    """What /proc shows as this guard's stdout and stderr (`pipe:[n]`, `socket:[n]`): the run holds them too."""
    links = []
    for fd in (1, 2):
        try:
            link = os.readlink("/proc/self/fd/%d" % fd)
        except OSError:
            continue  # no /proc
        if link.startswith(("pipe:", "socket:")):
            links.append(link)  # a file (a log) is no sign of the run
    return links


def freeze_cgroup(cg):
    """Freezes the run's cgroup (v2), so that nothing in it forks while its processes are counted and killed."""
    if cg.get("kill") and "populated 1" in read_text(os.path.join(cg["kill"], "cgroup.events")):
        write_text(os.path.join(cg["kill"], "cgroup.freeze"), "1")


def end_cgroup(cg):
    """Kills what is still in the run's cgroup, removes it; the limit the run reached, in words, or None."""
    if not cg.get("dirs"):
        return None
    if not (cg.get("kill") and write_text(os.path.join(cg["kill"], "cgroup.kill"), "1")):
        for _ in range(100):  # no cgroup.kill (v1, or a kernel before 5.14): kill what the folders hold
            pids = [int(p) for d in cg["dirs"] for p in read_text(os.path.join(d, "cgroup.procs")).split()]
            if not pids:
                break
            signal_all(pids, signal.SIGKILL)
            reap()
    hit = None
    if cg.get("pids"):
        events = dict(
            line.split() for line in read_text(os.path.join(cg["pids"], "pids.events")).splitlines() if " " in line
        )
        if int(events.get("max", "0")) > 0:
            hit = "process limit (%d processes and threads; limits: processes in program.md)" % cg["max"]
    remove_cgroup(cg)
    return hit


def remove_cgroup(cg):
    """Removes the run's cgroup folders once their killed processes are gone (a second at most)."""
    until = time.monotonic() + 1.0
    for d in cg.get("dirs", []):
        while True:
            try:
                os.rmdir(d)
                break
            except FileNotFoundError:
                break
            except OSError:
                if time.monotonic() > until:
                    break
                reap()
                time.sleep(0.01)
    cg["dirs"] = []
    cg.pop("kill", None)
    cg.pop("pids", None)


def wait_for(child, cfg):
    """The command's wait status; orphans reparented to this subreaper are collected meanwhile."""
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == child.pid:
            child.returncode = 0  # keep subprocess from waiting on it again
            return status


def stop(child, cfg):
    """SIGTERM to everything the run started, the grace, then the kill (by the caller)."""
    if child is None:
        return 143 << 8
    me = os.getpid()
    # bubblewrap's own processes are spared the SIGTERM: killing them would SIGKILL the
    # sandbox at once and take the run's grace away.
    signal_all([pid for pid, comm in (descendants(me) or []) if comm != "bwrap"], signal.SIGTERM)
    try:
        os.killpg(child.pid, signal.SIGTERM)
    except OSError:
        pass
    until = time.monotonic() + float(cfg.get("grace", 5))
    while time.monotonic() < until:
        done = reap()
        if child.pid in done:
            child.returncode = 0
            return done[child.pid]
        time.sleep(0.05)
    return signal.SIGKILL  # as a wait status: killed by SIGKILL


# --- One run, its report, and the guard's loop ---------------------------------------------------


def run(cfg):
    """One run of the command: (the report, its wait status)."""
    report = {"sandbox": "off", "why": None, "left": 0}
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    env = clean_env(dict(os.environ), cfg.get("secret_names", []), set(cfg.get("secret_sha256", [])))
    env.update(cfg.get("env", {}))
    env["PYTHONUNBUFFERED"] = "1"
    mode = cfg.get("sandbox", "off")
    plain = ["/bin/sh", "-c", cfg["cmd"]]
    child = None
    cg = {}
    try:
        make_cgroup(cfg, cg)
        if mode == "off":
            report["why"] = cfg.get("off_why") or "turned off by program.md or --sandbox"
        else:
            bwrap = shutil.which("bwrap", path=env.get("PATH"))
            if bwrap is None:
                report["why"] = "bubblewrap is not installed (Debian: apt-get install bubblewrap)"
            else:
                child = start_sandboxed(bwrap, cfg, env, report, cg)
                if isinstance(child, str):
                    report["why"], child = "bubblewrap cannot run here: %s" % child, None
                else:
                    report["sandbox"] = "on"
            if child is None and mode == "on":
                say("sandbox: on, but %s; install or fix bubblewrap, or set sandbox: auto or off" % report["why"])
                report["unusable"] = True
                return report, 126 << 8
        say(describe(report, cfg))
        if child is None:
            child = subprocess.Popen(
                plain,
                cwd=cfg["cwd"],
                env=env,
                start_new_session=True,
                stdin=subprocess.DEVNULL,
                preexec_fn=before_exec(cfg, report, cg),
            )
        check_cgroup(cg, child.pid)
        if cg.get("note"):
            say(cg["note"])
        # The command's own group and cgroups, for the caller to record: should this guard be
        # killed outright, they are what the engine (or a later one) must still be able to kill.
        tell(cfg, {"event": "spawn", "pgid": child.pid, "cgroups": cg.get("dirs", []), "pipes": output_links()})
        status = wait_for(child, cfg)
    except Stop:
        status = stop(child, cfg)
    finally:
        ignore_signals()
        freeze_cgroup(cg)
        # Even without a child in hand (a stop inside Popen), whatever was started is below us.
        report["left"] = kill_everything(child)
        report["limit"] = end_cgroup(cg)
        reap()
    if child is not None and report["left"] > 0:
        say("killed %d process%s the run left behind" % (report["left"], "" if report["left"] == 1 else "es"))
    if report["limit"]:
        say("error: the run reached its %s" % report["limit"])
    return report, status


def describe(report, cfg):
    """The run log's first line: whether the run is sandboxed, and how (or why not)."""
    if report["sandbox"] == "on":
        cwd = cfg["cwd"]
        # The engine's own files are listed where they exist (bwrap_argv binds those only); the
        # person's read-only list in full, as written.
        kept = [p for p in cfg.get("protect", []) if os.path.lexists(os.path.join(cwd, p))]
        kept = ", ".join(kept + cfg.get("readonly", []))
        line = "sandbox: on (bubblewrap; network %s; read-only: %s" % ("on" if cfg.get("network") else "off", kept)
        missing = report.get("missing")
        return line + ("; missing: %s)" % "; ".join(missing) if missing else ")")
    return "sandbox: off (%s)" % report["why"]


def tell(cfg, message):
    """One JSON line to the caller's report pipe, if it gave one (the spawn line only where it asks for it)."""
    fd = cfg.get("report_fd")
    if message.get("event") == "spawn" and cfg.get("report_spawn") is False:
        return
    if fd is not None and fd >= 0:
        try:
            os.write(fd, (json.dumps(message) + "\n").encode())
        except OSError:
            pass


def say(line):
    os.write(1, ("[autoresearch] %s\n" % line).encode())


def finish(report, status):
    """The report with the command's end in it, once the last of its output is through."""
    for thread in FORWARDS:
        thread.join(2.0)  # the last of the sandboxed stderr; its writers are dead by now
    del FORWARDS[:]
    while STATUS_PIPES:
        STATUS_PIPES.pop().close()
    if os.WIFSIGNALED(status):
        try:
            name = signal.Signals(os.WTERMSIG(status)).name
        except ValueError:
            name = "SIG%d" % os.WTERMSIG(status)
        report.update(exit_code=None, signal=name)
    else:
        report.update(exit_code=os.WEXITSTATUS(status), signal=None)
    return report


def serve(cfg0):
    """
    Runs one command per line of stdin (its config as JSON), for an engine that keeps one guard
    instead of starting Python for every run (or, under Slurm, for one run whose config must not
    be on the command line). With config `start_marker`, a start marker on stderr first. After
    each run: its end marker (config `nonce`) on stdout and stderr, behind the last of its output,
    then the report (on stderr too, behind the marker, where `report_fd` is 2). A stop that arrives
    between runs is ignored; stdin's end, or the caller's death, ends the guard.
    """
    ignore_signals()
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return
        cfg = dict(cfg0, **json.loads(line))
        if cfg.get("start_marker"):
            # A caller behind a scheduler (Slurm's srun) learns here that the job left the queue, and its id.
            job = (os.environ.get("SLURM_JOB_ID", ""), os.environ.get("SLURMD_NODENAME", ""))
            # Ended by a newline: srun passes stderr on a line at a time, so a marker without one waits for the run's end.
            start = "\0autoresearch-run-start %s %s %s\0\n" % ((cfg["nonce"],) + job)
            os.write(2, start.encode())
        report, status = run(cfg)
        ignore_signals()
        report = finish(report, status)
        marker = ("\0autoresearch-run-end %s\0" % cfg["nonce"]).encode()
        for fd in (1, 2):
            try:
                os.write(fd, marker)
            except OSError:
                pass
        tell(cfg, report)
        if cfg.get("parent") and os.getppid() != cfg["parent"]:
            return


def main():
    cfg = json.loads(sys.argv[1])
    if not prepare(cfg):
        os._exit(1)  # the caller is already gone: nothing to run for
    if cfg.get("serve"):
        serve(cfg)
        os._exit(0)
    report, status = run(cfg)
    tell(cfg, finish(report, status))
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else status)


main()
