#!/usr/bin/env bash
# A real one-node Slurm cluster on this machine, from Debian's packages, for the Slurm tests and for
# trying `--executor slurm` before a real cluster:
#
#   scripts/local-slurm.sh start    # installs the packages if missing, starts everything, waits for `srun true`
#   eval "$(scripts/local-slurm.sh env)"   # then srun, sbatch, squeue, sacct, scancel work from this shell
#   scripts/local-slurm.sh status   # what runs; exit 0 when all of it does
#   scripts/local-slurm.sh stop     # cancels the jobs, stops every daemon it started; packages stay
#
# Everything it writes (configuration, munge key, MariaDB's data, Slurm's state, every daemon's log and pid
# file) lives in one folder, $AUTORESEARCH_SLURM_DIR (default /tmp/autoresearch-slurm): /etc/slurm and
# /etc/munge are never edited, so a machine's own Slurm, if any, is untouched. Daemons: munged (its own
# key and socket), mariadbd (its own datadir, unix socket only, no TCP), slurmdbd (so `sacct` shows every
# job), slurmctld and slurmd; ports $AUTORESEARCH_SLURMCTLD_PORT, $AUTORESEARCH_SLURMD_PORT and
# $AUTORESEARCH_SLURMDBD_PORT (6817, 6818, 6819 by default). No cgroups and no systemd are needed:
# proctrack/linuxproc tracks a job's processes by parentage, task/none pins nothing.
#
# Needs root (daemons run as root and slurmd starts jobs as their user); run as another user it goes
# through sudo.
set -euo pipefail

DIR=${AUTORESEARCH_SLURM_DIR:-/tmp/autoresearch-slurm}
CTLD_PORT=${AUTORESEARCH_SLURMCTLD_PORT:-6817}
SLURMD_PORT=${AUTORESEARCH_SLURMD_PORT:-6818}
DBD_PORT=${AUTORESEARCH_SLURMDBD_PORT:-6819}
CLUSTER=autoresearch
ACCOUNT=autoresearch
PACKAGES=(munge slurmctld slurmd slurm-client slurmdbd mariadb-server)
# Every daemon, in start order.
DAEMONS=(munged mariadbd slurmdbd slurmctld slurmd)

SLURM_CONF_FILE=$DIR/etc/slurm.conf
MUNGE_SOCKET=$DIR/munge/munge.socket
MYSQL_SOCKET=$DIR/mysql/mysqld.sock

die() {
  echo "local-slurm: $*" >&2
  exit 1
}

# A daemon that would not start: the end of its log, then the fix.
die_log() {
  local log=$1
  shift
  if [[ -s $log ]]; then
    echo "local-slurm: the last lines of $log:" >&2
    tail -n 20 "$log" >&2
  fi
  die "$*"
}

pid_file() { echo "$DIR/run/$1.pid"; }
log_file() { echo "$DIR/log/$1.log"; }

# The pid of a daemon from its pid file, if that process is alive and still that daemon (a pid can be reused).
running_pid() {
  local f pid
  f=$(pid_file "$1")
  [[ -s $f ]] || return 1
  pid=$(tr -dc 0-9 <"$f")
  [[ -n $pid && -r /proc/$pid/comm ]] || return 1
  # comm is cut at 15 characters and mariadbd may show as mysqld.
  case "$1:$(cat "/proc/$pid/comm" 2>/dev/null)" in
    munged:munged | slurmdbd:slurmdbd | slurmctld:slurmctld | slurmd:slurmd) ;;
    mariadbd:mariadbd | mariadbd:mysqld) ;;
    *) return 1 ;;
  esac
  echo "$pid"
}

slurm() { SLURM_CONF=$SLURM_CONF_FILE "$@"; }

# Slurm's name for this node: `hostname -s` when Slurm can take it as it is (a name with dots, brackets or
# commas would be read as a host list), else "localnode". slurmd is started with -N, so it need not resolve.
node_name() {
  local name
  name=$(hostname -s 2>/dev/null || true)
  if [[ $name =~ ^[A-Za-z][A-Za-z0-9-]{0,62}$ ]]; then echo "$name"; else echo localnode; fi
}

