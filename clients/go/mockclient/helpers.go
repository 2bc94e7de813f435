package mockclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// TB is the part of testing.TB the assertions use (testing.T, testing.B and testing.F have it).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// AssertCalled fails the test (t.Fatalf) with the server's message unless calls matching the filter
// happened as many times as counts say (Times, AtLeast, AtMost; none: at least once). When the mock cannot
// answer (a sandbox that was never made or is gone: 404, a mistyped filter: 400), the failure says the
// assertion could not be checked, with the server's message.
func (c *Client) AssertCalled(t TB, filter Filter, counts ...Count) *VerifyResult {
	t.Helper()
	return c.assert(t, "AssertCalled", filter, counts)
}

// AssertNotCalled fails the test (t.Fatalf) with the server's message when a call matches the filter (and,
// as AssertCalled, when the mock cannot answer: it never passes for a sandbox that does not exist).
func (c *Client) AssertNotCalled(t TB, filter Filter) *VerifyResult {
	t.Helper()
	return c.assert(t, "AssertNotCalled", filter, []Count{Times(0)})
}

func (c *Client) assert(t TB, name string, filter Filter, counts []Count) *VerifyResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	result, err := c.Verify(ctx, filter, counts...)
	var answered *MockServerError // the server's message first: it says what is wrong (no such sandbox ...)
	if errors.As(err, &answered) {
		t.Fatalf("mockclient: %s(%s) could not be checked: %s (control API %s %s answered %d)", name,
			describeFilter(filter), answered.Message, answered.Method, answered.Path, answered.Status)
		return nil
	}
	if err != nil {
		t.Fatalf("mockclient: %s(%s) could not be checked: %v", name, describeFilter(filter), err)
		return nil
	}
	if !result.OK {
		t.Fatalf("%s", result.Message)
	}
	return result
}

// describeFilter is the filter's fields as key=value, sorted by key (headers and body as JSON).
func describeFilter(filter Filter) string {
	fields := filter.fields()
	keys := make([]string, 0, len(fields))
	for key := range fields {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, key := range keys {
		value, ok := fields[key].(string)
		if !ok {
			encoded, _ := json.Marshal(fields[key])
			value = string(encoded)
		}
		parts[i] = key + "=" + value
	}
	return strings.Join(parts, ", ")
}

// ExportPact is Export with format "pact": the sandbox's calls as a consumer contract.
func (c *Client) ExportPact(ctx context.Context, opts ExportOptions) (*ExportDocument, error) {
	return c.Export(ctx, "pact", opts)
}

// ExportHAR is Export with format "har": the sandbox's calls as a HAR 1.2 log.
func (c *Client) ExportHAR(ctx context.Context, filter Filter) (*ExportDocument, error) {
	return c.Export(ctx, "har", ExportOptions{Filter: filter})
}

// WritePact writes the sandbox's calls as a pact file at path, merged (unless opts.NoMerge) into the pact
// already there (same consumer and provider: its interactions kept, the new ones added), as the Python
// plugin does. Writers of one file take turns under the lock file path.lock, deleted when done. It
// returns the document written.
func (c *Client) WritePact(ctx context.Context, path string, opts PactOptions) (*ExportDocument, error) {
	document, err := c.ExportPact(ctx, opts.ExportOptions)
	if err != nil {
		return nil, err
	}
	merge := MergePacts
	if opts.NoMerge {
		merge = nil
	}
	return writeDocument(path, document, merge)
}

// WriteHAR writes the sandbox's calls as a HAR 1.2 log at path.
func (c *Client) WriteHAR(ctx context.Context, path string, filter Filter) (*ExportDocument, error) {
	document, err := c.ExportHAR(ctx, filter)
	if err != nil {
		return nil, err
	}
	return writeDocument(path, document, nil)
}

// WriteJournal writes the sandbox's calls matching the filter (every page of GET /_mock/calls) at path, as a
// JSON array of the entries the server sent, oldest first; the folders are made. It returns the calls.
func (c *Client) WriteJournal(ctx context.Context, path string, filter Filter) ([]Call, error) {
	raw, err := c.rawCalls(ctx, filter)
	if err != nil {
		return nil, err
	}
	calls := make([]Call, len(raw))
	for i, entry := range raw {
		if err := json.Unmarshal(entry, &calls[i]); err != nil {
			return nil, fmt.Errorf("mockclient: a call of the journal is not the JSON expected: %v", err)
		}
	}
	if raw == nil {
		raw = []json.RawMessage{} // [] in the file, not null
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if err := replaceFile(path, raw); err != nil {
		return nil, err
	}
	return calls, nil
}

// writeDocument writes an export as writeJSON does (merged as free-form JSON: a pact file may hold what an older
// mock wrote), and returns what was written, typed again.
func writeDocument(path string, document *ExportDocument, merge func(old, new Object) (Object, error)) (*ExportDocument, error) {
	var object Object
	if err := convert(document, &object); err != nil {
		return nil, err
	}
	written, err := writeJSON(path, object, merge)
	if err != nil {
		return nil, err
	}
	var out ExportDocument
	return &out, convert(written, &out)
}

// convert turns one JSON-shaped value into another through its JSON.
func convert(from, to any) error {
	data, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, to)
}

// AssertRulesFired fails the test (t.Fatalf) naming the scenario rules that never fired: in the client's
// sandbox, or with opts.Scope "mock" in every sandbox whose name starts with opts.Prefix (those gone included).
// It returns the usage report.
func (c *Client) AssertRulesFired(t TB, opts UsageOptions) *UsageReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	report, err := c.Usage(ctx, opts)
	if err != nil {
		t.Fatalf("%v", err)
		return nil
	}
	if unused := report.Rules.NeverFired; len(unused) > 0 {
		t.Fatalf("mockserver: %d scenario rule(s) never fired: %s", len(unused), strings.Join(unused, ", "))
	}
	return report
}

