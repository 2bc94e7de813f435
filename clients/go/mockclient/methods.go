package mockclient

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// One method per operation of the control API, named after its x-client name, in the document's order.
// Per-sandbox operations act on the handle's sandbox; Health, the sandboxes routes, Snapshots,
// ScenarioSchema and ControlDocument act on the whole mock.

// Health is GET /_mock/health: the server is up, its version and clock mode.
func (c *Client) Health(ctx context.Context) (*Health, error) {
	var out Health
	return &out, c.do(ctx, request{method: "GET", path: "/health", global: true}, &out)
}

// Reset is POST /_mock/reset: the sandbox back to the world it was made with, journal and deliveries
// cleared; with scenarios, its active scenarios removed too. The clock stays where it is.
func (c *Client) Reset(ctx context.Context, scenarios bool) (*ResetResult, error) {
	var out ResetResult
	return &out, c.do(ctx, request{method: "POST", path: "/reset", body: Object{"scenarios": scenarios}}, &out)
}

// State is GET /_mock/state: record counts per table, token names, active deployments, journal size.
func (c *Client) State(ctx context.Context) (*State, error) {
	var out State
	return &out, c.do(ctx, request{method: "GET", path: "/state"}, &out)
}

// ExportState is GET /_mock/state/export: the state as a fixtures YAML document. With includeSecrets
// the secret values are written in clear (never commit such an export).
func (c *Client) ExportState(ctx context.Context, includeSecrets bool) (string, error) {
	query := url.Values{}
	if includeSecrets {
		query.Set("secrets", "include")
	}
	var out string
	return out, c.do(ctx, request{method: "GET", path: "/state/export", query: query, accept: "application/yaml"}, &out)
}

// StateTree is GET /_mock/state/tree: organization -> projects -> environments -> services, with counts.
func (c *Client) StateTree(ctx context.Context) (*StateTree, error) {
	var out StateTree
	return &out, c.do(ctx, request{method: "GET", path: "/state/tree"}, &out)
}

// Clock is GET /_mock/clock.
func (c *Client) Clock(ctx context.Context) (*Clock, error) {
	var out Clock
	return &out, c.do(ctx, request{method: "GET", path: "/clock"}, &out)
}

// Advance is POST /_mock/clock/advance: moves the sandbox's clock forward; due deployment steps, events
// and webhook retries happen.
func (c *Client) Advance(ctx context.Context, by time.Duration) (*Clock, error) {
	var out Clock
	return &out, c.do(ctx, request{method: "POST", path: "/clock/advance",
		body: Object{"seconds": by.Seconds()}}, &out)
}

// Calls is GET /_mock/calls: the journal entries matching every field of the filter, oldest first.
// Without a Limit it reads every page the server gives (a page holds at most 500 calls).
func (c *Client) Calls(ctx context.Context, filter Filter) ([]Call, error) {
	raw, err := c.rawCalls(ctx, filter)
	found := make([]Call, 0, len(raw))
	for _, entry := range raw {
		var call Call
		if err := json.Unmarshal(entry, &call); err != nil {
			return found, fmt.Errorf("mockclient: Calls: a call of the journal is not the JSON expected: %v", err)
		}
		found = append(found, call)
	}
	return found, err
}

// rawCalls are the journal entries matching the filter as the server sent them, every page (next_after)
// unless the filter has a Limit; on an error, those read before it.
func (c *Client) rawCalls(ctx context.Context, filter Filter) ([]json.RawMessage, error) {
	query, err := filter.query()
	if err != nil {
		return nil, err
	}
	var found []json.RawMessage
	for {
		var page struct {
			Results   []json.RawMessage `json:"results"`
			More      bool              `json:"more"`
			NextAfter int               `json:"next_after"`
		}
		if err := c.do(ctx, request{method: "GET", path: "/calls", query: query}, &page); err != nil {
			return found, err
		}
		found = append(found, page.Results...)
		if filter.Limit > 0 || !page.More {
			return found, nil
		}
		query.Set("after", strconv.Itoa(page.NextAfter))
	}
}

