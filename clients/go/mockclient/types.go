package mockclient

import (
	"encoding/json"
	"net/url"
	"strconv"
	"time"
)

// Health is the reply of GET /_mock/health.
type Health struct {
	Status        string  `json:"status"` // ok, or degraded while saves of the state file fail
	Version       string  `json:"version"`
	Clock         string  `json:"clock"` // the clock mode new sandboxes start with: real or manual
	Replica       string  `json:"replica"`
	Sandboxes     int     `json:"sandboxes"`
	UptimeSeconds float64 `json:"uptime_seconds"`
	StartedFrom   Object  `json:"started_from"`
	StateFile     Object  `json:"state_file"`
	Memory        Object  `json:"memory"`
}

// Clock is a sandbox's clock.
type Clock struct {
	Mode          string    `json:"mode"` // real or manual
	Now           time.Time `json:"now"`
	Epoch         float64   `json:"epoch"`
	OffsetSeconds float64   `json:"offset_seconds"`
}

// Call is one entry of the call journal.
type Call struct {
	ID                int               `json:"id"`
	Time              time.Time         `json:"time"`
	Method            string            `json:"method"`
	Path              string            `json:"path"`
	PathTemplate      string            `json:"path_template"`
	Operation         string            `json:"operation"`
	Query             Object            `json:"query"`
	Headers           Object            `json:"headers"`
	Body              any               `json:"body"`
	Status            int               `json:"status"` // 0 when a scenario dropped the connection
	ResponseHeaders   map[string]string `json:"response_headers"`
	Response          any               `json:"response"`
	DurationMS        float64           `json:"duration_ms"`
	ScenarioRule      string            `json:"scenario_rule"`
	RequestID         string            `json:"request_id"`
	TraceID           string            `json:"trace_id"` // only when the mock traces (OTEL_* environment)
	Token             string            `json:"token"`
	WebhookDeliveries []int             `json:"webhook_deliveries"`
	Drift             []Object          `json:"drift"`
	Truncated         Object            `json:"truncated"`
}

// Filter selects journal entries (GET /_mock/calls, verify, export). Empty fields are not sent.
type Filter struct {
	Method    string // GET, POST ...
	Path      string // a path template (/application/{app_id}/deploy), an exact path or a glob
	Operation string // an operationId: deployApplication
	Status    string // a status (202) or a class (4xx)
	Since     string // a call id (entries after it) or an ISO 8601 time
	Scenario  string // a rule (scenario/rule), a scenario's name or a glob
	RequestID string // X-Request-Id of the call
	Limit     int    // only the last N matches (0: all); not used by verify
}

func (f Filter) fields() map[string]string {
	fields := map[string]string{}
	for key, value := range map[string]string{"method": f.Method, "path": f.Path, "operation": f.Operation,
		"status": f.Status, "since": f.Since, "scenario": f.Scenario, "request_id": f.RequestID} {
		if value != "" {
			fields[key] = value
		}
	}
	return fields
}

