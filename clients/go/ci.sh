#!/bin/sh
# CI of the Go client: installs Go from Debian's packages when it is missing, then runs go vet and the
# tests of the client (clients/go) and of the example (examples/go), and prints a summary: tests passed,
# failed and skipped (with why). No network but Debian's packages: the modules use the standard library
# only (GOPROXY=off).
#
# The tests start the mock from MOCKSERVER_COMMAND (default: mockserver on PATH, else the repository's
# .venv/bin/mockserver), or use the one at MOCKSERVER_URL. The container tests run when a Docker engine
# answers and the image MOCKSERVER_IMAGE (default idp-mockserver:local) exists; otherwise they are skipped.
#
#   MOCKSERVER_COMMAND=/path/to/.venv/bin/mockserver clients/go/ci.sh
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

if ! command -v go >/dev/null 2>&1; then
	echo "ci.sh: no go on PATH: installing golang-go from Debian's packages"
	sudo=""
	[ "$(id -u)" = 0 ] || sudo="sudo -n"
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go >/dev/null
fi
go version

if [ -z "${MOCKSERVER_URL:-}" ] && [ -z "${MOCKSERVER_COMMAND:-}" ]; then
	if command -v mockserver >/dev/null 2>&1; then
		MOCKSERVER_COMMAND=$(command -v mockserver)
	elif [ -x "$repo/.venv/bin/mockserver" ]; then
		MOCKSERVER_COMMAND="$repo/.venv/bin/mockserver"
	else
		echo "ci.sh: no mock: set MOCKSERVER_COMMAND to the mockserver executable (or MOCKSERVER_URL)" >&2
		exit 2
	fi
	export MOCKSERVER_COMMAND
fi
echo "mock: ${MOCKSERVER_URL:-${MOCKSERVER_COMMAND}}"

export GOPROXY=off GOSUMDB=off GOFLAGS=
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0

unformatted=$(cd "$repo" && gofmt -l clients/go examples/go)
if [ -n "$unformatted" ]; then
	echo "gofmt: not formatted: $unformatted"
	status=1
fi

echo "== clients/go: go vet, go test"
(cd "$here" && go vet ./... && go vet -tags bench ./bench) || status=1
(cd "$here" && go test -count=1 -timeout 5m -parallel 16 -v ./... 2>&1) | tee -a "$log" | grep -E '^(ok|FAIL|--- |panic:)|^\s+--- FAIL|SKIPPED:' || true

echo "== examples/go: go vet, go test"
(cd "$repo/examples/go" && go vet ./...) || status=1
(cd "$repo/examples/go" && go test -count=1 -timeout 5m -v ./... 2>&1) | tee -a "$log" | grep -E '^(ok|FAIL|--- |panic:)|^\s+--- FAIL|SKIPPED:' || true

passed=$(grep -cE '^\s*--- PASS' "$log" || true)
failed=$(grep -cE '^\s*--- FAIL' "$log" || true)
skipped=$(grep -cE '^\s*--- SKIP' "$log" || true)
if grep -qE '^(FAIL|panic:)' "$log"; then
	status=1
fi
echo
echo "== summary: $passed passed, $failed failed, $skipped skipped (tests and subtests)"
if [ "$skipped" != 0 ]; then
	# go test -v prints a skipped test's reason (t.Skip) on the line before its --- SKIP line
	awk '/^[[:space:]]*--- SKIP/ { sub(/^[[:space:]]*--- SKIP: /, ""); reason = previous; sub(/^[[:space:]]*/, "", reason);
		print "  skipped: " $1 ": " reason } { previous = $0 }' "$log"
fi
if [ "$status" != 0 ]; then
	echo "== FAILED"
else
	echo "== OK"
fi
exit $status
