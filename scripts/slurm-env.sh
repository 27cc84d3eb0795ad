#!/usr/bin/env bash
# slurm-env.sh: real Slurm clusters on this machine for the tests, side by
# side: "acct" with accounting (slurmdbd + MariaDB) and "noacct" without
# (sacct answers that accounting storage is disabled), one node each that
# advertises 4 GPUs so GPU requests are scheduled like on a GPU cluster;
# and "twonode", two slurmd nodes in network namespaces of their own
# (addresses on a private /24 used by nothing else, behind a bridge), for
# jobs that span two nodes.
#
#   scripts/slurm-env.sh install   apt packages (idempotent)
#   scripts/slurm-env.sh start     munge, MariaDB, slurmdbd, both clusters (idempotent)
#   scripts/slurm-env.sh stop      everything start started
#   scripts/slurm-env.sh env       the variables tests read (KVSWEEP_SLURM_ACCT/NOACCT/TWONODE)
#   scripts/slurm-env.sh ctld-stop|ctld-start CLUSTER   (for outage tests)
#   scripts/slurm-env.sh ctld-reset CLUSTER   a fresh controller state: job ids
#                                  start again at FirstJobId (accounting keeps the old jobs)
#
# Everything is this run's own (scripts/lib.sh: KVSWEEP_TEST_SLOT): state
# under $KVSWEEP_TEST_BASE/slurm, the ports, a MariaDB server of its own,
# and the two-node network's names and addresses. munged is the one
# exception: Slurm's clients reach it at its default socket whatever the
# configuration says, so the runs share one, started by the first that
# needs it and stopped by the last that leaves. Root only.
set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
BASE=$KVSWEEP_TEST_BASE/slurm
PKGS=(munge slurm-wlm slurmdbd mariadb-server iproute2 util-linux)

# The two-node cluster's network: a bridge on the host, one namespace per
# node, on a private /24 of this slot.
NET=10.213.$((77 + KVSWEEP_TEST_SLOT))
BRIDGE=kvsbr$KVSWEEP_TEST_SLOT
NS=kvs${KVSWEEP_TEST_SLOT}n # namespaces ${NS}1, ${NS}2
TWO_PORTS="$((PORT_BASE + 37)) $((PORT_BASE + 38))"

log() { echo "slurm-env: $*" >&2; }

install() { apt_need "${PKGS[@]}"; }

# Cluster layout: name, slurmctld port, slurmd port.
CLUSTERS=("acct $((PORT_BASE + 17)) $((PORT_BASE + 18))" "noacct $((PORT_BASE + 27)) $((PORT_BASE + 28))")
DBD_PORT=$((PORT_BASE + 19))
DB_PORT=$((PORT_BASE + 6))
MUNGE_USERS=/run/munge/kvsweep.users # one file per run using munged
DB=$BASE/mysql

conf_of() { echo "$BASE/$1/slurm.conf"; }

# first_job_id RANK: job ids of their own per run and per cluster (RANK 0,
# 1, 2). pyxis names its containers after the job and step
# (pyxis_JOB.STEP) in the user's one enroot data directory, so no two
# clusters on the machine may hand out the same job id.
first_job_id() { echo "FirstJobId=$((KVSWEEP_TEST_SLOT * 1000000 + $1 * 300000 + 1))"; }

# plugstack DIR: with pyxis built (scripts/runtime-env.sh exports
# KVSWEEP_PYXIS_SO), load it into the cluster whose config is in DIR, so
# srun --container-image runs steps in an image through enroot.
plugstack() {
	[ -n "${KVSWEEP_PYXIS_SO:-}" ] || return 0
	echo "required $KVSWEEP_PYXIS_SO runtime_path=$KVSWEEP_PYXIS_RUNTIME" >"$1/plugstack.conf"
	echo "PlugStackConfig=$1/plugstack.conf"
}

