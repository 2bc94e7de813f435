package mocktest

// What a failing test leaves behind, the same in the three harnesses (Python, Node, Go): its sandbox's
// journal in a file and the last calls in its log, and, when asked, the sandbox itself.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"idp-mockserver/clients/go/mockclient"
)

// JournalDir is where the journals of failing tests are written: MOCKSERVER_JOURNAL_DIR, else the folder
// mockserver-journals of the working directory (under go test, the package's folder). It is made when a
// test fails, not before.
func JournalDir() string {
	if dir := os.Getenv("MOCKSERVER_JOURNAL_DIR"); dir != "" {
		return dir
	}
	return "mockserver-journals"
}

// lastCalls is how many calls a failing test's log shows (the file has them all).
const lastCalls = 20

// handles counts the sandboxes each running test has made, so that a test with two of them writes two
// journals: TEST.json for its first, TEST.2.json for its second ...
var handles = struct {
	sync.Mutex
	made map[testing.TB]int
}{made: map[testing.TB]int{}}

// journalFile is, for a sandbox the test is making, the path its journal is written to if the test fails
// (the directory is read then, as the test may set MOCKSERVER_JOURNAL_DIR itself).
func journalFile(t testing.TB) func() string {
	handles.Lock()
	handles.made[t]++
	n := handles.made[t]
	handles.Unlock()
	if n == 1 { // the first sandbox's clean-up runs last (t.Cleanup runs them in reverse)
		t.Cleanup(func() {
			handles.Lock()
			delete(handles.made, t)
			handles.Unlock()
		})
	}
	file := untidyEnds.ReplaceAllString(unsafeChars.ReplaceAllString(t.Name(), "-"), "")
	if file == "" {
		file = "test"
	}
	if n > 1 {
		file += fmt.Sprintf(".%d", n)
	}
	return func() string { return filepath.Join(JournalDir(), file+".json") }
}

// logJournal writes the sandbox's whole journal to path and logs the path and the last calls, one line
// each: #id METHOD path -> status (operationId).
func logJournal(ctx context.Context, t testing.TB, client *mockclient.Client, path string) {
	t.Helper()
	calls, err := client.WriteJournal(ctx, path, mockclient.Filter{})
	if err != nil {
		t.Logf("mocktest: the journal of sandbox %s could not be kept: %v", client.SandboxName(), err)
		return
	}
	if absolute, err := filepath.Abs(path); err == nil {
		path = absolute
	}
	if len(calls) == 0 {
		t.Logf("mocktest: sandbox %s got no calls (its journal, empty: %s)", client.SandboxName(), path)
		return
	}
	shown := calls
	if len(shown) > lastCalls {
		shown = shown[len(shown)-lastCalls:]
	}
	count := fmt.Sprintf("%d calls", len(calls))
	if len(calls) == 1 {
		count = "1 call"
	}
	lines := []string{fmt.Sprintf("mocktest: the journal of sandbox %s (%s) is in %s; the last %d:",
		client.SandboxName(), count, path, len(shown))}
	for _, call := range shown {
		lines = append(lines, "  "+callLine(call))
	}
	t.Logf("%s", strings.Join(lines, "\n"))
}

// callLine is one call in a line: #id METHOD path -> status (operationId).
func callLine(call mockclient.Call) string {
	line := fmt.Sprintf("#%d %s %s -> %d", call.ID, call.Method, call.Path, call.Status)
	if call.Operation != nil {
		line += " (" + *call.Operation + ")"
	}
	return line
}

// keep is whether sandboxes outlive their test, and who said so.
type keep struct {
	mode string // never, on-failure or always
	from string // MOCKSERVER_KEEP_SANDBOX or KeepSandbox
}

// keepSandbox is the option given, else MOCKSERVER_KEEP_SANDBOX, else never.
func keepSandbox(option string) (keep, error) {
	choice := keep{mode: option, from: "KeepSandbox"}
	if option == "" {
		choice = keep{mode: os.Getenv("MOCKSERVER_KEEP_SANDBOX"), from: "MOCKSERVER_KEEP_SANDBOX"}
	}
	switch choice.mode {
	case "":
		return keep{mode: "never"}, nil
	case "never", "on-failure", "always":
		return choice, nil
	}
	return keep{}, fmt.Errorf("mocktest: %s=%q: use never, on-failure or always", choice.from, choice.mode)
}

// logKept says where the sandbox kept is: its API base URL and its inspector page.
func logKept(t testing.TB, client *mockclient.Client, keep keep) {
	t.Helper()
	message := fmt.Sprintf("mocktest: sandbox %s kept (%s=%s): %s; inspector: %s/_mock/ui?sandbox=%s",
		client.SandboxName(), keep.from, keep.mode, client.URL(), client.Root(), client.SandboxName())
	if shared.server != nil && client.Root() == shared.server.URL {
		message += " (this mock stops when the test binary ends: point MOCKSERVER_URL at a mock of your own to " +
			"look at it after)"
	}
	t.Logf("%s", message)
}
