#!/bin/bash
# A throwaway one-node Slurm on this machine, for the tests (and for trying the scripts by hand).
#
#   slurm/local-cluster.sh start DIR     # prints the `export SLURM_CONF=...` line to use
#   slurm/local-cluster.sh stop DIR      # stops exactly the daemons that `start DIR` started
#
# It finds (or, as root with apt-get, installs) Debian's slurmctld, slurmd, slurm-client and munge,
# writes a munge key and a one-node slurm.conf under DIR (ports chosen free, MpiDefault=none as
# Debian ships it, no cgroups), starts munged, slurmctld and slurmd with their pid files in DIR,
# and waits until the node is idle. Nothing outside DIR is written, except the packages.
set -euo pipefail

usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[[ $# -eq 2 ]] || usage
action=$1
dir=$(mkdir -p "$2" && cd "$2" && pwd)

need_packages() {
  local missing=()
  command -v munged >/dev/null || [[ -x /usr/sbin/munged ]] || missing+=(munge)
  [[ -x /usr/sbin/slurmctld ]] || missing+=(slurmctld)
  [[ -x /usr/sbin/slurmd ]] || missing+=(slurmd)
  command -v sbatch >/dev/null || missing+=(slurm-client)
  [[ ${#missing[@]} -eq 0 ]] && return 0
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    echo "local-cluster: installing ${missing[*]} (Debian packages)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >"$dir/apt.log" 2>&1 \
      || { apt-get update -q >>"$dir/apt.log" 2>&1 &&
           DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >>"$dir/apt.log" 2>&1; } \
      || { echo "local-cluster: apt-get install ${missing[*]} failed (see $dir/apt.log)" >&2; exit 3; }
  else
    echo "local-cluster: missing ${missing[*]}: install Debian's packages (as root:" \
         "apt-get install ${missing[*]}) to run the Slurm tests" >&2
    exit 3
  fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

stop() {
  local name pid
  for name in slurmd slurmctld munged; do
    [[ -f "$dir/$name.pid" ]] || continue
    pid=$(cat "$dir/$name.pid")
    # only the process this script started: its pid file, and the command it was started as
    if [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' </proc/"$pid"/cmdline | grep -q -- "$dir"; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$dir/$name.pid"
  done
}

start() {
  need_packages
  stop                                       # a previous start in the same DIR
  local host cpus user
  host=$(hostname -s)
  cpus=8                                     # more than this machine has: the tests oversubscribe
  user=$(id -un)
  mkdir -p "$dir/state" "$dir/spool" "$dir/munge" "$dir/log"
  chmod 700 "$dir/munge"
  if [[ ! -f "$dir/munge/munge.key" ]]; then
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$dir/munge/munge.key"
  fi
  /usr/sbin/munged --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
    --pid-file="$dir/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed" --force
  cat >"$dir/slurm.conf" <<EOF
# written by slurm/local-cluster.sh: a one-node test cluster in $dir
ClusterName=yewpy-local
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=$user
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
KillWait=5
# job ids differ from one throwaway cluster to the next: MPICH names its shared-memory segments
# after the job step, and a segment left by a killed job would clash with the same id's next run
FirstJobId=$(( (RANDOM << 15 | RANDOM) % 50000000 + 1000 ))
MinJobAge=600
SchedulerType=sched/backfill
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
  export SLURM_CONF="$dir/slurm.conf"
  /usr/sbin/slurmctld -f "$SLURM_CONF" -i
  /usr/sbin/slurmd -f "$SLURM_CONF"
  for _ in $(seq 100); do
    if sinfo -h -o %T 2>/dev/null | grep -qx idle; then
      echo "export SLURM_CONF=$SLURM_CONF"
      return 0
    fi
    sleep 0.2
  done
  echo "local-cluster: the node did not become idle; logs in $dir/log" >&2
  tail -5 "$dir"/log/*.log >&2 || true
  stop
  exit 4
}

case "$action" in
  start) start ;;
  stop) stop ;;
  *) usage ;;
esac
