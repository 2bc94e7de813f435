// Package mockclient is the Go control client of the IDP mock server: a handle on a running mock (or on one
// of its sandboxes) with one method per operation of the control API (`/_mock/...`), named after the
// operation's `x-client` name in Go's casing (mint_token -> MintToken, inspector_url -> InspectorURL), and
// the helpers built on them (AssertCalled, AssertNotCalled, ExportPact, ExportHAR, WritePact, WriteHAR,
// WriteJournal, Headers, InSandbox).
//
// It also starts the mock three ways: Connect (a URL, or MOCKSERVER_URL), StartLocal (the mockserver
// command, or MOCKSERVER_COMMAND) and StartContainer (the docker CLI). Package mocktest builds the
// per-test sandbox on it. The replies are typed by the control document's schemas (types_gen.go), and the
// facts every client holds the same (tokens, limits, the version) are its x-constants (constants_gen.go).
//
// The package holds no global state: two mocks (and any number of sandboxes of each) work side by side
// in one process. It uses the standard library only.
package mockclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Version (constants_gen.go) is the client's version: that of the mock server it is made for. When the server's
// major.minor differs, Connect and the Start functions print one line (see Options.Warnings) and go on.

// Object is free-form JSON: a request body, a scenario document, a pact file being merged.
type Object = map[string]any

// Options of a Client. The zero value is ready to use.
type Options struct {
	// ControlToken is sent as "Authorization: Bearer <token>" on every control call (a mock started with
	// --control-token). Default: the environment variable MOCKSERVER_CONTROL_TOKEN.
	ControlToken string
	// HTTPClient makes the requests. Default: a client with Timeout and enough idle connections for
	// parallel tests.
	HTTPClient *http.Client
	// Timeout of one control call when HTTPClient is nil. Default 30 s.
	Timeout time.Duration
	// ReadyTimeout bounds how long Connect and the Start functions wait for /_mock/health to answer 200.
	// Default 30 s (60 s for a container).
	ReadyTimeout time.Duration
	// Warnings receives the one line printed when the server's major.minor differs from Version.
	// Default os.Stderr.
	Warnings io.Writer
}

// shared is what every handle on one mock shares: its root URL, HTTP client and version check.
type shared struct {
	root         string
	http         *http.Client
	controlToken string
	warnings     io.Writer
	readyTimeout time.Duration

	versionOnce   sync.Once
	serverVersion string
}

// Client is a handle on a running mock: on the whole mock (its default sandbox) as New and Connect make
// it, or on one sandbox as InSandbox makes it. Every per-sandbox operation acts on the handle's
// sandbox; the global ones (health, the sandboxes routes, the snapshot list, the documents) act on the
// mock. A Client is safe for concurrent use.
type Client struct {
	s       *shared
	sandbox string
	base    string

	tokensOnce sync.Once
	tokens     *tokenTable

	mu      sync.Mutex
	private map[string]string // snapshot name given -> name stored, for this sandbox only
}

// New returns a handle on the mock at url (e.g. "http://127.0.0.1:8080") without contacting it. Connect
// also waits until it answers and checks its version.
func New(rawURL string, opts *Options) (*Client, error) {
	if opts == nil {
		opts = &Options{}
	}
	root := strings.TrimRight(strings.TrimSpace(rawURL), "/")
	parsed, err := url.Parse(root)
	if err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
		return nil, fmt.Errorf("mockclient: %q is not an http(s) URL of a mock", rawURL)
	}
	s := &shared{
		root:         root,
		http:         opts.HTTPClient,
		controlToken: opts.ControlToken,
		warnings:     opts.Warnings,
		readyTimeout: opts.ReadyTimeout,
	}
	if s.controlToken == "" {
		s.controlToken = os.Getenv("MOCKSERVER_CONTROL_TOKEN")
	}
	if s.http == nil {
		timeout := opts.Timeout
		if timeout <= 0 {
			timeout = 30 * time.Second
		}
		transport := http.DefaultTransport.(*http.Transport).Clone()
		transport.MaxIdleConns = 256
		transport.MaxIdleConnsPerHost = 64
		s.http = &http.Client{Timeout: timeout, Transport: transport}
	}
	if s.warnings == nil {
		s.warnings = os.Stderr
	}
	if s.readyTimeout <= 0 {
		s.readyTimeout = 30 * time.Second
	}
	return &Client{s: s, base: root}, nil
}

