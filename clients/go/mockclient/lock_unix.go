//go:build unix

package mockclient

import (
	"os"
	"syscall"
)

// lockFile opens and locks (exclusive flock) the lock file where. Its holder deletes the file before it
// lets go, so a writer that waited on a file deleted meanwhile (its path now names no file, or another
// one) has locked nothing the others see: it opens the path again. Locks of two open files conflict in
// one process too, so parallel tests of one binary take turns as well.
func lockFile(where string) (func(), error) {
	for {
		file, err := os.OpenFile(where, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(file.Fd()), syscall.LOCK_EX); err != nil {
			file.Close()
			return nil, err
		}
		named, errNamed := os.Stat(where)
		held, errHeld := file.Stat()
		if errNamed == nil && errHeld == nil && os.SameFile(named, held) {
			return func() {
				os.Remove(where) // while still held: whoever locks it next sees it is gone
				file.Close()     // lets the lock go
			}, nil
		}
		file.Close()
	}
}
