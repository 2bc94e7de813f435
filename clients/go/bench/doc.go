// Package bench measures what one test pays for a fresh sandbox: mocktest.Sandbox's create (PUT) and,
// at the test's end, its delete, median over 100 tests. Run it with ./run.sh (go test -tags bench).
package bench
