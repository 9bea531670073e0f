"""``gradcheck run script.py``: run an unchanged training script with every optimizer guarded.

The script runs as ``__main__`` with ``sys.argv`` set, the way ``python -m cProfile script.py``
runs it. Processes it starts (``torch.multiprocessing.spawn``, a launcher) inherit the guard
through the environment (``gradcheck.runtime.autostart``).

Exit status: the script's own when it fails; otherwise 1 when the guard found a problem and 0
when it found none.
"""
from __future__ import annotations

import os
import runpy
import sys
import tempfile
from collections.abc import Sequence

from gradcheck import exitcodes
from gradcheck.runtime.autostart import environment_for_children
from gradcheck.runtime.guard import GradGuardError
from gradcheck.runtime.session import GuardSession


def run_script(
    path: str,
    args: Sequence[str] = (),
    *,
    accumulation_steps: int | None = None,
    action: str = "warn",
) -> int:
    """Run ``path`` as ``__main__`` with ``args``, guarded; return the exit status.

    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     script = os.path.join(folder, "noop.py")
    ...     _ = open(script, "w").write("import sys; print(sys.argv[1:])")
    ...     run_script(script, ["--epochs", "1"])
    ['--epochs', '1']
    0
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no script at {path!r}; pass the path of a Python file")
    session = GuardSession(accumulation_steps, action).install()
    saved_argv, saved_path0 = sys.argv[:], sys.path[0]
    descriptor, found_file = tempfile.mkstemp(prefix="gradcheck-found-")
    os.close(descriptor)
    children = environment_for_children(accumulation_steps, action, found_file)
    saved_environ = {name: os.environ.get(name) for name in children}
    os.environ.update(children)
    sys.argv = [path, *args]
    sys.path[0] = os.path.dirname(os.path.abspath(path))
    status = exitcodes.CLEAN
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except GradGuardError:
        status = exitcodes.FINDINGS  # --action raise: the report below says where
    finally:
        sys.argv, sys.path[0] = saved_argv, saved_path0
        _restore(saved_environ)
        session.finish()
        found = os.path.getsize(found_file) > 0  # by this process or any it started
        os.remove(found_file)
    if status == exitcodes.CLEAN and (found or len(session.tally)):
        status = exitcodes.FINDINGS
    return status


def _exit_status(code: object) -> int:
    if code is None:
        return exitcodes.CLEAN
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return exitcodes.FINDINGS


def _restore(saved: dict[str, str | None]) -> None:
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
