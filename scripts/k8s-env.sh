#!/usr/bin/env bash
# k8s-env.sh: a real two-node Kubernetes cluster on this machine for the
# scheduler k8s tests: etcd (Debian), kube-apiserver, kube-controller-manager,
# kube-scheduler and kubelet built from k8s.io/kubernetes (tools/k8s/go.mod),
# containerd and runc from Debian with Debian's CNI plugins, and a pause
# image built here.
#
#   scripts/k8s-env.sh install   apt packages; the Kubernetes binaries built
#                                into $KVSWEEP_K8S_CACHE (default
#                                /var/cache/kvsweep/k8s), once per go.sum
#   scripts/k8s-env.sh start     this run's cluster (state under
#                                $KVSWEEP_TEST_BASE/k8s, ports PORT_BASE+70..79)
#   scripts/k8s-env.sh stop      its pods, then what start started
#   scripts/k8s-env.sh env       KUBECONFIG, KVSWEEP_K8S_SWEEPS (the node
#                                directory the pods mount the sweeps from)
#   scripts/k8s-env.sh api-stop|api-start   an outage of the API server
#
# The image registry of scripts/buildkit-env.sh (plain HTTP on loopback) is
# where pods pull the test image from. Root only.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

K8S_VERSION=$(grep -o 'k8s.io/kubernetes v[0-9.]*' tools/k8s/go.mod | head -n 1 | cut -d' ' -f2)
CACHE=${KVSWEEP_K8S_CACHE:-/var/cache/kvsweep/k8s}
BIN=$CACHE/$K8S_VERSION-$(sha256sum tools/k8s/go.sum | cut -c1-12)
BASE=$KVSWEEP_TEST_BASE/k8s
ETCD_PORT=$((PORT_BASE + 70))
API_PORT=$((PORT_BASE + 72))
# Node N's kubelet serves on PORT_BASE+77+2N and its health on the next.
NODES=2
CM_PORT=$((PORT_BASE + 75))
SCHED_PORT=$((PORT_BASE + 76))
REGISTRY=127.0.0.1:$((PORT_BASE + 55)) # scripts/buildkit-env.sh
PAUSE=kvsweep.test/pause:1
PKGS=(containerd runc containernetworking-plugins etcd-server openssl curl gcc libc6-dev iproute2)
DAEMONS=(kube-scheduler kube-controller-manager kube-apiserver etcd)

log() { echo "k8s-env: $*" >&2; }

install() {
	apt_need "${PKGS[@]}"
	mkdir -p "$CACHE"
	exec 9>"$CACHE/.lock"
	flock 9
	if [ ! -x "$BIN/kubelet" ]; then
		log "building Kubernetes $K8S_VERSION (about 5 minutes on a warm module cache, more on a cold one; kept in $CACHE)"
		rm -rf "$BIN.tmp"
		(cd tools/k8s && go build -o "$BIN.tmp/" k8s.io/kubernetes/cmd/kube-apiserver \
			k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet)
		rm -rf "$BIN" && mv "$BIN.tmp" "$BIN"
	fi
}

# daemon NAME CMD...: start CMD in the background as NAME, logging to
# $BASE/NAME.log, unless it is running.
daemon() {
	local name=$1
	shift
	pid_running "$BASE/$name.pid" && return
	setsid "$@" </dev/null >"$BASE/$name.log" 2>&1 &
	echo $! >"$BASE/$name.pid"
}

# wait_for WHAT CMD...: run CMD until it succeeds, for at most 120 s.
wait_for() {
	local what=$1
	shift
	for _ in $(seq 600); do
		"$@" >/dev/null 2>&1 && return
		sleep 0.2
	done
	log "$what did not come up"
	return 1
}

