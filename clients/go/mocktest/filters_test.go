package mocktest_test

// The journal's filters by token, request headers and request body, against a real mock: through the query
// string (Calls) and through a verify's JSON body (Verify, AssertCalled), and a failed verify that names the
// other sandboxes that got the calls.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"idp-mockserver/clients/go/mockclient"
	"idp-mockserver/clients/go/mocktest"
)

// send calls the platform API at base with a default token of h, more headers and a JSON body.
func send(t *testing.T, h *mocktest.Handle, base, token string, headers map[string]string, method, path string, body any) int {
	t.Helper()
	encoded, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, base+path, bytes.NewReader(encoded))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Token "+h.Token(token))
	req.Header.Set("Content-Type", "application/json")
	for name, value := range headers {
		req.Header.Set(name, value)
	}
	resp, err := plain.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// ids are the ids of the calls.
func ids(calls []mockclient.Call) []int {
	found := []int{}
	for _, call := range calls {
		found = append(found, call.ID)
	}
	return found
}

// TestJournalFiltersByTokenHeadersAndBody: three calls (admin with X-Request-Source ci-7 and a nested body,
// writer with laptop, reader with neither), each filter selecting the right ones the same way in a query
// string (Calls, ExportHAR) and in a verify.
func TestJournalFiltersByTokenHeadersAndBody(t *testing.T) {
	t.Parallel()
	h := mocktest.Sandbox(t)
	projects := "/organization/" + orgID + "/project"
	send(t, h, h.URL(), "admin", map[string]string{"X-Request-Source": "ci-7"}, "POST", projects, mockclient.Object{
		"name": "alpha", "description": "2", "settings": mockclient.Object{"replicas": 2, "region": "eu"},
		"ports": []any{mockclient.Object{"port": 8080}}})
	send(t, h, h.URL(), "writer", map[string]string{"X-Request-Source": "laptop"}, "POST", projects,
		mockclient.Object{"name": "beta", "description": "two"})
	send(t, h, h.URL(), "reader", nil, "GET", "/organization", nil)

	for _, c := range []struct {
		name   string
		filter mockclient.Filter
		want   []int
	}{
		{"token by name", mockclient.Filter{Token: "admin"}, []int{1}},
		{"token by value", mockclient.Filter{Token: h.Token("writer")}, []int{2}},
		{"token and operation", mockclient.Filter{Token: "reader", Operation: "getOrganization"}, []int{3}},
		{"a header's glob", mockclient.Filter{Headers: map[string]string{"x-request-source": "ci*"}}, []int{1}},
		{"a header's name in any case", mockclient.Filter{Headers: map[string]string{"X-REQUEST-SOURCE": "*"}}, []int{1, 2}},
		{"a header no call had", mockclient.Filter{Headers: map[string]string{"X-Request-Source": "prod*"}}, []int{}},
		{"a dotted path", mockclient.Filter{Body: mockclient.Object{"settings.replicas": 2}}, []int{1}},
		{"an index in a dotted path", mockclient.Filter{Body: mockclient.Object{"ports.0.port": 8080}}, []int{1}},
		{"a nested object, partially", mockclient.Filter{Body: mockclient.Object{"settings": mockclient.Object{"region": "eu"}}}, []int{1}},
		{"a string that reads as a number", mockclient.Filter{Body: mockclient.Object{"description": "2"}}, []int{1}},
		{"a number is not that string", mockclient.Filter{Body: mockclient.Object{"description": 2}}, []int{}},
		{"everything at once", mockclient.Filter{Token: "writer", Headers: map[string]string{"x-request-source": "lap*"},
			Body: mockclient.Object{"name": "beta"}}, []int{2}},
	} {
		if got := ids(h.Calls(c.filter)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Calls found %v, want %v", c.name, got, c.want)
		}
		if verdict := h.Verify(c.filter, mockclient.Times(len(c.want))); !verdict.OK {
			t.Errorf("%s: Verify: %s", c.name, verdict.Message)
		}
	}
	if har := h.ExportHAR(mockclient.Filter{Token: "writer", Body: mockclient.Object{"name": "beta"}}); len(har.Log.Entries) != 1 {
		t.Errorf("the HAR of the writer's call: %d entries, want 1", len(har.Log.Entries))
	}
	h.AssertCalled(t, mockclient.Filter{Token: "admin", Body: mockclient.Object{"name": "alpha"}}, mockclient.Times(1))
	h.AssertNotCalled(t, mockclient.Filter{Token: "deployer"})

	ctx := context.Background()
	for name, refused := range map[string]struct {
		filter mockclient.Filter
		says   string
	}{
		"an unknown token":         {mockclient.Filter{Token: "admni"}, "did you mean admin"},
		"the Authorization header": {mockclient.Filter{Headers: map[string]string{"Authorization": "*"}}, "token"},
		"the Cookie header":        {mockclient.Filter{Headers: map[string]string{"cookie": "*"}}, "cookie"},
	} {
		_, err := h.Client.Calls(ctx, refused.filter)
		if mockclient.StatusOf(err) != 400 || !strings.Contains(strings.ToLower(err.Error()), refused.says) {
			t.Errorf("Calls with %s: %v, want a 400 that says %q", name, err, refused.says)
		}
		_, err = h.Client.Verify(ctx, refused.filter)
		if mockclient.StatusOf(err) != 400 || !strings.Contains(strings.ToLower(err.Error()), refused.says) {
			t.Errorf("Verify with %s: %v, want a 400 that says %q", name, err, refused.says)
		}
	}
}