// ClearCalls is DELETE /_mock/calls: empties the journal.
func (c *Client) ClearCalls(ctx context.Context) error {
	return c.do(ctx, request{method: "DELETE", path: "/calls"}, nil)
}

// Verify is POST /_mock/calls/verify: did calls matching the filter happen as many times as counts say
// (Times, AtLeast, AtMost; none: at least once)? A verdict that is not ok is no error: see AssertCalled.
func (c *Client) Verify(ctx context.Context, filter Filter, counts ...Count) (*VerifyResult, error) {
	body := Object{}
	for key, value := range filter.fields() {
		body[key] = value
	}
	for _, count := range counts {
		if count.key == "" {
			return nil, errors.New("mockclient: Verify: use Times(n), AtLeast(n) or AtMost(n)")
		}
		body[count.key] = count.n
	}
	var out VerifyResult
	return &out, c.do(ctx, request{method: "POST", path: "/calls/verify", body: body}, &out)
}

// Coverage is GET /_mock/calls/coverage: per documented operation, the journal's calls by status and
// whether one answered 2xx.
func (c *Client) Coverage(ctx context.Context) (*Coverage, error) {
	var out Coverage
	return &out, c.do(ctx, request{method: "GET", path: "/calls/coverage"}, &out)
}

// Usage is GET /_mock/usage: the scenario rules that never fired and the operations never called, of the
// client's sandbox, or with Scope "mock" of every sandbox whose name starts with Prefix (those gone included).
func (c *Client) Usage(ctx context.Context, opts UsageOptions) (*UsageReport, error) {
	query := url.Values{}
	if opts.Scope != "" {
		query.Set("scope", opts.Scope)
	}
	if opts.Scope == "mock" {
		query.Set("prefix", opts.Prefix)
	}
	var out UsageReport
	return &out, c.do(ctx, request{method: "GET", path: "/usage", query: query}, &out)
}

// Export is GET /_mock/calls/export: the sandbox's calls as a pact (format "pact") or a HAR 1.2 log
// (format "har"). ExportPact and ExportHAR say it shorter.
func (c *Client) Export(ctx context.Context, format string, opts ExportOptions) (*ExportDocument, error) {
	query, err := opts.query(format)
	if err != nil {
		return nil, err
	}
	var out ExportDocument
	return &out, c.do(ctx, request{method: "GET", path: "/calls/export", query: query}, &out)
}

// ProviderStates is POST /_mock/provider-states, the Pact verifier's state-change URL: makes a provider
// state true in the sandbox.
func (c *Client) ProviderStates(ctx context.Context, state ProviderState) (*ProviderStateResult, error) {
	var out ProviderStateResult
	return &out, c.do(ctx, request{method: "POST", path: "/provider-states", body: state}, &out)
}

// CallRows is GET /_mock/calls/rows: journal rows without headers or bodies, newest first, paged.
func (c *Client) CallRows(ctx context.Context, filter RowsFilter) (*CallRowPage, error) {
	query := url.Values{}
	for key, value := range map[string]string{"method": filter.Method, "status": filter.Status,
		"operation": filter.Operation, "path": filter.Path, "text": filter.Text} {
		if value != "" {
			query.Set(key, value)
		}
	}
	for key, value := range map[string]int{"before": filter.Before, "since": filter.Since, "limit": filter.Limit} {
		if value != 0 {
			query.Set(key, strconv.Itoa(value))
		}
	}
	if filter.Drift {
		query.Set("drift", "true")
	}
	var out CallRowPage
	return &out, c.do(ctx, request{method: "GET", path: "/calls/rows", query: query}, &out)
}

// Call is GET /_mock/calls/{id}: one journal entry in full.
func (c *Client) Call(ctx context.Context, id int) (*Call, error) {
	var out Call
	return &out, c.do(ctx, request{method: "GET", path: "/calls/" + strconv.Itoa(id)}, &out)
}