func (f Filter) query() url.Values {
	query := url.Values{}
	for key, value := range f.fields() {
		query.Set(key, value)
	}
	if f.Limit > 0 {
		query.Set("limit", strconv.Itoa(f.Limit))
	}
	return query
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

// VerifyResult is the verdict of POST /_mock/calls/verify.
type VerifyResult struct {
	OK       bool     `json:"ok"`
	Expected Object   `json:"expected"`
	Actual   int      `json:"actual"`
	Filters  Object   `json:"filters"`
	Message  string   `json:"message"` // readable: the matches and near misses
	Matched  []string `json:"matched"`
}

// RowsFilter selects and pages the journal's rows (GET /_mock/calls/rows).
type RowsFilter struct {
	Method, Status, Operation, Path string
	Text                            string // case-insensitive text anywhere in the call
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

func (o ExportOptions) query(format string) url.Values {
	query := o.Filter.query()
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
	return query
}

// PactOptions shape WritePact: the export's options, and whether to replace the file instead of merging
// into it.

// UsageOptions choose what Usage counts: Scope "sandbox" (the client's; the default) or "mock" (every
// sandbox whose name starts with Prefix, the deleted and reset ones included).
type UsageOptions struct {
	Scope  string
	Prefix string
}

// UsageReport is what a suite used: the scenario rules that fired and never fired, the operations called
// and never called.
type UsageReport struct {
	Scope     string `json:"scope"`
	Sandboxes int    `json:"sandboxes"`
	Rules     struct {
		Total      int         `json:"total"`
		Fired      int         `json:"fired"`
		NeverFired []string    `json:"never_fired"`
		Results    []RuleUsage `json:"results"`
	} `json:"rules"`
	Operations struct {
		Total       int            `json:"total"`
		Called      int            `json:"called"`
		NeverCalled []string       `json:"never_called"`
		Calls       map[string]int `json:"calls"`
	} `json:"operations"`
	JournalDropped int `json:"journal_dropped"`
}

// RuleUsage is how often one scenario rule matched a call and fired.
type RuleUsage struct {
	Rule     string `json:"rule"`
	Scenario string `json:"scenario"`
	Matched  int    `json:"matched"`
	Fired    int    `json:"fired"`
}

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

// Scenario is an active scenario with its rules' counters.
type Scenario struct {
	Name        string         `json:"name"`
	Source      string         `json:"source"`
	Description string         `json:"description"`
	Rules       []ScenarioRule `json:"rules"`
	Warnings    []string       `json:"warnings"` // PUT only: rules that may never fire
}

// ScenarioRule is one rule of an active scenario.
type ScenarioRule struct {
	Name    string `json:"name"` // scenario/rule
	Match   Object `json:"match"`
	Effect  Object `json:"effect"`
	Window  Object `json:"window"`
	Matched int    `json:"matched"`
	Fired   int    `json:"fired"`
}

// DeliveryFilter selects webhook deliveries. Empty fields are not sent.
type DeliveryFilter struct {
	WebhookID string
	EventType string // DEPLOYMENT_STARTED, DEPLOYMENT_FAILED ...
	Status    string // PENDING, RETRYING, DELIVERED, FAILED
}

// Delivery is a webhook delivery with its attempts.
type Delivery struct {
	ID            int        `json:"id"`
	WebhookID     string     `json:"webhook_id"`
	EventType     string     `json:"event_type"`
	TargetURL     string     `json:"target_url"`
	Payload       Object     `json:"payload"`
	CausedByCall  int        `json:"caused_by_call"`
	CreatedAt     time.Time  `json:"created_at"`
	Status        string     `json:"status"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	Attempts      []Attempt  `json:"attempts"`
}

// Attempt is one attempt of a webhook delivery.
type Attempt struct {
	Number     int       `json:"number"`
	At         time.Time `json:"at"`
	StatusCode int       `json:"status_code"` // 0 when the attempt got no reply
	Error      string    `json:"error"`
	DurationMS float64   `json:"duration_ms"`
	Signature  string    `json:"signature"`
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

// Token is a minted token; its value is Token.
type Token struct {
	Name         string     `json:"name"`
	Token        string     `json:"token"`
	Kind         string     `json:"kind"`
	Scopes       []string   `json:"scopes"`
	Organization string     `json:"organization"`
	ExpiresAt    *time.Time `json:"expires_at"`
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

// SandboxInfo describes a sandbox.
type SandboxInfo struct {
	Name              string    `json:"name"`
	Source            string    `json:"source"` // fixtures, options, or snapshot <name>
	CreatedAt         time.Time `json:"created_at"`
	LastUsedAt        time.Time `json:"last_used_at"`
	Calls             int       `json:"calls"`
	Resources         int       `json:"resources"`
	JournalEntries    int       `json:"journal_entries"`
	ActiveDeployments int       `json:"active_deployments"`
	Scenarios         []string  `json:"scenarios"`
	Clock             Clock     `json:"clock"`
	Asleep            bool      `json:"asleep"`
	Expires           *Expiry   `json:"expires"` // as it was made with, or nil
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

// SnapshotInfo describes a snapshot.
type SnapshotInfo struct {
	Name      string    `json:"name"`
	Sandbox   string    `json:"sandbox"` // the sandbox it was saved from
	Private   bool      `json:"private"`
	Builtin   bool      `json:"builtin"`
	SavedAt   time.Time `json:"saved_at"`
	ClockAt   time.Time `json:"clock_at"`
	Journal   bool      `json:"journal"`
	Resources int       `json:"resources"`
	Bytes     int       `json:"bytes"`
}
