package mockclient_test

// Tests of the client that need no mock: a tiny HTTP server on 127.0.0.1 plays the part the test needs.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"idp-mockserver/clients/go/mockclient"
)

// healthServer answers /_mock/health with the version given, and counts the requests it gets.
func healthServer(t *testing.T, version string) *httptest.Server {
	t.Helper()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/_mock/health" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"ok","version":%q,"clock":"manual"}`, version)
	}))
	t.Cleanup(server.Close)
	return server
}

func TestVersionMismatchPrintsOneLine(t *testing.T) {
	t.Parallel()
	server := healthServer(t, "9.9.0")
	if !strings.HasPrefix(server.URL, "http://127.0.0.1:") {
		t.Fatalf("the stand-in server is not on 127.0.0.1: %s", server.URL)
	}
	var warnings bytes.Buffer
	client, err := mockclient.Connect(context.Background(), server.URL, &mockclient.Options{Warnings: &warnings})
	if err != nil {
		t.Fatalf("Connect to a mismatched mock must go on, got %v", err)
	}
	// checking again (or from a sandbox handle of the same mock) prints nothing more
	if _, err := client.CheckVersion(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Sandbox("other").CheckVersion(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("idp-mockserver client %s: the mock at %s is 9.9.0 (major.minor differ); some calls may not match\n",
		mockclient.Version, server.URL)
	if warnings.String() != want {
		t.Fatalf("warnings:\n%q\nwant one line:\n%q", warnings.String(), want)
	}
	if client.ServerVersion() != "9.9.0" {
		t.Fatalf("ServerVersion = %q", client.ServerVersion())
	}
}

func TestSameMajorMinorPrintsNothing(t *testing.T) {
	t.Parallel()
	for _, version := range []string{mockclient.Version, strings.Join(strings.Split(mockclient.Version, ".")[:2], ".") + ".99"} {
		server := healthServer(t, version)
		var warnings bytes.Buffer
		if _, err := mockclient.Connect(context.Background(), server.URL, &mockclient.Options{Warnings: &warnings}); err != nil {
			t.Fatal(err)
		}
		if warnings.Len() != 0 {
			t.Fatalf("version %s: printed %q", version, warnings.String())
		}
	}
}

func TestConnectGivesUpAtTheDeadline(t *testing.T) {
	t.Parallel()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "starting", http.StatusServiceUnavailable)
	}))
	defer server.Close()
	_, err := mockclient.Connect(context.Background(), server.URL, &mockclient.Options{ReadyTimeout: 2 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "not ready") || !strings.Contains(err.Error(), "503") {
		t.Fatalf("want a 'not ready ... 503' error, got %v", err)
	}
}

