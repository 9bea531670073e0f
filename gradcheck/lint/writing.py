"""Writing a file back (``--fix``, ``--add-noqa``): all of it or nothing, mode kept."""
from __future__ import annotations

import os
from pathlib import Path


def write_atomically(path: Path, data: bytes) -> str | None:
    """Replace ``path``'s bytes with ``data`` through a temporary file and a rename, so a
    reader never sees half a file; None on success, else why it failed.

    A read-only file is left alone (a rename would replace it despite its mode, and
    root's writes ignore the mode altogether).
    """
    import stat
    import tempfile

    target = Path(os.path.realpath(path))  # through a symlink, not over it
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except OSError as error:
        return error.strerror or str(error)
    if not mode & stat.S_IWUSR or not os.access(target, os.W_OK):
        return f"{path} is read-only (make it writable, or leave out --fix)"
    temporary = None
    try:
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.",
                                             suffix=".gradcheck-fix")
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except OSError as error:
        if temporary is not None and os.path.exists(temporary):
            os.unlink(temporary)
        return f"{error.strerror or error} ({target.parent})"
    return None