// Deployments is GET /_mock/deployments: every deployment request by environment on the sandbox's
// clock (state intervals, steps, outcome, queue).
func (c *Client) Deployments(ctx context.Context) (*Deployments, error) {
	var out Deployments
	return &out, c.do(ctx, request{method: "GET", path: "/deployments"}, &out)
}

// ActivateScenario is POST /_mock/scenarios: activates (or replaces) a scenario from a YAML (or JSON)
// document, under the name it declares.
func (c *Client) ActivateScenario(ctx context.Context, document string) (*Scenario, error) {
	var out Scenario
	return &out, c.do(ctx, request{method: "POST", path: "/scenarios", body: []byte(document),
		contentType: documentType([]byte(document))}, &out)
}

// Scenarios is GET /_mock/scenarios: the active scenarios with their rules and counters.
func (c *Client) Scenarios(ctx context.Context) ([]Scenario, error) {
	var out struct {
		Results []Scenario `json:"results"`
	}
	return out.Results, c.do(ctx, request{method: "GET", path: "/scenarios"}, &out)
}

// GetScenario is GET /_mock/scenarios/{name}: one active scenario.
func (c *Client) GetScenario(ctx context.Context, name string) (*Scenario, error) {
	var out Scenario
	return &out, c.do(ctx, request{method: "GET", path: "/scenarios/" + url.PathEscape(name)}, &out)
}

// Scenario is PUT /_mock/scenarios/{name}: activates (or replaces) a scenario. The document is YAML or
// JSON text (a string or []byte, sent as it is: its name must be name), or any other value, sent as
// JSON with "name" set to name when it is an object without one.
func (c *Client) Scenario(ctx context.Context, name string, document any) (*Scenario, error) {
	var body []byte
	switch value := document.(type) {
	case string:
		body = []byte(value)
	case []byte:
		body = value
	default:
		encoded, err := json.Marshal(value)
		if err != nil {
			return nil, fmt.Errorf("mockclient: scenario %s: %v", name, err)
		}
		var object Object
		if json.Unmarshal(encoded, &object) == nil && object != nil {
			if _, named := object["name"]; !named {
				object["name"] = name
				encoded, _ = json.Marshal(object)
			}
		}
		body = encoded
	}
	var out Scenario
	return &out, c.do(ctx, request{method: "PUT", path: "/scenarios/" + url.PathEscape(name), body: body,
		contentType: documentType(body)}, &out)
}

// RemoveScenario is DELETE /_mock/scenarios/{name}: deactivates a scenario.
func (c *Client) RemoveScenario(ctx context.Context, name string) error {
	return c.do(ctx, request{method: "DELETE", path: "/scenarios/" + url.PathEscape(name)}, nil)
}

func documentType(document []byte) string {
	trimmed := bytes.TrimSpace(document)
	if len(trimmed) > 0 && trimmed[0] == '{' && json.Valid(trimmed) {
		return "application/json"
	}
	return "application/yaml"
}

// Deliveries is GET /_mock/webhooks/deliveries: webhook deliveries with every attempt.
func (c *Client) Deliveries(ctx context.Context, filter DeliveryFilter) ([]Delivery, error) {
	query := url.Values{}
	for key, value := range map[string]string{"webhook_id": filter.WebhookID, "event_type": filter.EventType,
		"status": filter.Status} {
		if value != "" {
			query.Set(key, value)
		}
	}
	var out struct {
		Results []Delivery `json:"results"`
	}
	return out.Results, c.do(ctx, request{method: "GET", path: "/webhooks/deliveries", query: query}, &out)
}

