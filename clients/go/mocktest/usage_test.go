package mocktest_test

import (
	"os"
	"regexp"
	"testing"

	"idp-mockserver/clients/go/mockclient"
	"idp-mockserver/clients/go/mocktest"
)

// TestUnusedRulesNamesTheRulesNoSandboxFired loads one scenario in the sandboxes of two tests, fires one of
// its rules in one of them, and asks, after both sandboxes were deleted, which rules never fired.
func TestUnusedRulesNamesTheRulesNoSandboxFired(t *testing.T) {
	flaky := mockclient.Object{"rules": []any{
		mockclient.Object{"name": "orgs-fail", "match": mockclient.Object{"operation": "getOrganization"},
			"effect": mockclient.Object{"status": 503}},
		mockclient.Object{"name": "never-used", "match": mockclient.Object{"operation": "deleteProject"},
			"effect": mockclient.Object{"status": 500}}}}
	t.Run("fires one", func(t *testing.T) {
		h := mocktest.Sandbox(t)
		h.Scenario("flaky", flaky)
		if code, _ := on(t, h, "reader", "GET", "/organization", nil); code != 503 {
			t.Fatalf("GET /organization answered %d, want the scenario's 503", code)
		}
		if unused := h.Usage().Rules.NeverFired; len(unused) != 1 || unused[0] != "flaky/never-used" {
			t.Fatalf("the sandbox's unused rules: %v", unused)
		}
	})
	t.Run("fires none", func(t *testing.T) {
		mocktest.Sandbox(t).Scenario("flaky", flaky)
	})
	prefix := regexp.MustCompile(`[^A-Za-z0-9_.-]+`).ReplaceAllString(
		os.Getenv("MOCKSERVER_SANDBOX_PREFIX")+t.Name()+"/", "-")
	unused, err := mocktest.UnusedRules(mocktest.Server(t), prefix)
	if err != nil {
		t.Fatal(err)
	}
	if len(unused) != 1 || unused[0] != "flaky/never-used" {
		t.Fatalf("unused rules of the deleted sandboxes %s*: %v, want [flaky/never-used]", prefix, unused)
	}
}