write_conf() {
	local name=$1 cport=$2 dport=$3 dir=$BASE/$1
	local cpus mem before=
	[ -f "$dir/slurm.conf" ] && before=$(md5sum <"$dir/slurm.conf")
	cpus=$(nproc)
	mem=$(($(awk '/MemTotal/ {print int($2/1024)}' /proc/meminfo) - 1024))
	mkdir -p "$dir/ctld" "$dir/d" "$dir/log"
	{
		echo "ClusterName=kvs$name"
		echo "SlurmctldHost=localhost"
		echo "SlurmctldPort=$cport"
		echo "SlurmdPort=$dport"
		echo "SlurmUser=root"
		echo "SlurmdUser=root"
		echo "AuthType=auth/munge"
		echo "StateSaveLocation=$dir/ctld"
		echo "SlurmdSpoolDir=$dir/d"
		echo "SlurmctldPidFile=$dir/slurmctld.pid"
		echo "SlurmdPidFile=$dir/slurmd.pid"
		echo "SlurmctldLogFile=$dir/log/slurmctld.log"
		echo "SlurmdLogFile=$dir/log/slurmd.log"
		echo "ProctrackType=proctrack/linuxproc"
		echo "TaskPlugin=task/none"
		echo "SchedulerType=sched/backfill"
		echo "SelectType=select/cons_tres"
		echo "SelectTypeParameters=CR_Core_Memory"
		echo "GresTypes=gpu"
		echo "MaxArraySize=1001"
		# Without accounting a finished job is gone from squeue after
		# MinJobAge; a short one lets tests reach that case quickly.
		if [ "$name" = acct ]; then echo "MinJobAge=300"; else echo "MinJobAge=30"; fi
		# A job's TERM trap (its exit marker) gets 120 s before SIGKILL:
		# Slurm's default 30 s was once not enough on a two-core machine
		# loaded with the whole test suite (and a Kubernetes cluster) beside.
		echo "KillWait=120"
		if [ "$name" = acct ]; then first_job_id 0; else first_job_id 1; fi
		plugstack "$dir"
		echo "SchedulerParameters=sched_interval=2,bf_interval=2"
		echo "ReturnToService=2"
		echo "MpiDefault=none"
		if [ "$name" = acct ]; then
			echo "AccountingStorageType=accounting_storage/slurmdbd"
			echo "AccountingStorageHost=localhost"
			echo "AccountingStoragePort=$DBD_PORT"
			echo "AccountingStoreFlags=job_comment"
			echo "JobAcctGatherType=jobacct_gather/linux"
			echo "JobCompType=jobcomp/none"
			# Submit limits are enforced, as at sites: the pacing tests
			# give a QOS or an account of their own a limit.
			echo "AccountingStorageEnforce=associations,limits,qos"
			# The bench's scale row sets the controller's job limit.
			[ -z "${KVSWEEP_SLURM_MAX_JOBS:-}" ] || echo "MaxJobCount=$KVSWEEP_SLURM_MAX_JOBS"
		else
			echo "AccountingStorageType=accounting_storage/none"
			echo "JobAcctGatherType=jobacct_gather/none"
		fi
		echo "NodeName=kvs${name}1 NodeHostname=$(hostname) NodeAddr=127.0.0.1 Port=$dport CPUs=$cpus RealMemory=$mem Gres=gpu:4 State=UNKNOWN"
		echo "PartitionName=debug Nodes=kvs${name}1 Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8"
	} >"$dir/slurm.conf"
	# Slurm keeps only GPUs with a device file: four stand-ins with the
	# device numbers of /dev/null.
	local i
	for i in 0 1 2 3; do
		[ -e "$dir/gpu$i" ] || mknod "$dir/gpu$i" c 1 3
	done
	echo "NodeName=kvs${name}1 Name=gpu File=$dir/gpu[0-3]" >"$dir/gres.conf"
	if [ -n "$before" ] && [ "$before" != "$(md5sum <"$dir/slurm.conf")" ] && ctld_running "$name"; then
		log "cluster $name: configuration changed, reconfiguring"
		SLURM_CONF=$dir/slurm.conf scontrol reconfigure
	fi
}

munge_ok() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }

# start_munge registers this run as a user of munged, starting it when
# none runs (and marking it as started by kvsweep).
start_munge() {
	mkdir -p /run/munge /var/log/munge /var/lib/munge "$MUNGE_USERS"
	chown munge:munge /run/munge /var/log/munge /var/lib/munge
	# One run at a time decides whether to start it (runs start together).
	exec 8>/run/munge/kvsweep.lock
	flock 8
	touch "$MUNGE_USERS/$KVSWEEP_TEST_SLOT"
	if munge_ok; then
		flock -u 8
		return
	fi
	[ -f /etc/munge/munge.key ] || /usr/sbin/mungekey --create
	# A clean environment: munged is shared, not this run's (test.sh would
	# otherwise count it among the processes the run left behind).
	env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin su munge -s /bin/sh -c /usr/sbin/munged 8>&-
	touch /run/munge/kvsweep.started
	for _ in $(seq 100); do
		if munge_ok; then
			flock -u 8
			return
		fi
		sleep 0.1
	done
	log "munged did not start"
	return 1
}

# stop_munge unregisters this run; the last run to leave stops the munged
# kvsweep started (never one that was running before).
stop_munge() {
	exec 8>/run/munge/kvsweep.lock
	flock 8
	rm -f "$MUNGE_USERS/$KVSWEEP_TEST_SLOT"
	if [ -n "$(ls -A "$MUNGE_USERS" 2>/dev/null)" ] || [ ! -f /run/munge/kvsweep.started ]; then return; fi
	stop_pidfile /run/munge/munged.pid
	rm -f /run/munge/kvsweep.started
}

db() { mysql --socket="$DB/mysqld.sock" "$@"; }

# start_mariadb runs this run's own MariaDB server (data, socket and port
# its own) for slurmdbd.
start_mariadb() {
	if mysqladmin --socket="$DB/mysqld.sock" ping >/dev/null 2>&1; then return; fi
	mkdir -p "$DB"
	chown mysql:mysql "$DB"
	[ -d "$DB/data/mysql" ] || mysql_install_db --user=mysql --datadir="$DB/data" >"$DB/install.log" 2>&1
	setsid /usr/sbin/mariadbd --user=mysql --datadir="$DB/data" --socket="$DB/mysqld.sock" --pid-file="$DB/mysqld.pid" \
		--port="$DB_PORT" --bind-address=127.0.0.1 --skip-name-resolve --log-error="$DB/error.log" </dev/null >/dev/null 2>&1 &
	for _ in $(seq 150); do mysqladmin --socket="$DB/mysqld.sock" ping >/dev/null 2>&1 && break; sleep 0.2; done
	db -e "CREATE DATABASE IF NOT EXISTS kvsweep_acct; CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'kvsweep'; GRANT ALL ON kvsweep_acct.* TO 'slurm'@'127.0.0.1';"
}

start_slurmdbd() {
	local dir=$BASE/acct
	if pid_running "$dir/slurmdbd.pid"; then return; fi
	cat >"$dir/slurmdbd.conf" <<EOF
AuthType=auth/munge
DbdHost=localhost
DbdPort=$DBD_PORT
SlurmUser=root
PidFile=$dir/slurmdbd.pid
LogFile=$dir/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=kvsweep
StorageLoc=kvsweep_acct
EOF
	chmod 600 "$dir/slurmdbd.conf"
	SLURM_CONF=$dir/slurm.conf slurmdbd
	for _ in $(seq 100); do
		SLURM_CONF=$dir/slurm.conf sacctmgr -n list cluster >/dev/null 2>&1 && break
		sleep 0.2
	done
	SLURM_CONF=$dir/slurm.conf sacctmgr -i add cluster kvsacct >/dev/null 2>&1 || true
}

ctld_running() { pid_running "$BASE/$1/slurmctld.pid"; }

ctld_start() {
	local name=$1
	ctld_running "$name" && return
	SLURM_CONF=$(conf_of "$name") slurmctld -f "$(conf_of "$name")"
	for _ in $(seq 100); do
		SLURM_CONF=$(conf_of "$name") scontrol ping 2>/dev/null | grep -q UP && return
		sleep 0.1
	done
	log "slurmctld $name did not answer"
	return 1
}

ctld_stop() {
	local name=$1 pid
	ctld_running "$name" || return 0
	pid=$(cat "$BASE/$name/slurmctld.pid")
	kill "$pid"
	for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
	kill -9 "$pid" 2>/dev/null || true
}