func TestErrorsCarryStatusAndMessage(t *testing.T) {
	t.Parallel()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"status":404,"error":"Not Found","message":"no scenario named nope is active"}`)
	}))
	defer server.Close()
	client, err := mockclient.New(server.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.Sandbox("s1").GetScenario(context.Background(), "nope")
	var controlError *mockclient.MockServerError
	if !errors.As(err, &controlError) {
		t.Fatalf("want a *mockclient.MockServerError, got %T %v", err, err)
	}
	var deprecated *mockclient.Error // the name it had: still the same type, for a release
	if !errors.As(err, &deprecated) || deprecated != controlError {
		t.Fatalf("*mockclient.Error is no longer *mockclient.MockServerError")
	}
	if controlError.Status != 404 || controlError.Message != "no scenario named nope is active" ||
		controlError.Path != "/sandbox/s1/_mock/scenarios/nope" || mockclient.StatusOf(err) != 404 {
		t.Fatalf("error: %+v", controlError)
	}
	if !strings.Contains(err.Error(), "answered 404: no scenario named nope is active") {
		t.Fatalf("message: %v", err)
	}
}

func TestControlTokenIsSentAsBearer(t *testing.T) {
	t.Parallel()
	var seen []string
	var mu sync.Mutex
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"mode":"manual","now":"2026-01-01T00:00:00Z","epoch":0,"offset_seconds":0}`)
	}))
	defer server.Close()
	client, err := mockclient.New(server.URL, &mockclient.Options{ControlToken: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Clock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Sandbox("x").Advance(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0] != "Bearer s3cret" || seen[1] != "Bearer s3cret" {
		t.Fatalf("Authorization headers sent: %q", seen)
	}
}

func TestTokensFallBackToTheDefaultFixtures(t *testing.T) {
	t.Parallel()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"service":"IDP mock server","quick_start":{"organization":"x"}}`) // --control-token: no tokens
	}))
	defer server.Close()
	client, err := mockclient.New(server.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"admin": "mock-admin-token", "Admin": "mock-admin-token",
		"reader": "mock-read-token", "read": "mock-read-token", "READ": "mock-read-token",
		"writer": "mock-write-token", "Write": "mock-write-token", "deployer": "mock-deploy-token",
		"deploy": "mock-deploy-token"} {
		got, err := client.Token(name)
		if err != nil || got != want {
			t.Errorf("Token(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	headers, err := client.Headers("deployer")
	if err != nil || headers.Get("Authorization") != "Token mock-deploy-token" {
		t.Fatalf("Headers(deployer) = %v, %v", headers, err)
	}
	if _, err := client.Token("root"); err == nil || !strings.Contains(err.Error(), "admin, read, write or deploy") {
		t.Fatalf("an unknown name must list the valid ones, got %v", err)
	}
}

func TestTokensPreferWhatTheServerSays(t *testing.T) {
	t.Parallel()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/sandbox/team-a/" || r.Header.Get("Accept") != "application/json" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"quick_start":{"tokens":{"ops":{"token":"ops-token","scopes":["Admin"]},
			"ci":{"token":"ci-token","scopes":["Deploy"]}}}}`)
	}))
	defer server.Close()
	client, err := mockclient.New(server.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	sandbox := client.Sandbox("team-a")
	for name, want := range map[string]string{"ops": "ops-token", "admin": "ops-token", "ci": "ci-token",
		"Deploy": "ci-token", "deployer": "ci-token"} {
		if got, err := sandbox.Token(name); err != nil || got != want {
			t.Errorf("Token(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := sandbox.Token("reader"); err == nil || !strings.Contains(err.Error(), "ci, ops") {
		t.Fatalf("a name the server does not know must fail and list its tokens, got %v", err)
	}
}

func TestPrivateSnapshotNameIsThePluginsOne(t *testing.T) {
	t.Parallel()
	// the values the Python plugin computes: f"{name[:48]}.{sha1(f'{sandbox}|{name}')[:12]}"
	cases := map[[2]string]string{
		{"t-abc", "base"}:              "base.faf333369fc5",
		{"x", strings.Repeat("n", 60)}: strings.Repeat("n", 48) + ".8daa9a0857cf",
	}
	for in, want := range cases {
		if got := mockclient.PrivateSnapshotName(in[0], in[1]); got != want {
			t.Errorf("PrivateSnapshotName(%q, %q) = %q, want %q", in[0], in[1], got, want)
		}
	}
}

func TestNewRefusesWhatIsNotAURL(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "localhost:8080", "ftp://x", "http://"} {
		if _, err := mockclient.New(bad, nil); err == nil {
			t.Errorf("New(%q) must fail", bad)
		}
	}
	client, err := mockclient.New("http://127.0.0.1:9/", nil)
	if err != nil || client.URL() != "http://127.0.0.1:9" || client.Sandbox("a").URL() != "http://127.0.0.1:9/sandbox/a" {
		t.Fatalf("New: %v %v", client, err)
	}
}

func pact(consumer string, descriptions ...string) mockclient.Object {
	var interactions []any
	for _, description := range descriptions {
		interactions = append(interactions, mockclient.Object{"description": description, "key": "k-" + description,
			"type": "Synchronous/HTTP"})
	}
	return mockclient.Object{"consumer": mockclient.Object{"name": consumer},
		"provider": mockclient.Object{"name": "idp-platform"}, "interactions": interactions,
		"metadata": mockclient.Object{"idp-mockserver": mockclient.Object{"calls": float64(len(descriptions)),
			"cut": []any{}, "left_out": []any{mockclient.Object{"call": float64(1), "operation": "getOrganization",
				"status": float64(401), "reason": "x " + consumer}}}}}
}

func TestMergePacts(t *testing.T) {
	t.Parallel()
	old := pact("web", "a", "b")
	newer := pact("web", "b", "c")
	// an interaction whose description is taken but which differs gets a numbered description
	newer["interactions"] = append(newer["interactions"].([]any), mockclient.Object{"description": "a", "key": "other"})
	merged, err := mockclient.MergePacts(old, newer)
	if err != nil {
		t.Fatal(err)
	}
	var descriptions []string
	for _, item := range merged["interactions"].([]any) {
		descriptions = append(descriptions, item.(mockclient.Object)["description"].(string))
	}
	if strings.Join(descriptions, ",") != "a,b,c,a #2" {
		t.Fatalf("descriptions: %v", descriptions)
	}
	notes := merged["metadata"].(mockclient.Object)["idp-mockserver"].(mockclient.Object)
	if notes["interactions"] != 4 || notes["calls"] != float64(4) || len(notes["left_out"].([]any)) != 2 {
		t.Fatalf("notes: %v", notes)
	}
	if _, err := mockclient.MergePacts(pact("web"), pact("cli")); err == nil || !strings.Contains(err.Error(), "the file holds a pact of") {
		t.Fatalf("pacts of two consumers must not merge, got %v", err)
	}
}

func TestWritePactMergesParallelWriters(t *testing.T) {
	t.Parallel()
	// one stand-in mock per sandbox: each exports a pact of its own interactions
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sandbox := strings.Split(strings.TrimPrefix(r.URL.Path, "/sandbox/"), "/")[0]
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(pact("web", sandbox+"-1", sandbox+"-2"))
	}))
	defer server.Close()
	client, err := mockclient.New(server.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "pacts", "web.json")
	var writers sync.WaitGroup
	for i := 0; i < 12; i++ {
		writers.Add(1)
		go func(i int) {
			defer writers.Done()
			if _, err := client.Sandbox(fmt.Sprintf("s%d", i)).WritePact(context.Background(), path, mockclient.PactOptions{}); err != nil {
				t.Error(err)
			}
		}(i)
	}
	writers.Wait()
	var written mockclient.Object
	data, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(data, &written) != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	if got := len(written["interactions"].([]any)); got != 24 {
		t.Fatalf("%d interactions merged, want 24", got)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*"))
	if len(left) != 1 {
		t.Fatalf("files left beside the pact: %v", left)
	}
}

