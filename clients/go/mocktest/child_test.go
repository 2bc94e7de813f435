package mocktest_test

// What a test binary does, seen from outside: the tests of testdata/child run in a process of their own
// (built once with go test -c), and these tests read what they print and leave behind.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"idp-mockserver/clients/go/mockclient"
	"idp-mockserver/clients/go/mocktest"
)

var childBinary struct {
	once sync.Once
	path string
	err  error
}

// childTests is the test binary of testdata/child, built on first use.
func childTests(t *testing.T) string {
	t.Helper()
	childBinary.once.Do(func() {
		goCommand := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(goCommand); err != nil {
			goCommand = "go"
		}
		dir, err := os.MkdirTemp("", "mocktest-child-")
		if err != nil {
			childBinary.err = err
			return
		}
		childBinary.path = filepath.Join(dir, "child.test")
		output, err := exec.Command(goCommand, "test", "-c", "-o", childBinary.path, "./testdata/child").CombinedOutput()
		if err != nil {
			childBinary.err = fmt.Errorf("go test -c ./testdata/child: %v\n%s", err, output)
		}
	})
	if childBinary.err != nil {
		t.Fatal(childBinary.err)
	}
	return childBinary.path
}

// childEnvironment is this process's environment without what the child tests are told each time, plus env.
func childEnvironment(env ...string) []string {
	var kept []string
	for _, entry := range os.Environ() {
		name, _, _ := strings.Cut(entry, "=")
		switch name {
		case "MOCKSERVER_URL", "MOCKSERVER_JOURNAL_DIR", "MOCKSERVER_KEEP_SANDBOX", "MOCKSERVER_PACT", "MOCKTEST_KEEP":
			continue
		}
		kept = append(kept, entry)
	}
	return append(append(kept, "MOCKTEST_CHILD=1", "MOCKSERVER_UNUSED_RULES=off"), env...)
}

// runChild runs the child tests matching pattern in dir, against the shared mock unless env says another
// MOCKSERVER_URL; it returns their output (go test -v) and whether they passed.
func runChild(t *testing.T, dir, pattern string, env ...string) (string, bool) {
	t.Helper()
	binary := childTests(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	command := exec.CommandContext(ctx, binary, "-test.v", "-test.count=1", "-test.run", pattern)
	command.Dir = dir
	command.Env = childEnvironment(append([]string{"MOCKSERVER_URL=" + mocktest.Server(t).Root()}, env...)...)
	output, err := command.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running the child tests: %v\n%s", err, output)
	}
	return string(output), err == nil
}

var sandboxLine = regexp.MustCompile(`(?m)child_test\.go:\d+: sandbox (\S+)$`)

// sandboxesOf are the names of the sandboxes the child tests logged, in order.
func sandboxesOf(t *testing.T, output string) []string {
	t.Helper()
	var names []string
	for _, match := range sandboxLine.FindAllStringSubmatch(output, -1) {
		names = append(names, match[1])
	}
	return names
}

// exists says whether the shared mock has the sandbox.
func exists(t *testing.T, name string) bool {
	t.Helper()
	_, err := mocktest.Server(t).GetSandbox(context.Background(), name)
	if err != nil && mockclient.StatusOf(err) != 404 {
		t.Fatal(err)
	}
	return err == nil
}

