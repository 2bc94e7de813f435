//go:build !unix

package mockclient

import "sync"

var writing sync.Mutex // no file lock here: the writers of this process take turns, no others

func lockFile(where string) (func(), error) {
	writing.Lock()
	return writing.Unlock, nil
}
