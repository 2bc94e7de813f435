"""Stopping `mockserver serve`: a SIGINT or SIGTERM is never lost, however early it comes.

uvicorn listens for the two signals only once its server runs, and after a stop it sends the signal again
to the handler that was there before. `Server` puts its own handler there when it is made: a signal that
comes before uvicorn listens (while the event loop is being made, say, when an orchestrator stops the mock
just after starting it) is noted and hands uvicorn the stop as soon as it listens; the signal uvicorn sends
again after the stop is noted too, so that the exit status says how the stop went instead of a traceback.
"""

import contextlib
import signal

import uvicorn

STOPS = (signal.SIGINT, signal.SIGTERM)
# What of uvicorn's Server this module uses beyond its constructor and `run` (tests/process/test_uvicorn_insides.py)
UVICORN_SERVER_INSIDES = ("capture_signals", "handle_exit")


class Server(uvicorn.Server):
    """uvicorn's server; a stop asked for before it listens for one stops it once it does. Made in the main
    thread (where signal handlers are set)."""

    def __init__(self, config):
        super().__init__(config)
        self.early = []                         # the stops that came before uvicorn listened
        for number in STOPS:
            signal.signal(number, self._noted)

    def _noted(self, number, frame):
        self.early.append(number)

    @contextlib.contextmanager
    def capture_signals(self):
        with super().capture_signals():
            for number in self.early:           # uvicorn listens now: each as if it came now
                self.handle_exit(number, None)
            self.early.clear()
            yield
