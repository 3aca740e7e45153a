import dataclasses

import numpy as np
import pytest
import torch
from torch import nn

from ncdynamics import data, runs
from ncdynamics.models import MLP
from ncdynamics.probes import classification_loss, collapse_metrics
from ncdynamics.training import (
    Recorder,
    Schedule,
    TrainConfig,
    loop,
    param_groups,
    train,
)


def small_data():
    return data.load(
        "gaussian-clusters",
        num_classes=3,
        dim=8,
        n_train_per_class=30,
        n_test_per_class=10,
        separation=4.0,
        seed=0,
    )


def make_model(seed=0, width=16):
    return MLP(8, 3, depth=2, width=width, generator=torch.Generator().manual_seed(seed))


def test_training_reduces_loss_and_is_reproducible():
    ds = small_data()
    a = train(make_model(), ds, epochs=15, lr=0.05, batch_size=16, seed=1, progress=False)
    b = train(make_model(), ds, epochs=15, lr=0.05, batch_size=16, seed=1, progress=False)
    assert a.history["train/loss"][-1] < 0.5 * a.history["train/loss"][0]
    assert a.history == b.history


def test_weight_decay_skips_biases_and_norm_layers():
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    groups = param_groups(model, 0.1)
    assert [p.ndim for p in groups[0]["params"]] == [2, 2]
    assert groups[1]["weight_decay"] == 0.0 and len(groups[1]["params"]) == 4
    model[0].weight.requires_grad_(False)  # frozen parameters are left out
    assert sum(len(g["params"]) for g in param_groups(model, 0.1)) == 5


def test_class_balanced_training_and_mse(tmp_path):
    ds = small_data()
    run = runs.create(tmp_path / "r")
    rec = Recorder(run, ds.x_train, ds.y_train, schedule=Schedule.log_spaced(8, 4))
    train(
        make_model(),
        ds,
        epochs=8,
        loss="mse",
        per_class=5,
        nesterov=True,
        lr=0.1,
        weight_decay=1e-3,
        milestones=(4,),
        recorder=rec,
        progress=False,
    )
    rec.close()
    wide = run.metrics_wide()
    assert {"nc/nc1", "nc/nc4", "probe/accuracy", "test/accuracy", "train/loss"} <= set(wide)
    assert wide["lr"].dropna().iloc[-1] == pytest.approx(0.01)
    assert sorted(wide["nc/nc1"].dropna().index) == list(Schedule.log_spaced(8, 4).steps)


def test_recorder_works_in_a_user_loop_with_any_module(tmp_path):
    ds = small_data()

    class Net(nn.Module):  # no features()/classifier: a hook on the named layer is used
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
            self.head = nn.Linear(16, 3)

        def forward(self, x):
            return self.head(self.body(x))

    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    run = runs.create(tmp_path / "mine")
    rec = Recorder(run, ds.x_train, ds.y_train, probes=["collapse"], layer="head")
    x, y = torch.from_numpy(ds.x_train), torch.from_numpy(ds.y_train)
    for epoch in range(3):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        rec.step(model, epoch)
    run.mark_completed()
    df = runs.open(tmp_path / "mine").metrics
    assert set(df["step"]) == {0, 1, 2} and "nc/nc3" in set(df["name"])


@pytest.mark.parametrize("batch_size", [1024, 7])
def test_recorder_feeds_the_model_its_own_dtype_and_matches_direct_metrics(tmp_path, batch_size):
    # a float64 model gets float64 probe inputs (converted once), in one batch or in chunks
    ds = small_data()
    model = make_model().double().eval()
    rec = Recorder(
        runs.create(tmp_path / "r"),
        ds.x_train,
        ds.y_train,
        probes=["collapse"],
        batch_size=batch_size,
    )
    first = rec.record(model, 0)
    again = rec.record(model, 1)
    assert list(rec._inputs) == [(torch.device("cpu"), torch.float64)]
    with torch.no_grad():
        h = model.features(torch.from_numpy(ds.x_train).double())
    w, b = model.classifier.weight.detach(), model.classifier.bias.detach()
    direct = collapse_metrics(h.numpy(), ds.y_train, w.numpy(), b.numpy())
    for key, value in direct.items():
        assert first[f"nc/{key}"] == pytest.approx(value, rel=1e-12, abs=1e-15), key
    assert again == first


@pytest.mark.parametrize("loss", ["mse", "cross-entropy"])
def test_evaluation_matches_the_training_loss_in_one_batch_or_many(loss):
    ds = small_data()
    model = make_model().train()
    x, y = torch.from_numpy(ds.x_train), torch.from_numpy(ds.y_train)
    with torch.no_grad():
        out = model(x)
    expected = (
        float(classification_loss(out, y, loss)),
        float((out.argmax(1) == y).double().mean()),
    )
    one = loop._evaluate(model, x, y, loss)
    many = loop._evaluate(model, x, y, loss, batch_size=7)
    assert one == pytest.approx(expected, rel=1e-6)  # NumPy float64 against torch float32
    assert many == pytest.approx(one, rel=1e-6)  # float32 logits of other GEMM shapes
    assert model.training  # the mode is restored


