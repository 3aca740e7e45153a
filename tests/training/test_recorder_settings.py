"""The Recorder records the settings a theory's regime reads (issue 30, item 2), and takes
models that return a tuple or a dict (issue 32)."""

from __future__ import annotations

import warnings
from collections import OrderedDict
from pathlib import Path

import pytest
import torch
from torch import nn

from ncdynamics import runs
from ncdynamics.theories.confrontation import Stream
from ncdynamics.training import Recorder
from ncdynamics.training.recorder import canonical_loss_name

torch.manual_seed(0)
X = torch.randn(30, 6)
Y = torch.arange(30) % 3


def _model() -> nn.Sequential:
    return nn.Sequential(OrderedDict(hidden=nn.Linear(6, 8), relu=nn.ReLU(), fc=nn.Linear(8, 3)))


def test_optimizer_and_loss_reach_the_config_and_the_stream(tmp_path: Path) -> None:
    model = _model()
    opt = torch.optim.SGD(
        model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4
    )
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.1)
    with runs.create(tmp_path / "r") as run:
        rec = Recorder(
            run,
            X,
            Y,
            probes=["performance"],
            layer="fc",
            optimizer=opt,
            loss=torch.nn.functional.cross_entropy,
        )
        for epoch in range(4):
            rec.step(model, epoch)
            opt.step()
            sched.step()
    done = runs.open(tmp_path / "r")
    stream = Stream(done)
    assert stream.setting("optimizer") == "SGD"
    assert stream.setting("loss") == "cross-entropy"
    assert stream.setting("lr") == 0.05
    assert stream.setting("momentum") == 0.9
    assert stream.setting("nesterov") is True
    assert stream.setting("weight_decay") == 5e-4
    steps, lr = stream.scalar("lr")
    assert list(steps) == [0, 1, 2, 3]
    assert lr.tolist() == pytest.approx([0.05, 0.05, 0.005, 0.005])


def test_a_prefix_puts_the_settings_under_its_stream(tmp_path: Path) -> None:
    model = _model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.8, 0.99))
    with runs.create(tmp_path / "r", config={"width": 8}) as run:
        Recorder(
            run,
            X,
            Y,
            probes=["performance"],
            layer="fc",
            prefix="mse/",
            optimizer=opt,
            loss=nn.MSELoss(),
        ).record(model, 0)
        Recorder(
            run, X, Y, probes=["performance"], layer="fc", prefix="ce/", loss="CrossEntropyLoss"
        ).record(model, 0)
    done = runs.open(tmp_path / "r")
    assert done.config["streams"]["mse"]["optimizer"] == "Adam"
    assert done.config["streams"]["mse"]["betas"] == [0.8, 0.99]
    assert "momentum" not in done.config["streams"]["mse"]
    assert Stream(done, "mse/").setting("loss") == "mse"
    assert Stream(done, "ce/").setting("loss") == "cross-entropy"
    assert Stream(done, "ce/").setting("optimizer") is None  # not given: not invented
    assert done.config["width"] == 8


def test_a_declared_setting_is_kept_and_resume_accepts_the_first_config(tmp_path: Path) -> None:
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    run = runs.create(tmp_path / "r", config={"lr": 0.1})
    with pytest.warns(UserWarning, match=r"'lr'.*declared as 0\.1.*uses 0\.05"):
        Recorder(run, X, Y, probes=["performance"], layer="fc", optimizer=opt)
    assert run.config["lr"] == 0.1 and run.config["optimizer"] == "SGD"
    run.close()
    again = runs.create(tmp_path / "r", config={"lr": 0.1}, resume=True)  # not "differs"
    again.close()


def test_resume_with_another_config_names_the_keys(tmp_path: Path) -> None:
    runs.create(tmp_path / "r", config={"lr": 0.1, "epochs": 3}).close()
    with pytest.raises(ValueError, match=r"1 key: lr \(run 0\.1, given 0\.2\)"):
        runs.create(tmp_path / "r", config={"lr": 0.2, "epochs": 3}, resume=True)


@pytest.mark.parametrize(
    ("given", "name"),
    [
        ("MSE", "mse"),
        ("mean_squared_error", "mse"),
        (torch.nn.functional.mse_loss, "mse"),
        (nn.MSELoss(), "mse"),
        ("half_mse", "half-mse"),
        ("cross_entropy", "cross-entropy"),
        (torch.nn.functional.cross_entropy, "cross-entropy"),
        (nn.CrossEntropyLoss(), "cross-entropy"),
        ("CE", "cross-entropy"),
        (nn.HuberLoss(), "huber"),
    ],
)
def test_canonical_loss_names(given: object, name: str) -> None:
    assert canonical_loss_name(given) == name  # type: ignore[arg-type]


