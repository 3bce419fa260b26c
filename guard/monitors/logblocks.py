"""Read a log file in blocks of whole lines, copying each byte as few times as it can.

A block is what one ``read`` of ``CHUNK`` bytes brings, up to its last newline, after the
partial line the read before left over. Joining the two copies the block once; cutting it
where a multi-line event may go on is decided on the chunk alone whenever that event starts
inside it, so the usual block costs the read and one copy (a scan of 200 MB used to copy it
twice more: the leftover glued to the chunk, then the run cut from that).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import BinaryIO

CHUNK = 1 << 20


class Blocks:  # an iterator that also says what it held back
    """Yield ``(data, bytes consumed, complete)``: runs of whole lines, or over-long starts.

    A complete item holds whole lines (each ending in a newline). A line longer than ``limit``
    with no newline yet is yielded incomplete as its first ``limit`` bytes, so one endless line
    cannot stall the monitor; the caller skips its continuation up to the next newline. A final
    partial line is yielded (as complete) only when ``final``: the file was rotated away and
    will not grow. Reading stops after ``budget`` bytes; the rest waits for the next check.
    With ``tail`` (multi-line events), each run ends where ``tail(buf, end)`` cuts it, before
    an event that may go on; at the end of the file that event is yielded too, unless
    ``hold`` (then ``held`` is true and the caller's position stays at its start).
    """

    def __init__(
        self,
        handle: BinaryIO,
        limit: int,
        *,
        final: bool,
        budget: int,
        tail: Callable[[bytes, int], int] | None = None,
        tail_start: Callable[[bytes, int], int] | None = None,
        hold: bool = False,
    ) -> None:
        self._items = self._run(handle, limit, final, budget, tail, tail_start, hold)
        self.held = False

    def __iter__(self) -> Iterator[tuple[bytes, int, bool]]:
        return self._items

    def _run(
        self,
        handle: BinaryIO,
        limit: int,
        final: bool,
        budget: int,
        tail: Callable[[bytes, int], int] | None,
        tail_start: Callable[[bytes, int], int] | None,
        hold: bool,
    ) -> Iterator[tuple[bytes, int, bool]]:
        buf = b""
        read = 0
        eof = False
        while read < budget:
            chunk = handle.read(CHUNK)
            if not chunk:
                eof = True
                break
            read += len(chunk)
            at = _cut_in_chunk(chunk, aligned=not buf, tail=tail, tail_start=tail_start)
            if at is not None:  # the run ends in this chunk: one copy at most
                if at:
                    whole = (
                        chunk
                        if not buf and at == len(chunk)
                        else b"".join((buf, memoryview(chunk)[:at]))
                    )
                    yield (whole, len(whole), True)
                    buf = chunk[at:]
                else:
                    buf = buf + chunk if buf else chunk
            else:
                buf = buf + chunk if buf else chunk
                nl = buf.rfind(b"\n")
                if nl >= 0:
                    cut = nl + 1 if tail is None else tail(buf, nl + 1)
                    if cut:
                        yield (buf[:cut], cut, True)
                        buf = buf[cut:]
            start = buf.rfind(b"\n") + 1  # whole lines held back come before the partial one
            if len(buf) - start > limit:
                if start:
                    yield (buf[:start], start, True)
                yield (buf[start : start + limit], len(buf) - start, False)
                buf = b""
        if final:
            if buf:
                yield (buf, len(buf), True)
        elif tail is not None and eof:
            whole = buf[: buf.rfind(b"\n") + 1]
            if whole and hold:
                self.held = True
            elif whole:
                yield (whole, len(whole), True)


def _cut_in_chunk(
    chunk: bytes,
    *,
    aligned: bool,
    tail: Callable[[bytes, int], int] | None,
    tail_start: Callable[[bytes, int], int] | None,
) -> int | None:
    """Where in ``chunk`` the run to yield ends, when that can be told from the chunk alone
    (None: only from the leftover and the chunk joined). ``aligned``: the chunk starts a line.

    With multi-line events the run ends before the last event, which may go on; that event's
    start is the same in the chunk as in the joined buffer when it lies after the chunk's
    first whole line (the line before it is then whole in the chunk too).
    """
    nl = chunk.rfind(b"\n")
    if nl < 0:
        return None
    if tail is None:
        return nl + 1
    if tail_start is None:
        return None
    if not aligned and tail_start(chunk, nl + 1) <= chunk.find(b"\n") + 1:
        return None
    return tail(chunk, nl + 1)
