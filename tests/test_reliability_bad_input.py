"""Bad input is one line naming what is wrong (issue 16, items 11, 12 and 13).

Tables of (input, exception or exit code, message fragment): dataset files and options,
``--set`` / ``--config`` values (refused before any run directory is created), seeds, JSON
files of a run, ``report --out`` onto an existing file, and paths that cannot be written.
"""

import errno
import os
from pathlib import Path

import numpy as np
import pytest

from cifar_format import py2_pickle
from ncdynamics import data, runs
from ncdynamics.cli import main


# ---------------------------------------------------------------------------- data (item 13)
def _idx(path: Path, dims: tuple[int, ...], payload: bytes = b"") -> Path:
    header = bytes([0, 0, 0x08, len(dims)]) + b"".join(int(n).to_bytes(4, "big") for n in dims)
    path.write_bytes(header + payload)
    return path


def _mnist_dir(root: Path, rng, n: int = 5) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for split in ("train", "t10k"):
        _idx(root / f"{split}-images-idx3-ubyte", (n, 28, 28), bytes(n * 28 * 28))
        _idx(root / f"{split}-labels-idx1-ubyte", (n,), bytes(rng.integers(0, 10, n).tolist()))
    return root


def _cifar_dir(root: Path, rng, batch_1: bytes | None = None) -> Path:
    base = root / "cifar-10-batches-py"
    base.mkdir(parents=True)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        entry = {
            b"labels": [int(v) for v in rng.integers(0, 10, 3)],
            b"data": rng.integers(0, 256, (3, 3072)).astype(np.uint8),
        }
        (base / name).write_bytes(py2_pickle(entry))
    if batch_1 is not None:
        (base / "data_batch_1").write_bytes(batch_1)
    return root


def _global(module: str, name: str) -> bytes:
    """A protocol-2 pickle that asks for ``module.name`` (what a damaged file may hold)."""
    return b"\x80\x02c" + f"{module}\n{name}\n".encode() + b")R."


DATA_CASES = [
    (
        "cifar label too large for int64",
        lambda p, r: data.load(
            "cifar10",
            root=_cifar_dir(
                p,
                r,
                py2_pickle({b"data": np.zeros((1, 3072), np.uint8), b"labels": [2**70]}),
            ),
        ),
        ValueError,
        r"data_batch_1.*integer labels",
    ),
    (
        "cifar pixel out of uint8",
        lambda p, r: data.load(
            "cifar10",
            root=_cifar_dir(p, r, py2_pickle({b"data": [[300] * 3072], b"labels": [1]})),
        ),
        ValueError,
        r"data_batch_1.*uint8 pixels",
    ),
    (
        "cifar pickle naming a missing module",
        lambda p, r: data.load("cifar10", root=_cifar_dir(p, r, _global("no_such_mod", "x"))),
        ValueError,
        r"data_batch_1.*refuses global no_such_mod\.x",
    ),
    (
        "cifar pickle cut short",
        lambda p, r: data.load(
            "cifar10",
            root=_cifar_dir(p, r, py2_pickle({b"data": b"x" * 100, b"labels": []})[:40]),
        ),
        ValueError,
        r"cannot read CIFAR-10 batch .*data_batch_1",
    ),
    (
        "cifar labels outside 0..9",
        lambda p, r: data.load(
            "cifar10",
            root=_cifar_dir(
                p, r, py2_pickle({b"data": np.zeros((1, 3072), np.uint8), b"labels": [12]})
            ),
        ),
        ValueError,
        r"data_batch_1.*labels in 0\.\.9",
    ),
    (
        "idx header whose size wraps int64 to zero",
        lambda p, r: data.read_idx(_idx(p / "huge-idx", (65536, 65536, 65536, 65536))),
        ValueError,
        r"huge-idx.*expected 18446744073709551636 bytes",
    ),
    (
        "idx header of 2**32-1 images",
        lambda p, r: data.read_idx(_idx(p / "big-idx", (2**32 - 1, 28, 28), bytes(784))),
        ValueError,
        r"big-idx.*truncated or damaged",
    ),
    (
        "mnist limit=0",
        lambda p, r: data.load("mnist", root=_mnist_dir(p, r), limit=0),
        ValueError,
        r"`limit`.*>= 1",
    ),
    (
        "mnist limit=-1",
        lambda p, r: data.load("mnist", root=_mnist_dir(p, r), limit=-1),
        ValueError,
        r"`limit`.*>= 1",
    ),
    (
        "fashion-mnist limit=1.5",
        lambda p, r: data.load("fashion-mnist", root=_mnist_dir(p, r), limit=1.5),
        TypeError,
        r"`limit` must be an integer",
    ),
    (
        "cifar10 limit=0",
        lambda p, r: data.load("cifar10", root=_cifar_dir(p, r), limit=0),
        ValueError,
        r"`limit`.*>= 1",
    ),
]


