package mocktest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"idp-mockserver/clients/go/mockclient"
)

// Handle is a test's sandbox: its API base URL (URL), its tokens (Token, Headers) and every
// per-sandbox control operation, as the methods of mockclient.Client without the context and the error:
// a call that fails fails the test (t.Fatalf) with the server's status and message. The embedded Client
// (h.Client) has the methods that return the error instead, and the global ones (Health, Sandboxes,
// CreateSandbox, Snapshots, ControlDocument ...).
//
// A Handle belongs to the test that made it: use it from that test's goroutine.
type Handle struct {
	*mockclient.Client
	t testing.TB
}

// Timeout bounds each control call of a Handle.
const Timeout = 60 * time.Second

func (h *Handle) context() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), Timeout)
}

func (h *Handle) check(err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatalf("%v", err)
	}
}

// Token is the value of a default token of the sandbox (admin, reader, writer, deployer; read, write,
// deploy; or a scope); an unknown name fails the test, listing the valid ones.
func (h *Handle) Token(name string) string {
	h.t.Helper()
	value, err := h.Client.Token(name)
	h.check(err)
	return value
}

// Headers is the Authorization header of a default token (see Token).
func (h *Handle) Headers(name string) http.Header {
	h.t.Helper()
	value, err := h.Client.Headers(name)
	h.check(err)
	return value
}

// Reset puts the sandbox back to the world it was made with (journal and deliveries cleared); with
// scenarios, its active scenarios are removed too.
func (h *Handle) Reset(scenarios bool) *mockclient.ResetResult {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	value, err := h.Client.Reset(ctx, scenarios)
	h.check(err)
	return value
}

// State is the sandbox's record counts, token names, active deployments and journal size.
func (h *Handle) State() *mockclient.State {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	value, err := h.Client.State(ctx)
	h.check(err)
	return value
}

// ExportState is the sandbox's state as a fixtures YAML document.
func (h *Handle) ExportState(includeSecrets bool) string {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	value, err := h.Client.ExportState(ctx, includeSecrets)
	h.check(err)
	return value
}

// StateTree is the sandbox's resource tree with counts.
func (h *Handle) StateTree() *mockclient.StateTree {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	value, err := h.Client.StateTree(ctx)
	h.check(err)
	return value
}

// Clock is the sandbox's clock.
func (h *Handle) Clock() *mockclient.Clock {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	value, err := h.Client.Clock(ctx)
	h.check(err)
	return value
}

// Advance moves the sandbox's clock forward; due deployment steps, events and webhook retries happen.
func (h *Handle) Advance(by time.Duration) *mockclient.Clock {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	value, err := h.Client.Advance(ctx, by)
	h.check(err)
	return value
}

// Calls are the sandbox's journal entries matching the filter, oldest first.
func (h *Handle) Calls(filter mockclient.Filter) []mockclient.Call {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	value, err := h.Client.Calls(ctx, filter)
	h.check(err)
	return value
}

// ClearCalls empties the sandbox's journal.
func (h *Handle) ClearCalls() {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	h.check(h.Client.ClearCalls(ctx))
}

// Verify is the server's verdict on the calls matching the filter (see AssertCalled to fail on it).
func (h *Handle) Verify(filter mockclient.Filter, counts ...mockclient.Count) *mockclient.VerifyResult {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	value, err := h.Client.Verify(ctx, filter, counts...)
	h.check(err)
	return value
}

// Coverage is, per documented operation, the sandbox's calls by status and whether one answered 2xx.
func (h *Handle) Coverage() *mockclient.Coverage {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	value, err := h.Client.Coverage(ctx)
	h.check(err)
	return value
}

// Usage is the sandbox's scenario rules that never fired and operations never called (options as
// mockclient.Client.Usage; none: the sandbox's own).
func (h *Handle) Usage(opts ...mockclient.UsageOptions) *mockclient.UsageReport {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	var options mockclient.UsageOptions
	if len(opts) > 0 {
		options = opts[0]
	}
	value, err := h.Client.Usage(ctx, options)
	h.check(err)
	return value
}

// Export is the sandbox's calls as a pact ("pact") or a HAR log ("har").
func (h *Handle) Export(format string, opts mockclient.ExportOptions) *mockclient.ExportDocument {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	value, err := h.Client.Export(ctx, format, opts)
	h.check(err)
	return value
}

// ExportPact is the sandbox's calls as a consumer contract.
func (h *Handle) ExportPact(opts mockclient.ExportOptions) *mockclient.ExportDocument {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	value, err := h.Client.ExportPact(ctx, opts)
	h.check(err)
	return value
}

