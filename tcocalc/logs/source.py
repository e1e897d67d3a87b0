"""The one way a log is opened: file type checked before opening, size and line-length caps, text decoded line by
line with bad bytes replaced and counted, ANSI colour codes and carriage returns dropped.

Every cap comes from ``data/log_limits.toml`` (:func:`~tcocalc.catalog.run_metrics.log_limits`). A character
device (``/dev/zero``), a FIFO, a socket or a block device is refused from its ``stat`` before it is opened, so a
FIFO without a writer never blocks. Nothing here reads a whole file into memory.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..catalog.run_metrics import LogLimits, log_limits
from ..errors import MeasurementError

__all__ = ["error", "limits", "check_path", "Lines", "head_bytes", "megabytes", "read_bounded"]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
_CHUNK = 1 << 20


def limits() -> LogLimits:
    return log_limits()


def __getattr__(name: str):
    if name == "MAX_LOG_BYTES":  # the largest log read, in bytes (data/log_limits.toml max_bytes)
        return log_limits().max_bytes
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def error(path: str, message: str, **kw) -> MeasurementError:
    return MeasurementError("path", f"{path}: {message}", path=path, **kw)


def megabytes(n: int) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 100_000 else f"{n:,} bytes"


def _kind(mode: int) -> str | None:
    for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return None


def check_path(path: Path, shown: str) -> os.stat_result:
    """The ``stat`` of a log path that is a regular file or a folder; anything else is a named error (never opened).
    """
    try:
        st = path.stat()
    except FileNotFoundError:
        raise error(shown, "no such file or folder") from None
    except OSError as exc:
        raise error(shown, f"cannot be read ({exc.strerror or exc})") from None
    what = _kind(st.st_mode)
    if what is not None:
        raise error(shown, f"{what}, not a log file; save the log to a regular file first")
    if stat.S_ISREG(st.st_mode) and st.st_size > limits().max_bytes:
        raise error(shown, f"{megabytes(st.st_size)} is above the {megabytes(limits().max_bytes)} limit for a log "
                           "(data/log_limits.toml max_bytes); export fewer keys or steps")
    return st


def _open(path: Path, shown: str):
    check_path(path, shown)
    try:
        return open(path, "rb")  # noqa: SIM115 (closed by the caller's with)
    except OSError as exc:
        raise error(shown, f"cannot be read ({exc.strerror or exc})") from None


def head_bytes(path: Path, shown: str, n: int = 65536) -> bytes:
    """The first ``n`` bytes of a regular file."""
    with _open(path, shown) as f:
        return f.read(n)


def read_bounded(path: Path, shown: str, cap: int, what: str) -> bytes:
    """The whole file, refused with a named error when it is larger than ``cap`` bytes (``what`` names the cap)."""
    with _open(path, shown) as f:
        data = f.read(cap + 1)
    if len(data) > cap:
        raise error(shown, f"{what} is larger than {megabytes(cap)}, the most a log reader reads whole "
                           "(data/log_limits.toml max_json_bytes)")
    return data


@dataclass
class Lines:
    """The text lines of a file, numbered from 1, streamed a megabyte at a time: each line decoded as UTF-8 (bad
    bytes replaced, the lines that had some counted in ``bad_byte_lines``), without its line end, ANSI codes, carriage
    returns or a leading BOM.

    A line longer than ``max_line_bytes`` is a named error giving its length and the cap. ``last_complete`` says
    whether the file ended with a line end (a file cut off mid-line ends without one).
    """

    path: Path
    shown: str
    bad_byte_lines: int = 0
    last_complete: bool = True
    number: int = 0
    _cap: int = field(default=0, repr=False)

    def __iter__(self) -> Iterator[tuple[int, str]]:
        cap = self._cap or limits().max_line_bytes
        carry = b""
        with _open(self.path, self.shown) as f:
            while chunk := f.read(_CHUNK):
                data = carry + chunk if carry else chunk
                end = data.rfind(b"\n")
                if end < 0:
                    if len(data) > cap:
                        raise self._too_long(f, data, cap)
                    carry = data
                    continue
                carry = data[end + 1:]
                if len(carry) > cap:
                    self.number += data.count(b"\n", 0, end + 1)
                    raise self._too_long(f, carry, cap)
                for line in self._texts(data[:end]):
                    self.number += 1
                    yield self.number, line
        self.last_complete = not carry
        if carry:
            for line in self._texts(carry):
                self.number += 1
                yield self.number, line

    def _texts(self, block: bytes) -> list[str]:
        try:
            text = block.decode("utf-8")
        except UnicodeDecodeError:
            lines = block.split(b"\n")
            good = []
            for raw in lines:
                try:
                    good.append(raw.decode("utf-8"))
                except UnicodeDecodeError:
                    self.bad_byte_lines += 1
                    good.append(raw.decode("utf-8", errors="replace"))
            text = "\n".join(good)
        if self.number == 0 and text.startswith("\ufeff"):
            text = text[1:]
        if "\x1b" in text:
            text = _ANSI.sub("", text)
        if "\r" in text:
            text = text.replace("\r", "")
        return text.split("\n")

    def _too_long(self, f, seen: bytes, cap: int) -> MeasurementError:
        length = len(seen) - (seen.rfind(b"\n") + 1)
        while chunk := f.read(_CHUNK):  # measure the rest of the line, a chunk at a time
            end = chunk.find(b"\n")
            length += len(chunk) if end < 0 else end
            if end >= 0:
                break
        return error(self.shown, f"line {self.number + 1} is {megabytes(length)}; the longest line a log reader "
                                 f"accepts is {megabytes(cap)} (data/log_limits.toml max_line_bytes)")

    def skipped_note(self) -> list[str]:
        """A warning for the lines that held bytes that are not UTF-8, if any."""
        if not self.bad_byte_lines:
            return []
        return [f"{self.bad_byte_lines} lines held bytes that are not UTF-8 (replaced; the numbers on them read "
                "as far as they are sound)"]
