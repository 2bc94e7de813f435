"""A transport without a socket for the protocol `serve` runs (process/connections.py), driven in-process by the
tests of tests/process."""

import asyncio


class Transport(asyncio.Transport):
    """Keeps every write apart; never blocks."""

    def __init__(self):
        super().__init__()
        self.writes, self.closing = [], False

    def write(self, data):
        self.writes.append(bytes(data))

    def get_extra_info(self, name, default=None):
        return {"sockname": ("127.0.0.1", 8080), "peername": ("127.0.0.1", 50000)}.get(name, default)

    def is_closing(self):
        return self.closing

    def close(self):
        self.closing = True

    def pause_reading(self):
        pass

    def resume_reading(self):
        pass

    def get_write_buffer_size(self):
        return 0

    def can_write_eof(self):
        return True

    def write_eof(self):
        pass