class _Tuple(nn.Module):
    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind, self.net = kind, _model()

    def forward(self, x: torch.Tensor) -> object:
        logits = self.net(x)
        if self.kind == "tuple":
            return (logits, x.sum(1))
        if self.kind == "dict":
            return {"aux": "text", "logits": logits}
        return {"scores": logits, "aux": x}


@pytest.mark.parametrize(("kind", "output"), [("tuple", None), ("dict", None), ("other", "scores")])
def test_models_returning_a_tuple_or_a_dict(tmp_path: Path, kind: str, output: object) -> None:
    model = _Tuple(kind)
    with runs.create(tmp_path / "r") as run:
        rec = Recorder(run, X, Y, probes=["performance"], layer="net.fc", output=output)
        got = rec.record(model, 0)
    plain = model.net(X).argmax(1).eq(Y).float().mean().item()
    assert got["probe/accuracy"] == pytest.approx(plain)


def test_an_output_that_selects_nothing_is_one_line(tmp_path: Path) -> None:
    with runs.create(tmp_path / "r") as run, warnings.catch_warnings():
        rec = Recorder(run, X, Y, probes=["performance"], layer="net.fc", output="logits")
        with pytest.raises(
            ValueError, match=r"^`output` 'logits' selects nothing.*keys 'scores', 'aux'"
        ):
            rec.record(_Tuple("other"), 0)


def test_inputs_of_the_wrong_width_name_the_layer(tmp_path: Path) -> None:
    with runs.create(tmp_path / "r") as run:
        rec = Recorder(run, X[:, :5], Y, probes=["performance"], layer="fc")
        with pytest.raises(
            ValueError,
            match=r"^layer 'hidden' \(Linear with 6 input features\) received inputs with 5 "
            r"features, from the probe inputs `x` of shape \(30, 5\)",
        ) as info:
            rec.record(_model(), 0)
    assert "\n" not in str(info.value)


def test_mlflow_receives_the_settings_as_params(tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("mlflow", reason="mlflow is not installed")
    from mlflow.tracking import MlflowClient

    from ncdynamics.training import MLflowSink, TeeSink

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    run = runs.create(tmp_path / "run")
    sink = MLflowSink(tmp_path / "mlruns", params={"lr": 0.05})
    tee = TeeSink(run, sink)
    rec = Recorder(
        tee,
        X,
        Y,
        probes=["performance"],
        layer="fc",
        prefix="ce/",
        optimizer=opt,
        loss="cross_entropy",
    )
    rec.record(model, 0)
    tee.finish()
    params = MlflowClient((tmp_path / "mlruns").resolve().as_uri()).get_run(sink.run_id).data.params
    assert params["ce.optimizer"] == "SGD" and params["ce.momentum"] == "0.9"
    assert params["ce.loss"] == "cross-entropy" and params["lr"] == "0.05"
    assert runs.open(tmp_path / "run").config["streams"]["ce"]["optimizer"] == "SGD"


def test_the_hugging_face_callback_records_the_trainers_optimizer(tmp_path: Path) -> None:
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    pytest.importorskip("accelerate", reason="the Trainer needs accelerate")
    from ncdynamics.training import transformers_callback

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body, self.head = nn.Linear(6, 8), nn.Linear(8, 3)

        def forward(self, x, labels=None):
            logits = self.head(torch.relu(self.body(x)))
            out = {"logits": logits}
            if labels is not None:
                out["loss"] = nn.functional.cross_entropy(logits, labels)
            return out

    class Items(torch.utils.data.Dataset):
        def __len__(self) -> int:
            return len(Y)

        def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
            return {"x": X[i], "labels": Y[i]}

    run = runs.create(tmp_path / "run")
    rec = Recorder(run, X, Y, probes=["performance"], layer="head")
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "hf"),
        num_train_epochs=2,
        per_device_train_batch_size=10,
        learning_rate=0.1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
        weight_decay=0.01,
    )
    transformers.Trainer(
        model=Net(), args=args, train_dataset=Items(), callbacks=[transformers_callback(rec)]
    ).train()
    done = runs.open(tmp_path / "run")
    assert done.config["optimizer"] == "AdamW" and done.config["weight_decay"] == 0.01
    assert len(done.config["betas"]) == 2
    assert done.metrics_wide()["lr"].notna().all()


def test_wandb_receives_the_settings_in_its_config() -> None:
    pytest.importorskip("wandb", reason="wandb is not installed")
    from ncdynamics.training import WandbSink

    class Config(dict):
        def update(self, values, allow_val_change=False):  # type: ignore[override]
            super().update(values)

    class FakeRun:
        config = Config({"lr": 0.1})

    sink = WandbSink(run=FakeRun())
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    Recorder(sink, X, Y, probes=["performance"], layer="fc", optimizer=opt, loss="mse")
    assert FakeRun.config == {
        "lr": 0.1,  # the run's own value is kept
        "optimizer": "SGD",
        "momentum": 0.9,
        "nesterov": False,
        "weight_decay": 0.0,
        "loss": "mse",
    }
