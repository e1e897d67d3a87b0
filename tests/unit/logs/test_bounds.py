"""Hostile logs (issue 40 item 1): every one is a named MeasurementError or a read with its skips counted; none is a
traceback, a signal, a block or a memory blow-up. The caps are data/log_limits.toml's; speed and memory figures
are in benchmarks/run.py ("load a one-million-line log"), not timed here. Also the two folder formats
(TensorBoard event files, MLflow runs)."""

from __future__ import annotations

import json
import os
import signal
import sys

import pytest

import tcocalc as tc
from tcocalc.catalog import run_metrics
from tcocalc.logs import registry
from tests.conftest import ROOT

LIM = run_metrics.log_limits()


def write(tmp_path, name: str, data: str | bytes):
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def refused(path, match: str, **kw) -> tc.MeasurementError:
    with pytest.raises(tc.MeasurementError, match=match) as err:
        tc.load_measurements(path, **kw)
    return err.value


# ---------------------------------------------------------------- file types, never opened


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_character_devices_are_refused_by_type():
    for dev in ("/dev/zero", "/dev/urandom", "/dev/null"):
        if os.path.exists(dev):
            assert refused(dev, f"{dev}: a character device, not a log file").field == "path"


@pytest.mark.skipif(sys.platform == "win32", reason="no FIFOs")
@pytest.mark.parametrize("name", ["pipe", "metrics.csv"])
def test_a_fifo_without_a_writer_is_refused_without_blocking(tmp_path, name):
    path = tmp_path / name
    os.mkfifo(path)
    signal.signal(signal.SIGALRM, lambda *_: pytest.fail("reading a FIFO blocked"))
    signal.alarm(10)
    try:
        refused(path, r"a FIFO \(named pipe\), not a log file")
    finally:
        signal.alarm(0)


def test_a_directory_with_no_log(tmp_path):
    (tmp_path / "notes.md").write_text("hello")
    refused(tmp_path, "a folder with no log a reader takes")


def test_empty_and_blank_files(tmp_path):
    refused(write(tmp_path, "e.log", ""), "e.log: an empty file")
    refused(write(tmp_path, "b.log", "\n \n\t\n"), "b.log: a file of blank lines only")


def test_binary_garbage(tmp_path):
    data = bytes(range(256)) * 64
    refused(write(tmp_path, "g.csv", data), r"g.csv: binary data \(64 NUL bytes in the first 16,384\), not a text log")


# ---------------------------------------------------------------- lines, keys and nesting


def test_a_line_longer_than_the_cap_names_its_length_and_the_cap(tmp_path):
    path = write(tmp_path, "w.log", "x" * 40_000_000 + "\n")
    refused(path, r"w.log: line 1 is 40.0 MB; the longest line a log reader accepts is 4.0 MB "
                  r"\(data/log_limits.toml max_line_bytes\)")


def test_a_console_line_of_two_million_pairs_is_refused_by_name(tmp_path):
    line = "step:1 - " + " - ".join(f"k{i}:{i}" for i in range(2_000_000)) + "\n"
    refused(write(tmp_path, "p.log", line), r"p.log: line 1 is \d+\.\d MB; the longest line a log reader accepts")


def test_a_csv_header_of_two_million_columns_is_refused_by_name(tmp_path):
    header = "_step," + ",".join(f"c{i}" for i in range(2_000_000)) + "\n"
    refused(write(tmp_path, "h.csv", header + "1,2\n"), r"h.csv: line 1 is \d+\.\d MB; the longest line")


def test_distinct_keys_beyond_the_cap_are_counted_not_kept(tmp_path):
    """A JSONL of 20,000 sparse keys (each row its own keys) keeps at most max_unmapped_keys names."""
    rows = [json.dumps({"step": s, "data": {"timing_s/step": 10.0 + s, **{f"k{s}_{j}": 1.0 for j in range(100)}}})
            for s in range(1, 201)]
    m = tc.load_measurements(write(tmp_path, "k.jsonl", "\n".join(rows) + "\n"))
    assert m.framework == "verl" and len(m.ignored_keys) == LIM.max_unmapped_keys
    assert any("19,000 more key occurrences were counted, not kept" in w for w in m.warnings)


def test_a_long_console_line_under_the_cap_reads(tmp_path):
    pairs = " - ".join(f"x/k{i}:{i}" for i in range(200_000))
    text = "".join(f"step:{s} - timing_s/step:{60 + s} - {pairs}\n" for s in range(1, 4))
    m = tc.load_measurements(write(tmp_path, "l.log", text))
    assert m["step_time_s"] == 62.5 and len(m.ignored_keys) == LIM.max_unmapped_keys


