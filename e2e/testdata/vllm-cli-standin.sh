#!/bin/sh
# A stand-in for the vllm CLI, for the bare-vLLM probe lane:
#   vllm serve MODEL --port P ...    serves /health and vLLM 0.11's /metrics
#                                    (vllm_standin.py) on P
#   vllm bench serve ... --result-dir D --result-filename F
#                                    once kvsweep's scraper has read the
#                                    server three times, writes a real
#                                    bench serve output ($STANDIN_BENCH) as D/F
set -eu
here=$(dirname "$0")
case "$1" in
serve)
	shift 2
	port=
	while [ $# -gt 0 ]; do
		case $1 in
		--port) port=$2; shift 2 ;;
		*) shift ;;
		esac
	done
	exec python3 "$here/vllm_standin.py" --port "$port" "$KVSWEEP_CELL_DIR" "${STANDIN_HIT:-0.5}"
	;;
bench)
	dir='' file=''
	while [ $# -gt 0 ]; do
		case $1 in
		--result-dir) dir=$2; shift 2 ;;
		--result-filename) file=$2; shift 2 ;;
		*) shift ;;
		esac
	done
	i=0
	until [ "$(grep -c '"vllm:prefix_cache_queries_total"' "$KVSWEEP_CELL_DIR/telemetry.jsonl" 2>/dev/null || true)" -ge 3 ]; do
		i=$((i + 1))
		if [ "$i" -gt 600 ]; then echo "vllm stand-in: the scraper never read the server" >&2; exit 3; fi
		sleep 0.2
	done
	cp "$STANDIN_BENCH" "$dir/$file"
	;;
*)
	echo "vllm stand-in: unknown command $1" >&2
	exit 2
	;;
esac
