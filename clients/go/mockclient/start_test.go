package mockclient_test

// Starting and connecting, without a mock: this test binary plays a mock that is slow to start (see
// TestMain), and a port of 127.0.0.1 nothing listens on plays a URL given by mistake.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"idp-mockserver/clients/go/mockclient"
)

// TestMain: with MOCKCLIENT_TEST_SLOW_MOCK=PORT the binary is no test run but a stand-in mock that is slow
// to start (slowMock).
func TestMain(m *testing.M) {
	if port := os.Getenv("MOCKCLIENT_TEST_SLOW_MOCK"); port != "" {
		slowMock(port)
		return
	}
	os.Exit(m.Run())
}

// slowMock prints the start line of a mock on 127.0.0.1:port and the arguments it was given, and only a
// second later listens there, answering /_mock/health, until it is stopped.
func slowMock(port string) {
	fmt.Fprintf(os.Stderr, "mockserver %s on http://127.0.0.1:%s: a stand-in, slow to start\n", mockclient.Version, port)
	fmt.Printf("arguments: %s\n", strings.Join(os.Args[1:], " "))
	time.Sleep(time.Second)
	http.HandleFunc("/_mock/health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"ok","version":%q,"clock":"manual"}`, mockclient.Version)
	})
	fmt.Fprintln(os.Stderr, http.ListenAndServe("127.0.0.1:"+port, nil))
	os.Exit(1)
}

// refusedPort is a port of 127.0.0.1 that nothing listens on (one just let go of).
func refusedPort(t *testing.T) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := fmt.Sprint(listener.Addr().(*net.TCPAddr).Port)
	listener.Close()
	return port
}

// TestConnectFailsAtOnceWhereNothingListens: a URL where the connection is refused fails at once (not after
// ReadyTimeout, 30 s by default), in one line naming the URL and where it came from.
func TestConnectFailsAtOnceWhereNothingListens(t *testing.T) {
	url := "http://127.0.0.1:" + refusedPort(t)
	for _, given := range []struct{ argument, env, source string }{
		{argument: url, source: "(the URL given to Connect)"},
		{env: url, source: "(MOCKSERVER_URL)"},
	} {
		t.Setenv("MOCKSERVER_URL", given.env)
		began := time.Now()
		_, err := mockclient.Connect(context.Background(), given.argument, nil)
		if took := time.Since(began); took > 3*time.Second {
			t.Errorf("Connect(%q) took %s to fail", given.argument, took)
		}
		want := "mockclient: nothing listens at " + url + " " + given.source + ": connection refused"
		if err == nil || err.Error() != want {
			t.Errorf("Connect(%q) with MOCKSERVER_URL=%q: %v\nwant: %s", given.argument, given.env, err, want)
		}
		var unreachable *mockclient.UnreachableError
		if !errors.As(err, &unreachable) || !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("want a *mockclient.UnreachableError wrapping ECONNREFUSED, got %T", err)
		}
	}
}

// TestStartLocalWaitsForAMockStillStarting: a mock this process started is waited for while its port
// refuses connections (the stand-in listens a second after its start line), and is given --exit-with-parent,
// so that it stops when this process ends, however it ends.
func TestStartLocalWaitsForAMockStillStarting(t *testing.T) {
	t.Parallel()
	executable, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	server, err := mockclient.StartLocal(context.Background(), mockclient.LocalOptions{Command: executable,
		Env: []string{"MOCKCLIENT_TEST_SLOW_MOCK=" + refusedPort(t)}, StartTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer server.Stop()
	if took := time.Since(began); took < time.Second {
		t.Errorf("StartLocal returned after %s, before the stand-in listened", took)
	}
	if _, err := server.Client.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	if output := server.Output(); !strings.Contains(output, "arguments: serve --port 0 --clock manual --exit-with-parent") {
		t.Errorf("the mock was not asked to exit with its parent; it said:\n%s", output)
	}
	if err := server.Stop(); err != nil {
		t.Fatal(err)
	}
}