// MintToken is POST /_mock/tokens: mints an API token (or an HS256 JWT) in the sandbox. Its value is
// the reply's Token.
func (c *Client) MintToken(ctx context.Context, opts TokenOptions) (*MintedToken, error) {
	scopes, kind := opts.Scopes, opts.Kind
	if len(scopes) == 0 {
		scopes = []string{"Admin"}
	}
	if kind == "" {
		kind = "token"
	}
	body := Object{"scopes": scopes, "kind": kind}
	if opts.TTL > 0 {
		body["ttl_seconds"] = opts.TTL.Seconds()
	}
	if opts.Organization != "" {
		body["organization"] = opts.Organization
	}
	if opts.Name != "" {
		body["name"] = opts.Name
	}
	var out MintedToken
	return &out, c.do(ctx, request{method: "POST", path: "/tokens", body: body}, &out)
}

// Sandboxes is GET /_mock/sandboxes: every live sandbox of the mock.
func (c *Client) Sandboxes(ctx context.Context) ([]Sandbox, error) {
	var out struct {
		Results []Sandbox `json:"results"`
	}
	return out.Results, c.do(ctx, request{method: "GET", path: "/sandboxes", global: true}, &out)
}

// DeleteAllSandboxes is DELETE /_mock/sandboxes: every sandbox but default deleted, default reset.
func (c *Client) DeleteAllSandboxes(ctx context.Context) error {
	return c.do(ctx, request{method: "DELETE", path: "/sandboxes", global: true}, nil)
}

// GetSandbox is GET /_mock/sandboxes/{name}.
func (c *Client) GetSandbox(ctx context.Context, name string) (*Sandbox, error) {
	var out Sandbox
	return &out, c.do(ctx, request{method: "GET", path: "/sandboxes/" + url.PathEscape(name), global: true}, &out)
}

// CreateSandbox is PUT /_mock/sandboxes/{name}: creates the sandbox, or replaces it with a fresh one,
// with the options. InSandbox does the same and returns a handle on it.
func (c *Client) CreateSandbox(ctx context.Context, name string, opts SandboxOptions) (*Sandbox, error) {
	var out Sandbox
	return &out, c.do(ctx, request{method: "PUT", path: "/sandboxes/" + url.PathEscape(name), global: true,
		body: opts}, &out)
}

// DeleteSandbox is DELETE /_mock/sandboxes/{name}: deletes the sandbox and its private snapshots; with
// deleteSnapshots, every snapshot saved from it, shared ones too. An empty name is the handle's own sandbox
// (with the private snapshots saved through the handle), as in the Python and Node clients.
func (c *Client) DeleteSandbox(ctx context.Context, name string, deleteSnapshots bool) error {
	if name == "" {
		if c.sandbox == "" {
			return errors.New("mockclient: DeleteSandbox: name the sandbox (this handle is on the whole mock)")
		}
		name = c.sandbox
	}
	if name == c.sandbox {
		if err := c.deletePrivateSnapshots(ctx); err != nil {
			return err
		}
	}
	query := url.Values{}
	if deleteSnapshots {
		query.Set("snapshots", "delete")
	}
	return c.do(ctx, request{method: "DELETE", path: "/sandboxes/" + url.PathEscape(name), global: true,
		query: query}, nil)
}

// ResetSandbox is POST /_mock/sandboxes/{name}/reset, the same as Reset on a handle of that sandbox.
func (c *Client) ResetSandbox(ctx context.Context, name string, scenarios bool) (*Sandbox, error) {
	var out Sandbox
	return &out, c.do(ctx, request{method: "POST", path: "/sandboxes/" + url.PathEscape(name) + "/reset",
		global: true, body: Object{"scenarios": scenarios}}, &out)
}

// Snapshots is GET /_mock/snapshots: every snapshot of the mock (shared by all sandboxes), the built-in
// fixtures first.
func (c *Client) Snapshots(ctx context.Context) ([]Snapshot, error) {
	var out struct {
		Results []Snapshot `json:"results"`
	}
	return out.Results, c.do(ctx, request{method: "GET", path: "/snapshots", global: true}, &out)
}