// Connect returns a handle on the mock at rawURL (MOCKSERVER_URL when rawURL is empty), once its
// /_mock/health answers 200 (polled until Options.ReadyTimeout). A refused connection fails at once, with
// one line naming the URL and where it came from: no mock is starting there that this process knows of
// (StartLocal and StartContainer wait for theirs). It prints one line to Options.Warnings when the
// server's major.minor differs from Version.
func Connect(ctx context.Context, rawURL string, opts *Options) (*Client, error) {
	source := "the URL given to Connect"
	if rawURL == "" {
		rawURL = os.Getenv("MOCKSERVER_URL")
		source = "MOCKSERVER_URL"
		if rawURL == "" {
			return nil, errors.New("mockclient: no URL given and MOCKSERVER_URL is not set")
		}
	}
	c, err := New(rawURL, opts)
	if err != nil {
		return nil, err
	}
	refused := func(probe error) error {
		if errors.Is(probe, syscall.ECONNREFUSED) {
			return &UnreachableError{URL: c.s.root, Source: source, Err: probe}
		}
		return nil
	}
	if err := waitHealthy(ctx, c.s.root, c.s.readyTimeout, nil, refused); err != nil {
		return nil, err
	}
	if _, err := c.CheckVersion(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// UnreachableError is Connect's error when nothing listens at the URL (the connection is refused).
type UnreachableError struct {
	URL    string
	Source string // where the URL came from: "MOCKSERVER_URL" or "the URL given to Connect"
	Err    error  // the refused connection
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("mockclient: nothing listens at %s (%s): connection refused", e.URL, e.Source)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Root is the mock's root URL (no sandbox).
func (c *Client) Root() string { return c.s.root }

// URL is the API base URL of the handle's sandbox: {root}/sandbox/{name}, or the root for the mock's own.
// Point the code under test at it.
func (c *Client) URL() string { return c.base }

// SandboxName is the name of the handle's sandbox ("" for a handle on the whole mock).
func (c *Client) SandboxName() string { return c.sandbox }

// ServerVersion is the version /_mock/health reported at the version check ("" before one).
func (c *Client) ServerVersion() string { return c.s.serverVersion }

// WaitReady polls GET /_mock/health until it answers 200, for at most timeout (a refused connection is
// tried again: the mock may be starting).
func (c *Client) WaitReady(ctx context.Context, timeout time.Duration) error {
	return waitHealthy(ctx, c.s.root, timeout, nil, nil)
}

// waitHealthy polls {root}/_mock/health until a 200; alive (optional) tells why to give up early, and final
// (optional) turns a probe's error into the reason to give up at once (nil: poll again).
func waitHealthy(ctx context.Context, root string, timeout time.Duration, alive func() error,
	final func(error) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	probe := &http.Client{Timeout: 2 * time.Second}
	last := "no answer yet"
	for {
		if alive != nil {
			if err := alive(); err != nil {
				return err
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, root+"/_mock/health", nil)
		if err != nil {
			return fmt.Errorf("mockclient: %v", err)
		}
		resp, err := probe.Do(req)
		if err != nil && final != nil {
			if reason := final(err); reason != nil {
				return reason
			}
		}
		if err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("answered %d", resp.StatusCode)
		} else if ctx.Err() == nil || last == "no answer yet" {
			last = err.Error() // a probe cut by the deadline itself keeps the answer before it in the message
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("mockclient: the mock at %s is not ready after %s (%s)", root, timeout, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// CheckVersion reads the server's version from /_mock/health and, the first time per mock, prints one
// line to Options.Warnings when its major.minor differs from Version. It returns the server's version.
func (c *Client) CheckVersion(ctx context.Context) (string, error) {
	health, err := c.Health(ctx)
	if err != nil {
		return "", err
	}
	c.s.versionOnce.Do(func() {
		c.s.serverVersion = health.Version
		if majorMinor(health.Version) != majorMinor(Version) {
			fmt.Fprintf(c.s.warnings, "idp-mockserver client %s: the mock at %s is %s (major.minor differ); some calls may not match\n",
				Version, c.s.root, health.Version)
		}
	})
	return health.Version, nil
}

func majorMinor(version string) string {
	parts := strings.SplitN(strings.TrimPrefix(strings.TrimSpace(version), "v"), ".", 3)
	if len(parts) < 2 {
		return strings.Join(parts, ".")
	}
	return parts[0] + "." + parts[1]
}

// MockServerError is a control call that answered a status >= 400, with the server's message.
type MockServerError struct {
	Method  string
	Path    string // the path called, e.g. /sandbox/t1/_mock/scenarios/x
	Status  int
	Name    string // the body's "error", e.g. "Not Found"
	Message string // the body's "message" (or the body itself when it is not the error document)
	Details []ErrorDetail
}

// Error is the name MockServerError had.
//
// Deprecated: use MockServerError, the name of the Python and Node clients' error too.
type Error = MockServerError

func (e *MockServerError) Error() string {
	return fmt.Sprintf("control API %s %s answered %d: %s", e.Method, e.Path, e.Status, e.Message)
}

// StatusOf is the status of a control call's error (0 when err is not a *MockServerError).
func StatusOf(err error) int {
	var e *MockServerError
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// request is one control call.
type request struct {
	method      string
	path        string // under /_mock
	global      bool   // on the root, whatever the handle's sandbox
	query       url.Values
	body        any // nil, []byte (raw, with contentType) or a value sent as JSON
	contentType string
	accept      string
}

// do makes a control call and decodes its reply into out (nil: dropped; *string or *[]byte: raw).
func (c *Client) do(ctx context.Context, r request, out any) error {
	base := c.base
	if r.global {
		base = c.s.root
	}
	target := base + "/_mock" + r.path
	if len(r.query) > 0 {
		target += "?" + r.query.Encode()
	}
	var body io.Reader
	contentType := r.contentType
	switch value := r.body.(type) {
	case nil:
	case []byte:
		body = bytes.NewReader(value)
	default:
		encoded, err := json.Marshal(value)
		if err != nil {
			return fmt.Errorf("mockclient: %s %s: %v", r.method, r.path, err)
		}
		body = bytes.NewReader(encoded)
		contentType = "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, r.method, target, body)
	if err != nil {
		return fmt.Errorf("mockclient: %v", err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if r.accept != "" {
		req.Header.Set("Accept", r.accept)
	} else {
		req.Header.Set("Accept", "application/json")
	}
	if c.s.controlToken != "" {
		req.Header.Set("Authorization", "Bearer "+c.s.controlToken)
	}
	resp, err := c.s.http.Do(req)
	if err != nil {
		return fmt.Errorf("control API %s %s: %w", r.method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("control API %s %s: reading the reply: %w", r.method, req.URL.Path, err)
	}
	if resp.StatusCode >= 400 {
		e := &MockServerError{Method: r.method, Path: req.URL.Path, Status: resp.StatusCode}
		var doc ErrorBody
		if json.Unmarshal(data, &doc) == nil && doc.Message != "" {
			e.Name, e.Message, e.Details = doc.Error, doc.Message, doc.Details
		} else {
			e.Name, e.Message = http.StatusText(resp.StatusCode), strings.TrimSpace(string(data))
		}
		return e
	}
	switch target := out.(type) {
	case nil:
		return nil
	case *string:
		*target = string(data)
		return nil
	case *[]byte:
		*target = data
		return nil
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("control API %s %s: the reply is not the JSON expected: %v", r.method, req.URL.Path, err)
	}
	return nil
}
