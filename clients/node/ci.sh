#!/usr/bin/env bash
# CI of the Node client: install what the suite needs (npm packages from the npm registry; Node from Debian's
# packages when there is none), then run the client's tests (node:test), the same harness under Vitest, the type
# declarations' check, and the example suite in examples/node. Prints each runner's summary, then one line
# `node-client: N passed, N failed, N skipped`; exits non-zero when anything failed.
#
#   MOCKSERVER_COMMAND=/path/to/venv/bin/mockserver clients/node/ci.sh
#
# MOCKSERVER_COMMAND: the mockserver executable the tests start (default: `mockserver` on PATH).
# MOCKSERVER_IMAGE: the image of the container tests (default idp-mockserver:local); they run only when a Docker
# engine answers and the image exists, and are reported as skipped otherwise.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false npm_config_yes=true

say() { printf '\n== %s\n' "$*"; }

# --- Node 20+ -----------------------------------------------------------------------------------------------
node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  say "no node/npm: installing Debian's nodejs and npm"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
fi
if [ "$(node_major)" -lt 20 ]; then
  echo "node-client: Node $(node --version 2>/dev/null || echo none) is too old: the client needs Node 20 or later" >&2
  exit 1
fi
echo "node $(node --version), npm $(npm --version)"

# --- the mock the tests start -------------------------------------------------------------------------------
export MOCKSERVER_COMMAND="${MOCKSERVER_COMMAND:-mockserver}"
if ! command -v "$MOCKSERVER_COMMAND" >/dev/null 2>&1; then
  echo "node-client: MOCKSERVER_COMMAND=$MOCKSERVER_COMMAND is not an executable: point it at the mockserver command" >&2
  exit 1
fi
echo "MOCKSERVER_COMMAND=$MOCKSERVER_COMMAND"

# --- install (lock files; no install scripts: nothing here needs one) ----------------------------------------
say "npm ci (clients/node)"
(cd "$here" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) || { echo "node-client: npm ci failed" >&2; exit 1; }
say "npm ci (examples/node)"
(cd "$repo/examples/node" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) || { echo "node-client: npm ci of the example failed" >&2; exit 1; }

status=0
passed=0 failed=0 skipped=0

# node:test's spec reporter ends with `ℹ pass N`, `ℹ fail N`, `ℹ skipped N` ...
count_node() {
  local log="$1" p f s c
  p=$(grep -aE '^ℹ pass [0-9]+' "$log" | tail -1 | awk '{print $3}')
  f=$(grep -aE '^ℹ fail [0-9]+' "$log" | tail -1 | awk '{print $3}')
  c=$(grep -aE '^ℹ cancelled [0-9]+' "$log" | tail -1 | awk '{print $3}')
  s=$(grep -aE '^ℹ skipped [0-9]+' "$log" | tail -1 | awk '{print $3}')
  passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0} + ${c:-0})); skipped=$((skipped + ${s:-0}))
  if [ -z "$p" ]; then failed=$((failed + 1)); fi          # no summary at all: the run broke
}

say "client tests (node:test)"
(cd "$here" && npm test --silent) 2>&1 | tee "$logs/client.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
count_node "$logs/client.log"

say "client harness under Vitest"
(cd "$here" && npx vitest run --config test/vitest/vitest.config.js) 2>&1 | tee "$logs/vitest.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
plain="$(sed -e 's/\x1b\[[0-9;]*m//g' "$logs/vitest.log" | grep -aE '^ +Tests +' | tail -1)"
vp=$(echo "$plain" | grep -oE '[0-9]+ passed' | awk '{print $1}')
vf=$(echo "$plain" | grep -oE '[0-9]+ failed' | awk '{print $1}')
vs=$(echo "$plain" | grep -oE '[0-9]+ skipped' | awk '{print $1}')
passed=$((passed + ${vp:-0})); failed=$((failed + ${vf:-0})); skipped=$((skipped + ${vs:-0}))
[ -n "$vp$vf" ] || failed=$((failed + 1))

# one program per framework: each usage file is compiled with that framework's own declarations only
say "type declarations (tsc, strict): node:test"
if (cd "$here" && npx tsc -p test/types); then echo "index.d.ts: the node:test usage file compiles"; passed=$((passed + 1))
else status=1; failed=$((failed + 1)); fi
say "type declarations (tsc, strict): Vitest"
if (cd "$here" && npx tsc -p test/types/tsconfig.vitest.json); then echo "index.d.ts: the Vitest usage file compiles"; passed=$((passed + 1))
else status=1; failed=$((failed + 1)); fi

say "example suite (examples/node)"
(cd "$repo/examples/node" && npm test --silent) 2>&1 | tee "$logs/example.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
count_node "$logs/example.log"

if [ "$failed" -gt 0 ]; then status=1; fi
echo
grep -ahE '^ *﹣ .* # ' "$logs/client.log" "$logs/example.log" | sed 's/^/skipped: /' || true
echo "node-client: $passed passed, $failed failed, $skipped skipped"
exit "$status"
