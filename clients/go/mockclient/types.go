package mockclient

// The request options of the control client, written here; the replies' types are the control document's
// schemas, written into types_gen.go by python -m mockserver.client.generate.

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// Filter selects journal entries (GET /_mock/calls, verify, export). Empty fields are not sent; a call
// matches when it matches every field given.
type Filter struct {
	Method    string // GET, POST ...
	Path      string // a path template (/application/{app_id}/deploy), an exact path or a glob
	Operation string // an operationId: deployApplication
	Status    string // a status (202) or a class (4xx)
	Since     string // a call id (entries after it) or an ISO 8601 time
	Scenario  string // a rule (scenario/rule), a scenario's name or a glob
	RequestID string // X-Request-Id of the call
	// Token is the token the call was authenticated with: its name (admin, reader, writer, deployer, or one
	// the fixtures define) or its value. An unknown one is a 400 that says which are known.
	Token string
	// Headers are request headers the call must have: name (any case) -> glob, as a scenario's
	// match.headers ("ci*"). Authorization and Cookie are not kept by the journal (use Token).
	Headers map[string]string
	// Body holds fields the request body must have: a key is a field or a dotted path ("settings.replicas",
	// "ports.0.port"); a nested object matches partially (the body may have more fields), any other value
	// must be equal.
	Body  Object
	Limit int // only the last N matches (0: all); not used by verify
}

// fields are the filter as a verify body (POST /_mock/calls/verify) has them.
func (f Filter) fields() Object {
	fields := Object{}
	for key, value := range map[string]string{"method": f.Method, "path": f.Path, "operation": f.Operation,
		"status": f.Status, "since": f.Since, "scenario": f.Scenario, "request_id": f.RequestID, "token": f.Token} {
		if value != "" {
			fields[key] = value
		}
	}
	if len(f.Headers) > 0 {
		fields["headers"] = f.Headers
	}
	if len(f.Body) > 0 {
		fields["body"] = f.Body
	}
	return fields
}

// query is the filter as a query string has it (GET /_mock/calls, export): headers[NAME]=GLOB, one
// parameter per header, and body[PATH]=VALUE with the value as JSON (a string is quoted, so that "2" stays
// a string).
func (f Filter) query() (url.Values, error) {
	query := url.Values{}
	for key, value := range f.fields() {
		switch key {
		case "headers":
			for name, glob := range f.Headers {
				query.Set("headers["+name+"]", glob)
			}
		case "body":
			for path, value := range f.Body {
				encoded, err := json.Marshal(value)
				if err != nil {
					return nil, fmt.Errorf("mockclient: the filter's body[%s]: %v", path, err)
				}
				query.Set("body["+path+"]", string(encoded))
			}
		default:
			query.Set(key, value.(string))
		}
	}
	if f.Limit > 0 {
		query.Set("limit", strconv.Itoa(f.Limit))
	}
	return query, nil
}

// Count is how many calls a verify expects: Times(n), AtLeast(n) or AtMost(n) (AtLeast and AtMost may
// go together). Without one the server expects at least 1.
type Count struct {
	key string
	n   int
}

// Times expects exactly n calls.
func Times(n int) Count { return Count{"count", n} }

// AtLeast expects n calls or more.
func AtLeast(n int) Count { return Count{"at_least", n} }

// AtMost expects n calls or fewer.
func AtMost(n int) Count { return Count{"at_most", n} }

// RowsFilter selects and pages the journal's rows (GET /_mock/calls/rows).
type RowsFilter struct {
	Method, Status, Operation, Path string
	Text                            string // case-insensitive text anywhere in the call
	Drift                           bool   // only the forwarded calls whose exchange drifted from the document
	Before                          int    // only calls with a smaller id (0: not sent)
	Since                           int    // only calls with a greater id (0: not sent)
	Limit                           int    // page size, at most 1000 (0: the server's 100)
}

// ExportOptions shape an export of the journal (GET /_mock/calls/export): the calls selected as by
// Filter, and for a pact its consumer, provider and specification.
type ExportOptions struct {
	Filter
	Consumer string // default "consumer"
	Provider string // default "idp-platform"
	Spec     int    // 4 (default) or 3
}

func (o ExportOptions) query(format string) (url.Values, error) {
	query, err := o.Filter.query()
	if err != nil {
		return nil, err
	}
	query.Set("format", format)
	if o.Consumer != "" {
		query.Set("consumer", o.Consumer)
	}
	if o.Provider != "" {
		query.Set("provider", o.Provider)
	}
	if o.Spec != 0 {
		query.Set("spec", strconv.Itoa(o.Spec))
	}
	return query, nil
}

// UsageOptions choose what Usage counts: Scope "sandbox" (the client's; the default) or "mock" (every
// sandbox whose name starts with Prefix, the deleted and reset ones included).
type UsageOptions struct {
	Scope  string
	Prefix string
}

