package mocktest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"idp-mockserver/clients/go/mockclient"
	"idp-mockserver/clients/go/mocktest"
)

// TestParallelSandboxesDoNotSeeEachOther runs 10 tests at once against one mock, each in its own
// sandbox: each creates a project, activates a scenario, saves and restores a snapshot under a name
// they all use, moves its clock by its own amount and makes its own number of calls, then checks it
// sees exactly its own and nothing of the others.
func TestParallelSandboxesDoNotSeeEachOther(t *testing.T) {
	const tests = 10
	var mu sync.Mutex
	projects := map[string]string{} // test -> project id
	t.Run("group", func(t *testing.T) {
		for i := 0; i < tests; i++ {
			i := i
			t.Run(fmt.Sprintf("sandbox-%02d", i), func(t *testing.T) {
				t.Parallel()
				h := manual(t)
				own := fmt.Sprintf("iso-%02d", i)
				code, project := on(t, h, "admin", "POST", "/organization/"+orgID+"/project", map[string]any{"name": own})
				if code != 201 {
					t.Fatalf("create project answered %d: %v", code, project)
				}
				mu.Lock()
				projects[own] = project["id"].(string)
				mu.Unlock()
				h.Scenario(own, mockclient.Object{"rules": []any{mockclient.Object{"name": "status-down",
					"match":  mockclient.Object{"operation": "getApplicationStatus", "nth": i + 1},
					"effect": mockclient.Object{"status": 503, "message": own + " says no"}}}})
				h.Snapshot("same-name", mockclient.SnapshotOptions{Journal: true}) // one name in every test: private
				on(t, h, "admin", "POST", "/organization/"+orgID+"/project", map[string]any{"name": own + "-later"})
				h.Restore("same-name") // back to the world with its one project
				advanced := time.Duration(i+1) * 7 * time.Second
				h.Advance(advanced)
				for n := 0; n <= i; n++ {
					if code, _ := on(t, h, "reader", "GET", "/organization", nil); code != 200 {
						t.Fatalf("GET /organization answered %d", code)
					}
					time.Sleep(time.Millisecond) // let the others interleave
				}
				// the n-th status read fails as this test's own scenario says
				for n := 1; n <= i+1; n++ {
					code, reply := on(t, h, "reader", "GET", "/application/"+webID+"/status", nil)
					if want := map[bool]int{true: 503, false: 200}[n == i+1]; code != want {
						t.Fatalf("status read %d answered %d (%v), want %d", n, code, reply, want)
					}
				}

				if clock := h.Clock(); clock.OffsetSeconds != advanced.Seconds() {
					t.Errorf("clock offset %v, want %v (its own advance only)", clock.OffsetSeconds, advanced.Seconds())
				}
				scenarios := h.Scenarios()
				if len(scenarios) != 1 || scenarios[0].Name != own || scenarios[0].Rules[0].Fired != 1 {
					t.Errorf("scenarios %+v, want only %s, fired once", scenarios, own)
				}
				h.AssertCalled(t, mockclient.Filter{Operation: "getOrganization"}, mockclient.Times(i+1))
				h.AssertCalled(t, mockclient.Filter{Operation: "createProject"}, mockclient.Times(1)) // the later one went with the restore
				h.AssertCalled(t, mockclient.Filter{Status: "503", Scenario: own}, mockclient.Times(1))
				_, list := on(t, h, "reader", "GET", "/organization/"+orgID+"/project", nil)
				var names []string
				for _, item := range list["results"].([]any) {
					if name := item.(mockclient.Object)["name"].(string); strings.HasPrefix(name, "iso-") {
						names = append(names, name)
					}
				}
				if len(names) != 1 || names[0] != own {
					t.Errorf("projects named iso-*: %v, want only %s", names, own)
				}
				mu.Lock()
				others := map[string]string{}
				for name, id := range projects {
					others[name] = id
				}
				mu.Unlock()
				for name, id := range others {
					if name == own {
						continue
					}
					if code, _ := on(t, h, "reader", "GET", "/project/"+id, nil); code != 404 {
						t.Errorf("project %s of another test answered %d here, want 404", name, code)
					}
				}
			})
		}
	})
	if len(projects) != tests {
		t.Fatalf("%d projects made, want %d", len(projects), tests)
	}
	// a sandbox made after them starts from the fixtures: none of their projects, none of their snapshots
	h := manual(t)
	for name, id := range projects {
		if code, _ := on(t, h, "reader", "GET", "/project/"+id, nil); code != 404 {
			t.Errorf("project %s answered %d in a fresh sandbox", name, code)
		}
	}
	snapshots, err := h.Client.Snapshots(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, snapshot := range snapshots {
		if strings.HasPrefix(snapshot.Name, "same-name.") && strings.Contains(str(snapshot.Sandbox), "sandbox-") {
			t.Errorf("snapshot %s of %s outlived its sandbox", snapshot.Name, str(snapshot.Sandbox))
		}
	}
}

// TestSandboxIsDeletedWhenTheTestEnds checks the harness's clean-up: the sandbox and its private
// snapshots are gone once the test that made them has ended.
func TestSandboxIsDeletedWhenTheTestEnds(t *testing.T) {
	t.Parallel()
	var name, stored string
	t.Run("inner", func(t *testing.T) {
		h := mocktest.Sandbox(t)
		name = h.SandboxName()
		if len(name) > 64 || !strings.HasPrefix(name, "TestSandboxIsDeletedWhenTheTestEnds-inner-") {
			t.Errorf("sandbox name %q", name)
		}
		stored = h.Snapshot("kept", mockclient.SnapshotOptions{}).Name
		if stored != mockclient.PrivateSnapshotName(name, "kept") || !h.GetSnapshot("kept").Private {
			t.Errorf("snapshot stored as %q", stored)
		}
	})
	root := mocktest.Server(t)
	ctx := context.Background()
	if _, err := root.GetSandbox(ctx, name); mockclient.StatusOf(err) != 404 {
		t.Errorf("sandbox %s after its test: %v, want a 404", name, err)
	}
	if _, err := root.GetSnapshot(ctx, stored); mockclient.StatusOf(err) != 404 {
		t.Errorf("snapshot %s after its test: %v, want a 404", stored, err)
	}
}

// TestSandboxExpiresAfterItsCalls makes a sandbox that ends after three API calls: the third still sees
// the project the second made, the fourth meets a fresh sandbox of the name, made without the option.
func TestSandboxExpiresAfterItsCalls(t *testing.T) {
	t.Parallel()
	h := mocktest.Sandbox(t, mockclient.SandboxOptions{Expires: &mockclient.Expiry{Calls: 3}})
	ctx := context.Background()
	info, err := h.GetSandbox(ctx, h.SandboxName())
	if err != nil || info.Expires == nil || info.Expires.Calls != 3 || info.Expires.Seconds != 0 {
		t.Fatalf("sandbox record %+v (%v), want expires {calls: 3}", info, err)
	}
	projects := func() int {
		code, list := on(t, h, "reader", "GET", "/organization/"+orgID+"/project", nil)
		if code != 200 {
			t.Fatalf("list projects answered %d: %v", code, list)
		}
		return len(list["results"].([]any))
	}
	start := projects() // call 1
	if code, _ := on(t, h, "admin", "POST", "/organization/"+orgID+"/project", map[string]any{"name": "kept"}); code != 201 {
		t.Fatalf("create project answered %d", code) // call 2
	}
	if got := projects(); got != start+1 { // call 3: the last it serves
		t.Errorf("third call saw %d projects, want %d", got, start+1)
	}
	if got := projects(); got != start { // call 4: a fresh sandbox
		t.Errorf("fourth call saw %d projects, want the fixtures' %d", got, start)
	}
	if info, err := h.GetSandbox(ctx, h.SandboxName()); err != nil || info.Expires != nil {
		t.Errorf("the fresh sandbox %+v (%v), want one made without expires", info, err)
	}
}

// TestClockAdvanceThroughADeployment moves a manual clock second by second through a deploy of the
// application web: DEPLOYMENT_QUEUED -> BUILDING -> DEPLOYING -> DEPLOYED.
func TestClockAdvanceThroughADeployment(t *testing.T) {
	t.Parallel()
	h := manual(t)
	code, reply := on(t, h, "deployer", "POST", "/application/"+webID+"/deploy", nil)
	if code != 202 || reply["state"] != "DEPLOYMENT_QUEUED" {
		t.Fatalf("deploy answered %d: %v", code, reply)
	}
	states := []string{status(t, h, webID)}
	for second := 0; second < 30 && states[len(states)-1] != "DEPLOYED"; second++ {
		h.Advance(time.Second)
		if state := status(t, h, webID); state != states[len(states)-1] {
			states = append(states, state)
		}
	}
	if got := strings.Join(states, " -> "); got != "DEPLOYMENT_QUEUED -> BUILDING -> DEPLOYING -> DEPLOYED" {
		t.Fatalf("states seen: %s", got)
	}
	h.Advance(10 * time.Minute)
	if state := status(t, h, webID); state != "DEPLOYED" {
		t.Fatalf("after 10 more minutes: %s", state)
	}
	// the timeline says the same
	timeline := h.Deployments()
	found := false
	for _, group := range timeline.Results {
		for _, request := range group.Requests {
			if request.TargetID == webID && request.Status == "SUCCESS" && str(request.Outcome) == "DEPLOYED" {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("no successful deploy of web in the deployments timeline")
	}
	h.AssertCalled(t, mockclient.Filter{Operation: "deployApplication", Status: "202"}, mockclient.Times(1))
}

// receiver is a webhook receiver that keeps the event types it got.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	events []string
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var body struct {
			EventType string `json:"event_type"`
		}
		data, _ := io.ReadAll(req.Body)
		_ = json.Unmarshal(data, &body)
		r.mu.Lock()
		r.events = append(r.events, body.EventType)
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string{}, r.events...)
}

// TestScenarioFailsADeploy loads the scenario of scenarios/build-fails.yaml: the deploy is accepted
// (202), then ends in BUILD_ERROR; the webhook receiver gets DEPLOYMENT_FAILED and the journal shows
// the rule that fired.
func TestScenarioFailsADeploy(t *testing.T) {
	t.Parallel()
	h := manual(t)
	hooks := newReceiver(t)
	code, webhook := on(t, h, "admin", "POST", "/organization/"+orgID+"/webhook", map[string]any{
		"target_url": hooks.URL, "events": []string{"DEPLOYMENT_STARTED", "DEPLOYMENT_FAILED"}, "enabled": true})
	if code != 201 {
		t.Fatalf("create webhook answered %d: %v", code, webhook)
	}
	loaded := h.Scenario("build-fails", `
name: build-fails
description: Application deployments fail at the BUILD step with state BUILD_ERROR
rules:
  - name: build-breaks
    match:
      operation: deployApplication
    effect:
      deployment:
        fail_at: BUILD
        state: BUILD_ERROR
`)
	if len(loaded.Rules) != 1 || loaded.Rules[0].Name != "build-fails/build-breaks" {
		t.Fatalf("scenario loaded: %+v", loaded)
	}
	if code, reply := on(t, h, "deployer", "POST", "/application/"+webID+"/deploy", nil); code != 202 {
		t.Fatalf("deploy answered %d: %v", code, reply)
	}
	h.Advance(10 * time.Minute)
	if state := status(t, h, webID); state != "BUILD_ERROR" {
		t.Fatalf("state after the deploy: %s, want BUILD_ERROR", state)
	}
	var failed []mockclient.Delivery
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		failed = h.Deliveries(mockclient.DeliveryFilter{EventType: "DEPLOYMENT_FAILED", Status: "DELIVERED"})
		if len(failed) > 0 {
			break
		}
	}
	if len(failed) != 1 || failed[0].Payload["state"] != "BUILD_ERROR" || *failed[0].Attempts[0].StatusCode != 204 {
		t.Fatalf("DEPLOYMENT_FAILED deliveries: %+v", failed)
	}
	if got := strings.Join(hooks.got(), ","); !strings.Contains(got, "DEPLOYMENT_FAILED") {
		t.Errorf("the receiver got %q", got)
	}
	h.AssertCalled(t, mockclient.Filter{Scenario: "build-fails/build-breaks"}, mockclient.Times(1))
	h.AssertCalled(t, mockclient.Filter{Scenario: "build-fails"}, mockclient.Times(1))
	if fired := h.GetScenario("build-fails").Rules[0].Fired; fired != 1 {
		t.Errorf("the rule fired %d times", fired)
	}
	call := h.Calls(mockclient.Filter{Operation: "deployApplication"})
	if len(call) != 1 || str(call[0].ScenarioRule) != "build-fails/build-breaks" || len(call[0].WebhookDeliveries) == 0 {
		t.Errorf("journal of the deploy: %+v", call)
	}
}

