"""Reading a file's bytes with a bound: only regular files, and only up to a size limit.

A symlink to ``/dev/zero`` never ends, a FIFO blocks until someone writes to it, and a
multi-gigabyte file would be parsed into many times its size: each is refused with a
message that names what it is and the limit, and the run goes on (GC000, exit 2).
"""
from __future__ import annotations

import os
import stat

# NOTE: the largest Python files of large projects (generated tables, vendored bundles) are a
# few MB; parsing takes ~30 bytes of memory per byte of source, so 16 MiB stays well inside
# an ordinary machine's memory while no hand-written training script comes near it
MAX_FILE_BYTES = 16 * 1024 * 1024

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
)


class ReadError(OSError):
    """The file cannot be read, or is refused; ``str()`` says why and what to do."""

    def __str__(self) -> str:
        return self.args[0]


def size_text(size: int) -> str:
    """``size`` bytes as messages print it.

    >>> size_text(16 * 1024 * 1024), size_text(1536 * 1024), size_text(64)
    ('16 MiB', '1.5 MiB', '64 bytes')
    """
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            value = size / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{size} bytes"


def too_large(size: int | None, limit: int) -> str:
    """Why a source of ``size`` bytes (None: it grew while read) is refused, and the fix.

    >>> too_large(20 * 1024 * 1024, MAX_FILE_BYTES)[:58]
    'the file is 20 MiB, over the 16 MiB limit on one file; exc'
    """
    what = f"the file is {size_text(size)}" if size is not None else "the file grew while read"
    return (f"{what}, over the {size_text(limit)} limit on one file; exclude it "
            "(--extend-exclude) or split it")


def kind_of(mode: int) -> str | None:
    """What a non-regular file is (``"a character device"``), None for a regular file."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "not a regular file"


def _refusal(path: str, mode: int) -> str:
    target = os.path.realpath(path)
    through = f" (a symlink to {target})" if target != os.path.abspath(path) else ""
    return (f"cannot read: it is {kind_of(mode)}{through}, not a regular file; only regular "
            "files are checked, so remove or exclude it")


def missing(path: str) -> str:
    """The message for a path that does not exist (a broken symlink says where it points)."""
    if os.path.islink(path):
        return f"no such file or directory: a broken symbolic link to {os.readlink(path)}"
    return "no such file or directory"


def read_bounded(path: str, limit: int | None = None) -> bytes:
    """The bytes of the regular file at ``path``; raises ReadError for anything else.

    >>> try:
    ...     read_bounded("/dev/null")
    ... except ReadError as error:
    ...     print(str(error)[:55])
    cannot read: it is a character device, not a regular fi
    """
    limit = MAX_FILE_BYTES if limit is None else limit
    # NOTE: O_NONBLOCK, so that opening a FIFO returns at once instead of waiting for a
    # writer; the type is then checked on the open descriptor, so no rename in between can
    # swap a device in after the check
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(path, flags)
    except FileNotFoundError:
        raise ReadError(missing(path)) from None
    except OSError as error:
        raise ReadError(f"cannot read: {error.strerror or error}") from None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise ReadError(_refusal(path, info.st_mode))
        if info.st_size > limit:
            raise ReadError(f"cannot read: {too_large(info.st_size, limit)}")
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(descriptor, min(limit + 1 - total, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except ReadError:
        raise
    except OSError as error:
        raise ReadError(f"cannot read: {error.strerror or error}") from None
    finally:
        os.close(descriptor)
    if total > limit:  # it grew while being read
        raise ReadError(f"cannot read: {too_large(None, limit)}")
    return b"".join(chunks)


def read_stream(stream, limit: int | None = None) -> bytes:
    """Up to ``limit`` bytes of a binary stream (stdin); raises ReadError beyond that.

    >>> import io
    >>> read_stream(io.BytesIO(b"x = 1\\n"))
    b'x = 1\\n'
    """
    limit = MAX_FILE_BYTES if limit is None else limit
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise ReadError(f"standard input holds more than {size_text(limit)}, the limit on one "
                        "file; split it into smaller files")
    return data
