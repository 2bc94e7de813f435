package mocktest_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"idp-mockserver/clients/go/mockclient"
	"idp-mockserver/clients/go/mocktest"
)

// TestStartLocalProcess starts a mock of its own from MOCKSERVER_COMMAND with extra arguments, uses it
// beside the shared mock (two mocks in one process: same sandbox name, separate worlds), and stops it.
func TestStartLocalProcess(t *testing.T) {
	t.Parallel()
	scenario := filepath.Join(t.TempDir(), "slow-status.yaml")
	os.WriteFile(scenario, []byte("name: slow-status\nrules:\n  - name: slow\n    match: {operation: getApplicationStatus}\n    effect: {latency_ms: 1}\n"), 0o644)
	var output bytes.Buffer
	server, err := mockclient.StartProcess(context.Background(), mockclient.ProcessOptions{
		Args: []string{"--scenario", scenario}, Output: &output}) // written until Stop returns, read after
	if err != nil {
		t.Fatal(err)
	}
	defer server.Stop()
	if !strings.HasPrefix(server.URL, "http://127.0.0.1:") {
		t.Fatalf("URL %s", server.URL)
	}
	health, err := server.Client.Health(context.Background())
	if err != nil || health.Clock != "manual" || health.Version == "" {
		t.Fatalf("health: %+v %v", health, err)
	}

	t.Run("beside the shared mock", func(t *testing.T) { // its sandboxes are deleted before the Stop below
		mine := mocktest.SandboxOn(t, server.Client)
		shared := mocktest.Sandbox(t)
		if mine.Root() == shared.Root() {
			t.Fatalf("both handles are on %s", mine.Root())
		}
		if names := mine.Scenarios(); len(names) != 1 || names[0].Name != "slow-status" {
			t.Errorf("scenarios of the mock started with --scenario: %+v", names)
		}
		mine.Advance(time.Hour)
		if offset := shared.Clock().OffsetSeconds; offset != 0 {
			t.Errorf("the shared mock's sandbox moved with the other mock's: %v", offset)
		}
	})
	if !strings.Contains(server.Output(), "mockserver ") {
		t.Errorf("the output kept: %q", server.Output())
	}

	if err := server.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := server.Stop(); err != nil { // twice is fine
		t.Fatal(err)
	}
	if _, err := server.Client.Health(context.Background()); err == nil {
		t.Fatalf("the mock still answers after Stop")
	}
	if !strings.Contains(output.String(), server.URL) {
		t.Errorf("Output did not get the start line: %q", output.String())
	}
}

// TestStartProcessSaysWhyItCannot: a command that is not there names MOCKSERVER_COMMAND; a mock that
// refuses its options passes its one line on.
func TestStartProcessSaysWhyItCannot(t *testing.T) {
	t.Parallel()
	_, err := mockclient.StartProcess(context.Background(), mockclient.ProcessOptions{Command: "/nonexistent/mockserver"})
	if err == nil || !strings.Contains(err.Error(), "MOCKSERVER_COMMAND") {
		t.Fatalf("a missing command: %v", err)
	}
	_, err = mockclient.StartProcess(context.Background(), mockclient.ProcessOptions{Args: []string{"--speed", "nan"}})
	if err == nil || !strings.Contains(err.Error(), "--speed") {
		t.Fatalf("a refused option: %v", err)
	}
}

// TestConnectToARunningMock connects by URL and by MOCKSERVER_URL (health polled), and gives up at once on
// a URL where nothing listens.
func TestConnectToARunningMock(t *testing.T) {
	url := mocktest.Server(t).Root()
	client := mocktest.Connect(t, url, nil)
	if _, err := client.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MOCKSERVER_URL", url)
	fromEnv, err := mockclient.Connect(context.Background(), "", nil)
	if err != nil || fromEnv.Root() != url {
		t.Fatalf("Connect from MOCKSERVER_URL: %v %v", fromEnv, err)
	}
	h := mocktest.SandboxOn(t, fromEnv)
	if code, _ := on(t, h, "reader", "GET", "/organization", nil); code != 200 {
		t.Fatalf("GET /organization in a sandbox of the mock connected: %d", code)
	}
	_, err = mockclient.Connect(context.Background(), "http://127.0.0.1:9", nil)
	if err == nil || err.Error() != "mockclient: nothing listens at http://127.0.0.1:9 (the URL given to Connect): connection refused" {
		t.Fatalf("connecting where nothing listens: %v", err)
	}
}