install_packages() {
  local missing=() pkg
  # Not `dpkg -s` alone: it succeeds for a removed package whose configuration files are left.
  for pkg in "${PACKAGES[@]}"; do
    [[ $(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null) == "install ok installed" ]] || missing+=("$pkg")
  done
  ((${#missing[@]})) || return 0
  echo "local-slurm: installing Debian packages: ${missing[*]}"
  command -v apt-get >/dev/null || die "${missing[*]} missing and there is no apt-get: install them with this system's package manager"
  # Package scripts try to start the daemons through invoke-rc.d; on a machine without an init system that is refused, harmlessly.
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 \
    --no-install-recommends "${missing[@]}" </dev/null; } >"$DIR/log/apt.log" 2>&1; then
    die_log "$DIR/log/apt.log" "could not install ${missing[*]}: see $DIR/log/apt.log (Debian 12's slurm 22.05 packages are expected)"
  fi
}

# A port another program already listens on would make a daemon exit at start with a cryptic log line.
check_ports() {
  local port
  for port in "$CTLD_PORT" "$SLURMD_PORT" "$DBD_PORT"; do
    [[ $port =~ ^[0-9]+$ ]] || die "port '$port' is not a number: set AUTORESEARCH_SLURMCTLD_PORT, AUTORESEARCH_SLURMD_PORT and AUTORESEARCH_SLURMDBD_PORT to free ports"
    if port_in_use "$port"; then
      die "port $port is in use: stop what listens there ($(ss -Hltnp "sport = :$port" 2>/dev/null | grep -o 'users:.*' | head -n1)) or set AUTORESEARCH_SLURMCTLD_PORT, AUTORESEARCH_SLURMD_PORT and AUTORESEARCH_SLURMDBD_PORT to free ports"
    fi
  done
}

port_in_use() {
  if command -v ss >/dev/null; then
    [[ -n $(ss -Hltn "sport = :$1") ]]
  else
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
  fi
}

write_config() {
  local node cpus mem_mb
  node=$(node_name)
  cpus=$(nproc)
  # slurmd drains a node whose RealMemory is above what it finds, so ask for a little less than there is.
  mem_mb=$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 * 0.9 }' /proc/meminfo)
  : >"$DIR/etc/plugstack.conf"
  cat >"$SLURM_CONF_FILE" <<EOF
# Written by scripts/local-slurm.sh: a one-node cluster, every path in $DIR.
ClusterName=$CLUSTER
# "localhost" is the one controller name slurmctld accepts on any host, whatever \`hostname -s\` says.
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
CredType=cred/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$(pid_file slurmctld)
SlurmdPidFile=$(pid_file slurmd)
SlurmctldLogFile=$(log_file slurmctld)
SlurmdLogFile=$(log_file slurmd)
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$DIR/etc/plugstack.conf
MailProg=/bin/true
MpiDefault=none
# No cgroups: processes are tracked by parentage, tasks are not pinned, usage is read from /proc.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
# Every job goes to slurmdbd, so sacct shows its name, state, times, exit code and reason.
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
# For slurmdbd connections Slurm takes munge's socket from here, not from AuthInfo.
AccountingStoragePass=$MUNGE_SOCKET
JobCompType=jobcomp/none
# CPUs are the only consumable: a 2-CPU node runs two 1-CPU jobs at once; memory is not counted.
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
# Jobs start as soon as they are submitted: no batch delay, and the queue is looked at every few seconds.
SchedulerParameters=batch_sched_delay=0,sched_interval=5,bf_interval=5
# Preemption by partition: a job in \`urgent\` (PriorityTier=10) that needs CPUs a \`debug\` job
# (PriorityTier=1) holds cancels that job at once (no GraceTime), and sacct says PREEMPTED. To make one
# happen: \`srun -p debug -c $cpus sleep 60 &\` then \`srun -p urgent -c $cpus true\`.
PreemptType=preempt/partition_prio
PreemptMode=CANCEL
# A cancelled or timed-out job gets SIGTERM, then SIGKILL 5 s later; --time is enforced to the minute.
KillWait=5
OverTimeLimit=0
# Finished jobs stay in squeue/scontrol for 5 minutes (sacct keeps them for good).
MinJobAge=300
InactiveLimit=0
Waittime=0
MessageTimeout=10
SlurmctldTimeout=120
SlurmdTimeout=300
ReturnToService=2
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=2:00:00 PriorityTier=1 PreemptMode=CANCEL State=UP
PartitionName=urgent Nodes=$node MaxTime=2:00:00 PriorityTier=10 State=UP
EOF
  # slurmdbd reads slurmdbd.conf beside SLURM_CONF's slurm.conf, and refuses one others can read (it may hold a password).
  (
    umask 077
    cat >"$DIR/etc/slurmdbd.conf" <<EOF
# Written by scripts/local-slurm.sh.
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
PidFile=$(pid_file slurmdbd)
LogFile=$(log_file slurmdbd)
DebugLevel=info
# MariaDB on its unix socket (MYSQL_UNIX_PORT is set when slurmdbd starts), as root by socket authentication.
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=root
StorageLoc=slurm_acct_db
EOF
  )
}

start_munged() {
  if [[ ! -s $DIR/munge/munge.key ]]; then
    mungekey --create --keyfile="$DIR/munge/munge.key" >/dev/null 2>&1 || die "mungekey could not write $DIR/munge/munge.key"
  fi
  chmod 0600 "$DIR/munge/munge.key"
  # --force: munged refuses to run as root otherwise; a stale socket from a killed munged is removed first.
  rm -f "$MUNGE_SOCKET" "$MUNGE_SOCKET.lock"
  munged --force --key-file="$DIR/munge/munge.key" --socket="$MUNGE_SOCKET" --pid-file="$(pid_file munged)" \
    --log-file="$(log_file munged)" --seed-file="$DIR/munge/munged.seed" >>"$(log_file munged)" 2>&1 9>&- ||
    die_log "$(log_file munged)" "munged did not start: see $(log_file munged)"
  wait_for "munged" 10 munge_ok
}

munge_ok() { munge --socket="$MUNGE_SOCKET" -n </dev/null | unmunge --socket="$MUNGE_SOCKET" >/dev/null 2>&1; }

start_mariadbd() {
  if [[ ! -d $DIR/mysql/data/mysql ]]; then
    mariadb-install-db --no-defaults --datadir="$DIR/mysql/data" --user=root --auth-root-authentication-method=socket \
      --skip-test-db >"$(log_file mariadb-install)" 2>&1 ||
      die_log "$(log_file mariadb-install)" "mariadb-install-db failed: see $(log_file mariadb-install); remove $DIR/mysql/data to start over"
  fi
  # mariadbd does not fork: setsid+nohup detach it from this shell. --no-defaults keeps /etc/mysql out of it.
  setsid nohup mariadbd --no-defaults --user=root --datadir="$DIR/mysql/data" --socket="$MYSQL_SOCKET" \
    --pid-file="$(pid_file mariadbd)" --log-error="$(log_file mariadbd)" --skip-networking \
    --innodb-buffer-pool-size=64M --innodb-log-file-size=16M --skip-name-resolve >/dev/null 2>&1 </dev/null 9>&- &
  wait_for "mariadbd" 30 mariadb_ok
}

mariadb_ok() { mariadb --no-defaults --socket="$MYSQL_SOCKET" -uroot -e 'SELECT 1' >/dev/null 2>&1; }

start_slurmdbd() {
  MYSQL_UNIX_PORT=$MYSQL_SOCKET slurm slurmdbd 9>&- >>"$(log_file slurmdbd)" 2>&1 ||
    die_log "$(log_file slurmdbd)" "slurmdbd did not start: see $(log_file slurmdbd)"
  # Its first start creates the accounting tables, which takes a few seconds.
  wait_for "slurmdbd" 60 dbd_ok
}

dbd_ok() { slurm sacctmgr -n list cluster >/dev/null 2>&1; }

# The cluster, an account and the users that run jobs, so that slurmctld's jobs are recorded under them.
register() {
  local user
  if [[ -z $(slurm sacctmgr -n -P list cluster "$CLUSTER" format=cluster) ]]; then
    slurm sacctmgr -i add cluster "$CLUSTER" >/dev/null || die "sacctmgr could not add cluster $CLUSTER: see $(log_file slurmdbd)"
  fi
  if [[ -z $(slurm sacctmgr -n -P list account "$ACCOUNT" format=account) ]]; then
    slurm sacctmgr -i add account "$ACCOUNT" Cluster="$CLUSTER" Description="autoresearch runs" Organization=autoresearch >/dev/null ||
      die "sacctmgr could not add account $ACCOUNT: see $(log_file slurmdbd)"
  fi
  for user in root ${SUDO_USER:-}; do
    if [[ -z $(slurm sacctmgr -n -P list association cluster="$CLUSTER" account="$ACCOUNT" user="$user" format=user) ]]; then
      slurm sacctmgr -i add user "$user" Account="$ACCOUNT" Cluster="$CLUSTER" >/dev/null ||
        die "sacctmgr could not add user $user: see $(log_file slurmdbd)"
    fi
    # root exists from the start with its own default account; its jobs should be listed under this one.
    if [[ $(slurm sacctmgr -n -P list user "$user" format=defaultaccount) != "$ACCOUNT" ]]; then
      slurm sacctmgr -i modify user "$user" set DefaultAccount="$ACCOUNT" >/dev/null ||
        die "sacctmgr could not set $user's default account: see $(log_file slurmdbd)"
    fi
  done
}

start_slurmctld() {
  slurm slurmctld 9>&- >>"$(log_file slurmctld)" 2>&1 || die_log "$(log_file slurmctld)" "slurmctld did not start: see $(log_file slurmctld)"
  wait_for "slurmctld" 30 ctld_ok
}

ctld_ok() { slurm scontrol ping 2>/dev/null | grep -q 'is UP'; }

start_slurmd() {
  local node
  node=$(node_name)
  mkdir -p "$DIR/spool/$node"
  slurm slurmd -N "$node" 9>&- >>"$(log_file slurmd)" 2>&1 || die_log "$(log_file slurmd)" "slurmd did not start: see $(log_file slurmd)"
  wait_for "slurmd" 30 node_idle
}

node_idle() {
  local state
  state=$(slurm sinfo -h -N -n "$(node_name)" -o %T 2>/dev/null | head -n1)
  case $state in
    idle | mixed | allocated) return 0 ;;
    # Down is how a restarted slurmctld shows the node until slurmd registers; drained is a lasting misfit.
    drain*) die_log "$(log_file slurmd)" "node $(node_name) is $state: $(slurm sinfo -h -R -o %E) (see $(log_file slurmd))" ;;
  esac
  return 1
}