// TestAFailedVerifyNamesTheSandboxesThatGotTheCalls: calls sent to the mock's root (the default sandbox) and
// to a sandbox name nobody made (which the call makes) are named by the verify of the test's sandbox, which
// got none, in its reply (Elsewhere) and in its message.
func TestAFailedVerifyNamesTheSandboxesThatGotTheCalls(t *testing.T) {
	t.Parallel()
	h := mocktest.Sandbox(t)
	mock := mocktest.Server(t)
	typo := h.SandboxName() + "x"
	t.Cleanup(func() { mock.DeleteSandbox(context.Background(), typo, false) })
	project := mockclient.Object{"name": "elsewhere-" + h.SandboxName()} // this test's own
	send(t, h, mock.Root(), "admin", nil, "POST", "/organization/"+orgID+"/project", project)
	send(t, h, mock.Root()+"/sandbox/"+typo, "admin", nil, "POST", "/organization/"+orgID+"/project", project)

	filter := mockclient.Filter{Operation: "createProject", Body: project}
	verdict := h.Verify(filter, mockclient.Times(1))
	if verdict.OK || verdict.Actual != 0 {
		t.Fatalf("verify in a sandbox that got no call: %+v", verdict)
	}
	elsewhere := map[string]mockclient.CallsElsewhere{}
	for _, other := range verdict.Elsewhere {
		elsewhere[other.Sandbox] = other
	}
	if other := elsewhere["default"]; other.Count != 1 || other.MadeByCall || len(other.Calls) != 1 ||
		!strings.Contains(other.Calls[0], "POST /organization/"+orgID+"/project -> 201 (createProject)") {
		t.Errorf("the default sandbox: %+v (elsewhere: %+v)", other, verdict.Elsewhere)
	}
	if other := elsewhere[typo]; other.Count != 1 || !other.MadeByCall {
		t.Errorf("sandbox %s, made by the call: %+v (elsewhere: %+v)", typo, other, verdict.Elsewhere)
	}
	if !strings.Contains(verdict.Message, "elsewhere") || !strings.Contains(verdict.Message, typo) {
		t.Errorf("the message does not name the other sandboxes:\n%s", verdict.Message)
	}
	fake := &fakeT{}
	h.AssertCalled(fake, filter, mockclient.Times(1))
	if len(fake.failures) != 1 || fake.failures[0] != verdict.Message {
		t.Errorf("AssertCalled failed with %q, want the server's message %q", fake.failures, verdict.Message)
	}
}
