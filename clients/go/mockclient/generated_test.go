package mockclient_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"idp-mockserver/clients/go/mockclient"
)

// repository is the root of the repository this module sits in: its control document is the one the
// generated files are written from.
var repository = filepath.Join("..", "..", "..")

// TestGeneratedFilesAreCurrent fails when types_gen.go or constants_gen.go was written from another control
// document than the repository's, and, where a Python with the mockserver package is at hand (MOCKSERVER_PYTHON,
// the python beside MOCKSERVER_COMMAND, or the repository's .venv), when the generator would write any of its
// files otherwise (python -m mockserver.client.generate --check).
func TestGeneratedFilesAreCurrent(t *testing.T) {
	document, err := os.ReadFile(filepath.Join(repository, "mockserver", "document", "control.yaml"))
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("SKIPPED: no control document: the module is not in the repository")
	}
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(document)
	stamp := "// control.yaml sha256 " + hex.EncodeToString(sum[:]) + "\n"
	for _, name := range []string{"types_gen.go", "constants_gen.go"} {
		text, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(text), stamp) {
			t.Errorf("%s was written from another control document: run python -m mockserver.client.generate", name)
		}
	}
	python := pythonWithMockserver()
	if python == "" {
		t.Log("no Python with the mockserver package: only the control document's digest was compared")
		return
	}
	check := exec.Command(python, "-m", "mockserver.client.generate", "--check")
	check.Dir = repository
	if output, err := check.CombinedOutput(); err != nil {
		t.Errorf("%s -m mockserver.client.generate --check: %v\n%s", python, err, output)
	}
}

func pythonWithMockserver() string {
	candidates := []string{os.Getenv("MOCKSERVER_PYTHON")}
	if command := os.Getenv("MOCKSERVER_COMMAND"); command != "" {
		candidates = append(candidates, filepath.Join(filepath.Dir(command), "python"))
	}
	candidates = append(candidates, filepath.Join(repository, ".venv", "bin", "python"))
	for _, candidate := range candidates {
		if candidate == "" {
			continue
		}
		if absolute, err := filepath.Abs(candidate); err == nil {
			candidate = absolute
		}
		if exec.Command(candidate, "-c", "import mockserver.client.generate").Run() == nil {
			return candidate
		}
	}
	return ""
}

// TestGeneratedTypesHoldTheFieldsTheServerSends: the fields the Node client's Call lacked before its types were
// generated are typed here too (a misspelled one does not compile), and a nullable one is a pointer.
func TestGeneratedTypesHoldTheFieldsTheServerSends(t *testing.T) {
	rule := "build-fails/build-breaks"
	call := mockclient.Call{ScenarioRule: &rule, Body: map[string]any{"name": "x"}, Response: "cut", Token: nil}
	if *call.ScenarioRule != rule || call.Token != nil || call.Body == nil || call.Response != "cut" {
		t.Fatalf("call: %+v", call)
	}
}