@pytest.mark.parametrize(("name", "text"), [
    ("deep.json", "[" * 200_000 + "]" * 200_000),
    ("deep.jsonl", '{"step": 1, "a": ' + "[" * 100_000 + "]" * 100_000 + "}\n" + '{"step": 2}\n'),
    ("deep.log", "(A pid=1) perf 1: {'a': " + "[" * 100_000 + "]" * 100_000 + "}\n"),
    ("deepdict.log", "{'a': " + "{'b': " * 50_000 + "1" + "}" * 50_001 + "\n"),
])
def test_deep_nesting_is_a_named_error_never_a_recursion_error(tmp_path, name, text):
    with pytest.raises(tc.MeasurementError) as err:
        tc.load_measurements(write(tmp_path, name, text))
    assert "Recursion" not in str(err.value)
    if name == "deep.json":
        assert f"nests deeper than {LIM.max_json_depth} levels (data/log_limits.toml max_json_depth)" in str(err.value)


def test_a_json_document_above_its_cap(tmp_path, monkeypatch):
    from tcocalc.logs import source
    small = run_metrics.LogLimits(**{**LIM.__dict__, "max_json_bytes": 1000})
    monkeypatch.setattr(source, "log_limits", lambda: small)
    path = write(tmp_path, "big.json", json.dumps({"log_history": [{"step": i, "loss": 0.1} for i in range(200)]},
                                                  indent=2))
    refused(path, r"big.json: this JSON document is larger than 1,000 bytes")


def test_nan_and_negative_timers_in_a_console_log(tmp_path):
    text = "".join(f"step:{s} - timing_s/step:{60 + s} - timing_s/gen:{30 + s}\n" for s in range(1, 11))
    text = text.replace("timing_s/gen:34", "timing_s/gen:nan").replace("timing_s/step:66", "timing_s/step:-66")
    m = tc.load_measurements(write(tmp_path, "n.log", text))
    assert m.skipped_steps == (4, 6)
    assert any(w.startswith("2 of 9 steps skipped as unsound (step 4: timing_s/gen is not a finite number; step 6: "
                            "timing_s/step is negative (-66))") for w in m.warnings)
    assert m["step_time_s"] == 67.0  # steps 2, 3, 5, 7, 8, 9, 10: 62, 63, 65, 67, 68, 69, 70


def test_limits_file_is_checked():
    text = (ROOT / "data" / "log_limits.toml").read_text()
    assert run_metrics.parse_log_limits(text) == LIM
    with pytest.raises(tc.DataFileError, match="field 'max_bytes'"):
        run_metrics.parse_log_limits(text.replace("max_bytes = 200_000_000", "max_bytes = 0"))
    with pytest.raises(tc.DataFileError, match="field 'nesting_rel_tolerance': expected a tolerance"):
        run_metrics.parse_log_limits(text.replace("nesting_rel_tolerance = 0.01", "nesting_rel_tolerance = 2.0"))


# ---------------------------------------------------------------- TensorBoard event files, MLflow runs


def _events(folder, points):
    pytest.importorskip("tensorboard")
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
    writer = EventFileWriter(str(folder))
    for step, tag, value in points:
        summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)])
        writer.add_event(event_pb2.Event(wall_time=1000.0 + step, step=step, summary=summary))
    writer.close()
    return next(folder.glob("events.out.tfevents.*"))


@pytest.mark.reference
def test_tensorboard_event_files_are_read_directly(tmp_path):
    """NeMo RL's keys as its tensorboard logger writes them: steps 1..6, 1 dropped; total 70, 72, ... -> 74."""
    points = [(s, k, v) for s in range(1, 7) for k, v in (("timing/train/total_step_time", 68.0 + 2 * s),
                                                          ("timing/train/generation", 30.0 + s),
                                                          ("train/loss", 0.5))]
    path = _events(tmp_path / "tb", points)
    for where in (tmp_path / "tb", path):
        m = tc.load_measurements(where)
        assert (m.framework, m.format, m.steps_used) == ("nemo-rl", "tensorboard-events", (2, 6))
        assert dict(m) == {"step_time_s": 76.0, "generation_s": 34.0}
        assert "train/loss" in m.ignored_keys


def test_a_cut_off_event_file_keeps_what_was_read(tmp_path):
    path = _events(tmp_path / "tb", [(s, "timing_s/step", 10.0 + s) for s in range(1, 8)])
    path.write_bytes(path.read_bytes()[:-20])  # the last record (step 7) cut off
    m = tc.load_measurements(tmp_path / "tb")
    assert m.steps_used == (2, 6) and m["step_time_s"] == 14.0


def test_event_files_without_the_tensorboard_package_say_how_to_get_it(tmp_path, monkeypatch):
    from tcocalc.logs.formats import tensorboard_events
    monkeypatch.setattr(tensorboard_events, "_loader", lambda: None)
    path = write(tmp_path, "events.out.tfevents.1.host", b"\x00" * 64)
    refused(path, r"TensorBoard event files need the tensorboard package: pip install 'tcocalc\[tensorboard\]'")


def _mlflow_run(root, run_id: str, name: str, series: dict[str, list[float]]):
    run = root / run_id
    (run / "tags").mkdir(parents=True)
    (run / "tags" / "mlflow.runName").write_text(name)
    for key, values in series.items():
        f = run / "metrics" / key
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("".join(f"{1_700_000_000_000 + 1000 * s} {v} {s}\n" for s, v in enumerate(values, 1)))
    return run