# Polls CHECK every 0.1 s for up to SECS seconds; a daemon that died meanwhile (its pid file may take a
# moment to appear, hence the grace second), or a timeout, ends with its log.
wait_for() {
  local what=$1 secs=$2 check=$3 start=$SECONDS
  while ! "$check"; do
    if ((SECONDS - start > 1)) && ! running_pid "$what" >/dev/null; then
      die_log "$(log_file "$what")" "$what exited at start: see $(log_file "$what")"
    fi
    ((SECONDS - start < secs)) || die_log "$(log_file "$what")" "$what did not answer within ${secs}s: see $(log_file "$what")"
    sleep 0.1
  done
}

all_up() {
  local d
  for d in "${DAEMONS[@]}"; do running_pid "$d" >/dev/null || return 1; done
}

any_up() {
  local d
  for d in "${DAEMONS[@]}"; do running_pid "$d" >/dev/null && return 0; done
  return 1
}

# Sends SIGTERM to each daemon named that runs, then waits up to 15 s for all of them together before SIGKILL.
stop_daemons() {
  local d pid pids=() i
  for d in "$@"; do
    pid=$(running_pid "$d") || continue
    kill -TERM "$pid" 2>/dev/null || true
    pids+=("$pid")
    echo "local-slurm: stopping $d"
  done
  for ((i = 0; i < 150 && ${#pids[@]}; i++)); do
    alive "${pids[@]}" || break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for d in "$@"; do rm -f "$(pid_file "$d")"; done
}

# True while any of the pids is a live process.
alive() {
  local pid
  for pid in "$@"; do [[ -d /proc/$pid ]] && return 0; done
  return 1
}

cmd_stop() {
  local ids i d
  # Jobs first, so no job's processes outlive the cluster (slurmstepd would keep them after slurmd is gone).
  if running_pid slurmctld >/dev/null; then
    ids=$(slurm squeue -h -o %A 2>/dev/null | tr '\n' ' ')
    if [[ -n ${ids// /} ]]; then
      # shellcheck disable=SC2086 # one argument per job id
      slurm scancel $ids 2>/dev/null || true
      for ((i = 0; i < 150; i++)); do
        [[ -z $(slurm squeue -h -t running,completing -o %A 2>/dev/null) ]] && break
        sleep 0.1
      done
    fi
  fi
  # The Slurm daemons together (slurmctld keeps what slurmdbd has not taken yet in its state folder), then what they use.
  stop_daemons slurmd slurmctld slurmdbd
  stop_daemons mariadbd munged
  echo "local-slurm: stopped (state and logs stay in $DIR)"
}

cmd_start() {
  local t0=$SECONDS
  if all_up && ctld_ok; then
    echo "local-slurm: already up ($DIR); eval \"\$($0 env)\" to use it"
    return 0
  fi
  # Half a cluster (a daemon that died) is started again whole, from a known configuration.
  any_up && cmd_stop >/dev/null
  install_packages
  check_ports
  if ((${#MUNGE_SOCKET} > 100 || ${#MYSQL_SOCKET} > 100)); then
    die "$DIR is too long a path for a unix socket: set AUTORESEARCH_SLURM_DIR to a shorter folder"
  fi
  write_config
  start_munged
  start_mariadbd
  start_slurmdbd
  register
  start_slurmctld
  start_slurmd
  slurm timeout 60 srun -N1 true >"$DIR/log/srun-check.log" 2>&1 ||
    die_log "$DIR/log/srun-check.log" "the cluster is up but \`srun -N1 true\` failed: see $DIR/log/slurmctld.log and slurmd.log"
  echo "local-slurm: up in $((SECONDS - t0))s: node $(node_name), $(nproc) CPUs, partitions debug (default) and urgent; logs in $DIR/log"
  echo "local-slurm: eval \"\$($0 env)\" to use it"
}

cmd_status() {
  local d pid ok=0
  for d in "${DAEMONS[@]}"; do
    if pid=$(running_pid "$d"); then
      echo "$d: running (pid $pid)"
    else
      echo "$d: not running"
      ok=1
    fi
  done
  if ((ok == 0)); then
    slurm sinfo -N -o '%N %P %T %c' || ok=1
  fi
  return $ok
}

cmd_env() {
  echo "export SLURM_CONF=$SLURM_CONF_FILE"
}

case ${1:-} in
  start | stop)
    if [[ $(id -u) != 0 ]]; then
      command -v sudo >/dev/null || die "must run as root (its daemons do) and sudo is missing: run it as root"
      echo "local-slurm: not root, running through sudo" >&2
      exec sudo AUTORESEARCH_SLURM_DIR="$DIR" AUTORESEARCH_SLURMCTLD_PORT="$CTLD_PORT" \
        AUTORESEARCH_SLURMD_PORT="$SLURMD_PORT" AUTORESEARCH_SLURMDBD_PORT="$DBD_PORT" "$0" "$@"
    fi
    mkdir -p "$DIR"/{etc,run,log,state,spool,munge,mysql}
    chmod 0755 "$DIR"
    # One start or stop at a time: parallel test files may all call start. Every daemon is started with
    # 9>&-, or it would hold this lock for as long as it runs.
    exec 9>"$DIR/.lock"
    flock 9
    "cmd_$1"
    ;;
  status) cmd_status ;;
  env) cmd_env ;;
  *)
    echo "usage: $0 start|stop|status|env" >&2
    exit 2
    ;;
esac
