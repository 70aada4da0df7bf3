"""Where a command's output goes: stdout for ``-`` (or no path), else a temporary file in the target folder,
renamed over the target only when the command succeeds, so a failed, interrupted or refused run never leaves a
partial file or truncates an existing one (an input above all)."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from cli.errors import CliError

__all__ = ["OutputError", "STDOUT", "atomic_output", "check_output"]

STDOUT = "-"
"""The output path that means stdout."""


class OutputError(CliError):
    """An output path the command cannot write: it is an input, a folder, in a missing folder, or not writable."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"cannot write {path}: {reason}")
        self.path = path
        self.reason = reason


def check_output(path: Path | None, inputs: Iterable[Path | str | None] = ()) -> None:
    """Refuse, before any work, an output that is one of ``inputs`` (the same file under any name), a folder, or
    in a folder that does not exist or that this user cannot write."""
    if path is None or str(path) == STDOUT:
        return
    for source in inputs:
        if source is None or str(source) == STDOUT:
            continue
        same = Path(source).resolve() == path.resolve()
        try:
            same = same or path.samefile(source)
        except OSError:  # one of them does not exist: then they are not the same file
            pass
        if same:
            raise OutputError(path, f"it is also an input ({source}); writing it would destroy the input")
    if path.is_dir():
        raise OutputError(path, "it is a folder; give a file name")
    folder = path.parent
    if not folder.is_dir():
        raise OutputError(path, f"the folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(path, f"no permission to create files in {folder}")
    if path.exists() and not os.access(path, os.W_OK):
        raise OutputError(path, "no permission to replace it")


@contextmanager
def atomic_output(path: Path | None, inputs: Iterable[Path | str | None] = ()) -> Iterator[TextIO]:
    """A text stream for the command's output: stdout when ``path`` is None or ``-``; else a temporary file beside
    ``path`` that replaces it (with its mode, or 0644 for a new file) when the block ends without an exception,
    and is removed when it raises (a ``KeyboardInterrupt`` included); a path that is not a regular file
    (``/dev/null``, a named pipe) is written directly. ``check_output`` runs first."""
    if path is None or str(path) == STDOUT:
        yield sys.stdout
        return
    check_output(path, inputs)
    path = path.resolve() if path.is_symlink() else path  # replace the file a link points at, keep the link
    if path.exists() and not path.is_file():  # /dev/null, a named pipe: nothing to replace, write to it
        with path.open("w", encoding="utf-8") as stream:
            yield stream
        return
    try:
        descriptor, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    except OSError as exc:
        raise OutputError(path, exc.strerror or str(exc)) from exc
    temporary = Path(name)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as sink:
            yield sink
            sink.flush()
            os.fsync(sink.fileno())
        mode = path.stat().st_mode & 0o7777 if path.exists() else 0o666 & ~_umask()
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