// Snapshot is POST /_mock/snapshots: saves the sandbox's whole world under name, to Restore(name) later.
// On a sandbox handle the snapshot is private to the sandbox unless opts.Shared (see SnapshotOptions).
// It replaces a snapshot of that name unless opts.NoReplace.
func (c *Client) Snapshot(ctx context.Context, name string, opts SnapshotOptions) (*Snapshot, error) {
	stored := name
	if c.sandbox != "" && !opts.Shared {
		stored = PrivateSnapshotName(c.sandbox, name)
	}
	var out Snapshot
	err := c.do(ctx, request{method: "POST", path: "/snapshots", body: Object{"name": stored,
		"journal": opts.Journal, "replace": !opts.NoReplace, "private": stored != name}}, &out)
	if err == nil && stored != name {
		c.mu.Lock()
		if c.private == nil {
			c.private = map[string]string{}
		}
		c.private[name] = stored
		c.mu.Unlock()
	}
	return &out, err
}

// PrivateSnapshotName is the name a sandbox's private snapshot is stored under, the same in every client (the
// control document's x-constants.private_snapshot): the name given (PrivateSnapshotHead characters at most), a
// dot, and PrivateSnapshotDigestChars hex digits of the sha1 of PrivateSnapshotKey ("sandbox|name").
func PrivateSnapshotName(sandbox, name string) string {
	key := strings.NewReplacer("{sandbox}", sandbox, "{name}", name).Replace(PrivateSnapshotKey)
	digest := sha1.Sum([]byte(key))
	head := name
	if len(head) > PrivateSnapshotHead {
		head = head[:PrivateSnapshotHead]
	}
	return head + "." + hex.EncodeToString(digest[:])[:PrivateSnapshotDigestChars]
}

// stored is the name a snapshot saved through this handle is stored under.
func (c *Client) stored(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if stored, ok := c.private[name]; ok {
		return stored
	}
	return name
}

// GetSnapshot is GET /_mock/snapshots/{name} (a private snapshot of the handle by the name it was given).
func (c *Client) GetSnapshot(ctx context.Context, name string) (*Snapshot, error) {
	var out Snapshot
	return &out, c.do(ctx, request{method: "GET", path: "/snapshots/" + url.PathEscape(c.stored(name))}, &out)
}

// DeleteSnapshot is DELETE /_mock/snapshots/{name} (a private snapshot of the handle by the name it was
// given).
func (c *Client) DeleteSnapshot(ctx context.Context, name string) error {
	err := c.do(ctx, request{method: "DELETE", path: "/snapshots/" + url.PathEscape(c.stored(name))}, nil)
	if err == nil {
		c.mu.Lock()
		delete(c.private, name)
		c.mu.Unlock()
	}
	return err
}

// Restore is POST /_mock/snapshots/{name}/restore: the sandbox's world replaced with the snapshot (a
// private one of the handle by the name it was given); its clock goes on from the saved moment.
func (c *Client) Restore(ctx context.Context, name string) (*RestoreResult, error) {
	var out RestoreResult
	return &out, c.do(ctx, request{method: "POST", path: "/snapshots/" + url.PathEscape(c.stored(name)) + "/restore"}, &out)
}

// InspectorURL is the address of the inspector page of the handle's sandbox (GET /_mock/ui), after
// checking that it answers.
func (c *Client) InspectorURL(ctx context.Context) (string, error) {
	var page []byte
	if err := c.do(ctx, request{method: "GET", path: "/ui", accept: "text/html"}, &page); err != nil {
		return "", err
	}
	return c.base + "/_mock/ui", nil
}

// ScenarioSchema is GET /_mock/schemas/scenario.json: the JSON Schema of scenario files.
func (c *Client) ScenarioSchema(ctx context.Context) (*ScenarioSchema, error) {
	var out ScenarioSchema
	return &out, c.do(ctx, request{method: "GET", path: "/schemas/scenario.json", global: true}, &out)
}

// ControlDocument is GET /_mock/openapi.json: the control API's OpenAPI document.
func (c *Client) ControlDocument(ctx context.Context) (*ControlDocument, error) {
	var out ControlDocument
	return &out, c.do(ctx, request{method: "GET", path: "/openapi.json", global: true}, &out)
}
