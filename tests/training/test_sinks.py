import numpy as np
import pytest
import torch

from ncdynamics.models import MLP
from ncdynamics.runs import create
from ncdynamics.training import Recorder, TeeSink, TensorBoardSink, lightning_callback


class ListSink:
    def __init__(self):
        self.logged, self.arrays, self.flushes = [], [], 0

    def log(self, step, values):
        self.logged.append((step, dict(values)))

    def save_array(self, name, step, array):
        self.arrays.append((name, step))
        return name

    def flush(self):
        self.flushes += 1


def _probe_set(rng, n=30, d=6, c=3):
    x = rng.normal(size=(n, d)).astype(np.float32)
    y = np.arange(n) % c
    return x, y


def test_tee_sink_forwards_to_every_sink(rng, tmp_path):
    a, b = ListSink(), ListSink()
    tee = TeeSink(a, b)
    x, y = _probe_set(rng)
    model = MLP(6, 3, depth=1, width=8, generator=torch.Generator().manual_seed(0))
    rec = Recorder(tee, x, y, probes=["collapse"])
    rec.record(model, 4)
    rec.close()
    assert a.logged == b.logged and a.logged[0][0] == 4 and "nc/nc1" in a.logged[0][1]
    assert a.flushes == b.flushes == 1
    with pytest.raises(ValueError, match="at least one sink"):
        TeeSink()
    with pytest.raises(TypeError, match="without `log`"):
        TeeSink(object())


def test_tensorboard_sink_writes_the_recorders_scalars(rng, tmp_path):
    pytest.importorskip("tensorboard", reason="tensorboard is not installed")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run = create(tmp_path / "run")
    tb = TensorBoardSink(tmp_path / "tb")
    x, y = _probe_set(rng)
    model = MLP(6, 3, depth=1, width=8, generator=torch.Generator().manual_seed(0))
    rec = Recorder(TeeSink(run, tb), x, y, probes=["collapse", "performance"], prefix="ce/")
    for step in range(3):
        rec.record(model, step, loss=1.0 / (step + 1))
    rec.close()
    tb.close()
    acc = EventAccumulator(str(tmp_path / "tb"))
    acc.Reload()
    tags = acc.Tags()["scalars"]
    assert "ce/nc/nc1" in tags and "ce/loss" in tags
    events = acc.Scalars("ce/nc/nc1")
    stored = run.metrics_wide()["ce/nc/nc1"]
    assert [e.step for e in events] == [0, 1, 2]
    np.testing.assert_allclose([e.value for e in events], stored.to_numpy(), rtol=1e-6)
    assert [e.value for e in acc.Scalars("ce/loss")] == pytest.approx([1.0, 0.5, 1 / 3])


def test_lightning_callback_drives_the_recorder(rng):
    pl = pytest.importorskip(
        "pytorch_lightning",
        reason="PyTorch Lightning is not installed (pip install '.[lightning]')",
    )
    x, y = _probe_set(rng, n=60)

    class Module(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = MLP(6, 3, depth=1, width=8, generator=torch.Generator().manual_seed(0))
            self.features, self.classifier = self.net.features, self.net.classifier

        def forward(self, inp):
            return self.net(inp)

        def training_step(self, batch, _):
            xb, yb = batch
            loss = torch.nn.functional.cross_entropy(self(xb), yb)
            self.log("train_loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    sink = ListSink()
    rec = Recorder(sink, x, y, probes=["collapse"], schedule=1)
    data = torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
    loader = torch.utils.data.DataLoader(data, batch_size=20)
    trainer = pl.Trainer(
        max_epochs=3,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[lightning_callback(rec)],
        accelerator="cpu",
    )
    trainer.fit(Module(), loader)
    assert [s for s, _ in sink.logged] == [0, 1, 2, 3]
    assert all("nc/nc1" in v for _, v in sink.logged)
    assert "lightning/train_loss" in sink.logged[-1][1] and sink.flushes >= 1


def test_lightning_callback_needs_a_recorder():
    with pytest.raises(TypeError, match="`recorder` must be a Recorder"):
        lightning_callback(object())


class _FakeTrainer:
    """The attributes of a Lightning Trainer that the callback reads."""

    def __init__(self):
        self.current_epoch = 0
        self.callback_metrics = {"train_loss": torch.tensor(0.5)}


def _fake_fit(callback, model, n_epochs, fail_at=None):
    """Call the hooks in Lightning's order; an error goes to `on_exception`, then re-raises."""
    trainer = _FakeTrainer()
    try:
        callback.on_train_start(trainer, model)
        for epoch in range(n_epochs):
            trainer.current_epoch = epoch
            if epoch == fail_at:
                raise RuntimeError("loss is nan\nmore detail")
            callback.on_train_epoch_end(trainer, model)
        callback.on_train_end(trainer, model)
    except BaseException as exc:
        callback.on_exception(trainer, model, exc)
        raise


def _callback_with_fake_lightning(monkeypatch, rec):
    from ncdynamics.training import sinks

    monkeypatch.setattr(sinks, "_lightning_callback_base", lambda: object)
    return lightning_callback(rec)


def test_lightning_callback_marks_its_run_completed_at_fit_end(rng, tmp_path, monkeypatch):
    from ncdynamics import runs

    x, y = _probe_set(rng)
    model = MLP(6, 3, depth=1, width=8, generator=torch.Generator().manual_seed(0))
    run = create(tmp_path / "run")
    callback = _callback_with_fake_lightning(monkeypatch, Recorder(run, x, y, probes=["collapse"]))
    _fake_fit(callback, model, 2)
    again = runs.open(tmp_path / "run")
    assert again.state == "completed"
    assert sorted(set(again.metrics["step"])) == [0, 1, 2]
    assert "lightning/train_loss" in set(again.metrics["name"])
    create(tmp_path / "run", overwrite=True).close()  # the lock was released


def test_lightning_callback_marks_its_run_failed_on_an_exception(rng, tmp_path, monkeypatch):
    from ncdynamics import runs

    x, y = _probe_set(rng)
    model = MLP(6, 3, depth=1, width=8, generator=torch.Generator().manual_seed(0))
    run = create(tmp_path / "run")
    tee = TeeSink(run, ListSink())
    callback = _callback_with_fake_lightning(monkeypatch, Recorder(tee, x, y, probes=["collapse"]))
    with pytest.raises(RuntimeError, match="loss is nan"):
        _fake_fit(callback, model, 3, fail_at=1)
    again = runs.open(tmp_path / "run")
    assert again.state == "failed"
    assert again.status["error"] == "RuntimeError: loss is nan"
    assert sorted(set(again.metrics["step"])) == [0, 1]  # what was recorded is kept


def test_lightning_callback_can_leave_the_run_open(rng, tmp_path, monkeypatch):
    from ncdynamics import runs
    from ncdynamics.training import sinks

    monkeypatch.setattr(sinks, "_lightning_callback_base", lambda: object)
    x, y = _probe_set(rng)
    model = MLP(6, 3, depth=1, width=8, generator=torch.Generator().manual_seed(0))
    run = create(tmp_path / "run")
    callback = lightning_callback(Recorder(run, x, y, probes=["collapse"]), close_run=False)
    _fake_fit(callback, model, 1)
    assert runs.open(tmp_path / "run").state == "running"
    run.mark_completed()
    run.close()