// TestVerifyCountsCalls checks count, at_least and at_most, and that a failing AssertCalled fails with
// the server's message.
func TestVerifyCountsCalls(t *testing.T) {
	t.Parallel()
	h := manual(t)
	for i := 0; i < 3; i++ {
		status(t, h, webID)
	}
	reads := mockclient.Filter{Operation: "getApplicationStatus"}
	h.AssertCalled(t, reads, mockclient.Times(3))
	h.AssertCalled(t, reads, mockclient.AtLeast(2))
	h.AssertCalled(t, reads, mockclient.AtMost(3))
	h.AssertCalled(t, reads, mockclient.AtLeast(1), mockclient.AtMost(5))
	h.AssertCalled(t, reads) // at least one
	h.AssertNotCalled(t, mockclient.Filter{Method: "DELETE"})
	h.AssertCalled(t, mockclient.Filter{Method: "GET", Path: "/application/*/status", Status: "2xx"}, mockclient.Times(3))

	for _, count := range []mockclient.Count{mockclient.Times(2), mockclient.AtLeast(4), mockclient.AtMost(2)} {
		verdict := h.Verify(reads, count)
		if verdict.OK || verdict.Actual != 3 || verdict.Message == "" {
			t.Fatalf("verify %+v: %+v", count, verdict)
		}
		fake := &fakeT{}
		h.AssertCalled(fake, reads, count)
		// the message's "elsewhere" lines name the sandboxes of the tests running beside this one, which go on
		if len(fake.failures) != 1 || here(fake.failures[0]) != here(verdict.Message) {
			t.Fatalf("AssertCalled failed with %q, want the server's message %q", fake.failures, verdict.Message)
		}
	}
	fake := &fakeT{}
	h.AssertNotCalled(fake, reads)
	if len(fake.failures) != 1 || !strings.Contains(fake.failures[0], "found 3") {
		t.Fatalf("AssertNotCalled failed with %q", fake.failures)
	}
	// a mistyped operation is a 400 naming the filter: the assertion fails instead of passing
	_, err := h.Client.Verify(context.Background(), mockclient.Filter{Operation: "getAplicationStatus"}, mockclient.Times(0))
	if mockclient.StatusOf(err) != 400 || !strings.Contains(err.Error(), "did you mean getApplicationStatus") {
		t.Fatalf("a mistyped operation: %v", err)
	}
	fake = &fakeT{}
	h.AssertNotCalled(fake, mockclient.Filter{Operation: "getAplicationStatus"})
	if len(fake.failures) != 1 || !strings.Contains(fake.failures[0], "answered 400") {
		t.Fatalf("AssertNotCalled of a mistyped operation failed with %q", fake.failures)
	}
}