certs() {
	local pki=$BASE/pki
	[ -f "$pki/admin.kubeconfig" ] && return
	mkdir -p "$pki"
	openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=kvsweep-test-ca" \
		-keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
	openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" -keyout "$pki/apiserver.key" -out "$pki/apiserver.csr" 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\n' >"$pki/san.ext"
	openssl x509 -req -in "$pki/apiserver.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 30 \
		-extfile "$pki/san.ext" -out "$pki/apiserver.crt" 2>/dev/null
	openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
	openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
	local token
	token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
	echo "$token,admin,admin,system:masters" >"$pki/tokens.csv"
	cat >"$pki/admin.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kvsweep-test
  cluster: {server: "https://127.0.0.1:$API_PORT", certificate-authority: "$pki/ca.crt"}
users:
- name: admin
  user: {token: "$token"}
contexts:
- name: kvsweep-test
  context: {cluster: kvsweep-test, user: admin}
current-context: kvsweep-test
EOF
}

# pause_image writes an OCI image archive of the static pause program.
pause_image() {
	local d=$BASE/pause-image b=$BASE/pause-image/blobs/sha256 layer cfg man ls cs ms
	rm -rf "$d" && mkdir -p "$b" "$d/root"
	gcc -static -O2 -o "$d/root/pause" scripts/k8s/pause.c
	tar -C "$d/root" --owner=0 --group=0 --mtime=@0 -cf "$d/layer.tar" pause
	layer=$(sha256sum "$d/layer.tar" | cut -d' ' -f1)
	ls=$(stat -c %s "$d/layer.tar")
	mv "$d/layer.tar" "$b/$layer"
	printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":["/pause"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' "$layer" >"$d/config.json"
	cfg=$(sha256sum "$d/config.json" | cut -d' ' -f1)
	cs=$(stat -c %s "$d/config.json")
	mv "$d/config.json" "$b/$cfg"
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%d},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%d}]}' \
		"$cfg" "$cs" "$layer" "$ls" >"$d/manifest.json"
	man=$(sha256sum "$d/manifest.json" | cut -d' ' -f1)
	ms=$(stat -c %s "$d/manifest.json")
	mv "$d/manifest.json" "$b/$man"
	printf '{"imageLayoutVersion":"1.0.0"}' >"$d/oci-layout"
	printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%d,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"1"}}]}' \
		"$man" "$ms" "$PAUSE" >"$d/index.json"
	tar -C "$d" -cf "$BASE/pause.tar" oci-layout index.json blobs
}

