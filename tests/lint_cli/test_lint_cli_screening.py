"""Screening on raw bytes: a shortcut, never a different answer from the text path."""
from __future__ import annotations

import dataclasses
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from gradcheck import exitcodes
from gradcheck.lint.document import DocumentError, parse
from gradcheck.lint.screening import Job, screen, settle_bytes

KNOWN = {"GC000", "GC001", "GC002", "GC003", "GC004"}
PIECES = [
    b"x = 1\n", b"loss.backward()\n", b"opt.step()\n", b"# noqa: GC999\n", b"# NOQA: gc998\n",
    b"y = 2  # noqa\n", b"def f(:\n", b"\xef\xbb\xbf", b"caf\xc3\xa9 = 1\n", b"\xe9\n",
    b"import gc\n", b'"""\n>>> z  # noqa: GC997\n"""\n', b"\r\n", b"# gradcheck: noqa\n",
]


def _text_path(job: Job) -> object:
    """What screening answers when the bytes shortcut is not taken."""
    try:
        parse(job.data, notebook=False)
    except DocumentError as error:
        return ("GC000", str(error))
    with mock.patch("gradcheck.lint.screening.settle_bytes", lambda *args: None):
        return screen(job, KNOWN, fixing=False)


def _signature(result) -> object:
    if isinstance(result, tuple):
        return result
    return ([(f.code, f.line, f.message) for f in result.findings], result.warnings)


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.sampled_from(PIECES), max_size=8), explicit=st.booleans(),
       all_rules=st.booleans())
def test_the_bytes_shortcut_gives_the_text_paths_answer(pieces, explicit, all_rules):
    data = b"".join(pieces)
    codes = frozenset(KNOWN - {"GC000"}) if all_rules else frozenset()
    job = Job("a.py", "a.py", codes, data, False, False, explicit)
    settled = settle_bytes(job, data, KNOWN)
    if settled is None:
        return  # the text path decides; nothing to compare
    assert _signature(settled) == _signature(_text_path(job))
    assert settled.findings == []  # the shortcut only ever answers "clean"


def test_most_files_are_settled_on_bytes():
    job = Job("a.py", "a.py", frozenset({"GC002"}), None, False, False)
    assert settle_bytes(job, b"import torch\nmodel = torch.nn.Linear(1, 1)\n", KNOWN) is not None
    # the text is needed: a backward call, bytes that are not UTF-8, a noqa comment with a
    # GC code, a notebook, a file named on the command line
    assert settle_bytes(job, b"loss.backward()\n", KNOWN) is None
    assert settle_bytes(job, b"# caf\xe9\n", KNOWN) is None
    assert settle_bytes(job, b"x = 1  # NoQA: gC999\n", KNOWN) is None
    assert settle_bytes(dataclasses.replace(job, notebook=True), b"{}", KNOWN) is None
    assert settle_bytes(dataclasses.replace(job, explicit=True), b"x = 1\n", KNOWN) is None


def test_a_walked_file_without_backward_still_reports_its_encoding_and_codes(project, kit):
    kit.write(project, {"latin1.py": "# caf\xe9\nx = 1\n".encode("latin-1"),
                        "typo.py": "x = 1  # NOQA: Gc999\n", "clean.py": "y = 2  # noqa: E501\n"})
    run = kit.run_cli(["lint", "--no-cache"])
    assert run.exit_code == exitcodes.ERROR
    assert "latin1.py:1:1: GC000 not valid UTF-8 (byte 0xe9 at offset 5)" in run.stdout
    assert "warning: typo.py:1: unknown rule code GC999" in run.stderr
    assert "clean.py" not in run.stdout + run.stderr
