// Package mocktest gives every Go test a fresh sandbox of its own on the IDP mock server:
//
//	func TestDeploy(t *testing.T) {
//		t.Parallel()
//		mock := mocktest.Sandbox(t) // fresh from the fixtures, deleted when the test ends
//		api := platform.New(mock.URL(), mock.Token("deployer"))
//		...
//		mock.Advance(10 * time.Minute)
//		mock.AssertCalled(t, mockclient.Filter{Operation: "deployApplication"}, mockclient.Times(1))
//	}
//
//	func TestMain(m *testing.M) { os.Exit(mocktest.Main(m)) }
//
// Sandbox uses the package's shared mock, made on first use: the one at MOCKSERVER_URL when it is set (a
// URL where nothing listens fails at once), else one started from MOCKSERVER_COMMAND (`mockserver serve
// --port 0 --clock manual --exit-with-parent`), stopped by Main, and by itself when the test binary ends
// however it ends. SandboxOn gives sandboxes of any other mock (StartLocal, StartContainer, Connect), so
// several mocks work side by side in one test binary.
//
// When a test fails, its sandbox's journal is written to MOCKSERVER_JOURNAL_DIR (default
// mockserver-journals) and its last calls are logged; MOCKSERVER_KEEP_SANDBOX=on-failure (or always) keeps
// the sandbox for a look in the inspector (see SandboxOn).
package mocktest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"idp-mockserver/clients/go/mockclient"
)

// JournalBodyLimit is the journal body limit of the sandboxes Sandbox makes, unless the options say
// otherwise: bodies up to 1 MiB are kept whole, so that pacts hold them (the same in every client).
const JournalBodyLimit = mockclient.JournalBodyLimit

var shared struct { // the package's shared mock (Server), made once per test binary
	once   sync.Once
	client *mockclient.Client
	server *mockclient.Server
	err    error
}

// Server is the shared mock of the test binary: MOCKSERVER_URL when set (connected, health polled),
// else a mock started from MOCKSERVER_COMMAND (default "mockserver") with a manual clock. A mock that
// cannot be had fails the test (and every later one) with the reason.
func Server(t testing.TB) *mockclient.Client {
	t.Helper()
	shared.once.Do(func() {
		ctx := context.Background()
		if os.Getenv("MOCKSERVER_URL") != "" {
			// a refused connection fails at once, naming the URL and MOCKSERVER_URL (mockclient.Connect)
			shared.client, shared.err = mockclient.Connect(ctx, "", nil)
			if shared.err != nil {
				shared.err = fmt.Errorf("%v; start the mock there, or unset MOCKSERVER_URL to start one from "+
					"MOCKSERVER_COMMAND", shared.err)
			}
			return
		}
		shared.server, shared.err = mockclient.StartLocal(ctx, mockclient.LocalOptions{})
		if shared.err == nil {
			shared.client = shared.server.Client
		}
	})
	if shared.err != nil {
		t.Fatalf("%v", shared.err)
	}
	return shared.client
}