// here is a verify's message without the lines about other sandboxes (from the first "elsewhere:" on).
func here(message string) string {
	if cut := strings.Index(message, "\n  elsewhere:"); cut >= 0 {
		return message[:cut]
	}
	return message
}

// TestAssertionsOnASandboxNeverMade: an assertion on a sandbox that does not exist (its name mistyped) fails
// saying so, with the server's "did you mean", instead of passing (AssertNotCalled) or counting nothing.
func TestAssertionsOnASandboxNeverMade(t *testing.T) {
	t.Parallel()
	h := mocktest.Sandbox(t)
	typo := h.SandboxName() + "x"
	never := h.Client.Sandbox(typo) // a handle that makes nothing
	for name, assert := range map[string]func(mockclient.TB){
		"AssertNotCalled(method=DELETE)": func(t mockclient.TB) { never.AssertNotCalled(t, mockclient.Filter{Method: "DELETE"}) },
		"AssertCalled(operation=getOrganization)": func(t mockclient.TB) {
			never.AssertCalled(t, mockclient.Filter{Operation: "getOrganization"}, mockclient.Times(1))
		},
	} {
		fake := &fakeT{}
		assert(fake)
		want := "mockclient: " + name + " could not be checked: sandbox " + typo + " does not exist"
		if len(fake.failures) != 1 || !strings.HasPrefix(fake.failures[0], want) ||
			!strings.Contains(fake.failures[0], "did you mean "+h.SandboxName()) ||
			!strings.Contains(fake.failures[0], "answered 404") {
			t.Errorf("%s on a sandbox never made failed with %q, want %q... did you mean %s... answered 404",
				name, fake.failures, want, h.SandboxName())
		}
	}
	if _, err := never.Calls(context.Background(), mockclient.Filter{}); mockclient.StatusOf(err) != 404 ||
		!strings.Contains(err.Error(), "sandbox "+typo+" does not exist") {
		t.Errorf("Calls of a sandbox never made: %v", err)
	}
	if exists(t, typo) {
		t.Errorf("asking about sandbox %s made it", typo)
	}
}

