#!/bin/sh
# Median time one Go test takes to get a fresh sandbox (create + delete through mocktest), over 100 tests,
# against a local mock: MOCKSERVER_URL if set, else one started from MOCKSERVER_COMMAND (default: mockserver).
#   MOCKSERVER_COMMAND=/path/to/.venv/bin/mockserver clients/go/bench/run.sh
set -eu
cd "$(dirname "$0")/.."
GOPROXY=off GOFLAGS= exec go test -count=1 -tags bench -run TestFreshSandboxMedian -v ./bench | grep -v '^    --- PASS\|^=== RUN'
