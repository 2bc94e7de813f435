"""`iso` renders times as datetime does (RFC 3339, microseconds rounded half to even), from a cache of the
second it rendered last."""

import random
from datetime import UTC, datetime

from mockserver.core.clock import FIRST, LATEST, iso


def _datetime(ts):
    moment = min(max(ts, FIRST), LATEST)
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="microseconds")[:-6] + "Z"


def test_iso_writes_what_datetime_writes_across_its_whole_range():
    pick = random.Random(7)
    edges = [0.0, -0.5, -1e-7, 0.9999995, 0.9999994, 1.0000005, 2.5e-6, 1764000000.1234565, 1764000000.9999999,
             FIRST, LATEST, LATEST + 5.0, FIRST - 5.0, -62135596799.9999995, 253402300799.9999]
    times = edges + [pick.uniform(FIRST, LATEST) for _ in range(20000)] + \
        [pick.uniform(1.7e9, 1.8e9) for _ in range(20000)] + [pick.uniform(-1e6, 1e6) for _ in range(5000)]
    wrong = [(ts, iso(ts), _datetime(ts)) for ts in times if iso(ts) != _datetime(ts)]
    assert wrong == []


def test_iso_of_a_running_clock_moves_with_it():
    assert [iso(1764000000.0 + step / 4) for step in range(6)] == [
        "2025-11-24T16:00:00.000000Z", "2025-11-24T16:00:00.250000Z", "2025-11-24T16:00:00.500000Z",
        "2025-11-24T16:00:00.750000Z", "2025-11-24T16:00:01.000000Z", "2025-11-24T16:00:01.250000Z"]
    assert iso(FIRST) == "0001-01-01T00:00:00.000000Z" and iso(LATEST) == "9999-12-31T23:59:59.000000Z"


def test_iso_of_times_within_one_second_as_a_busy_clock_reads_them():
    # one second rendered, then many times in it (the cache of the second is read): the edges where the
    # microseconds round up to the next second, times before 1970, and the last second it can render
    pick = random.Random(11)
    for whole in (1764000000.0, 0.0, -1.0, -86401.0, LATEST - 1.0, LATEST, FIRST):
        times = [whole, whole + 0.9999995, whole + 0.9999994, whole + 0.9999999, whole + 5e-7, whole + 1.5e-6]
        times += sorted(whole + pick.random() for _ in range(3000))
        wrong = [(ts, iso(ts), _datetime(ts)) for ts in times if iso(ts) != _datetime(ts)]
        assert wrong == [], whole