// TestAFailingTestLeavesItsJournal: when a test fails, its sandbox's whole journal is written to
// mockserver-journals/TEST.json of the working directory, and its log names the file and shows the last 20
// calls, one line each; a test that passes writes nothing. Both sandboxes are deleted (no keep asked).
func TestAFailingTestLeavesItsJournal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	output, passed := runChild(t, dir, "^(TestFails|TestPasses)$")
	if passed || !strings.Contains(output, "--- FAIL: TestFails") || !strings.Contains(output, "--- PASS: TestPasses") {
		t.Fatalf("the child tests:\n%s", output)
	}
	journal := filepath.Join(dir, "mockserver-journals", "TestFails.json")
	data, err := os.ReadFile(journal)
	if err != nil {
		t.Fatalf("no journal: %v\n%s", err, output)
	}
	var calls []mockclient.Call
	if err := json.Unmarshal(data, &calls); err != nil {
		t.Fatalf("%s: %v", journal, err)
	}
	if len(calls) != 25 || calls[0].ID != 1 || calls[0].Path != "/organization" || calls[24].Path != "/no-such-route" ||
		calls[24].Status != 404 {
		t.Fatalf("%s holds %d calls: %s", journal, len(calls), data)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "mockserver-journals", "*")); len(files) != 1 {
		t.Errorf("journals written: %v, want TestFails.json alone", files)
	}
	if !strings.Contains(output, "mocktest: the journal of sandbox TestFails-") ||
		!strings.Contains(output, "(25 calls) is in "+journal+"; the last 20:") {
		t.Errorf("the log does not name the journal %s:\n%s", journal, output)
	}
	lines := regexp.MustCompile(`(?m)^\s+(#\d+ .*)$`).FindAllStringSubmatch(output, -1)
	if len(lines) != 20 || lines[0][1] != "#6 GET /organization -> 200 (getOrganization)" ||
		lines[19][1] != "#25 GET /no-such-route -> 404" {
		t.Errorf("the last calls in the log: %q\n%s", lines, output)
	}
	for _, name := range sandboxesOf(t, output) {
		if exists(t, name) {
			t.Errorf("sandbox %s was kept", name)
		}
	}
}

// TestKeepSandbox: MOCKSERVER_KEEP_SANDBOX=on-failure keeps the sandbox of a failing test (logged with its
// URL and inspector page) and deletes that of a passing one, MOCKSERVER_JOURNAL_DIR moves the journals;
// SandboxOptions.KeepSandbox "always" keeps a passing test's; a value that means nothing fails the test.
func TestKeepSandbox(t *testing.T) {
	t.Parallel()
	root := mocktest.Server(t).Root()
	keptSandboxes := func(t *testing.T, output string) []string {
		var kept []string
		for _, name := range sandboxesOf(t, output) {
			if exists(t, name) {
				kept = append(kept, name)
				t.Cleanup(func() { mocktest.Server(t).DeleteSandbox(context.Background(), name, false) })
			}
		}
		return kept
	}

	t.Run("on failure, from the environment", func(t *testing.T) {
		t.Parallel()
		dir, journals := t.TempDir(), filepath.Join(t.TempDir(), "journals")
		output, _ := runChild(t, dir, "^(TestFails|TestPasses)$",
			"MOCKSERVER_KEEP_SANDBOX=on-failure", "MOCKSERVER_JOURNAL_DIR="+journals)
		names := sandboxesOf(t, output)
		kept := keptSandboxes(t, output)
		if len(names) != 2 || len(kept) != 1 || kept[0] != names[0] || !strings.HasPrefix(kept[0], "TestFails-") {
			t.Fatalf("sandboxes %v, kept %v, want TestFails's alone:\n%s", names, kept, output)
		}
		want := fmt.Sprintf("mocktest: sandbox %s kept (MOCKSERVER_KEEP_SANDBOX=on-failure): %s/sandbox/%s; "+
			"inspector: %s/_mock/ui?sandbox=%s\n", kept[0], root, kept[0], root, kept[0])
		if !strings.Contains(output, want) {
			t.Errorf("the log does not say where the sandbox is: want %q in\n%s", want, output)
		}
		if code, _ := api(t, root, "", "GET", "/_mock/ui?sandbox="+kept[0], nil); code != 200 {
			t.Errorf("the inspector page of the sandbox kept answered %d", code)
		}
		if _, err := os.Stat(filepath.Join(journals, "TestFails.json")); err != nil {
			t.Errorf("MOCKSERVER_JOURNAL_DIR: %v", err)
		}
		if _, err := os.Stat(filepath.Join(dir, "mockserver-journals")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("mockserver-journals made in the working directory although MOCKSERVER_JOURNAL_DIR is set: %v", err)
		}
	})

	t.Run("always, from the options", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		output, passed := runChild(t, dir, "^TestPasses$", "MOCKTEST_KEEP=always")
		kept := keptSandboxes(t, output)
		if !passed || len(kept) != 1 || !strings.Contains(output, "kept (KeepSandbox=always)") {
			t.Fatalf("kept %v:\n%s", kept, output)
		}
		if _, err := os.Stat(filepath.Join(dir, "mockserver-journals")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a journal was written for a test that passed: %v", err)
		}
	})

	t.Run("a value that means nothing", func(t *testing.T) {
		t.Parallel()
		output, passed := runChild(t, t.TempDir(), "^TestPasses$", "MOCKSERVER_KEEP_SANDBOX=sometimes")
		if passed || !strings.Contains(output, `mocktest: MOCKSERVER_KEEP_SANDBOX="sometimes": use never, on-failure or always`) {
			t.Fatalf("the child tests:\n%s", output)
		}
	})
}

