//go:build !linux

package mockclient

import "syscall"

func processAttributes() *syscall.SysProcAttr { return nil }
