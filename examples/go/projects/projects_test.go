package projects_test

// The project calls of projects.go, each test in a fresh sandbox of the mock: what a fault campaign runs again
// and again (docs/guide/campaigns.md).

import (
	"os"
	"testing"

	"idp-mockserver/clients/go/mocktest"
	"idp-mockserver/examples/go/projects"
)

func TestMain(m *testing.M) { os.Exit(mocktest.Main(m)) }

func TestANewProjectIsListed(t *testing.T) {
	mock := mocktest.Sandbox(t)
	api := projects.New(mock.URL(), mock.Token("admin"))
	made, err := api.Create("checkout")
	if err != nil || made.Name != "checkout" {
		t.Fatalf("create: %v %+v", err, made)
	}
	names, err := api.Names()
	if err != nil || !names["checkout"] {
		t.Fatalf("names: %v %v", err, names)
	}
}

func TestAProjectRenamedIsListedUnderItsNewName(t *testing.T) {
	mock := mocktest.Sandbox(t)
	api := projects.New(mock.URL(), mock.Token("admin"))
	made, err := api.Create("billing")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.Rename(made.ID, "invoicing"); err != nil {
		t.Fatal(err)
	}
	names, err := api.Names()
	if err != nil || !names["invoicing"] || names["billing"] {
		t.Fatalf("names: %v %v", err, names)
	}
}