// Main runs the tests and then stops the shared mock if this binary started it. Use it in TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(mocktest.Main(m)) }
//
// Before it stops the mock it lists the scenario rules that no test's sandbox made fire (UnusedRules, with
// the prefix MOCKSERVER_SANDBOX_PREFIX); MOCKSERVER_UNUSED_RULES=fail also fails the run, off does not ask.
func Main(m *testing.M) int {
	code := m.Run()
	if mode := os.Getenv("MOCKSERVER_UNUSED_RULES"); shared.client != nil && mode != "off" {
		unused, err := UnusedRules(shared.client, cleanPrefix(os.Getenv("MOCKSERVER_SANDBOX_PREFIX")))
		if err == nil && len(unused) > 0 {
			fmt.Fprintf(os.Stderr, "mocktest: %d scenario rule(s) never fired in any test's sandbox: %s\n",
				len(unused), strings.Join(unused, ", "))
			if mode == "fail" && code == 0 {
				code = 1
			}
		}
	}
	if shared.server != nil {
		if err := shared.server.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	return code
}

// Sandbox is a handle on a fresh sandbox of the shared mock (Server), made for this test from the
// fixtures (or with the options) and deleted with its private snapshots when the test ends.
func Sandbox(t testing.TB, opts ...mockclient.SandboxOptions) *Handle {
	t.Helper()
	return SandboxOn(t, Server(t), opts...)
}

// SandboxOn is Sandbox on the mock of the given client.
//
// The sandbox is named after the test (SandboxName). Its journal keeps bodies up to JournalBodyLimit
// unless the options say otherwise. When MOCKSERVER_PACT names a file, the test's calls are merged
// into that pact before the sandbox is deleted (consumer and provider: MOCKSERVER_PACT_CONSUMER and
// MOCKSERVER_PACT_PROVIDER, default consumer and idp-platform).
//
// When the test fails, the sandbox's whole journal is written to MOCKSERVER_JOURNAL_DIR (default
// mockserver-journals in the working directory, the package's folder under go test) as TEST.json, and
// the test's log gets the file's path and the last calls, one line each (see JournalDir). The sandbox is
// deleted unless options.KeepSandbox or MOCKSERVER_KEEP_SANDBOX say to keep it: "on-failure" (when the
// test fails) or "always"; a sandbox kept is logged with its URL and its inspector page.
func SandboxOn(t testing.TB, mock *mockclient.Client, opts ...mockclient.SandboxOptions) *Handle {
	t.Helper()
	var options mockclient.SandboxOptions
	if len(opts) > 1 {
		t.Fatalf("mocktest: give at most one SandboxOptions")
	}
	if len(opts) == 1 {
		options = opts[0]
	}
	if options.JournalBodyLimit == 0 {
		options.JournalBodyLimit = JournalBodyLimit
	}
	keep, err := keepSandbox(options.KeepSandbox)
	if err != nil {
		t.Fatalf("%v", err)
	}
	name := SandboxName(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client, err := mock.InSandbox(ctx, name, options)
	if err != nil {
		t.Fatalf("mocktest: %v", err)
	}
	journal := journalFile(t)
	t.Cleanup(func() {
		t.Helper() // what it logs points at the line that made the sandbox
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if pact := os.Getenv("MOCKSERVER_PACT"); pact != "" {
			_, err := client.WritePact(ctx, pact, mockclient.PactOptions{ExportOptions: mockclient.ExportOptions{
				Consumer: os.Getenv("MOCKSERVER_PACT_CONSUMER"), Provider: os.Getenv("MOCKSERVER_PACT_PROVIDER")}})
			if err != nil {
				t.Errorf("mocktest: writing the pact %s: %v", pact, err)
			}
		}
		failed := t.Failed()
		if failed {
			logJournal(ctx, t, client, journal())
		}
		if keep.mode == "always" || (keep.mode == "on-failure" && failed) {
			logKept(t, client, keep)
			return
		}
		if err := client.DeleteSandbox(ctx, "", false); err != nil && mockclient.StatusOf(err) != 404 {
			t.Errorf("mocktest: deleting sandbox %s: %v", name, err)
		}
	})
	return &Handle{Client: client, t: t}
}

// UnusedRules is the scenario rules loaded in the mock's sandboxes whose name starts with prefix (those
// already deleted or reset included) that never fired in any of them.
func UnusedRules(mock *mockclient.Client, prefix string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	report, err := mock.Usage(ctx, mockclient.UsageOptions{Scope: "mock", Prefix: prefix})
	if err != nil {
		return nil, err
	}
	return report.Rules.NeverFired, nil
}

func cleanPrefix(prefix string) string {
	return untidyEnds.ReplaceAllString(unsafeChars.ReplaceAllString(prefix, "-"), "")
}

var (
	unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)
	untidyEnds  = regexp.MustCompile(`^[.-]+|-+$`)
)

// SandboxName is a valid, unique sandbox name for the test (at most 64 of A-Z a-z 0-9 _ . -): the
// environment variable MOCKSERVER_SANDBOX_PREFIX (e.g. a CI job id), the test's name, and 10 random hex
// digits, so that tests of several packages and runs never share one.
func SandboxName(t testing.TB) string {
	random := make([]byte, 5)
	if _, err := rand.Read(random); err != nil {
		t.Fatalf("mocktest: %v", err)
	}
	readable := unsafeChars.ReplaceAllString(os.Getenv("MOCKSERVER_SANDBOX_PREFIX")+t.Name(), "-")
	readable = untidyEnds.ReplaceAllString(readable, "")
	if len(readable) > 64-11 {
		readable = readable[:64-11]
	}
	if readable == "" {
		readable = "test"
	}
	return readable + "-" + hex.EncodeToString(random)
}

// StartLocal starts a mock of its own for the test (mockclient.StartLocal) and stops it when the test ends.
// A mock that cannot start fails the test.
func StartLocal(t testing.TB, opts mockclient.LocalOptions) *mockclient.Server {
	t.Helper()
	server, err := mockclient.StartLocal(context.Background(), opts)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() {
		if err := server.Stop(); err != nil {
			t.Errorf("%v", err)
		}
	})
	return server
}

// StartProcess is StartLocal.
//
// Deprecated: use StartLocal, the name of the Python and Node clients' function too.
func StartProcess(t testing.TB, opts mockclient.LocalOptions) *mockclient.Server {
	t.Helper()
	return StartLocal(t, opts)
}

// StartContainer runs the mock's image for the test (mockclient.StartContainer) and removes the
// container when the test ends. When no Docker engine answers or the image is missing, the test is
// skipped with the reason (never passed).
func StartContainer(t testing.TB, opts mockclient.ContainerOptions) *mockclient.Server {
	t.Helper()
	if reason := mockclient.ContainerUnavailable(context.Background(), opts); reason != nil {
		t.Skipf("SKIPPED: the container way needs a Docker engine and the image: %v", reason)
	}
	server, err := mockclient.StartContainer(context.Background(), opts)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() {
		if err := server.Stop(); err != nil {
			t.Errorf("%v", err)
		}
	})
	return server
}

// Connect connects to the mock at url (MOCKSERVER_URL when empty) for the test; a mock that does not
// answer fails the test.
func Connect(t testing.TB, url string, opts *mockclient.Options) *mockclient.Client {
	t.Helper()
	client, err := mockclient.Connect(context.Background(), url, opts)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return client
}
