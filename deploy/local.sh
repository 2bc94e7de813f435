#!/usr/bin/env bash
# The sandbox router (Debian's HAProxy) and N `mockserver serve` replicas on this machine, no Docker.
#   deploy/local.sh N [-- SERVE_OPTIONS...]        e.g. deploy/local.sh 2 -- --clock manual
# Environment: PORT (router, default 8080; replica n listens on PORT+1+n), BIND_HOST (default 127.0.0.1),
# STATE_DIR (state files, default .state/ in the repository), MOCKSERVER (default .venv/bin/mockserver),
# HAPROXY (default haproxy), ACCESS_LOG=1 (the router logs every request), MOCKSERVER_* (passed to replicas).
# Replica n is named mock-n (--replica-name) and keeps its sandboxes in STATE_DIR/mock-n.bin
# (--state-file). The rendered router configuration goes to a temporary folder, printed at start.
# Everything started here is stopped on exit, Ctrl-C or SIGTERM; the script stays in the foreground.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
N=${1:?usage: deploy/local.sh N [-- SERVE_OPTIONS...]}
shift
[ "${1:-}" = "--" ] && shift
case $N in ''|*[!0-9]*|0) echo "local.sh: N must be a positive number, got '$N'" >&2; exit 2 ;; esac
PORT=${PORT:-8080}
BIND_HOST=${BIND_HOST:-127.0.0.1}
STATE_DIR=${STATE_DIR:-$ROOT/.state}
MOCKSERVER=${MOCKSERVER:-$ROOT/.venv/bin/mockserver}
HAPROXY=${HAPROXY:-haproxy}
PYTHON=${PYTHON:-$(command -v python3)}
command -v "$HAPROXY" >/dev/null || { echo "local.sh: haproxy not found (sudo apt-get install haproxy)" >&2; exit 1; }
[ -x "$MOCKSERVER" ] || { echo "local.sh: $MOCKSERVER missing (make serve or pip install -e . first)" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/mockserver-router.XXXXXX")
mkdir -p "$STATE_DIR"
PIDS=()
cleanup() {
  trap - EXIT INT TERM
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

replicas=()
for ((n = 0; n < N; n++)); do
  name=mock-$n
  port=$((PORT + 1 + n))
  replicas+=("$name=127.0.0.1:$port")
  "$MOCKSERVER" serve --host 127.0.0.1 --port "$port" --replica-name "$name" \
    --state-file "$STATE_DIR/$name.bin" "$@" &
  PIDS+=($!)
  echo "local.sh: replica $name on 127.0.0.1:$port (pid $!, state $STATE_DIR/$name.bin)" >&2
done

level=warning
[ "${ACCESS_LOG:-0}" = 1 ] && level=info
"$PYTHON" "$ROOT/deploy/haproxy_cfg.py" --bind "$BIND_HOST:$PORT" --hop-prefix "mockhop-$PORT" \
  --log-level "$level" "${replicas[@]}" > "$WORK/haproxy.cfg"
if ! check=$("$HAPROXY" -c -f "$WORK/haproxy.cfg" 2>&1); then echo "$check" >&2; exit 1; fi
"$HAPROXY" -db -f "$WORK/haproxy.cfg" &
PIDS+=($!)
echo "local.sh: router on http://$BIND_HOST:$PORT (pid $!, config $WORK/haproxy.cfg)" >&2

# Wait for any process to end: one that dies takes nothing else down (its sandboxes answer 503),
# so keep waiting until Ctrl-C; `wait -n` returns when one ends.
while :; do
  wait -n "${PIDS[@]}" 2>/dev/null || true
  alive=0
  for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
  [ $alive = 1 ] || break
done