// TestSnapshotAndRestore saves a world, changes it, and restores it; a shared snapshot starts another
// sandbox.
func TestSnapshotAndRestore(t *testing.T) {
	t.Parallel()
	h := manual(t)
	_, kept := on(t, h, "admin", "POST", "/organization/"+orgID+"/project", map[string]any{"name": "kept"})
	h.Advance(time.Minute)
	saved := h.Snapshot("before", mockclient.SnapshotOptions{})
	if !saved.Private || str(saved.Sandbox) != h.SandboxName() || saved.Name != mockclient.PrivateSnapshotName(h.SandboxName(), "before") {
		t.Fatalf("snapshot: %+v", saved)
	}
	_, dropped := on(t, h, "admin", "POST", "/organization/"+orgID+"/project", map[string]any{"name": "dropped"})
	h.Advance(time.Hour)
	restored := h.Restore("before")
	if restored.Restored != saved.Name || restored.Sandbox != h.SandboxName() || restored.Clock.OffsetSeconds != 60 {
		t.Fatalf("restore: %+v", restored)
	}
	if code, _ := on(t, h, "reader", "GET", "/project/"+kept["id"].(string), nil); code != 200 {
		t.Errorf("the project saved answered %d after the restore", code)
	}
	if code, _ := on(t, h, "reader", "GET", "/project/"+dropped["id"].(string), nil); code != 404 {
		t.Errorf("the project made after the snapshot answered %d after the restore", code)
	}
	if offset := h.Clock().OffsetSeconds; offset != 60 {
		t.Errorf("clock offset %v after the restore, want 60 (the saved moment)", offset)
	}
	// replacing is the default; NoReplace refuses with the server's 409
	h.Snapshot("before", mockclient.SnapshotOptions{})
	_, err := h.Client.Snapshot(context.Background(), "before", mockclient.SnapshotOptions{NoReplace: true})
	if mockclient.StatusOf(err) != 409 {
		t.Errorf("a second snapshot with NoReplace: %v, want a 409", err)
	}
	// a shared snapshot starts another sandbox (and is deleted by hand)
	shared := "go-shared-" + h.SandboxName()
	if len(shared) > 64 {
		shared = shared[:64]
	}
	h.Snapshot(shared, mockclient.SnapshotOptions{Shared: true})
	defer h.Client.DeleteSnapshot(context.Background(), shared)
	other := mocktest.Sandbox(t, mockclient.SandboxOptions{Snapshot: shared})
	if code, _ := on(t, other, "reader", "GET", "/project/"+kept["id"].(string), nil); code != 200 {
		t.Errorf("a sandbox made from the shared snapshot does not have the project (%d)", code)
	}
}

