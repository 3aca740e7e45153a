"""A crafted checkpoint in a run directory runs no code: it is loaded with weights_only."""

import pickle
import zipfile

import pytest
import torch

from ncdynamics import runs
from ncdynamics.cli import main


class _Payload:
    """Unpickling this object would create the file ``target`` (stand-in for any code)."""

    def __init__(self, target):
        self.target = str(target)

    def __reduce__(self):
        return (open, (self.target, "w"))


def _evil_torch_file(path, target):
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"step": 1, "model": _Payload(target)}, path)


def _evil_plain_pickle(path, target):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps({"step": 1, "x": _Payload(target)}))


@pytest.mark.parametrize("write", [_evil_torch_file, _evil_plain_pickle], ids=["torch", "pickle"])
def test_a_malicious_checkpoint_executes_nothing_and_is_a_one_line_error(tmp_path, write):
    run = runs.create(tmp_path / "r", config={})
    target = tmp_path / "pwned"
    ckpt = tmp_path / "r" / "checkpoints" / "main" / "step-000000001.pt"
    write(ckpt, target)
    with pytest.raises(runs.RunCorruptError, match="step-000000001.pt") as info:
        run.load_checkpoint("main")
    assert "\n" not in str(info.value)
    assert not target.exists()


def _os_system_pickle(path, target):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x80\x02cos\nsystem\nq\x00.")


@pytest.mark.parametrize("write", [_evil_torch_file, _evil_plain_pickle, _os_system_pickle])
def test_a_refused_checkpoint_never_quotes_torch_s_advice_to_load_it_unsafely(tmp_path, write):
    run = runs.create(tmp_path / "r", config={})
    write(tmp_path / "r" / "checkpoints" / "main" / "step-000000001.pt", tmp_path / "pwned")
    with pytest.raises(runs.RunCorruptError, match="refused unsafe content") as info:
        run.load_checkpoint("main")
    assert "weights_only" not in str(info.value) and "False" not in str(info.value)


def test_resume_of_a_run_with_malicious_checkpoints_runs_no_code(tmp_path, capsys):
    out = tmp_path / "demo"
    from ncdynamics import experiments

    run = experiments.run("demo", "smoke", out, progress=False)
    run._set_status(state="running")  # as if killed before it completed
    target = tmp_path / "pwned"
    for ckpt in (out / "checkpoints" / "mse").glob("step-*.pt"):
        _evil_torch_file(ckpt, target)
    argv = ["run", "demo", "--preset", "smoke", "--out", str(out), "--resume", "--no-progress"]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "step-000000003.pt" in err, err
    assert not target.exists()


def test_a_training_checkpoint_loads_under_weights_only(tmp_path):
    """Model, SGD momentum, MultiStepLR (a Counter of milestones) and the RNG state."""
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, [2, 5], gamma=0.1)
    model(torch.randn(4, 3)).sum().backward()
    opt.step()
    sched.step()
    run = runs.create(tmp_path / "r", config={})
    state = {
        "model": model.state_dict(),
        "optimizer": opt.state_dict(),
        "scheduler": sched.state_dict(),
        "torch_rng": torch.get_rng_state(),
    }
    path = run.save_checkpoint(1, state)
    assert zipfile.is_zipfile(path)
    direct = torch.load(path, map_location="cpu", weights_only=True)
    loaded = run.load_checkpoint()
    assert loaded is not None and loaded["step"] == 1 and direct["step"] == 1
    again = torch.optim.lr_scheduler.MultiStepLR(opt, [7], gamma=0.5)
    again.load_state_dict(loaded["scheduler"])
    assert dict(again.milestones) == {2: 1, 5: 1}
    torch.testing.assert_close(loaded["torch_rng"], state["torch_rng"])
    torch.testing.assert_close(
        loaded["optimizer"]["state"][0]["momentum_buffer"],
        state["optimizer"]["state"][0]["momentum_buffer"],
    )