# ctld_reset NAME restarts the controller of a one-node cluster on an
# empty state directory, as a site does when it rebuilds slurmctld: its
# job ids start again at FirstJobId while slurmdbd keeps the jobs that had
# them before.
ctld_reset() {
	local name=$1 dir=$BASE/$1
	ctld_stop "$name"
	rm -rf "${dir:?}/ctld"
	mkdir -p "$dir/ctld"
	ctld_start "$name"
	for _ in $(seq 150); do
		case $(SLURM_CONF=$dir/slurm.conf sinfo -h -o %T 2>/dev/null) in
		idle | mixed) return ;;
		down* | drain* | unk*) SLURM_CONF=$dir/slurm.conf scontrol update NodeName="kvs${name}1" State=RESUME 2>/dev/null || true ;;
		esac
		sleep 0.2
	done
	log "cluster $name: node not idle after the reset: $(SLURM_CONF=$dir/slurm.conf sinfo -h -o '%T %E' 2>&1)"
	return 1
}

start_cluster() {
	local name=$1 cport=$2 dport=$3 dir=$BASE/$1
	write_conf "$name" "$cport" "$dport"
	ctld_start "$name"
	if ! pid_running "$dir/slurmd.pid"; then
		SLURM_CONF=$dir/slurm.conf slurmd -f "$dir/slurm.conf" -N "kvs${name}1"
	fi
	for _ in $(seq 150); do
		case $(SLURM_CONF=$dir/slurm.conf sinfo -h -o %T 2>/dev/null) in
		idle | mixed | allocated) return ;;
		drain* | inval*)
			# A drain left by an earlier, different configuration.
			SLURM_CONF=$dir/slurm.conf scontrol update NodeName="kvs${name}1" State=RESUME 2>/dev/null || true
			;;
		esac
		sleep 0.2
	done
	log "cluster $name: node not idle: $(SLURM_CONF=$dir/slurm.conf sinfo -h -o '%T %E' 2>&1)"
	return 1
}

start_twonode() {
	local dir=$BASE/twonode cport dport
	read -r cport dport <<<"$TWO_PORTS"
	mkdir -p "$dir/ctld" "$dir/log"
	if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
		ip link add "$BRIDGE" type bridge
		ip addr add "$NET.1/24" dev "$BRIDGE"
		ip link set "$BRIDGE" up
	fi
	local i
	for i in 1 2; do
		if ! ip netns list | grep -qw "$NS$i"; then
			ip netns add "$NS$i"
			ip link add "${NS}v$i" type veth peer name "${NS}v${i}p"
			ip link set "${NS}v${i}p" master "$BRIDGE" up
			ip link set "${NS}v$i" netns "$NS$i"
			ip -n "$NS$i" addr add "$NET.1$i/24" dev "${NS}v$i"
			ip -n "$NS$i" link set "${NS}v$i" up
			ip -n "$NS$i" link set lo up
		fi
	done
	local cpus mem
	cpus=$(nproc)
	mem=$((($(awk '/MemTotal/ {print int($2/1024)}' /proc/meminfo) - 2048) / 2))
	{
		echo "ClusterName=kvstwonode"
		echo "SlurmctldHost=$(hostname)($NET.1)"
		echo "SlurmctldPort=$cport"
		echo "SlurmdPort=$dport"
		echo "SlurmUser=root"
		echo "SlurmdUser=root"
		echo "AuthType=auth/munge"
		echo "StateSaveLocation=$dir/ctld"
		echo "SlurmdSpoolDir=$dir/d%n"
		echo "SlurmctldPidFile=$dir/slurmctld.pid"
		echo "SlurmdPidFile=$dir/slurmd-%n.pid"
		echo "SlurmctldLogFile=$dir/log/slurmctld.log"
		echo "SlurmdLogFile=$dir/log/slurmd-%n.log"
		echo "ProctrackType=proctrack/linuxproc"
		echo "TaskPlugin=task/none"
		echo "SelectType=select/cons_tres"
		echo "SelectTypeParameters=CR_Core_Memory"
		echo "MinJobAge=300"
		echo "KillWait=120"
		first_job_id 2
		plugstack "$dir"
		echo "SchedulerParameters=sched_interval=2"
		echo "ReturnToService=2"
		echo "MpiDefault=none"
		echo "AccountingStorageType=accounting_storage/none"
		echo "JobAcctGatherType=jobacct_gather/none"
		echo "NodeName=kvsn1 NodeAddr=$NET.11 CPUs=$cpus RealMemory=$mem State=UNKNOWN"
		echo "NodeName=kvsn2 NodeAddr=$NET.12 CPUs=$cpus RealMemory=$mem State=UNKNOWN"
		echo "PartitionName=debug Nodes=kvsn1,kvsn2 Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8"
	} >"$dir/slurm.conf"
	ctld_start twonode
	for i in 1 2; do
		if ! pid_running "$dir/slurmd-kvsn$i.pid"; then
			# nsenter, not "ip netns exec", which remounts /sys and breaks slurmd's cgroup probe.
			SLURM_CONF=$dir/slurm.conf nsenter --net="/var/run/netns/$NS$i" slurmd -f "$dir/slurm.conf" -N "kvsn$i"
		fi
	done
	for _ in $(seq 150); do
		if [ "$(SLURM_CONF=$dir/slurm.conf sinfo -h -o '%T %D' 2>/dev/null)" = "idle 2" ]; then
			return
		fi
		sleep 0.2
	done
	log "cluster twonode: nodes not idle: $(SLURM_CONF=$dir/slurm.conf sinfo -h -o '%N %T %E' 2>&1)"
	return 1
}

