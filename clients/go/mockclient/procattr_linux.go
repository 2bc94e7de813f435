//go:build linux

package mockclient

import "syscall"

// processAttributes: the kernel sends the mock SIGTERM when the process that started it dies, so that a
// test binary killed before its clean-up leaves no mock behind.
func processAttributes() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
