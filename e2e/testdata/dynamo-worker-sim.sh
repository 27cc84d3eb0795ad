#!/bin/bash
# A stand-in for a Dynamo v1.2.0 worker's start, in the test image: with
# the release's defaults a worker registers in etcd (discovery backend
# etcd, ETCD_ENDPOINTS, default http://localhost:2379) and publishes KV
# events over NATS (event plane nats, NATS_SERVER, default
# nats://localhost:4222) (upstream/facts/dynamo-v1.2.0.yaml: env.default,
# service.required). Like the real worker, it stops when either is
# missing, saying which; otherwise it registers itself and publishes one
# event. Usage: dynamo-worker-sim.sh WORKER_INDEX
set -u
worker=$1
etcd=${ETCD_ENDPOINTS:-http://localhost:2379}
etcd=${etcd%%,*}
nats=${NATS_SERVER:-nats://localhost:4222}
nats=${nats%%,*}

# b64 STRING: STRING in base64, in bash alone (the test image is busybox
# without base64).
b64() {
	local s=$1 t=ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/ out='' i n c1 c2 c3
	for ((i = 0; i < ${#s}; i += 3)); do
		printf -v c1 '%d' "'${s:i:1}"
		c2=0 c3=0
		if ((i + 1 < ${#s})); then printf -v c2 '%d' "'${s:i+1:1}"; fi
		if ((i + 2 < ${#s})); then printf -v c3 '%d' "'${s:i+2:1}"; fi
		n=$((c1 << 16 | c2 << 8 | c3))
		out+=${t:n >> 18 & 63:1}${t:n >> 12 & 63:1}
		if ((i + 1 < ${#s})); then out+=${t:n >> 6 & 63:1}; else out+='='; fi
		if ((i + 2 < ${#s})); then out+=${t:n & 63:1}; else out+='='; fi
	done
	echo "$out"
}

# hostport URL: the HOST PORT of an http:// or nats:// URL.
hostport() {
	local u=${1#*://}
	u=${u%%/*}
	echo "${u%:*} ${u##*:}"
}

# etcd: its health over HTTP, then a registration through the v3 JSON API.
read -r host port < <(hostport "$etcd")
if ! { exec 3<>"/dev/tcp/$host/$port"; } 2>/dev/null; then
	echo "dynamo worker $worker: cannot connect to etcd at $etcd (discovery backend etcd)" >&2
	exit 1
fi
printf 'GET /health HTTP/1.0\r\nHost: %s\r\n\r\n' "$host" >&3
if ! grep -q '"health":"true"' <&3; then
	echo "dynamo worker $worker: etcd at $etcd is not healthy" >&2
	exit 1
fi
exec 3<&-
key=$(b64 "v1/instances/dynamo/worker-$worker")
val=$(b64 "worker $worker on $(hostname)")
body="{\"key\":\"$key\",\"value\":\"$val\"}"
exec 3<>"/dev/tcp/$host/$port"
printf 'POST /v3/kv/put HTTP/1.0\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' "$host" "${#body}" "$body" >&3
reply=$(cat <&3)
if [[ $reply != *'"revision"'* ]]; then
	echo "dynamo worker $worker: etcd at $etcd refused the registration: ${reply##*$'\r\n\r\n'}" >&2
	exit 1
fi
exec 3<&-

# NATS: the server's INFO, then a published KV event acknowledged by PONG.
read -r host port < <(hostport "$nats")
if ! { exec 4<>"/dev/tcp/$host/$port"; } 2>/dev/null; then
	echo "dynamo worker $worker: cannot connect to NATS at $nats (event plane nats)" >&2
	exit 1
fi
read -r -t 5 info <&4 || info=
case $info in
INFO*) ;;
*)
	echo "dynamo worker $worker: $nats is not a NATS server" >&2
	exit 1
	;;
esac
printf 'CONNECT {"verbose":false}\r\nPUB kv_events.worker-%s 5\r\nready\r\nPING\r\n' "$worker" >&4
pong=
while read -r -t 5 line <&4; do
	case $line in
	PONG*) pong=1; break ;;
	-ERR*) break ;;
	esac
done
exec 4<&-
if [ -z "$pong" ]; then
	echo "dynamo worker $worker: NATS at $nats did not acknowledge" >&2
	exit 1
fi
echo "dynamo worker $worker: registered in etcd at $etcd, events to $nats"
