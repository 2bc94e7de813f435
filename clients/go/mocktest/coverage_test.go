package mocktest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"idp-mockserver/clients/go/mockclient"
	"idp-mockserver/clients/go/mocktest"
)

// goName is an x-client name in Go's casing: mint_token -> MintToken, inspector_url -> InspectorURL.
func goName(snake string) string {
	initialisms := map[string]string{"url": "URL", "id": "ID", "har": "HAR", "json": "JSON", "http": "HTTP", "api": "API"}
	var name strings.Builder
	for _, part := range strings.Split(snake, "_") {
		if upper, ok := initialisms[part]; ok {
			name.WriteString(upper)
		} else if part != "" {
			name.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return name.String()
}

// globalOnly are the x-client names a test's Handle need not have (they act on the whole mock; the
// Handle reaches them through its embedded Client): health, the sandboxes routes, the snapshot list,
// the documents. Every other operation acts on the request's sandbox and is a Handle method.
var globalOnly = map[string]bool{"health": true, "sandboxes": true, "delete_all_sandboxes": true,
	"get_sandbox": true, "create_sandbox": true, "delete_sandbox": true, "reset_sandbox": true,
	"snapshots": true, "control_document": true, "scenario_schema": true}

// operation is one operation of the control document.
type operation struct{ method, path, client string }

func controlOperations(t *testing.T, c *mockclient.Client) []operation {
	t.Helper()
	document, err := c.ControlDocument(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var operations []operation
	for path, item := range document.Paths {
		for method, raw := range item.(mockclient.Object) {
			op, ok := raw.(mockclient.Object)
			if !ok {
				continue
			}
			name, declared := op["x-client"]
			if !declared {
				t.Errorf("%s %s has no x-client", strings.ToUpper(method), path)
				continue
			}
			if name == false {
				continue
			}
			operations = append(operations, operation{strings.ToUpper(method), path, name.(string)})
		}
	}
	sort.Slice(operations, func(i, j int) bool { return operations[i].client < operations[j].client })
	if len(operations) < 30 {
		t.Fatalf("only %d operations with an x-client in the control document", len(operations))
	}
	return operations
}

// TestCoverage fails when an operation of the running mock's control document has no method of its
// x-client name on the Client, or, for a per-sandbox operation, on the test's Handle (a Handle method
// of its own: without the context, failing the test on an error).
func TestCoverage(t *testing.T) {
	t.Parallel()
	operations := controlOperations(t, mocktest.Server(t))
	clientType := reflect.TypeOf(&mockclient.Client{})
	handleType := reflect.TypeOf(&mocktest.Handle{})
	contextType := reflect.TypeOf((*context.Context)(nil)).Elem()
	for _, op := range operations {
		name := goName(op.client)
		method, ok := clientType.MethodByName(name)
		if !ok {
			t.Errorf("%s %s (x-client %s): no method mockclient.Client.%s", op.method, op.path, op.client, name)
			continue
		}
		if method.Type.NumIn() < 2 || method.Type.In(1) != contextType {
			t.Errorf("mockclient.Client.%s does not take a context first", name)
		}
		if globalOnly[op.client] {
			continue
		}
		method, ok = handleType.MethodByName(name)
		if !ok {
			t.Errorf("%s %s (x-client %s): no method mocktest.Handle.%s", op.method, op.path, op.client, name)
			continue
		}
		if method.Type.NumIn() >= 2 && method.Type.In(1) == contextType {
			t.Errorf("mocktest.Handle.%s is the Client's (with a context): the Handle needs its own", name)
		}
	}
	for _, helper := range []string{"AssertCalled", "AssertNotCalled", "ExportPact", "ExportHAR", "WritePact",
		"WriteHAR", "Headers", "Token", "InSandbox", "URL", "AssertRulesFired"} {
		if _, ok := clientType.MethodByName(helper); !ok {
			t.Errorf("no helper mockclient.Client.%s", helper)
		}
		if _, ok := handleType.MethodByName(helper); !ok {
			t.Errorf("no helper mocktest.Handle.%s", helper)
		}
	}
}

// TestEveryRouteThroughTheClient calls every method once against a live mock of its own (it deletes
// every sandbox), and fails when the control document has an x-client name this table does not call.
func TestEveryRouteThroughTheClient(t *testing.T) {
	t.Parallel()
	server := mocktest.StartLocal(t, mockclient.LocalOptions{})
	root := server.Client
	ctx := context.Background()
	sb, err := root.InSandbox(ctx, "every-route", mockclient.SandboxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deployer, _ := sb.Token("deployer")
	if code, reply := api(t, sb.URL(), deployer, "POST", "/application/"+webID+"/deploy", nil); code != 202 {
		t.Fatalf("deploy answered %d: %v", code, reply)
	}
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	admin, _ := sb.Token("admin")
	api(t, sb.URL(), admin, "POST", "/organization/"+orgID+"/webhook",
		map[string]any{"target_url": receiver.URL, "events": []string{"DEPLOYMENT_STARTED"}, "enabled": true})
	scenario := "name: every-route\nrules:\n  - name: slow\n    match: {operation: getApplicationStatus, nth: 99}\n    effect: {latency_ms: 1}\n"

	calls := map[string]func() error{
		"health": func() error {
			h, err := root.Health(ctx)
			if err == nil && (h.Status != "ok" || h.Version == "") {
				err = fmt.Errorf("health: %+v", h)
			}
			return err
		},
		"clock": func() error { _, err := sb.Clock(ctx); return err },
		"advance": func() error {
			c, err := sb.Advance(ctx, 2*time.Second)
			if err == nil && c.OffsetSeconds != 2 {
				err = fmt.Errorf("offset %v after advancing 2 s", c.OffsetSeconds)
			}
			return err
		},
		"state":        func() error { _, err := sb.State(ctx); return err },
		"export_state": func() error { y, err := sb.ExportState(ctx, false); return nonEmpty(y, err, "organizations") },
		"state_tree":   func() error { _, err := sb.StateTree(ctx); return err },
		"calls": func() error {
			calls, err := sb.Calls(ctx, mockclient.Filter{Operation: "deployApplication"})
			if err == nil && len(calls) != 1 {
				err = fmt.Errorf("%d deploy calls", len(calls))
			}
			return err
		},
		"call": func() error {
			calls, err := sb.Calls(ctx, mockclient.Filter{Limit: 1})
			if err != nil || len(calls) == 0 {
				return fmt.Errorf("no call to read: %v", err)
			}
			call, err := sb.Call(ctx, calls[0].ID)
			if err == nil && call.ID != calls[0].ID {
				err = fmt.Errorf("call %d", call.ID)
			}
			return err
		},
		"call_rows": func() error { _, err := sb.CallRows(ctx, mockclient.RowsFilter{Limit: 5}); return err },
		"verify": func() error {
			v, err := sb.Verify(ctx, mockclient.Filter{Operation: "deployApplication"}, mockclient.Times(1))
			if err == nil && !v.OK {
				err = errors.New(v.Message)
			}
			return err
		},
		"coverage": func() error { _, err := sb.Coverage(ctx); return err },
		"usage": func() error {
			report, err := sb.Usage(ctx, mockclient.UsageOptions{})
			if err == nil && report.Operations.Calls["deployApplication"] != 1 {
				err = fmt.Errorf("usage counted %v", report.Operations.Calls)
			}
			return err
		},
		"export": func() error { _, err := sb.Export(ctx, "har", mockclient.ExportOptions{}); return err },
		"provider_states": func() error {
			_, err := sb.ProviderStates(ctx, mockclient.ProviderState{State: "application {id} exists",
				Params: mockclient.Object{"id": webID}})
			return err
		},
		"deployments":       func() error { _, err := sb.Deployments(ctx); return err },
		"activate_scenario": func() error { _, err := sb.ActivateScenario(ctx, scenario); return err },
		"scenario": func() error {
			_, err := sb.Scenario(ctx, "every-route-2", mockclient.Object{"rules": []any{mockclient.Object{
				"name": "r", "match": mockclient.Object{"operation": "listProjects", "nth": 99},
				"effect": mockclient.Object{"latency_ms": 1}}}})
			return err
		},
		"scenarios": func() error {
			s, err := sb.Scenarios(ctx)
			if err == nil && len(s) != 2 {
				err = fmt.Errorf("%d scenarios active, want 2", len(s))
			}
			return err
		},
		"get_scenario":    func() error { _, err := sb.GetScenario(ctx, "every-route"); return err },
		"remove_scenario": func() error { return sb.RemoveScenario(ctx, "every-route-2") },
		"deliveries":      func() error { _, err := sb.Deliveries(ctx, mockclient.DeliveryFilter{}); return err },
		"mint_token": func() error {
			tok, err := sb.MintToken(ctx, mockclient.TokenOptions{Scopes: []string{"Read"}, TTL: time.Minute})
			if err == nil && tok.Token == "" {
				err = errors.New("no token value")
			}
			return err
		},
		"snapshot":        func() error { _, err := sb.Snapshot(ctx, "every", mockclient.SnapshotOptions{}); return err },
		"get_snapshot":    func() error { _, err := sb.GetSnapshot(ctx, "every"); return err },
		"restore":         func() error { _, err := sb.Restore(ctx, "every"); return err },
		"delete_snapshot": func() error { return sb.DeleteSnapshot(ctx, "every") },
		"snapshots":       func() error { _, err := root.Snapshots(ctx); return err },
		"clear_calls":     func() error { return sb.ClearCalls(ctx) },
		"reset":           func() error { _, err := sb.Reset(ctx, true); return err },
		"sandboxes": func() error {
			list, err := root.Sandboxes(ctx)
			if err == nil && len(list) < 2 {
				err = fmt.Errorf("%d sandboxes", len(list))
			}
			return err
		},
		"create_sandbox": func() error {
			_, err := root.CreateSandbox(ctx, "every-route-b", mockclient.SandboxOptions{})
			return err
		},
		"get_sandbox":    func() error { _, err := root.GetSandbox(ctx, "every-route-b"); return err },
		"reset_sandbox":  func() error { _, err := root.ResetSandbox(ctx, "every-route-b", false); return err },
		"delete_sandbox": func() error { return root.DeleteSandbox(ctx, "every-route-b", true) },
		"inspector_url": func() error {
			u, err := sb.InspectorURL(ctx)
			if err == nil && u != sb.URL()+"/_mock/ui" {
				err = fmt.Errorf("inspector at %s", u)
			}
			return err
		},
		"scenario_schema":  func() error { _, err := root.ScenarioSchema(ctx); return err },
		"control_document": func() error { _, err := root.ControlDocument(ctx); return err },
		"delete_all_sandboxes": func() error {
			if err := root.DeleteAllSandboxes(ctx); err != nil {
				return err
			}
			list, err := root.Sandboxes(ctx)
			if err == nil && len(list) != 1 {
				err = fmt.Errorf("%d sandboxes left, want default only", len(list))
			}
			return err
		},
	}
	// the order matters for some (a scenario before it is read, a snapshot before its restore ...)
	order := []string{"health", "clock", "advance", "state", "export_state", "state_tree", "calls", "call",
		"call_rows", "verify", "coverage", "usage", "export", "provider_states", "deployments", "activate_scenario",
		"scenario", "scenarios", "get_scenario", "remove_scenario", "deliveries", "mint_token", "snapshot",
		"get_snapshot", "restore", "delete_snapshot", "snapshots", "clear_calls", "reset", "sandboxes",
		"create_sandbox", "get_sandbox", "reset_sandbox", "delete_sandbox", "inspector_url", "scenario_schema",
		"control_document", "delete_all_sandboxes"}
	if len(order) != len(calls) {
		t.Fatalf("the order names %d calls, the table has %d", len(order), len(calls))
	}
	for _, op := range controlOperations(t, root) {
		if calls[op.client] == nil {
			t.Errorf("%s %s (x-client %s) is not called by this test", op.method, op.path, op.client)
		}
	}
	for _, name := range order {
		if err := calls[name](); err != nil {
			t.Errorf("%s (%s): %v", name, goName(name), err)
		}
	}
}

func nonEmpty(text string, err error, must string) error {
	if err == nil && !strings.Contains(text, must) {
		err = fmt.Errorf("no %q in %.80q", must, text)
	}
	return err
}