// TestControlToken runs a mock with --control-token: the client sends it as a Bearer token, a client
// without it gets the 401 with the server's message, and the tokens fall back to the default table.
func TestControlToken(t *testing.T) {
	t.Parallel()
	server := mocktest.StartProcess(t, mockclient.ProcessOptions{Args: []string{"--control-token", "go-secret"},
		Client: mockclient.Options{ControlToken: "go-secret"}})
	h := mocktest.SandboxOn(t, server.Client)
	h.Advance(time.Minute)
	if code, _ := on(t, h, "deployer", "POST", "/application/"+webID+"/deploy", nil); code != 202 {
		t.Fatalf("deploy with the default deployer token: %d", code)
	}
	h.AssertCalled(t, mockclient.Filter{Operation: "deployApplication"}, mockclient.Times(1))
	wrong, err := mockclient.New(server.URL, &mockclient.Options{ControlToken: "not-it"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = wrong.Sandbox(h.SandboxName()).Clock(context.Background())
	if mockclient.StatusOf(err) != 401 || !strings.Contains(err.Error(), "answered 401: ") {
		t.Fatalf("a control call with another token: %v, want a 401 with the server's message", err)
	}
	if code, _ := api(t, server.URL, "", "GET", "/_mock/clock", nil); code != 401 {
		t.Fatalf("a control call without a token: %d, want 401", code)
	}
}

// TestStartContainer runs the image with the docker CLI (host networking by default here, since these
// engines have no bridge; MOCKSERVER_DOCKER_NETWORK=bridge maps a port instead). Skipped, with the
// reason, when no engine answers or the image is missing.
func TestStartContainer(t *testing.T) {
	t.Parallel()
	network := "host"
	if os.Getenv("MOCKSERVER_DOCKER_NETWORK") == "bridge" {
		network = ""
	}
	server := mocktest.StartContainer(t, mockclient.ContainerOptions{Network: network})
	checkContainer(t, server)
}

// TestStartContainerMappedPort runs the image on a mapped port (the default of StartContainer, for
// engines with a bridge network). Skipped, with the reason, when the engine has no bridge network.
func TestStartContainerMappedPort(t *testing.T) {
	t.Parallel()
	if reason := mockclient.ContainerUnavailable(context.Background(), mockclient.ContainerOptions{}); reason != nil {
		t.Skipf("SKIPPED: the container way needs a Docker engine and the image: %v", reason)
	}
	docker := os.Getenv("MOCKSERVER_DOCKER")
	if docker == "" {
		docker = "docker"
	}
	if err := exec.Command(docker, "network", "inspect", "bridge").Run(); err != nil {
		t.Skipf("SKIPPED: this Docker engine has no bridge network (mapped ports need one; host networking is tested by TestStartContainer)")
	}
	server := mocktest.StartContainer(t, mockclient.ContainerOptions{})
	checkContainer(t, server)
}

func checkContainer(t *testing.T, server *mockclient.Server) {
	t.Helper()
	health, err := server.Client.Health(context.Background())
	if err != nil || health.Status != "ok" || health.Clock != "manual" {
		t.Fatalf("health of the container: %+v %v", health, err)
	}
	h := mocktest.SandboxOn(t, server.Client)
	on(t, h, "deployer", "POST", "/application/"+webID+"/deploy", nil)
	h.Advance(10 * time.Minute)
	if state := status(t, h, webID); state != "DEPLOYED" {
		t.Fatalf("state in the container's sandbox: %s", state)
	}
	h.AssertCalled(t, mockclient.Filter{Operation: "deployApplication"}, mockclient.Times(1))
}