stop_twonode() {
	local dir=$BASE/twonode i
	SLURM_CONF=$dir/slurm.conf scancel --user=root 2>/dev/null || true
	for i in 1 2; do stop_pidfile "$dir/slurmd-kvsn$i.pid"; done
	stop_pidfile "$dir/slurmctld.pid"
	for i in 1 2; do
		ip netns del "$NS$i" 2>/dev/null || true
		ip link del "${NS}v${i}p" 2>/dev/null || true
	done
	ip link del "$BRIDGE" 2>/dev/null || true
}

start() {
	[ "$(id -u)" = 0 ] || { log "must run as root"; exit 1; }
	mkdir -p "$BASE/acct" "$BASE/noacct"
	start_munge
	for c in "${CLUSTERS[@]}"; do
		# shellcheck disable=SC2086
		write_conf $c
	done
	start_mariadb
	start_slurmdbd
	for c in "${CLUSTERS[@]}"; do
		# shellcheck disable=SC2086
		start_cluster $c
	done
	start_twonode
	log "clusters up: acct ($(conf_of acct)), noacct ($(conf_of noacct)), twonode ($(conf_of twonode))"
}

stop() {
	for name in acct noacct; do
		SLURM_CONF=$(conf_of $name) scancel --user=root 2>/dev/null || true
		stop_pidfile "$BASE/$name/slurmd.pid"
		stop_pidfile "$BASE/$name/slurmctld.pid"
	done
	stop_twonode
	stop_pidfile "$BASE/acct/slurmdbd.pid"
	if [ -f "$DB/mysqld.pid" ]; then
		mysqladmin --socket="$DB/mysqld.sock" shutdown 2>/dev/null || true
		stop_pidfile "$DB/mysqld.pid"
	fi
	stop_munge
	log "stopped"
}

env_vars() {
	echo "export KVSWEEP_SLURM_ACCT=$(conf_of acct)"
	echo "export KVSWEEP_SLURM_NOACCT=$(conf_of noacct)"
	echo "export KVSWEEP_SLURM_TWONODE=$(conf_of twonode)"
	echo "export KVSWEEP_TWONODE_NETNS=/var/run/netns/${NS}1"
	echo "export KVSWEEP_TWONODE_NET=$NET"
}

case ${1:-} in
install) install ;;
start) start ;;
stop) stop ;;
env) env_vars ;;
ctld-stop) ctld_stop "$2" ;;
ctld-start) ctld_start "$2" ;;
ctld-reset) ctld_reset "$2" ;;
*)
	echo "usage: $0 install|start|stop|env|ctld-stop NAME|ctld-start NAME|ctld-reset NAME" >&2
	exit 2
	;;
esac
