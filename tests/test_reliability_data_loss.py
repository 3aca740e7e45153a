"""No command deletes what it did not create (issue 16, item 1).

``ncdyn compare RUN --out DIR`` and ``ncdyn forecast RUN --at F --out DIR`` replace ``DIR``
only when it holds their own output (a ``.ncdynamics-<command>`` marker with a known format
version); anything else is a one-line error, exit 2, with nothing touched.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from ncdynamics import runs
from ncdynamics.cli import main
from ncdynamics.experiments.compare import compare
from ncdynamics.report import write_compare_report
from ncdynamics.runs._outputs import check_output_dir
from ncdynamics.theories.lesde.model import d_vectors


def _lesde_run(path: Path, K: int = 4) -> runs.Run:
    """A small run that the L-model can be fitted to (exponential class-mean margins)."""
    run = runs.create(path)
    d = d_vectors(K)
    b0 = np.linspace(-1.0, 1.0, K)
    for t in range(0, 41, 4):
        s = 2.0 * np.exp(0.05 * t) + b0 * np.exp(0.02 * t)
        run.save_array("a.class_means_logits", t, s[:, None] * d)
        run.log(t, {"a/probe/loss": 1.0 / (t + 1)})
    run.mark_completed()
    return run


def _snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes (what must survive a refused command)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _user_dir(root: Path) -> Path:
    d = root / "userdocs"
    d.mkdir()
    (d / "thesis.tex").write_text("years of work")
    return d


def _marker(root: Path, command: str, content: dict | str) -> Path:
    """A folder with a ``command`` marker holding ``content`` (``{command}`` filled in)."""
    d = root / "marked"
    d.mkdir()
    (d / "report.html").write_text("mine?")
    text = content if isinstance(content, str) else json.dumps(content)
    (d / f".ncdynamics-{command}").write_text(text.replace("{command}", command))
    return d


# (name, how to make the --out target from (tmp root, run path, command), what the error says)
FOREIGN_TARGETS = [
    ("parent of every run", lambda root, run, cmd: root, "not an output of"),
    ("the run itself", lambda root, run, cmd: run, "not an output of"),
    ("a user's folder", lambda root, run, cmd: _user_dir(root), "not an output of"),
    (
        "a regular file",
        lambda root, run, cmd: (root / "notes.txt", (root / "notes.txt").write_text("x"))[0],
        "not a directory",
    ),
    (
        "a marker of a newer format",
        lambda root, run, cmd: _marker(root, cmd, {"format": 99, "command": "{command}"}),
        "format",
    ),
    ("a marker that is not JSON", lambda root, run, cmd: _marker(root, cmd, "{oops"), "marker"),
    (
        "a marker of another command",
        lambda root, run, cmd: _marker(root, cmd, {"format": 1, "command": "sweep"}),
        "not an output of",
    ),
]
COMMANDS = [
    ("compare", lambda run, out: ["compare", str(run), "--out", str(out)]),
    ("forecast", lambda run, out: ["forecast", str(run), "--at", "0.5", "--out", str(out)]),
]


@pytest.mark.parametrize(("command", "argv"), COMMANDS, ids=[c for c, _ in COMMANDS])
@pytest.mark.parametrize(
    ("case", "target", "fragment"), FOREIGN_TARGETS, ids=[c for c, _, _ in FOREIGN_TARGETS]
)
def test_out_that_is_not_the_commands_own_output_is_refused_untouched(
    tmp_path, capsys, command, argv, case, target, fragment
):
    run = _lesde_run(tmp_path / "run")
    out = target(tmp_path, run.path, command)
    before = _snapshot(tmp_path)
    hidden_before = set(tmp_path.rglob(".*"))  # the run store's marker and lock file
    assert main(argv(run.path, out)) == 2
    err = capsys.readouterr().err
    assert err.startswith("ncdyn: error:") and err.count("\n") == 1, err
    assert fragment in err and str(out) in err, err
    assert _snapshot(tmp_path) == before
    assert set(tmp_path.rglob(".*")) == hidden_before  # no temporary folder left behind


@pytest.mark.parametrize(("command", "argv"), COMMANDS, ids=[c for c, _ in COMMANDS])
def test_own_earlier_output_is_replaced_as_a_whole(tmp_path, capsys, command, argv):
    run = _lesde_run(tmp_path / "run")
    out = tmp_path / "out"
    assert main(argv(run.path, out)) == 0
    marker = json.loads((out / f".ncdynamics-{command}").read_text())
    assert marker == {"format": 1, "command": command}
    (out / "figures" / "stale.png").write_bytes(b"old")
    assert main(argv(run.path, out)) == 0
    assert not (out / "figures" / "stale.png").exists() and (out / "report.html").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "run"]


def test_an_empty_directory_may_receive_the_output(tmp_path):
    run = _lesde_run(tmp_path / "run")
    (tmp_path / "empty").mkdir()
    page = write_compare_report(compare(run), run.path, tmp_path / "empty")
    assert page.is_file() and (tmp_path / "empty" / ".ncdynamics-compare").is_file()


def test_one_command_never_replaces_the_other_commands_output(tmp_path):
    run = _lesde_run(tmp_path / "run")
    out = tmp_path / "out"
    write_compare_report(compare(run), run.path, out)
    before = _snapshot(out)
    with pytest.raises(FileExistsError, match="not an output of `forecast`"):
        check_output_dir(out, "forecast")
    assert _snapshot(out) == before


def test_symlinked_out_is_refused(tmp_path):
    run = _lesde_run(tmp_path / "run")
    out = tmp_path / "out"
    write_compare_report(compare(run), run.path, out)
    (tmp_path / "link").symlink_to(out)
    with pytest.raises(FileExistsError, match="symbolic link"):
        write_compare_report(compare(run), run.path, tmp_path / "link")
    assert (tmp_path / "link").is_symlink() and (out / "report.html").is_file()


def test_replacing_an_output_never_touches_a_user_path_named_like_its_trash(tmp_path):
    import os

    run = _lesde_run(tmp_path / "run")
    out = tmp_path / "out"
    write_compare_report(compare(run), run.path, out)
    decoy = tmp_path / f".out-old-{os.getpid()}"  # the name an earlier version moved into
    decoy.mkdir()
    (decoy / "keep.txt").write_text("mine")
    write_compare_report(compare(run), run.path, out)  # replaces its own output
    assert (decoy / "keep.txt").read_text() == "mine"
    assert (out / "report.html").is_file()
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".out-")]
    assert leftovers == [decoy.name]


def test_a_killed_compare_leaves_no_hidden_folder_for_good(tmp_path):
    """A compare killed while writing leaves its temporary sibling ``.<out>-<random>``; the
    next write of that output removes it (its writer is gone), and nothing else."""
    import os
    import signal
    import subprocess
    import sys
    import textwrap

    from ncdynamics.runs._outputs import write_output_dir

    out = tmp_path / "cmp"
    code = textwrap.dedent(
        f"""
        import os, signal
        from pathlib import Path
        from ncdynamics.runs._outputs import write_output_dir
        def fill(tmp):
            (tmp / "report.html").write_text("half")
            os.kill(os.getpid(), signal.SIGKILL)
        write_output_dir(Path({str(out)!r}), "compare", fill)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], env=dict(os.environ), timeout=120)
    assert done.returncode == -signal.SIGKILL
    left = [p.name for p in tmp_path.iterdir()]
    assert len(left) == 1 and left[0].startswith(".cmp-"), left
    users = tmp_path / ".cmp-notes"  # a user's folder of that look, without our marker
    users.mkdir()
    (users / "keep.txt").write_text("mine")

    write_output_dir(out, "compare", lambda tmp: (tmp / "report.html").write_text("done"))
    assert sorted(p.name for p in tmp_path.iterdir()) == [".cmp-notes", "cmp"]
    assert (users / "keep.txt").read_text() == "mine"


def test_a_linked_sibling_or_a_linked_building_mark_is_never_removed(tmp_path):
    """Hostile look-alikes of an abandoned sibling: a link named ``.<out>-*`` to a user's
    folder that holds our mark's name, and a real folder whose mark is a link to a user's
    file. Neither was written by this program, so the next write removes neither."""
    from ncdynamics.runs._outputs import _BUILDING, write_output_dir

    user = tmp_path / "user"
    user.mkdir()
    (user / _BUILDING).write_text("")  # an unlocked mark: alone it would look abandoned
    (user / "data.txt").write_text("mine")
    (tmp_path / ".cmp-link").symlink_to(user, target_is_directory=True)
    planted = tmp_path / ".cmp-planted"
    planted.mkdir()
    (planted / "keep.txt").write_text("mine too")
    (planted / _BUILDING).symlink_to(user / "data.txt")

    write_output_dir(tmp_path / "cmp", "compare", lambda tmp: (tmp / "r.html").write_text("x"))
    assert (user / "data.txt").read_text() == "mine" and (user / _BUILDING).exists()
    assert (tmp_path / ".cmp-link").is_symlink()
    assert (planted / "keep.txt").read_text() == "mine too"
