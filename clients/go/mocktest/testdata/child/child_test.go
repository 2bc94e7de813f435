// Package child holds the tests the mocktest suite runs in a process of their own, to watch from outside
// what a test binary does when a test fails, when a URL is refused, or when it is killed. They fail on
// purpose: go test ./... leaves testdata alone, and without MOCKTEST_CHILD=1 each one skips.
package child_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"idp-mockserver/clients/go/mockclient"
	"idp-mockserver/clients/go/mocktest"
)

func TestMain(m *testing.M) { os.Exit(mocktest.Main(m)) }

func child(t *testing.T) {
	if os.Getenv("MOCKTEST_CHILD") != "1" {
		t.Skip("run by the mocktest suite (MOCKTEST_CHILD=1)")
	}
}

// get calls the sandbox's API n times with the reader token.
func get(t *testing.T, h *mocktest.Handle, path string, n int) {
	for i := 0; i < n; i++ {
		req, _ := http.NewRequest("GET", h.URL()+path, nil)
		req.Header.Set("Authorization", "Token "+h.Token("reader"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
}

// TestFails makes 24 calls of the organization and one of a path the API does not have, then fails.
// MOCKTEST_KEEP is its SandboxOptions.KeepSandbox.
func TestFails(t *testing.T) {
	child(t)
	h := mocktest.Sandbox(t, mockclient.SandboxOptions{KeepSandbox: os.Getenv("MOCKTEST_KEEP")})
	t.Logf("sandbox %s", h.SandboxName())
	get(t, h, "/organization", 24)
	get(t, h, "/no-such-route", 1)
	t.Errorf("fails on purpose")
}

// TestPasses makes one call and passes.
func TestPasses(t *testing.T) {
	child(t)
	h := mocktest.Sandbox(t, mockclient.SandboxOptions{KeepSandbox: os.Getenv("MOCKTEST_KEEP")})
	t.Logf("sandbox %s", h.SandboxName())
	get(t, h, "/organization", 1)
}

// TestStartsALocalMock starts a mock of its own, says so, and waits to be killed.
func TestStartsALocalMock(t *testing.T) {
	child(t)
	server, err := mockclient.StartLocal(context.Background(), mockclient.LocalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("started %s\n", server.URL)
	time.Sleep(time.Minute)
}
