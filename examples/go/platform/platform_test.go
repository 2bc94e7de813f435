package platform_test

// The platform client's tests, each in a fresh sandbox of the mock (see docs/clients/go.md):
//
//	MOCKSERVER_COMMAND=/path/to/.venv/bin/mockserver go test ./...
//
// or MOCKSERVER_URL=http://127.0.0.1:8080 to use a mock that runs already.

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"idp-mockserver/clients/go/mockclient"
	"idp-mockserver/clients/go/mocktest"
	"idp-mockserver/examples/go/platform"
)

const web = "a7c9e1b3-5d7f-4b9d-8f1b-3d5f7b9d1fa5" // application web of the default fixtures

func TestMain(m *testing.M) { os.Exit(mocktest.Main(m)) }

// client is the platform client pointed at the test's sandbox, as the given default token; instead of
// sleeping between two status reads it moves the sandbox's (manual) clock.
func client(mock *mocktest.Handle, token string) *platform.Client {
	api := platform.New(mock.URL(), mock.Token(token))
	api.Sleep = func(ctx context.Context, d time.Duration) error {
		_, err := mock.Client.Advance(ctx, d)
		return err
	}
	return api
}

func TestDeployWaitsUntilDeployed(t *testing.T) {
	t.Parallel()
	mock := mocktest.Sandbox(t, mockclient.SandboxOptions{Clock: "manual"})
	api := client(mock, "deployer")
	ctx := context.Background()

	if _, err := api.Deploy(ctx, web); err != nil {
		t.Fatal(err)
	}
	if err := api.WaitDeployed(ctx, web, 5*time.Minute); err != nil {
		t.Fatal(err)
	}

	mock.AssertCalled(t, mockclient.Filter{Operation: "deployApplication", Status: "202"}, mockclient.Times(1))
	mock.AssertCalled(t, mockclient.Filter{Operation: "getApplicationStatus"}, mockclient.AtLeast(2), mockclient.AtMost(10))
	mock.AssertNotCalled(t, mockclient.Filter{Status: "4xx"})
}

func TestBuildFailureIsReported(t *testing.T) {
	t.Parallel()
	mock := mocktest.Sandbox(t, mockclient.SandboxOptions{Clock: "manual"})
	mock.Scenario("build-fails", `
name: build-fails
rules:
  - name: build-breaks
    match: {operation: deployApplication}
    effect: {deployment: {fail_at: BUILD, state: BUILD_ERROR}}
`)
	api := client(mock, "deployer")
	ctx := context.Background()

	if _, err := api.Deploy(ctx, web); err != nil {
		t.Fatal(err)
	}
	err := api.WaitDeployed(ctx, web, 5*time.Minute)

	var failed *platform.DeploymentFailed
	if !errors.As(err, &failed) || failed.State != "BUILD_ERROR" {
		t.Fatalf("WaitDeployed: %v, want a failed deployment in BUILD_ERROR", err)
	}
	mock.AssertCalled(t, mockclient.Filter{Scenario: "build-fails/build-breaks"}, mockclient.Times(1))
}

func TestStatusOutageIsRetried(t *testing.T) {
	t.Parallel()
	mock := mocktest.Sandbox(t, mockclient.SandboxOptions{Clock: "manual"})
	mock.Scenario("status-outage", mockclient.Object{"rules": []any{mockclient.Object{
		"name":   "first-two-reads-fail",
		"match":  mockclient.Object{"operation": "getApplicationStatus", "first": 2},
		"effect": mockclient.Object{"status": 503, "message": "status backend unavailable"},
	}}})
	api := client(mock, "deployer")
	ctx := context.Background()

	if _, err := api.Deploy(ctx, web); err != nil {
		t.Fatal(err)
	}
	if err := api.WaitDeployed(ctx, web, 5*time.Minute); err != nil {
		t.Fatalf("two 503s must be read again: %v", err)
	}
	mock.AssertCalled(t, mockclient.Filter{Operation: "getApplicationStatus", Status: "503"}, mockclient.Times(2))
	mock.AssertCalled(t, mockclient.Filter{Operation: "getApplicationStatus", Status: "200"}, mockclient.AtLeast(1))
}

func TestReadTokenCannotDeploy(t *testing.T) {
	t.Parallel()
	mock := mocktest.Sandbox(t)
	_, err := client(mock, "reader").Deploy(context.Background(), web)

	var apiErr *platform.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 403 {
		t.Fatalf("Deploy with a Read token: %v, want a 403", err)
	}
	mock.AssertCalled(t, mockclient.Filter{Operation: "deployApplication", Status: "403"}, mockclient.Times(1))
	mock.AssertNotCalled(t, mockclient.Filter{Operation: "deployApplication", Status: "2xx"})
}