def test_recorder_rejects_empty_probe_set_and_bad_sink(tmp_path):
    run = runs.create(tmp_path / "r")
    with pytest.raises(ValueError, match="at least 1 element|empty probe set"):
        Recorder(run, np.zeros((0, 8), np.float32), np.zeros(0, int))
    with pytest.raises(ValueError, match="length 3 .one label per sample.; got 4"):
        Recorder(run, np.zeros((3, 8), np.float32), np.zeros(4, int))
    with pytest.raises(TypeError, match="without `log`"):
        Recorder(object(), np.zeros((3, 8), np.float32), np.zeros(3, int))
    with pytest.raises(ValueError, match="`probe` must be one of"):
        Recorder(run, np.zeros((3, 8), np.float32), np.zeros(3, int), probes=["nope"])


def test_divergence_is_reported_not_hidden():
    ds = small_data()
    with pytest.raises(FloatingPointError, match="diverged"):
        train(make_model(), ds, epochs=5, lr=1e6, loss="mse", progress=False)


def test_an_empty_training_set_is_refused():
    ds = small_data()
    empty = dataclasses.replace(ds, x_train=ds.x_train[:0], y_train=ds.y_train[:0])
    with pytest.raises(ValueError, match="at least one training sample"):
        train(make_model(), empty, epochs=1, progress=False)


def test_log_spaced_schedule_includes_ends():
    s = Schedule.log_spaced(1000, 10)
    assert s.steps[0] == 0 and s.steps[-1] == 1000 and len(s.steps) <= 11
    assert 1000 in s and 999 not in s


def test_train_with_a_config_equals_train_with_keywords(tmp_path):
    ds = small_data()
    options = {"epochs": 6, "lr": 0.08, "batch_size": 16, "seed": 3, "milestones": (3,)}
    by_keywords = train(make_model(), ds, progress=False, **options)
    config = TrainConfig(progress=False, **options)
    by_config = train(make_model(), ds, config)
    assert by_config == by_keywords
    # keywords beside a config replace its fields
    changed = train(make_model(), ds, dataclasses.replace(config, lr=1.0), lr=0.08)
    assert changed == by_keywords


def test_train_names_a_keyword_that_is_no_setting():
    with pytest.raises(TypeError, match="`lrate`.*TrainConfig"):
        train(make_model(), small_data(), epochs=1, lrate=0.1)
    with pytest.raises(TypeError, match="`config` must be a TrainConfig"):
        train(make_model(), small_data(), {"epochs": 1})
    with pytest.raises(ValueError, match="`epochs`"):
        train(make_model(), small_data())  # neither a config nor epochs


def test_train_is_not_restated_by_keyword():
    """``train`` forwards its settings to ``TrainConfig`` once: it has no parameter of its
    own for any of the config's fields (they are documented there, checked there)."""
    import inspect

    own = set(inspect.signature(train).parameters)
    assert own == {"model", "data", "config", "device", "recorder", "store", "settings"}
    assert not hasattr(loop, "train_with_config")


@pytest.mark.parametrize("bad", ["gpu", "tpu:0", 3.5])
def test_train_checks_its_device_like_a_run_does(bad):
    """``train(device=...)`` goes through the one device check (``resolve_device``)."""
    with pytest.raises(ValueError, match="`device` must be 'auto', 'cpu', 'cuda' or 'cuda:N'"):
        train(make_model(), small_data(), epochs=1, progress=False, device=bad)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a CPU machine")
def test_train_refuses_cuda_on_a_machine_without_it():
    with pytest.raises(ValueError, match="needs CUDA"):
        train(make_model(), small_data(), epochs=1, progress=False, device="cuda")


def test_train_config_normalises_integers_and_is_frozen():
    config = TrainConfig(epochs=np.int64(4), batch_size=np.int32(8), per_class=np.int16(2))
    assert type(config.epochs) is int and type(config.batch_size) is int
    assert type(config.per_class) is int
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.epochs = 5


@pytest.mark.parametrize(
    "options, match",
    [
        ({"epochs": -1}, "`epochs`"),
        ({"epochs": 1, "loss": "hinge"}, "`loss`"),
        ({"epochs": 1, "lr": 0.0}, "`lr`"),
        ({"epochs": 1, "momentum": 1.0}, "`momentum`"),
        ({"epochs": 1, "weight_decay": -1e-3}, "`weight_decay`"),
        ({"epochs": 1, "batch_size": 0}, "`batch_size`"),
        ({"epochs": 1, "per_class": 0}, "`per_class`"),
        ({"epochs": 1, "checkpoint_every": 0}, "`checkpoint_every`"),
        ({"epochs": 1, "test_every": 0}, "`test_every`"),
    ],
)
def test_train_config_rejects_bad_values_by_name(options, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig(**options)
    with pytest.raises(ValueError, match=match):
        train(make_model(), small_data(), progress=False, **options)
