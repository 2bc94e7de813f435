"""The change log's framing (sandboxes/logfile.py): every record can be checked on its own, so reading tells a
write cut short at the end of the newest segment (never acknowledged: left out) from damage anywhere else (which
costs the records in its bytes alone, and is named by file, record and byte)."""

import orjson
import pytest

from mockserver.core.errors import StartupError
from mockserver.sandboxes.logfile import MAGIC, check_damage, frame, read_log, record_at


def records(count, start=0):
    return [{"kind": "api", "n": start + index, "body": {"name": f"project-{start + index}", "text": "a\nb"}}
            for index in range(count)]


def segment(items):
    return MAGIC + b"".join(frame(orjson.dumps(item)) for item in items)


def write(folder, number, data):
    path = folder / f"state.bin.log.{number}"
    path.write_bytes(data)
    return path


def numbers(reading):
    return [record["n"] for _, record in reading.records]


def starts(items):
    """Where each record of a segment of `items` begins."""
    at, out = len(MAGIC), []
    for item in items:
        out.append(at)
        at += len(frame(orjson.dumps(item)))
    return out


def test_a_record_is_its_checksum_its_length_and_its_json_on_one_line():
    payload = orjson.dumps({"kind": "api", "body": {"text": "two\nlines"}})
    framed = frame(payload)
    assert framed.count(b"\n") == 1 and framed.endswith(b"\n")
    kind, read, end = record_at(framed, 0)
    assert (kind, read, end) == ("whole", payload, len(framed))


def test_records_are_read_back_in_order_across_segments_with_their_positions(tmp_path):
    write(tmp_path, 1, segment(records(3)))
    write(tmp_path, 2, segment(records(2, 3)))
    reading = read_log(str(tmp_path / "state.bin"))
    assert numbers(reading) == [0, 1, 2, 3, 4] and not reading.damage and not reading.torn
    assert [position[0] for position, _ in reading.records] == [1, 1, 1, 2, 2]
    after = reading.records[1][0]                     # what a save holding the first two would note
    assert numbers(read_log(str(tmp_path / "state.bin"), after=after)) == [2, 3, 4]


def test_every_cut_inside_the_last_record_of_the_newest_segment_is_a_torn_tail_left_out(tmp_path):
    items = records(5)
    whole = segment(items)
    last = starts(items)[-1]
    for cut in range(last + 1, len(whole)):          # the last write, cut after any of its bytes
        write(tmp_path, 1, whole[:cut])
        reading = read_log(str(tmp_path / "state.bin"))
        assert numbers(reading) == [0, 1, 2, 3] and reading.damage == [], cut
        assert reading.torn == cut - last


def test_zeros_after_the_last_record_are_a_torn_tail(tmp_path):
    write(tmp_path, 1, segment(records(4)) + b"\0" * 4096)
    reading = read_log(str(tmp_path / "state.bin"))
    assert numbers(reading) == [0, 1, 2, 3] and reading.torn == 4096 and reading.damage == []


def test_a_changed_byte_in_record_10_costs_that_record_alone_and_names_it(tmp_path):
    items = records(100)
    data = bytearray(segment(items))
    at = starts(items)[9] + 30                       # in the payload of the tenth record
    data[at] ^= 0x01
    path = write(tmp_path, 1, bytes(data))
    reading = read_log(str(tmp_path / "state.bin"))
    assert numbers(reading) == [n for n in range(100) if n != 9]
    [damage] = reading.damage
    assert (damage.file, damage.record, damage.offset) == (str(path), 10, starts(items)[9])
    assert "checksum" in damage.describe() and "record 10" in damage.describe()


@pytest.mark.parametrize("where", ["checksum digit", "length digit", "line break", "space"])
def test_damage_to_a_records_frame_costs_at_most_it_and_its_neighbour(tmp_path, where):
    items = records(20)
    data = bytearray(segment(items))
    start = starts(items)[5]
    frame_of = frame(orjson.dumps(items[5]))
    at = {"checksum digit": start + 3, "length digit": start + 9, "space": start + 8,
          "line break": start + len(frame_of) - 1}[where]
    data[at] = ord("x")
    write(tmp_path, 1, bytes(data))
    reading = read_log(str(tmp_path / "state.bin"))
    lost = sorted(set(range(20)) - set(numbers(reading)))
    assert lost in ([5], [5, 6]) and reading.damage and not reading.torn, (where, lost)
    assert numbers(reading) == sorted(numbers(reading))


def test_a_whole_last_record_with_a_changed_byte_is_damage_not_a_tear(tmp_path):
    items = records(5)
    data = bytearray(segment(items))
    data[starts(items)[-1] + 25] ^= 0x20
    write(tmp_path, 1, bytes(data))
    reading = read_log(str(tmp_path / "state.bin"))
    assert numbers(reading) == [0, 1, 2, 3] and reading.torn == 0 and len(reading.damage) == 1


def test_an_older_segment_that_ends_in_half_a_record_is_damage(tmp_path):
    whole = segment(records(3))
    write(tmp_path, 1, whole[:-10])
    write(tmp_path, 2, segment(records(2, 3)))
    reading = read_log(str(tmp_path / "state.bin"))
    assert numbers(reading) == [0, 1, 3, 4] and reading.torn == 0
    assert [damage.file.rsplit(".", 1)[-1] for damage in reading.damage] == ["1"]


def test_a_file_that_is_not_a_segment_is_damage(tmp_path):
    write(tmp_path, 1, b'{"kind": "api"}\n' * 3)
    reading = read_log(str(tmp_path / "state.bin"))
    assert reading.records == [] and len(reading.damage) == 1 and "mark" in reading.damage[0].why


def test_damage_stops_the_start_naming_the_file_the_record_and_what_to_do_unless_skipped(tmp_path):
    items = records(12)
    data = bytearray(segment(items))
    data[starts(items)[9] + 30] ^= 0x01
    path = write(tmp_path, 1, bytes(data))
    reading = read_log(str(tmp_path / "state.bin"))
    with pytest.raises(StartupError) as refused:
        check_damage(str(tmp_path / "state.bin"), reading.damage, "stop")
    line = str(refused.value)
    assert "\n" not in line and str(path) in line and "record 10" in line and "--damaged-log skip" in line
    assert not (tmp_path / "state.bin.log.1.damaged").exists()
    check_damage(str(tmp_path / "state.bin"), reading.damage, "skip")
    assert (tmp_path / "state.bin.log.1.damaged").read_bytes() == bytes(data)
