package mockclient

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Server is a mock this process started (StartLocal, StartContainer): its URL, a client on it, and
// Stop. Stop it when done (mocktest does it in t.Cleanup).
type Server struct {
	URL    string  // root URL, e.g. http://127.0.0.1:41234
	Client *Client // a handle on the whole mock

	stopOnce sync.Once
	stopErr  error
	stop     func() error
	output   *tail
}

// Stop stops the mock (a process: SIGTERM, then a kill after 10 s; a container: docker rm -f). It may be
// called more than once.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() { s.stopErr = s.stop() })
	return s.stopErr
}

// Output is the last lines the mock wrote (a process's stdout and stderr; a container's logs are read by
// docker logs).
func (s *Server) Output() string {
	if s.output == nil {
		return ""
	}
	return s.output.String()
}

// LocalOptions shape StartLocal. The zero value runs
// `$MOCKSERVER_COMMAND serve --port 0 --clock manual --exit-with-parent`.
type LocalOptions struct {
	// Command is the mockserver executable. Default: the environment variable MOCKSERVER_COMMAND, else
	// "mockserver" on PATH.
	Command string
	// Clock is "manual" (the default: nothing moves until Advance) or "real".
	Clock string
	// Args are more arguments of `mockserver serve` (e.g. "--scenario", "scenarios/").
	Args []string
	// Env adds KEY=VALUE entries to the process's environment (which is this process's).
	Env []string
	// Output also receives what the process writes (stdout and stderr). Default: kept in memory only.
	Output io.Writer
	// StartTimeout bounds the wait for the first line and for /_mock/health. Default 30 s.
	StartTimeout time.Duration
	// Client shapes the client on the mock (control token, warnings ...).
	Client Options
}

var startLine = regexp.MustCompile(`\bon (https?://[^\s:]+:[0-9]+)`)

// ProcessOptions is LocalOptions.
//
// Deprecated: use LocalOptions.
type ProcessOptions = LocalOptions

// StartProcess is StartLocal.
//
// Deprecated: use StartLocal, the name of the Python and Node clients' function too.
func StartProcess(ctx context.Context, opts LocalOptions) (*Server, error) {
	return StartLocal(ctx, opts)
}

// StartLocal runs `COMMAND serve --port 0 --clock manual --exit-with-parent [args]`, reads the URL from the
// first line it prints (`mockserver 0.1.0 on http://127.0.0.1:PORT: ...`), waits until /_mock/health answers
// 200 (a refused connection meanwhile is waited out: the mock is starting), and checks the server's version.
//
// The mock ends with this process however it ends (a test binary killed with SIGKILL runs no clean-up):
// --exit-with-parent makes it stop when its parent process changes, on every system, and on Linux the
// kernel also sends it SIGTERM when this process dies (Pdeathsig).
func StartLocal(ctx context.Context, opts LocalOptions) (*Server, error) {
	command := opts.Command
	if command == "" {
		command = os.Getenv("MOCKSERVER_COMMAND")
	}
	if command == "" {
		command = "mockserver"
	}
	clock := opts.Clock
	if clock == "" {
		clock = "manual"
	}
	timeout := opts.StartTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	args := append([]string{"serve", "--port", "0", "--clock", clock, "--exit-with-parent"}, opts.Args...)
	cmd := exec.Command(command, args...)
	// the mock's lines come through pipes here: keep Python from holding them in its buffers
	cmd.Env = append(append(os.Environ(), "PYTHONUNBUFFERED=1"), opts.Env...)
	cmd.SysProcAttr = processAttributes()
	output := newTail(64)
	var sink io.Writer = output
	if opts.Output != nil {
		sink = io.MultiWriter(output, opts.Output)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("mockclient: cannot run %s (set MOCKSERVER_COMMAND to the mockserver executable): %v",
			command, err)
	}
	exited := make(chan struct{})
	var waitErr error
	var readers sync.WaitGroup
	first := make(chan string, 2)
	var sinkMu sync.Mutex
	for _, stream := range []io.Reader{stderr, stdout} {
		// the start line (on stderr; stdout is read too) gives the URL; every line is kept (and copied to
		// opts.Output)
		readers.Add(1)
		go func(stream io.Reader) {
			defer readers.Done()
			scanner := bufio.NewScanner(stream)
			scanner.Buffer(make([]byte, 64*1024), 1024*1024)
			found := false
			for scanner.Scan() {
				line := scanner.Text()
				if !found && startLine.MatchString(line) {
					found = true
					first <- line
				}
				sinkMu.Lock()
				sink.Write([]byte(line + "\n"))
				sinkMu.Unlock()
			}
			io.Copy(io.Discard, stream)
		}(stream)
	}
	go func() {
		readers.Wait()
		waitErr = cmd.Wait()
		close(exited)
	}()
	stop := func() error {
		select {
		case <-exited:
			return nil
		default:
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil { // no SIGTERM on Windows
			_ = cmd.Process.Kill()
		}
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			select {
			case <-exited:
			case <-time.After(5 * time.Second): // a child of its own still holds its output
			}
			return fmt.Errorf("mockclient: %s did not stop within 10 s of SIGTERM: killed", command)
		}
		return nil
	}
	fail := func(format string, args ...any) (*Server, error) {
		stop()
		message := fmt.Sprintf(format, args...)
		if said := strings.TrimSpace(output.String()); said != "" {
			message += "; it said:\n" + said
		}
		return nil, errors.New(message)
	}
	var line string
	select {
	case line = <-first:
	case <-exited:
		return fail("mockclient: %s %s exited (%v) before printing its start line", command, strings.Join(args, " "), waitErr)
	case <-time.After(timeout):
		return fail("mockclient: %s printed no start line (mockserver ... on http://HOST:PORT) within %s", command, timeout)
	case <-ctx.Done():
		return fail("mockclient: starting %s: %v", command, ctx.Err())
	}
	root := startLine.FindStringSubmatch(line)[1]
	client, err := New(root, &opts.Client)
	if err != nil {
		return fail("%v", err)
	}
	alive := func() error {
		select {
		case <-exited:
			return fmt.Errorf("mockclient: %s exited (%v) before answering", command, waitErr)
		default:
			return nil
		}
	}
	if err := waitHealthy(ctx, root, timeout, alive, nil); err != nil {
		return fail("%v", err)
	}
	if _, err := client.CheckVersion(ctx); err != nil {
		return fail("%v", err)
	}
	return &Server{URL: root, Client: client, stop: stop, output: output}, nil
}

// tail keeps the last lines written to it.
type tail struct {
	mu      sync.Mutex
	lines   []string
	partial string
	max     int
}

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	text := t.partial + string(p)
	parts := strings.Split(text, "\n")
	t.partial = parts[len(parts)-1]
	t.lines = append(t.lines, parts[:len(parts)-1]...)
	if len(t.lines) > t.max {
		t.lines = t.lines[len(t.lines)-t.max:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := append([]string{}, t.lines...)
	if t.partial != "" {
		lines = append(lines, t.partial)
	}
	return strings.Join(lines, "\n")
}
