package mocktest_test

// The integration suite: real assertions against a real mock. The shared mock is the one at
// MOCKSERVER_URL, else one started from MOCKSERVER_COMMAND (default: mockserver on PATH).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"idp-mockserver/clients/go/mockclient"
	"idp-mockserver/clients/go/mocktest"
)

const (
	orgID = "8d3e6a4b-1f2c-4b7a-9e1d-3c5f7a9b2d10" // Acme, of the default fixtures
	webID = "a7c9e1b3-5d7f-4b9d-8f1b-3d5f7b9d1fa5" // application web
)

func TestMain(m *testing.M) {
	code := mocktest.Main(m)
	if childBinary.path != "" { // the test binary of testdata/child (child_test.go)
		os.RemoveAll(filepath.Dir(childBinary.path))
	}
	os.Exit(code)
}

// manual is a fresh sandbox of the shared mock with a manual clock (whatever the mock's own mode).
func manual(t *testing.T) *mocktest.Handle {
	t.Helper()
	return mocktest.Sandbox(t, mockclient.SandboxOptions{Clock: "manual"})
}

var plain = &http.Client{Timeout: 30 * time.Second}

// api calls the platform API of the sandbox (base URL) with a default token, the way a client team's
// code does, and decodes the JSON reply.
func api(t testing.TB, base, token, method, path string, body any) (int, mockclient.Object) {
	t.Helper()
	var reader io.Reader
	if body != nil {
		encoded, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		reader = bytes.NewReader(encoded)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, base+path, reader)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Token "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := plain.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out mockclient.Object
	if len(data) > 0 {
		_ = json.Unmarshal(data, &out)
	}
	return resp.StatusCode, out
}

// on calls the platform API of the handle's sandbox.
func on(t testing.TB, h *mocktest.Handle, who, method, path string, body any) (int, mockclient.Object) {
	t.Helper()
	return api(t, h.URL(), h.Token(who), method, path, body)
}

func status(t testing.TB, h *mocktest.Handle, app string) string {
	t.Helper()
	code, reply := on(t, h, "reader", "GET", "/application/"+app+"/status", nil)
	if code != 200 {
		t.Fatalf("GET /application/%s/status answered %d: %v", app, code, reply)
	}
	state, _ := reply["state"].(string)
	return state
}

// fakeT records what an assertion reports instead of failing the test.
type fakeT struct{ failures []string }

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failures = append(f.failures, fmt.Sprintf(format, args...))
}

// str is the text of a nullable string of a reply ("" for null).
func str(text *string) string {
	if text == nil {
		return ""
	}
	return *text
}