# start_node N: node N's containerd (with the CRI plugin and its own
# bridge) and kubelet, registered and Ready.
start_node() {
	local n=$1 nd=$BASE/node-$1 kc=$BASE/pki/admin.kubeconfig node cg
	node=$(node_name "$n")
	cg=$(cgroup_root "$n")
	cg=${cg#/}
	mkdir -p "$nd"/{containerd,kubelet,cni/net.d,cni/ipam,pod-logs}
	# containerd with the CRI plugin, its state this run's own.
	cat >"$nd/containerd/config.toml" <<EOF
version = 2
root = "$nd/containerd/root"
state = "$nd/containerd/state"
[grpc]
  address = "$nd/containerd/containerd.sock"
[ttrpc]
  address = "$nd/containerd/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$nd/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE"
  # This machine does not let a process lower its OOM score below its
  # parent's, as the kubelet asks for sandboxes and guaranteed pods.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$nd/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."$REGISTRY"]
    endpoint = ["http://$REGISTRY"]
EOF
	cat >"$nd/cni/net.d/10-kvsweep.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "kvsweep-$KVSWEEP_TEST_SLOT-$n", "plugins": [
  {"type": "bridge", "bridge": "$(bridge "$n")", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "subnet": "10.244.$KVSWEEP_TEST_SLOT.$((128 * n))/25", "dataDir": "$nd/cni/ipam",
     "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "loopback"}]}
EOF
	daemon "containerd-$n" containerd --config "$nd/containerd/config.toml"
	wait_for containerd ctr -a "$nd/containerd/containerd.sock" version
	if ! ctr -a "$nd/containerd/containerd.sock" -n k8s.io images ls -q | grep -qxF "$PAUSE"; then
		[ -f "$BASE/pause.tar" ] || pause_image
		ctr -a "$nd/containerd/containerd.sock" -n k8s.io images import "$BASE/pause.tar" >/dev/null
	fi

	cat >"$nd/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $((PORT_BASE + 77 + 2 * n))
healthzBindAddress: 127.0.0.1
healthzPort: $((PORT_BASE + 78 + 2 * n))
readOnlyPort: 0
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
cgroupRoot: $(cgroup_root "$n")
failSwapOn: false
failCgroupV1: false
containerRuntimeEndpoint: unix://$nd/containerd/containerd.sock
podLogsDir: $nd/pod-logs
localStorageCapacityIsolation: false
evictionHard: {memory.available: "0%", nodefs.available: "0%", imagefs.available: "0%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
registerNode: true
EOF
	# The kubelet's cgroup root, in every hierarchy (cgroup v1 here).
	local c
	for c in /sys/fs/cgroup/*/; do
		mkdir -p "$c$cg"
		if [ -f "$c/cpuset.cpus" ]; then
			cat "$c/cpuset.cpus" >"$c$cg/cpuset.cpus"
			cat "$c/cpuset.mems" >"$c$cg/cpuset.mems"
		fi
	done
	daemon "kubelet-$n" "$BIN/kubelet" --config "$nd/kubelet/config.yaml" --kubeconfig "$kc" \
		--root-dir "$nd/kubelet/root" --cert-dir "$nd/kubelet/pki" \
		--hostname-override "$node"
	wait_for "node $node Ready" node_ready "$node"
	# The node advertises GPUs as the NVIDIA device plugin would, so GPU
	# cells are scheduled as on a GPU node (the test harness uses none).
	api PATCH "/api/v1/nodes/$node/status" -H 'Content-Type: application/json-patch+json' \
		--data '[{"op": "add", "path": "/status/capacity/nvidia.com~1gpu", "value": "8"}]' >/dev/null
}

node_name() { echo "kvsweep-node-$KVSWEEP_TEST_SLOT-$1"; }
bridge() { echo "kvsk8s$KVSWEEP_TEST_SLOT-$1"; }
cgroup_root() { echo "/kvsweep-k8s-$KVSWEEP_TEST_SLOT-$1"; }

# apiserver starts this run's API server (unless it runs) and waits for it.
apiserver() {
	local pki=$BASE/pki
	daemon kube-apiserver "$BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
		--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$API_PORT" \
		--tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
		--token-auth-file "$pki/tokens.csv" --authorization-mode AlwaysAllow --allow-privileged \
		--service-account-issuer https://kubernetes.default.svc --service-account-key-file "$pki/sa.pub" \
		--service-account-signing-key-file "$pki/sa.key" --service-cluster-ip-range 10.96.0.0/24 \
		--profiling=false
	wait_for "kube-apiserver" curl -fsS --cacert "$pki/ca.crt" "https://127.0.0.1:$API_PORT/readyz" \
		-H "Authorization: Bearer $(cut -d, -f1 "$pki/tokens.csv")"
}

start() {
	[ "$(id -u)" = 0 ] || { log "must run as root"; exit 1; }
	[ -x "$BIN/kubelet" ] || { log "not installed: run scripts/k8s-env.sh install"; exit 1; }
	mkdir -p "$BASE"/{etcd,sweeps}
	certs
	local pki=$BASE/pki kc=$BASE/pki/admin.kubeconfig
	daemon etcd etcd --name k8s --data-dir "$BASE/etcd" --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
		--advertise-client-urls "http://127.0.0.1:$ETCD_PORT" --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
		--initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" --initial-cluster "k8s=http://127.0.0.1:$((ETCD_PORT + 1))"
	apiserver
	daemon kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig "$kc" --leader-elect=false \
		--service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
		--bind-address 127.0.0.1 --secure-port "$CM_PORT" --profiling=false
	daemon kube-scheduler "$BIN/kube-scheduler" --kubeconfig "$kc" --leader-elect=false \
		--bind-address 127.0.0.1 --secure-port "$SCHED_PORT" --profiling=false

	local n
	for n in $(seq 0 $((NODES - 1))); do
		start_node "$n"
	done
	wait_for "the default service account" api GET /api/v1/namespaces/default/serviceaccounts/default
	log "cluster up: KUBECONFIG=$kc, $NODES nodes, sweeps under $BASE/sweeps"
}

# api METHOD PATH [CURL-ARGS...]: one authenticated call to this run's API
# server.
api() {
	local method=$1 path=$2
	shift 2
	curl -fsS -X "$method" --cacert "$BASE/pki/ca.crt" -H "Authorization: Bearer $(cut -d, -f1 "$BASE/pki/tokens.csv")" \
		"$@" "https://127.0.0.1:$API_PORT$path"
}

node_ready() {
	api GET "/api/v1/nodes/$1" | tr -d ' \n' | grep -q '"type":"Ready","status":"True"'
}

stop() {
	local n
	if pid_running "$BASE/kube-apiserver.pid"; then
		# The pods first, while the kubelets are there to stop them.
		api DELETE /apis/batch/v1/jobs >/dev/null 2>&1 || true
		local ns
		for ns in $(api GET /api/v1/namespaces 2>/dev/null | grep -o '"name": *"[^"]*"' | sed 's/.*"\([^"]*\)"$/\1/' | sort -u); do
			api DELETE "/api/v1/namespaces/$ns/pods?gracePeriodSeconds=0" >/dev/null 2>&1 || true
		done
	fi
	for n in $(seq 0 $((NODES - 1))); do
		stop_node "$n"
	done
	local d
	for d in "${DAEMONS[@]}"; do
		stop_pidfile "$BASE/$d.pid"
	done
	findmnt -rn -o TARGET | grep -F "$BASE/" | sort -r | xargs -r umount -l 2>/dev/null || true
	log "stopped"
}

# stop_node N: node N's pods, kubelet and containerd, its bridge and cgroups.
stop_node() {
	local n=$1 sock=$BASE/node-$1/containerd/containerd.sock t d
	if pid_running "$BASE/kubelet-$n.pid"; then
		for _ in $(seq 150); do
			[ -z "$(ctr -a "$sock" -n k8s.io tasks ls -q 2>/dev/null)" ] && break
			sleep 0.2
		done
	fi
	# Whatever still runs is killed (the shims going would leave it).
	for t in $(ctr -a "$sock" -n k8s.io tasks ls -q 2>/dev/null); do
		ctr -a "$sock" -n k8s.io tasks kill -a -s KILL "$t" >/dev/null 2>&1 || true
	done
	stop_pidfile "$BASE/kubelet-$n.pid"
	stop_pidfile "$BASE/containerd-$n.pid"
	# What containerd started: the shims of its containers.
	pkill -9 -f -- "-address $sock" 2>/dev/null || true
	findmnt -rn -o TARGET | grep -F "$BASE/node-$n/" | sort -r | xargs -r umount -l 2>/dev/null || true
	ip link del "$(bridge "$n")" 2>/dev/null || true
	for d in /sys/fs/cgroup/*"$(cgroup_root "$n")"; do
		if [ -d "$d" ]; then find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true; fi
	done
}

env_vars() {
	echo "export KUBECONFIG=$BASE/pki/admin.kubeconfig"
	echo "export KVSWEEP_K8S_SWEEPS=$BASE/sweeps"
}

case ${1:-} in
install) install ;;
start) start ;;
# An outage of the API server, for the tests that ride one out.
api-stop) stop_pidfile "$BASE/kube-apiserver.pid" ;;
api-start) apiserver ;;
stop) stop ;;
env) env_vars ;;
*)
	echo "usage: $0 install|start|stop|env|api-stop|api-start" >&2
	exit 2
	;;
esac
