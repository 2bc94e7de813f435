package mockclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// DefaultImage is the image StartContainer runs when neither ContainerOptions.Image nor MOCKSERVER_IMAGE
// names one (build it from the repository's Dockerfile: docker build -t idp-mockserver:local .).
const DefaultImage = "idp-mockserver:local"

// ContainerOptions shape StartContainer. The zero value runs $MOCKSERVER_IMAGE (else idp-mockserver:local)
// with a manual clock on a port of 127.0.0.1 mapped to the container's 8080.
type ContainerOptions struct {
	// Image to run. Default: the environment variable MOCKSERVER_IMAGE, else DefaultImage.
	Image string
	// Network is "" (a random port of 127.0.0.1 mapped to the container's 8080: engines with a bridge
	// network) or "host" (host networking: the server is told its port with PORT and HOST=127.0.0.1,
	// for engines without a bridge).
	Network string
	// Port is the port of 127.0.0.1 the mock listens on with Network "host" (0: a free one).
	Port int
	// Clock is "manual" (the default) or "real" (MOCKSERVER_CLOCK in the container).
	Clock string
	// Env adds KEY=VALUE entries to the container's environment (e.g. MOCKSERVER_SCENARIOS=...).
	Env []string
	// RunArgs are more arguments of docker run, before the image (e.g. "-v", "/x:/srv/mockserver/scenarios:ro").
	RunArgs []string
	// Args, when given, replace the image's command by `mockserver serve ARGS...`.
	Args []string
	// Docker is the docker CLI. Default: the environment variable MOCKSERVER_DOCKER, else "docker".
	Docker string
	// StartTimeout bounds the wait for /_mock/health. Default 60 s.
	StartTimeout time.Duration
	// Client shapes the client on the mock (control token, warnings ...).
	Client Options
}

func (o ContainerOptions) docker() string {
	if o.Docker != "" {
		return o.Docker
	}
	if docker := os.Getenv("MOCKSERVER_DOCKER"); docker != "" {
		return docker
	}
	return "docker"
}

func (o ContainerOptions) image() string {
	if o.Image != "" {
		return o.Image
	}
	if image := os.Getenv("MOCKSERVER_IMAGE"); image != "" {
		return image
	}
	return DefaultImage
}

// ContainerUnavailable says why StartContainer cannot run here, nil when it can: the docker CLI runs,
// an engine answers (docker info), and the image exists locally (docker image inspect). Tests of the
// container way skip with this reason.
func ContainerUnavailable(ctx context.Context, opts ContainerOptions) error {
	docker, image := opts.docker(), opts.image()
	if _, err := exec.LookPath(docker); err != nil {
		return fmt.Errorf("no docker CLI (%s): %v", docker, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := run(ctx, docker, "info", "--format", "{{.ServerVersion}}"); err != nil {
		return fmt.Errorf("no Docker engine answers (%s info): %v", docker, err)
	}
	if _, err := run(ctx, docker, "image", "inspect", "--format", "{{.Id}}", image); err != nil {
		return fmt.Errorf("the image %s is not on this engine (build it: docker build -t %s .; or set MOCKSERVER_IMAGE)",
			image, image)
	}
	return nil
}

// StartContainer runs the mock's image with the docker CLI (docker run -d), waits until /_mock/health
// answers 200 and checks the server's version. Server.Stop removes the container (docker rm -f -v).
func StartContainer(ctx context.Context, opts ContainerOptions) (*Server, error) {
	docker, image := opts.docker(), opts.image()
	clock := opts.Clock
	if clock == "" {
		clock = "manual"
	}
	timeout := opts.StartTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	args := []string{"run", "-d", "--label", "idp-mockserver.client=go", "-e", "MOCKSERVER_CLOCK=" + clock}
	port := opts.Port
	switch opts.Network {
	case "host":
		if port == 0 {
			free, err := freePort()
			if err != nil {
				return nil, err
			}
			port = free
		}
		args = append(args, "--network", "host", "-e", "HOST=127.0.0.1", "-e", "PORT="+strconv.Itoa(port))
	case "":
		args = append(args, "-p", "127.0.0.1::8080")
	default:
		return nil, fmt.Errorf("mockclient: ContainerOptions.Network: %q is neither \"\" (mapped port) nor \"host\"", opts.Network)
	}
	for _, entry := range opts.Env {
		args = append(args, "-e", entry)
	}
	args = append(args, opts.RunArgs...)
	args = append(args, image)
	if len(opts.Args) > 0 {
		args = append(append(args, "mockserver", "serve"), opts.Args...)
	}
	started, err := run(ctx, docker, args...)
	if err != nil {
		return nil, fmt.Errorf("mockclient: %s run %s: %v", docker, image, err)
	}
	id := strings.TrimSpace(started)
	stop := func() error {
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := run(stopCtx, docker, "rm", "-f", "-v", id); err != nil {
			return fmt.Errorf("mockclient: %s rm -f %s: %v", docker, shortID(id), err)
		}
		return nil
	}
	fail := func(problem error) (*Server, error) {
		logsCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		said, _ := exec.CommandContext(logsCtx, docker, "logs", "--tail", "40", id).CombinedOutput()
		cancel()
		logs := string(said)
		stop()
		message := problem.Error()
		if logs = strings.TrimSpace(logs); logs != "" {
			message += "; the container said:\n" + logs
		}
		return nil, errors.New(message)
	}
	if opts.Network == "" {
		mapped, err := run(ctx, docker, "port", id, "8080/tcp")
		if err != nil {
			return fail(fmt.Errorf("mockclient: %s port %s: %v", docker, shortID(id), err))
		}
		_, portText, err := net.SplitHostPort(strings.TrimSpace(strings.SplitN(mapped, "\n", 2)[0]))
		if err != nil {
			return fail(fmt.Errorf("mockclient: %s port %s said %q", docker, shortID(id), mapped))
		}
		port, _ = strconv.Atoi(portText)
	}
	root := "http://127.0.0.1:" + strconv.Itoa(port)
	client, err := New(root, &opts.Client)
	if err != nil {
		return fail(err)
	}
	alive := func() error {
		state, err := run(ctx, docker, "inspect", "--format", "{{.State.Running}}", id)
		if err == nil && strings.TrimSpace(state) == "false" {
			return fmt.Errorf("mockclient: the container %s stopped before answering", shortID(id))
		}
		return nil
	}
	if err := waitHealthy(ctx, root, timeout, everyNth(alive, 20), nil); err != nil {
		return fail(err)
	}
	if _, err := client.CheckVersion(ctx); err != nil {
		return fail(err)
	}
	return &Server{URL: root, Client: client, stop: stop}, nil
}

// everyNth calls check on the first call and then every nth (docker inspect is slower than a probe).
func everyNth(check func() error, n int) func() error {
	calls := 0
	return func() error {
		calls++
		if calls%n != 1 {
			return nil
		}
		return check()
	}
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if said := strings.TrimSpace(stderr.String()); said != "" {
			return stdout.String(), fmt.Errorf("%v: %s", err, said)
		}
		return stdout.String(), err
	}
	return stdout.String(), nil
}

func freePort() (int, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer listener.Close()
	return listener.Addr().(*net.TCPAddr).Port, nil
}