// TestARefusedMockserverURLFailsAtOnce: a test binary whose MOCKSERVER_URL nothing listens at fails its
// tests at once (not after 30 s), in one line naming the URL and MOCKSERVER_URL.
func TestARefusedMockserverURLFailsAtOnce(t *testing.T) {
	t.Parallel()
	childTests(t) // built before the clock starts
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + listener.Addr().String()
	listener.Close()
	began := time.Now()
	output, passed := runChild(t, t.TempDir(), "^TestPasses$", "MOCKSERVER_URL="+url)
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("the test binary took %s to fail", took)
	}
	want := "mockclient: nothing listens at " + url + " (MOCKSERVER_URL): connection refused; start the mock there, " +
		"or unset MOCKSERVER_URL to start one from MOCKSERVER_COMMAND\n"
	if passed || !strings.Contains(output, want) {
		t.Fatalf("want the line %q in:\n%s", want, output)
	}
}

// TestALocalMockEndsWithItsParent: a test binary that started a local mock and is killed with SIGKILL (no
// clean-up runs) leaves no mock behind: it is gone within a few seconds.
func TestALocalMockEndsWithItsParent(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skipf("SKIPPED: reads /proc, which %s does not have", runtime.GOOS)
	}
	command := exec.Command(childTests(t), "-test.v", "-test.run", "^TestStartsALocalMock$")
	command.Env = childEnvironment()
	stdout, err := command.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	command.Stderr = command.Stdout
	if err := command.Start(); err != nil {
		t.Fatal(err)
	}
	defer command.Process.Kill()
	started, said := make(chan string, 1), make(chan []string, 1)
	go func() {
		var lines []string
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			lines = append(lines, scanner.Text())
			if strings.HasPrefix(scanner.Text(), "started ") {
				started <- scanner.Text()
			}
		}
		said <- lines
	}()
	select {
	case <-started:
	case lines := <-said:
		t.Fatalf("the child ended before starting its mock:\n%s", strings.Join(lines, "\n"))
	case <-time.After(30 * time.Second):
		t.Fatalf("the child did not start its mock within 30 s")
	}
	mocks := childrenOf(command.Process.Pid)
	if len(mocks) != 1 {
		t.Fatalf("the child has %d child processes (%v), want its mock", len(mocks), mocks)
	}
	mock := mocks[0]
	if err := command.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	<-said
	command.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for running(mock) {
		if time.Now().After(deadline) {
			syscallKill(mock)
			t.Fatalf("the mock (pid %d) still runs 5 s after the process that started it was killed", mock)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// procStat is the state and parent pid of a process from /proc/PID/stat (ok false: no such process).
func procStat(pid int) (state string, parent int, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, false
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses, the last ")" ends it
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	if len(fields) < 2 {
		return "", 0, false
	}
	parent, _ = strconv.Atoi(fields[1])
	return fields[0], parent, true
}

// running: the process exists and is no zombie (one that ended and waits to be reaped counts as gone).
func running(pid int) bool {
	state, _, ok := procStat(pid)
	return ok && state != "Z" && state != "X"
}

// childrenOf are the pids whose parent is pid.
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var children []int
	for _, entry := range entries {
		candidate, err := strconv.Atoi(entry.Name())
		if err != nil {
			continue
		}
		if _, parent, ok := procStat(candidate); ok && parent == pid {
			children = append(children, candidate)
		}
	}
	return children
}

// syscallKill kills a process left behind by a failed test.
func syscallKill(pid int) {
	if process, err := os.FindProcess(pid); err == nil {
		process.Kill()
	}
}