// TestPactExport records a flow and exports it as a pact (its interactions name the calls made), writes
// it to a file twice (merged), and exports a HAR log.
func TestPactExport(t *testing.T) {
	t.Parallel()
	h := manual(t)
	on(t, h, "deployer", "POST", "/application/"+webID+"/deploy", nil)
	status(t, h, webID)
	h.Advance(10 * time.Minute)
	status(t, h, webID)
	document := h.ExportPact(mockclient.ExportOptions{Consumer: "go-console"})
	if document.Consumer.Name != "go-console" || document.Provider.Name != "idp-platform" {
		t.Fatalf("pact parties: %v %v", document.Consumer, document.Provider)
	}
	if notes := document.Metadata.IDPMockserver; notes.Calls != 3 || notes.Source != "fixtures" || len(notes.Unverifiable) != 0 {
		t.Errorf("the pact's notes: %+v", notes)
	}
	var descriptions []string
	for _, interaction := range document.Interactions {
		descriptions = append(descriptions, interaction["description"].(string))
	}
	want := []string{
		"deployApplication POST /application/" + webID + "/deploy -> 202",
		"getApplicationStatus GET /application/" + webID + "/status -> 200, DEPLOYMENT_QUEUED",
		"getApplicationStatus GET /application/" + webID + "/status -> 200, DEPLOYED",
	}
	if strings.Join(descriptions, "\n") != strings.Join(want, "\n") {
		t.Fatalf("interactions:\n%s\nwant:\n%s", strings.Join(descriptions, "\n"), strings.Join(want, "\n"))
	}
	if text, _ := json.Marshal(document); strings.Contains(string(text), "mock-deploy-token") {
		t.Errorf("the pact holds a token")
	}
	v3 := h.ExportPact(mockclient.ExportOptions{Spec: 3, Filter: mockclient.Filter{Operation: "deployApplication"}})
	if len(v3.Interactions) != 1 || v3.Metadata.PactSpecification.Version != "3.0.0" {
		t.Errorf("a filtered V3 pact has %d interactions (%+v)", len(v3.Interactions), v3.Metadata)
	}

	path := filepath.Join(t.TempDir(), "go-console.json")
	h.WritePact(path, mockclient.PactOptions{ExportOptions: mockclient.ExportOptions{Consumer: "go-console"}})
	on(t, h, "reader", "GET", "/organization", nil)
	merged := h.WritePact(path, mockclient.PactOptions{ExportOptions: mockclient.ExportOptions{Consumer: "go-console"}})
	if got := len(merged.Interactions); got != 4 {
		t.Errorf("merged pact: %d interactions, want 4 (3 + getOrganization)", got)
	}
	if _, err := os.Stat(path + ".lock"); !os.IsNotExist(err) {
		t.Errorf("the lock file is left: %v", err)
	}
	har := h.ExportHAR(mockclient.Filter{})
	entries := har.Log.Entries
	if len(entries) != 4 || !strings.HasPrefix(entries[0]["request"].(map[string]any)["url"].(string), h.URL()) {
		t.Errorf("HAR: %d entries", len(entries))
	}
}