@pytest.mark.reference
def test_mlflow_run_folders(tmp_path):
    """mlruns/<experiment>/<run>/metrics/<key>: steps 1..5, 1 dropped; total 60..64 -> 62.5."""
    exp = tmp_path / "mlruns" / "1"
    series = {"timing/train/total_step_time": [60.0, 61.0, 62.0, 63.0, 64.0],
              "timing/train/policy_training": [20.0, 21.0, 22.0, 23.0, 24.0], "train/loss": [0.1] * 5}
    run = _mlflow_run(exp, "a1b2", "grpo-pilot", series)
    m = tc.load_measurements(run)
    assert (m.framework, m.format, m.steps_used) == ("nemo-rl", "mlflow", (2, 5))
    assert dict(m) == {"step_time_s": 62.5, "training_s": 22.5}
    assert tc.load_measurements(exp).summary == m.summary  # one run below: found
    _mlflow_run(exp, "c3d4", "other", series)
    refused(exp, r"holds 2 runs \(a1b2, c3d4\); pass run=")
    assert tc.load_measurements(exp, run="grpo-pilot").summary == m.summary


def test_the_registry_names_every_format_in_a_refusal(tmp_path):
    with pytest.raises(tc.MeasurementError) as err:
        tc.load_measurements(write(tmp_path, "x.txt", "hello\nworld\n"))
    for fmt in registry.REGISTRY:
        assert fmt.what in str(err.value)


def test_values_held_are_capped_whatever_the_format(tmp_path, monkeypatch):
    """max_cells bounds memory where a byte cap cannot: a dense log of mapped keys keeps every value it reads."""
    import dataclasses

    from tcocalc.logs import source, table
    small = dataclasses.replace(LIM, max_cells=100)
    monkeypatch.setattr(source, "log_limits", lambda: small)
    monkeypatch.setattr(table, "limits", lambda: small)
    csv_log = write(tmp_path, "d.csv", "_step,timing_s/step,timing_s/gen\n"
                    + "".join(f"{s},{60 + s},{30 + s}\n" for s in range(1, 60)))
    console = write(tmp_path, "d.log", "".join(f"step:{s} - timing_s/step:{60 + s} - timing_s/gen:{30 + s}\n"
                                               for s in range(1, 60)))
    for path in (csv_log, console):
        refused(path, r"holds more than 100 values of the keys a reader maps \(.* rows x 3 keys so far; "
                      r"data/log_limits.toml max_cells\)")
    assert tc.load_measurements(write(tmp_path, "ok.log", "".join(
        f"step:{s} - timing_s/step:{60 + s}\n" for s in range(1, 20))))["step_time_s"] == 71.0  # steps 3..19


def test_a_csv_of_many_duplicate_column_names_reads(tmp_path):
    """30,000 columns named alike (pandas renames duplicates in quadratic time: a minute before the header was
    skipped instead of parsed; 1.9 million took over 10 minutes)."""
    header = "_step,timing_s/step," + ",".join("a" for _ in range(30_000)) + "\n"
    rows = "".join(f"{s},{60 + s}," + ",".join("1" for _ in range(30_000)) + "\n" for s in range(1, 4))
    m = tc.load_measurements(write(tmp_path, "dup.csv", header + rows))
    assert m["step_time_s"] == 62.5 and m.ignored_keys == ("a",)


def test_csv_cut_after_its_header_or_with_a_short_first_row(tmp_path):
    """Found by mutating the fixtures (1,200 cut, flipped and padded copies: 0 unnamed errors after the fix)."""
    with pytest.raises(tc.MeasurementError, match="holds no logged row"):
        tc.load_measurements(write(tmp_path, "h.csv", "_step,timing_s/step,timing_s/gen\n"))
    text = "_step,timing_s/step,timing_s/gen\n1,61\n" + "".join(f"{s},{60 + s},{30 + s}\n" for s in range(2, 6))
    m = tc.load_measurements(write(tmp_path, "s.csv", text))
    assert m["step_time_s"] == 63.5 and m["generation_s"] == 33.5  # steps 2..5, the short row 1 dropped as warm-up
    with pytest.raises(tc.MeasurementError, match=r"q.csv: not a readable CSV"):
        tc.load_measurements(write(tmp_path, "q.csv", '_step,timing_s/step\n1,"2\n2,3\n'))


def test_spread_ratio_comes_from_the_limits_file():
    """The two-kinds-of-step threshold is data: missing or not a ratio above 1, the file is refused naming it."""
    text = (ROOT / "data" / "log_limits.toml").read_text()
    with pytest.raises(tc.DataFileError, match="spread_ratio.*missing"):
        run_metrics.parse_log_limits(text.replace("spread_ratio = 3.0", ""))
    with pytest.raises(tc.DataFileError, match="spread_ratio.*a ratio above 1"):
        run_metrics.parse_log_limits(text.replace("spread_ratio = 3.0", "spread_ratio = 0.5"))
