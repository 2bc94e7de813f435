package mocktest_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"idp-mockserver/clients/go/mockclient"
	"idp-mockserver/clients/go/mocktest"
)

// strict decodes a control reply into its generated type, refusing a field the type does not have: a field the
// server sends that the control document (and so types_gen.go) lacks fails here.
func strict[T any](t *testing.T, method, url, body string) T {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token := os.Getenv("MOCKSERVER_CONTROL_TOKEN"); token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := plain.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s answered %d: %s", method, url, resp.StatusCode, data)
	}
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.DisallowUnknownFields()
	var out T
	if err := decoder.Decode(&out); err != nil {
		t.Fatalf("%s %s: the reply does not decode into %T: %v\n%s", method, url, out, err, data)
	}
	return out
}

// TestEveryReplyDecodesIntoItsGeneratedType calls the routes of a sandbox of the shared mock the way the client
// does and decodes each raw reply strictly into the type its method returns.
func TestEveryReplyDecodesIntoItsGeneratedType(t *testing.T) {
	t.Parallel()
	h := mocktest.Sandbox(t, mockclient.SandboxOptions{Clock: "manual", JournalBodyLimit: 1024,
		Expires: &mockclient.Expiry{Seconds: 86400}})
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	on(t, h, "admin", "POST", "/organization/"+orgID+"/webhook",
		map[string]any{"target_url": receiver.URL, "events": []string{"DEPLOYMENT_STARTED"}, "enabled": true})
	on(t, h, "admin", "POST", "/organization/"+orgID+"/project", map[string]any{"name": strings.Repeat("x", 2000)})
	on(t, h, "deployer", "POST", "/application/"+webID+"/deploy", nil)
	h.Scenario("typed", "name: typed\nrules:\n  - name: down\n    match: {operation: getApplicationStatus}\n"+
		"    times: 1\n    window: {after: 0, seconds: 60}\n    effect: {status: 503}\n")
	on(t, h, "reader", "GET", "/application/"+webID+"/status", nil)
	mock := h.URL() + "/_mock"
	root := h.Root() + "/_mock"
	strict[mockclient.Clock](t, "POST", mock+"/clock/advance", `{"seconds": 2}`)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if list := strict[mockclient.DeliveryList](t, "GET", mock+"/webhooks/deliveries", ""); len(list.Results) > 0 &&
			len(list.Results[0].Attempts) > 0 {
			break
		}
	}

	health := strict[mockclient.Health](t, "GET", root+"/health", "")
	state := strict[mockclient.State](t, "GET", mock+"/state", "")
	strict[mockclient.StateTree](t, "GET", mock+"/state/tree", "")
	page := strict[mockclient.CallPage](t, "GET", mock+"/calls", "")
	call := strict[mockclient.Call](t, "GET", mock+"/calls/"+strconv.Itoa(page.Results[0].ID), "")
	strict[mockclient.CallRowPage](t, "GET", mock+"/calls/rows", "")
	verdict := strict[mockclient.VerifyResult](t, "POST", mock+"/calls/verify", `{"operation": "deployApplication", "count": 1}`)
	strict[mockclient.Coverage](t, "GET", mock+"/calls/coverage", "")
	usage := strict[mockclient.UsageReport](t, "GET", mock+"/usage", "")
	strict[mockclient.Deployments](t, "GET", mock+"/deployments", "")
	strict[mockclient.ScenarioList](t, "GET", mock+"/scenarios", "")
	scenario := strict[mockclient.Scenario](t, "GET", mock+"/scenarios/typed", "")
	strict[mockclient.MintedToken](t, "POST", mock+"/tokens", `{"scopes": ["Read"], "kind": "jwt"}`)
	strict[mockclient.ExportDocument](t, "GET", mock+"/calls/export?format=pact", "")
	strict[mockclient.ExportDocument](t, "GET", mock+"/calls/export?format=har", "")
	strict[mockclient.ProviderStateResult](t, "POST", mock+"/provider-states",
		`{"state": "application {id} exists", "params": {"id": "`+webID+`"}}`)
	snapshot := strict[mockclient.Snapshot](t, "POST", mock+"/snapshots",
		`{"name": "`+mockclient.PrivateSnapshotName(h.SandboxName(), "typed")+`", "private": true, "replace": true}`)
	strict[mockclient.SnapshotList](t, "GET", root+"/snapshots", "")
	strict[mockclient.RestoreResult](t, "POST", mock+"/snapshots/"+snapshot.Name+"/restore", "")
	strict[mockclient.Sandbox](t, "GET", root+"/sandboxes/"+h.SandboxName(), "")
	strict[mockclient.SandboxList](t, "GET", root+"/sandboxes", "")
	strict[mockclient.ScenarioSchema](t, "GET", root+"/schemas/scenario.json", "")
	document := strict[mockclient.ControlDocument](t, "GET", root+"/openapi.json", "")
	strict[mockclient.ResetResult](t, "POST", mock+"/reset", `{}`)

	// what the fields hold, typed: a misspelled one would not compile
	if health.Version != mockclient.Version || state.Sandbox != h.SandboxName() || !verdict.OK {
		t.Errorf("health %+v, state %+v, verdict %+v", health, state, verdict)
	}
	if call.Token == nil || call.Status == 0 || call.RequestID == "" || scenario.Rules[0].Window == nil {
		t.Errorf("call %+v, scenario %+v", call, scenario)
	}
	if usage.Rules.Total != 1 || document.XConstants == nil || document.XConstants.Version != mockclient.Version {
		t.Errorf("usage %+v, constants %+v", usage, document.XConstants)
	}
	truncated := false
	for _, item := range page.Results {
		truncated = truncated || item.Truncated["body"].Bytes > 1024
	}
	if !truncated {
		t.Errorf("no call of the journal says its body was kept cut")
	}
}