// TestTokensOfTheSandbox finds the default tokens by every name, and mints a token that works.
func TestTokensOfTheSandbox(t *testing.T) {
	t.Parallel()
	h := manual(t)
	names := map[string]string{}
	for _, name := range []string{"admin", "Admin", "reader", "read", "Read", "writer", "write", "deployer", "deploy", "DEPLOY"} {
		names[name] = h.Token(name)
	}
	if names["reader"] != "mock-read-token" || names["Read"] != "mock-read-token" || names["deploy"] != "mock-deploy-token" ||
		names["DEPLOY"] != names["deployer"] || names["admin"] != "mock-admin-token" || names["write"] != "mock-write-token" {
		t.Fatalf("tokens: %v", names)
	}
	if h.Headers("deployer").Get("Authorization") != "Token mock-deploy-token" {
		t.Fatalf("Headers(deployer): %v", h.Headers("deployer"))
	}
	var unknown *mockclient.UnknownTokenError
	if _, err := h.Client.Token("root"); !errors.As(err, &unknown) || unknown.Name != "root" ||
		!strings.Contains(err.Error(), "admin") {
		t.Fatalf("an unknown token name: %v", err)
	}
	minted := h.MintToken(mockclient.TokenOptions{Scopes: []string{"Read"}, TTL: time.Minute, Name: "short-lived"})
	if code, _ := api(t, h.URL(), minted.Token, "GET", "/organization", nil); code != 200 {
		t.Fatalf("the minted token: %d", code)
	}
	if code, _ := api(t, h.URL(), minted.Token, "POST", "/application/"+webID+"/deploy", nil); code != 403 {
		t.Fatalf("a Read token deploying: %d, want 403", code)
	}
	h.Advance(2 * time.Minute)
	if code, _ := api(t, h.URL(), minted.Token, "GET", "/organization", nil); code != 401 {
		t.Fatalf("the minted token after its lifetime: %d, want 401", code)
	}
	calls := h.Calls(mockclient.Filter{Operation: "getOrganization"})
	tokens := []string{}
	for _, call := range calls {
		tokens = append(tokens, str(call.Token))
	}
	sort.Strings(tokens)
	if len(calls) != 2 || tokens[1] != "short-lived" {
		t.Errorf("journal tokens: %v", tokens)
	}
}