// ExportHAR is the sandbox's calls as a HAR 1.2 log.
func (h *Handle) ExportHAR(filter mockclient.Filter) *mockclient.ExportDocument {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	value, err := h.Client.ExportHAR(ctx, filter)
	h.check(err)
	return value
}

// WritePact writes the sandbox's calls as a pact file, merged into the one at path (see
// mockclient.Client.WritePact).
func (h *Handle) WritePact(path string, opts mockclient.PactOptions) *mockclient.ExportDocument {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	value, err := h.Client.WritePact(ctx, path, opts)
	h.check(err)
	return value
}

// WriteHAR writes the sandbox's calls as a HAR 1.2 log at path.
func (h *Handle) WriteHAR(path string, filter mockclient.Filter) *mockclient.ExportDocument {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	value, err := h.Client.WriteHAR(ctx, path, filter)
	h.check(err)
	return value
}

// ProviderStates makes a Pact provider state true in the sandbox.
func (h *Handle) ProviderStates(state mockclient.ProviderState) *mockclient.ProviderStateResult {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	value, err := h.Client.ProviderStates(ctx, state)
	h.check(err)
	return value
}

// CallRows is a page of the sandbox's journal rows, newest first.
func (h *Handle) CallRows(filter mockclient.RowsFilter) *mockclient.CallRowPage {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	value, err := h.Client.CallRows(ctx, filter)
	h.check(err)
	return value
}

// Call is one journal entry in full.
func (h *Handle) Call(id int) *mockclient.Call {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	value, err := h.Client.Call(ctx, id)
	h.check(err)
	return value
}

// Deployments are the sandbox's deployment requests by environment on its clock.
func (h *Handle) Deployments() *mockclient.Deployments {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	value, err := h.Client.Deployments(ctx)
	h.check(err)
	return value
}

// ActivateScenario activates a scenario from a YAML document under the name it declares.
func (h *Handle) ActivateScenario(document string) *mockclient.Scenario {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	value, err := h.Client.ActivateScenario(ctx, document)
	h.check(err)
	return value
}

// Scenarios are the sandbox's active scenarios.
func (h *Handle) Scenarios() []mockclient.Scenario {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	value, err := h.Client.Scenarios(ctx)
	h.check(err)
	return value
}

// GetScenario is one active scenario.
func (h *Handle) GetScenario(name string) *mockclient.Scenario {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	value, err := h.Client.GetScenario(ctx, name)
	h.check(err)
	return value
}

// Scenario activates a scenario from YAML or JSON text, or a value sent as JSON (see
// mockclient.Client.Scenario).
func (h *Handle) Scenario(name string, document any) *mockclient.Scenario {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	value, err := h.Client.Scenario(ctx, name, document)
	h.check(err)
	return value
}

// RemoveScenario deactivates a scenario.
func (h *Handle) RemoveScenario(name string) {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	h.check(h.Client.RemoveScenario(ctx, name))
}

// Deliveries are the sandbox's webhook deliveries with their attempts.
func (h *Handle) Deliveries(filter mockclient.DeliveryFilter) []mockclient.Delivery {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	value, err := h.Client.Deliveries(ctx, filter)
	h.check(err)
	return value
}

// MintToken mints a token in the sandbox (its value: .Token).
func (h *Handle) MintToken(opts mockclient.TokenOptions) *mockclient.MintedToken {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	value, err := h.Client.MintToken(ctx, opts)
	h.check(err)
	return value
}

// Snapshot saves the sandbox's world under name (private to the sandbox unless opts.Shared).
func (h *Handle) Snapshot(name string, opts mockclient.SnapshotOptions) *mockclient.Snapshot {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	value, err := h.Client.Snapshot(ctx, name, opts)
	h.check(err)
	return value
}

// GetSnapshot describes a snapshot (a private one by the name it was given).
func (h *Handle) GetSnapshot(name string) *mockclient.Snapshot {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	value, err := h.Client.GetSnapshot(ctx, name)
	h.check(err)
	return value
}

// DeleteSnapshot deletes a snapshot (a private one by the name it was given).
func (h *Handle) DeleteSnapshot(name string) {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	h.check(h.Client.DeleteSnapshot(ctx, name))
}

// Restore replaces the sandbox's world with the snapshot.
func (h *Handle) Restore(name string) *mockclient.RestoreResult {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	value, err := h.Client.Restore(ctx, name)
	h.check(err)
	return value
}

// InspectorURL is the address of the inspector page of the sandbox.
func (h *Handle) InspectorURL() string {
	h.t.Helper()
	ctx, cancel := h.context()
	defer cancel()
	value, err := h.Client.InspectorURL(ctx)
	h.check(err)
	return value
}