// Token is the value of a default token of the sandbox's fixtures, by the fixtures' name (admin,
// reader, writer, deployer), its short name (read, write, deploy) or its scope (Admin, Read, Write,
// Deploy), in any case. The tokens are those the server lists on its start page (GET / of the
// sandbox), else the default fixtures' own.
func (c *Client) Token(name string) (string, error) {
	c.tokensOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c.tokens = c.fetchTokens(ctx)
	})
	return c.tokens.lookup(name)
}

// Headers is the Authorization header of a default token (see Token): "Token <value>".
func (c *Client) Headers(name string) (http.Header, error) {
	token, err := c.Token(name)
	if err != nil {
		return nil, err
	}
	return http.Header{"Authorization": {"Token " + token}}, nil
}

// InSandbox creates sandbox name fresh (from the fixtures, or with the options) on the same mock, and
// returns a handle on it (CreateSandbox, then a handle). Delete it with Delete.
func (c *Client) InSandbox(ctx context.Context, name string, opts SandboxOptions) (*Client, error) {
	if _, err := c.CreateSandbox(ctx, name, opts); err != nil {
		return nil, fmt.Errorf("could not create sandbox %s: %w", name, err)
	}
	return c.Sandbox(name), nil
}

// Sandbox returns a handle on sandbox name of the same mock without creating it (InSandbox creates it).
func (c *Client) Sandbox(name string) *Client {
	return &Client{s: c.s, sandbox: name, base: c.s.root + "/sandbox/" + name}
}

// Delete deletes the handle's sandbox and the private snapshots saved through the handle; one already gone
// is no error.
//
// Deprecated: use DeleteSandbox(ctx, "", false), the name of the Python and Node clients' method too.
func (c *Client) Delete(ctx context.Context) error {
	if c.sandbox == "" {
		return errors.New("mockclient: Delete: this handle is on the whole mock, not on a sandbox")
	}
	if err := c.DeleteSandbox(ctx, "", false); err != nil && StatusOf(err) != http.StatusNotFound {
		return err
	}
	return nil
}

// deletePrivateSnapshots deletes the snapshots saved through the handle under a private name (the server
// deletes them with their sandbox too; this also covers older servers).
func (c *Client) deletePrivateSnapshots(ctx context.Context) error {
	c.mu.Lock()
	stored := make([]string, 0, len(c.private))
	for _, name := range c.private {
		stored = append(stored, name)
	}
	c.private = nil
	c.mu.Unlock()
	var problems []string
	for _, name := range stored {
		err := c.do(ctx, request{method: "DELETE", path: "/snapshots/" + name, global: true}, nil)
		if err != nil && StatusOf(err) != http.StatusNotFound {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}