@pytest.mark.parametrize(
    ("case", "make", "exc", "match"), DATA_CASES, ids=[c[0] for c in DATA_CASES]
)
def test_bad_dataset_file_or_option_is_one_line_naming_it(tmp_path, rng, case, make, exc, match):
    with pytest.raises(exc, match=match) as info:
        make(tmp_path, rng)
    assert "\n" not in str(info.value)


def test_limit_keeps_the_first_samples(tmp_path, rng):
    ds = data.load("mnist", root=_mnist_dir(tmp_path, rng), limit=2)
    assert len(ds.y_train) == 2 and len(ds.y_test) == 2


# ---------------------------------------------------------------------------- CLI (items 11, 12)
def _exit_code(argv: list[str]) -> int:
    """``main(argv)``, with argparse's own exit (bad flag values) as its code."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def _err_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("ncdyn: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


def _config_file(tmp: Path, text: str) -> str:
    (tmp / "cfg.yaml").write_text(text)
    return str(tmp / "cfg.yaml")


# (case, extra argv for `ncdyn run demo --out OUT`, fragment of the one-line error)
RUN_CASES = [
    ("depth=0", ["--set", "depth=0"], "`depth`"),
    ("losses=[]", ["--set", "losses=[]"], "`losses`"),
    ("unknown loss", ["--set", "losses=mse,hinge"], "`losses`"),
    ("milestones=-1", ["--set", "milestones=-1"], "`milestones`"),
    ("milestones decreasing", ["--set", "milestones=5,3"], "`milestones`"),
    ("epochs=yes", ["--set", "epochs=yes"], "`epochs`"),
    ("epochs=2.5", ["--set", "epochs=2.5"], "`epochs`"),
    ("lr=0", ["--set", "lr=0"], "`lr`"),
    ("momentum=1", ["--set", "momentum=1"], "`momentum`"),
    ("dataset unknown", ["--set", "dataset=nope"], "`dataset`"),
    ("unknown option", ["--set", "colour=red"], "unknown option"),
    ("seed 2**70", ["--seed", str(2**70)], "--seed"),
    ("seed -1", ["--seed", "-1"], "--seed"),
    ("seed 2**70 as typed", ["--seed", "2**70"], "--seed"),
    ("threads 0", ["--threads", "0"], "`--threads`"),
    ("config not YAML", ["--config", "{tmp}|a: [1\n"], "cfg.yaml"),
    ("config a list", ["--config", "{tmp}|- 1\n- 2\n"], "cfg.yaml"),
    ("config bad value", ["--config", "{tmp}|depth: 0\n"], "`depth`"),
]


@pytest.mark.parametrize(("case", "extra", "fragment"), RUN_CASES, ids=[c[0] for c in RUN_CASES])
def test_bad_run_option_is_refused_before_the_run_directory_exists(
    tmp_path, capsys, case, extra, fragment
):
    extra = [
        _config_file(tmp_path, a.split("|", 1)[1]) if a.startswith("{tmp}|") else a for a in extra
    ]
    out = tmp_path / "out"
    assert _exit_code(["run", "demo", "--out", str(out), "--no-progress", *extra]) == 2
    assert fragment in _err_line(capsys)
    assert not out.exists()


@pytest.mark.parametrize(
    ("sets", "want"),
    [
        (["lr=1e-3"], {"lr": 0.001}),
        (["epochs=1e3"], {"epochs": 1000}),
        (["weight_decay=5E-4", "momentum=0.5"], {"weight_decay": 5e-4, "momentum": 0.5}),
        (["milestones=1e2,1.5e2"], {"milestones": (100, 150)}),
        (["milestones=[2e1, 3e1]"], {"milestones": (20, 30)}),
    ],
)
def test_numbers_are_read_as_a_person_types_them(sets, want):
    from ncdynamics import experiments
    from ncdynamics.cli import _parse_overrides

    config = experiments.get("demo").make_config("cpu", _parse_overrides(sets, None))
    for k, v in want.items():
        got = getattr(config, k)
        assert got == v and type(got) is type(v), (k, got)


def _small_run(path: Path) -> Path:
    run = runs.create(path, config={"a": 1}, experiment="demo", preset="smoke", seed=0)
    run.log(0, {"x": 1.0})
    run.mark_completed()
    return path


# (case, file, content, fragment): a run's JSON file replaced by something else
JSON_CASES = [
    ("status not JSON", "status.json", "{oops", "status.json' is not valid JSON"),
    ("status a list", "status.json", "[1, 2]", "status.json' must hold a JSON object"),
    ("config not JSON", "config.json", "", "config.json' is not valid JSON"),
    ("config a number", "config.json", "3", "config.json' must hold a JSON object"),
    ("summary a list", "summary.json", "[]", "summary.json' must hold a JSON object"),
    ("summary not JSON", "summary.json", "{", "summary.json' is not valid JSON"),
]


@pytest.mark.parametrize("command", ["report", "compare", "forecast"])
@pytest.mark.parametrize(
    ("case", "name", "content", "fragment"), JSON_CASES, ids=[c[0] for c in JSON_CASES]
)
def test_broken_json_of_a_run_is_named_in_one_line(
    tmp_path, capsys, command, case, name, content, fragment
):
    run = _small_run(tmp_path / "run")
    (run / name).write_text(content)
    argv = [command, str(run)] + (["--at", "0.5"] if command == "forecast" else [])
    assert main(argv) == 2
    err = _err_line(capsys)
    assert fragment in err and str(run) in err


def test_index_lists_a_run_with_a_list_status_as_unreadable(tmp_path, capsys):
    from ncdynamics import report

    run = _small_run(tmp_path / "run")
    (run / "status.json").write_text("[]")
    page = report.write_index(tmp_path)
    assert "unreadable" in page.read_text() and "status.json" in page.read_text()


def test_experiment_failure_names_its_error_file(tmp_path, capsys, monkeypatch):
    from ncdynamics.experiments import demo

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(demo, "train", broken)
    out = tmp_path / "out"
    assert main(["run", "demo", "--out", str(out), "--no-progress"]) == 1
    err = _err_line(capsys)
    assert "RuntimeError: boom" in err and f"(traceback in {out / 'error.txt'})" in err
    assert (out / "error.txt").is_file()


def test_failure_without_error_file_does_not_point_to_one(tmp_path, capsys, monkeypatch):
    from ncdynamics import report

    def broken(*args, **kwargs):
        raise RuntimeError("figure backend gone")

    monkeypatch.setattr(report, "write_report", broken)
    out = tmp_path / "out"
    argv = ["run", "demo", "--out", str(out), "--no-progress", "--set", "epochs=1"]
    argv += ["--set", "losses=mse"]
    assert main(argv) == 1
    err = _err_line(capsys)
    assert "figure backend gone" in err and "traceback" not in err
    assert not (out / "error.txt").exists()


def test_report_out_never_overwrites_a_file(tmp_path, capsys):
    run = _small_run(tmp_path / "run")
    target = tmp_path / "mine.html"
    target.write_text("my notes")
    assert main(["report", str(run), "--out", str(target)]) == 2
    assert "already exists" in _err_line(capsys) and target.read_text() == "my notes"
    assert not (run / "report.html").exists()  # refused before any work
    fresh = tmp_path / "copy.html"
    assert main(["report", str(run), "--out", str(fresh)]) == 0
    assert fresh.read_bytes() == (run / "report.html").read_bytes()


def _under_a_file(tmp: Path) -> Path:
    (tmp / "plain").write_text("a regular file")
    return tmp / "plain" / "sub"


# (case, argv builder from (tmp, run), what the line says)
UNWRITABLE_CASES = [
    (
        "run under a regular file",
        lambda t, r: ["run", "demo", "--no-progress", "--out", str(_under_a_file(t))],
        "plain",
    ),
    (
        "compare under a regular file",
        lambda t, r: ["compare", str(r), "--out", str(_under_a_file(t))],
        "plain",
    ),
    (
        "report copy under a regular file",
        lambda t, r: ["report", str(r), "--out", str(_under_a_file(t))],
        "plain",
    ),
    ("index of a regular file", lambda t, r: ["report", "--index", str(t / "plain")], "plain"),
]


@pytest.mark.parametrize(
    ("case", "argv", "fragment"), UNWRITABLE_CASES, ids=[c[0] for c in UNWRITABLE_CASES]
)
def test_unwritable_path_is_one_line_naming_it(tmp_path, capsys, case, argv, fragment):
    run = _small_run(tmp_path / "run")
    (tmp_path / "plain").write_text("a regular file")
    assert main(argv(tmp_path, run)) == 2
    assert fragment in _err_line(capsys)
    assert (tmp_path / "plain").read_text() == "a regular file"


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes into read-only folders"
)
def test_read_only_directory_is_one_line_naming_it(tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        assert main(["run", "demo", "--no-progress", "--out", str(locked / "r")]) == 2
        assert str(locked / "r") in _err_line(capsys)
    finally:
        locked.chmod(0o700)


def test_disk_full_is_one_line_naming_the_path(tmp_path, capsys, monkeypatch):
    run = _small_run(tmp_path / "run")

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Path, "write_text", full)
    assert main(["report", str(run)]) == 2
    err = _err_line(capsys)
    assert "No space left on device" in err and str(run) in err


def test_a_setting_that_asks_for_too_much_memory_is_named_in_one_line(tmp_path, capsys):
    """`--set width=1000000000` makes torch's allocator refuse 256 GB at once (the request
    fails at once, nothing is touched); the message names the setting and the amount."""
    from ncdynamics.cli import main

    out = tmp_path / "wide"
    argv = ["run", "demo", "--preset", "smoke", "--set", "width=1000000000"]
    code = main([*argv, "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1, err
    assert "out of memory" in err and "--set width=1000000000" in err and "GiB" in err, err
    assert "enforce fail" not in err


def test_compare_on_a_run_still_training_says_so_in_its_header(tmp_path, capsys):
    from ncdynamics import runs
    from ncdynamics.cli import main

    run = runs.create(tmp_path / "live", config={"lr": 0.1})
    for step in range(20):
        run.log(step, **{"train/loss": 1.0 / (step + 1)})
    run.flush()  # the writer is still at work: state "running"
    out = tmp_path / "cmp"
    code = main(["compare", str(tmp_path / "live"), "--out", str(out)])
    printed = capsys.readouterr().out
    run.close()
    assert code == 0, printed
    first = printed.splitlines()[0]
    assert first.startswith("note:") and "still training" in first, printed
    assert "still training" in (out / "report.html").read_text()
