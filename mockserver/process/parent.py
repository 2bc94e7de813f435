"""A mock that ends with the process that started it (`--exit-with-parent`).

A test runner killed with SIGKILL runs no clean-up, so the mock it started would live on, reparented. The
kernel tells a process when its parent ends only on Linux, and only if the parent asked for it (Go's
Pdeathsig); a Node or Python parent cannot ask in time. So the mock watches: when its parent process is no
longer the one that started it, it sends itself SIGTERM, the stop every other way of ending it takes (in-flight
requests finish, the state file is saved).
"""

import os
import signal
import threading

INTERVAL = 0.2                                  # seconds between two looks at the parent


def watch(interval=INTERVAL, getppid=os.getppid, stop=lambda: os.kill(os.getpid(), signal.SIGTERM)):
    """Watch the parent from a daemon thread; `stop` once it has gone. The thread, for tests."""
    started_by = getppid()

    def look():
        event = threading.Event()
        while not event.wait(interval):
            if getppid() != started_by:
                stop()
                return

    thread = threading.Thread(target=look, name="mockserver-parent", daemon=True)
    thread.start()
    return thread
