"""``colocate simulate --write FORMAT:FILE`` writes only what the user can have meant
(hostile-3 R3-M1): an existing file only with --force, never a link, folder, FIFO or device;
through a temporary file renamed into place; the stdout report first; a failed write is exit 2
naming the file. No test here runs a simulation: the targets are refused before one starts, and
the writer is a function of its own."""
from __future__ import annotations

import os
import signal
import types

import pytest

from colocate import ROOT, cli
from colocate.cli.simulate import write_reports
from colocate.errors import ColocateError, InputError
from tests.helpers import colocate

DIST = ROOT / "dist"


def _refused(spec: str, says: str, *more: str) -> None:
    proc = colocate("simulate", str(DIST), "--write", spec, *more)
    assert proc.returncode == 2 and says in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "control plane" not in proc.stderr, proc.stderr


def test_bad_targets_are_refused_before_the_simulation_starts(tmp_path):
    (tmp_path / "day.html").write_text("kept\n")
    (tmp_path / "link.html").symlink_to(tmp_path / "day.html")
    (tmp_path / "dangling.html").symlink_to(tmp_path / "nowhere.html")
    os.mkfifo(tmp_path / "fifo.html")
    for spec, says in ((f"pdf:{tmp_path / 'r.pdf'}", "expected FORMAT:FILE with FORMAT one of text, json"),
                       ("html", "expected FORMAT:FILE"),
                       (f"html:{tmp_path / 'none' / 'day.html'}", "must be a file in an existing folder"),
                       (f"html:{tmp_path}", "is a folder"),
                       (f"html:{tmp_path / 'day.html'}", "exists; add --force to replace it"),
                       (f"html:{tmp_path / 'link.html'}", "is a symbolic link"),
                       (f"html:{tmp_path / 'dangling.html'}", "is a symbolic link"),
                       (f"html:{tmp_path / 'fifo.html'}", "is not a regular file"),
                       ("html:/dev/full", "is not a regular file"),
                       (f"html:{tmp_path / ('a' * 300)}", "File name too long")):
        _refused(spec, says)
    # --force replaces a regular file, never anything else.
    for name, says in (("link.html", "is a symbolic link"), ("fifo.html", "is not a regular file")):
        _refused(f"html:{tmp_path / name}", says, "--force")
    _refused(f"html:{tmp_path / 'new.html'}", "is named twice", "--write", f"json:{tmp_path / 'new.html'}")
    assert (tmp_path / "day.html").read_text() == "kept\n" and sorted(p.name for p in tmp_path.iterdir()) == \
        ["dangling.html", "day.html", "fifo.html", "link.html"]


def test_the_writer_renames_a_whole_file_into_place_and_never_follows_a_link(tmp_path):
    from colocate.base import output_file

    target = tmp_path / "day.html"
    output_file.write(target, "first \u00e9\n", force=False)
    assert target.read_text(encoding="utf-8") == "first \u00e9\n"
    assert oct(target.stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    with pytest.raises(InputError, match="exists; add --force"):
        output_file.write(target, "second\n", force=False)
    inode = target.stat().st_ino
    output_file.write(target, "second\n", force=True)
    assert target.read_text() == "second\n" and target.stat().st_ino != inode, "a new file renamed into place"
    secret = tmp_path / "secret"
    secret.write_text("root:x:0:0\n")
    (tmp_path / "link").symlink_to(secret)
    with pytest.raises(InputError, match="is a symbolic link"):
        output_file.write(tmp_path / "link", "owned\n", force=True)
    assert secret.read_text() == "root:x:0:0\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["day.html", "link", "secret"], "no temporary file left"


def test_a_fifo_is_refused_at_once_not_opened(tmp_path):
    from colocate.base import output_file

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    signal.signal(signal.SIGALRM, lambda *_: pytest.fail("the writer opened the FIFO and blocked"))
    signal.alarm(10)
    try:
        with pytest.raises(InputError, match="is not a regular file"):
            output_file.write(fifo, "x", force=True)
    finally:
        signal.alarm(0)


def test_a_file_that_appeared_while_colocate_ran_is_kept(tmp_path):
    from colocate.base import output_file

    target = tmp_path / "day.html"
    output_file.check(target, force=False)
    target.write_text("someone else's\n")
    with pytest.raises(InputError, match="exists; add --force"):
        output_file.write(target, "ours\n", force=False)
    assert target.read_text() == "someone else's\n"


def test_every_file_is_tried_and_each_failure_named(tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    files = [("html", gone / "day.html"), ("json", tmp_path / "day.json")]
    gone.rmdir()
    with pytest.raises(ColocateError) as caught:
        write_reports(files, lambda fmt: f"{fmt} report\n", force=False)
    assert f"{gone / 'day.html'}: must be a file in an existing folder" in str(caught.value)
    assert (tmp_path / "day.json").read_text() == "json report\n"


def test_the_stdout_report_comes_first_and_a_failed_write_is_exit_2(tmp_path, monkeypatch, capsys):
    """_simulate as it is, with a stand-in for the minutes of simulation: the folder of the
    --write file is removed while it 'runs'."""
    from colocate.simulate import formats, run

    folder = tmp_path / "out"
    folder.mkdir()

    def simulated(*args, **kwargs):
        folder.rmdir()
        return types.SimpleNamespace(ok=True), None

    monkeypatch.setattr(run, "simulate", simulated)
    monkeypatch.setattr(formats, "FORMATS", {"text": lambda obs, logs: "the day's report\n",
                                             "html": lambda obs, logs: "<html></html>\n"})
    handler = signal.getsignal(signal.SIGTERM)  # _simulate sets its own
    try:
        code = cli.main(["simulate", str(DIST), "--write", f"html:{folder / 'day.html'}"])
    finally:
        signal.signal(signal.SIGTERM, handler)
    out, err = capsys.readouterr()
    assert code == 2 and out == "the day's report\n", (code, out, err)
    assert f"--write:{folder / 'day.html'}: must be a file in an existing folder" in err and "internal" not in err, err


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