// TestFiltersByTokenHeadersAndBody: a verify sends token, headers and body as JSON; the journal's query
// string has token=, headers[NAME]=GLOB and body[PATH]=VALUE, the value as JSON (a string quoted, so that
// "2" is not read as the number 2).
func TestFiltersByTokenHeadersAndBody(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var queries []map[string][]string
	var verified mockclient.Object
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/_mock/calls/verify":
			json.NewDecoder(r.Body).Decode(&verified)
			fmt.Fprint(w, `{"ok":true,"actual":1,"message":"ok"}`)
		case "/_mock/calls", "/_mock/calls/export":
			queries = append(queries, r.URL.Query())
			fmt.Fprint(w, `{"results":[],"more":false}`)
		}
	}))
	defer server.Close()
	client, err := mockclient.New(server.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	filter := mockclient.Filter{Operation: "deployApplication", Token: "deployer",
		Headers: map[string]string{"X-Request-Source": "ci*"},
		Body:    mockclient.Object{"settings.replicas": 2, "note": "2", "force": true, "settings": mockclient.Object{"region": "eu"}}}
	ctx := context.Background()
	if _, err := client.Verify(ctx, filter, mockclient.Times(1)); err != nil {
		t.Fatal(err)
	}
	want := mockclient.Object{"operation": "deployApplication", "token": "deployer", "count": float64(1),
		"headers": mockclient.Object{"X-Request-Source": "ci*"},
		"body": mockclient.Object{"settings.replicas": float64(2), "note": "2", "force": true,
			"settings": mockclient.Object{"region": "eu"}}}
	if !reflect.DeepEqual(verified, want) {
		t.Errorf("verify body:\n%v\nwant:\n%v", verified, want)
	}
	if _, err := client.Calls(ctx, filter); err != nil {
		t.Fatal(err)
	}
	if _, err := client.ExportHAR(ctx, filter); err != nil {
		t.Fatal(err)
	}
	wantQuery := map[string]string{"operation": "deployApplication", "token": "deployer",
		"headers[X-Request-Source]": "ci*", "body[settings.replicas]": "2", "body[note]": `"2"`,
		"body[force]": "true", "body[settings]": `{"region":"eu"}`}
	if len(queries) != 2 {
		t.Fatalf("%d journal reads, want 2", len(queries))
	}
	for _, query := range queries {
		for key, value := range wantQuery {
			if got := query[key]; len(got) != 1 || got[0] != value {
				t.Errorf("query %s=%q, want %q (query: %v)", key, got, value, query)
			}
		}
	}
	if _, err := client.Calls(ctx, mockclient.Filter{Body: mockclient.Object{"x": make(chan int)}}); err == nil ||
		!strings.Contains(err.Error(), "body[x]") {
		t.Errorf("a body value that is not JSON must fail naming it, got %v", err)
	}
}