// PactOptions shape WritePact: the export's options, and whether to replace the file instead of merging
// into it.
type PactOptions struct {
	ExportOptions
	NoMerge bool // write the pact alone instead of merging it into the one at the path
}

// ProviderState is what a Pact verifier sends to the state-change URL (POST /_mock/provider-states).
type ProviderState struct {
	State  string `json:"state"`
	Params Object `json:"params,omitempty"`
	Action string `json:"action,omitempty"` // setup (default) or teardown
}

// DeliveryFilter selects webhook deliveries. Empty fields are not sent.
type DeliveryFilter struct {
	WebhookID string
	EventType string // DEPLOYMENT_STARTED, DEPLOYMENT_FAILED ...
	Status    string // PENDING, RETRYING, DELIVERED, FAILED
}

// TokenOptions shape MintToken. The zero value mints an Admin API token of the first organization
// that never expires.
type TokenOptions struct {
	Scopes       []string      // Admin, Read, Write, Deploy (default [Admin])
	Kind         string        // token (default) or jwt
	TTL          time.Duration // lifetime on the mock's clock (0: none; JWTs default to an hour)
	Organization string        // default: the first organization of the fixtures
	Name         string
}

// SandboxOptions shape a sandbox made by CreateSandbox or InSandbox. The zero value makes a fresh copy of
// the fixtures with the server's clock mode and scenarios.
type SandboxOptions struct {
	Clock            string    // real or manual
	Start            time.Time // where the sandbox's clock starts (zero: now)
	Seed             *int64    // seed of generated ids and fake data
	RateLimit        string    // requests per window per token: 5/10s
	Scenarios        []any     // names of files loaded with --scenario, or documents; nil: not sent, []any{}: none
	Fixtures         string    // a folder of fixture files on the server's machine
	Snapshot         string    // the snapshot to start from
	JournalBodyLimit int       // bytes of a body the journal keeps whole (0: the server's default)
	PollProgress     Object    // deployments that move by status reads: {"reads": 3}
	Expires          *Expiry   // the sandbox ends after a time on its clock or a number of API calls (nil: never)
	// KeepSandbox is for the test harnesses only (mocktest), never sent: whether the sandbox outlives its
	// test, "never", "on-failure" or "always" (empty: the environment variable MOCKSERVER_KEEP_SANDBOX, else
	// never). A sandbox kept is logged with its URL and its inspector page.
	KeepSandbox string
}

// Expiry ends a sandbox: after Seconds on its own clock from its making, or after Calls API calls, whichever
// comes first (a zero field is not sent; give at least one). Its next API call then meets a fresh sandbox of
// that name, and a control call a 404 that says it expired.
type Expiry struct {
	Seconds float64 `json:"seconds,omitempty"`
	Calls   int64   `json:"calls,omitempty"`
}

// MarshalJSON sends only the options given (Scenarios: an empty, non-nil list is sent as []).
func (o SandboxOptions) MarshalJSON() ([]byte, error) {
	body := Object{}
	if o.Clock != "" {
		body["clock"] = o.Clock
	}
	if !o.Start.IsZero() {
		body["start"] = o.Start.UTC().Format(time.RFC3339Nano)
	}
	if o.Seed != nil {
		body["seed"] = *o.Seed
	}
	if o.RateLimit != "" {
		body["rate_limit"] = o.RateLimit
	}
	if o.Scenarios != nil {
		body["scenarios"] = o.Scenarios
	}
	if o.Fixtures != "" {
		body["fixtures"] = o.Fixtures
	}
	if o.Snapshot != "" {
		body["snapshot"] = o.Snapshot
	}
	if o.JournalBodyLimit != 0 {
		body["journal_body_limit"] = o.JournalBodyLimit
	}
	if o.PollProgress != nil {
		body["poll_progress"] = o.PollProgress
	}
	if o.Expires != nil {
		body["expires"] = o.Expires
	}
	return json.Marshal(body)
}

// SnapshotOptions shape Snapshot.
type SnapshotOptions struct {
	Journal   bool // keep the journal in the snapshot too
	NoReplace bool // refuse (409) instead of overwriting a snapshot of that name
	// Shared saves it under the plain name, for other sandboxes to start from, and leaves it in the
	// server. By default a sandbox handle's snapshot is private to the sandbox (its name is made unique
	// to it, so parallel tests may use the same name) and deleted with it.
	Shared bool
}

// Deprecated names of reply types, kept for a release: each is the control document's schema of that reply.
type (
	// Deprecated: SandboxInfo is Sandbox.
	SandboxInfo = Sandbox
	// Deprecated: SnapshotInfo is Snapshot.
	SnapshotInfo = Snapshot
	// Deprecated: Token is MintedToken.
	Token = MintedToken
	// Deprecated: Attempt is DeliveryAttempt.
	Attempt = DeliveryAttempt
)
