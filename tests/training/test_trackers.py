"""The MLflow and Weights & Biases sinks and the Hugging Face Trainer callback.

Each test reads back what was logged with the tracker's own means: MLflow's client API, the
records of a W&B offline run's ``.wandb`` file, and the run directory the Trainer callback
wrote. A test is skipped when its optional extra is not installed; the install hints are
tested without the extras.
"""

import struct
import sys

import numpy as np
import pytest
import torch
from torch import nn

from ncdynamics.models import MLP
from ncdynamics.runs import create
from ncdynamics.training import MLflowSink, Recorder, TeeSink, WandbSink, transformers_callback
from ncdynamics.training.hf_callback import logits_of
from ncdynamics.training.sinks import flatten_config


def _probe_set(rng, n=30, d=6, c=3):
    x = rng.normal(size=(n, d)).astype(np.float32)
    return x, np.arange(n) % c


def _model():
    return MLP(6, 3, depth=1, width=8, generator=torch.Generator().manual_seed(0))


def _record_three_steps(sink, rng, *, probes=("collapse", "performance", "class_means")):
    x, y = _probe_set(rng)
    model = _model()
    rec = Recorder(sink, x, y, probes=list(probes), prefix="ce/")
    for step in range(3):
        with torch.no_grad():
            model.classifier.weight.mul_(1.5)
        rec.record(model, step, loss=1.0 / (step + 1))
    rec.close()


CONFIG = {"lr": 0.1, "model": {"depth": 1, "width": 8}, "milestones": [2, 4]}


# ---------------------------------------------------------------------------- install hints
@pytest.mark.parametrize(
    "module, make, match",
    [
        ("mlflow", lambda: MLflowSink(), r"pip install 'ncdynamics\[mlflow\]'"),
        ("wandb", lambda: WandbSink(), r"pip install 'ncdynamics\[wandb\]'"),
        (
            "transformers",
            lambda: transformers_callback(Recorder(_ListSink(), np.ones((3, 2)), [0, 1, 2])),
            r"pip install 'ncdynamics\[transformers\]'",
        ),
    ],
)
def test_a_missing_extra_names_the_pip_command(monkeypatch, module, make, match):
    for name in [m for m in sys.modules if m == module or m.startswith(module + ".")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, module, None)  # `import module` raises ImportError
    with pytest.raises(ImportError, match=match):
        make()


class _ListSink:
    def __init__(self):
        self.logged = []

    def log(self, step, values):
        self.logged.append((step, dict(values)))

    def save_array(self, name, step, array):
        return name

    def flush(self):
        pass


def test_flatten_config_joins_nested_keys_and_reads_dataclasses():
    from ncdynamics.experiments.demo import DemoConfig

    assert flatten_config(CONFIG) == {
        "lr": 0.1,
        "model.depth": 1,
        "model.width": 8,
        "milestones": [2, 4],
    }
    assert flatten_config(DemoConfig())["width"] == 256
    with pytest.raises(TypeError, match="`config` must be a mapping or a dataclass"):
        flatten_config([1, 2])


# ---------------------------------------------------------------------------- MLflow
@pytest.fixture
def mlflow_client(monkeypatch):
    pytest.importorskip("mlflow", reason="MLflow is not installed (pip install '.[mlflow]')")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    from mlflow.tracking import MlflowClient

    return MlflowClient


def test_mlflow_sink_writes_a_file_store_that_mlflows_client_reads(mlflow_client, rng, tmp_path):
    run = create(tmp_path / "run", config=CONFIG)
    sink = MLflowSink(tmp_path / "mlruns", experiment="trackers", run_name="r1", params=CONFIG)
    tee = TeeSink(run, sink)
    _record_three_steps(tee, rng)
    tee.finish()
    assert run.state == "completed"

    client = mlflow_client(tracking_uri=(tmp_path / "mlruns").resolve().as_uri())
    exp = client.get_experiment_by_name("trackers")
    (found,) = client.search_runs([exp.experiment_id])
    assert found.info.run_id == sink.run_id and found.info.status == "FINISHED"
    assert found.info.run_name == "r1"
    assert found.data.params == {
        "lr": "0.1",
        "model.depth": "1",
        "model.width": "8",
        "milestones": "[2, 4]",
    }
    stored = run.metrics_wide()
    for name in ("ce/nc/nc1", "ce/loss", "ce/probe/accuracy"):
        history = client.get_metric_history(sink.run_id, name)
        assert [m.step for m in history] == [0, 1, 2]
        np.testing.assert_allclose([m.value for m in history], stored[name].to_numpy())
    names = [f.path for f in client.list_artifacts(sink.run_id, "arrays")]
    assert "arrays/ce.class_means_logits" in names
    local = client.download_artifacts(
        sink.run_id, "arrays/ce.class_means_logits/000000002.npy", str(tmp_path / "dl")
    )
    np.testing.assert_array_equal(np.load(local), run.arrays("ce.class_means_logits")[2])


def test_mlflow_sink_defaults_to_mlruns_and_marks_a_failure(
    mlflow_client, rng, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    sink = MLflowSink()
    assert sink.tracking_uri == (tmp_path / "mlruns").resolve().as_uri()
    sink.log(0, {"a": 1.0})
    sink.finish(RuntimeError("loss is nan\nmore"))
    sink.finish()  # idempotent: the first end stays
    client = mlflow_client(tracking_uri=sink.tracking_uri)
    found = client.get_run(sink.run_id)
    assert found.info.status == "FAILED"
    assert found.data.tags["ncdynamics.error"] == "RuntimeError: loss is nan"
    assert client.get_experiment(found.info.experiment_id).name == "ncdynamics"


def test_mlflow_sink_logs_into_a_given_run_and_leaves_it_open(mlflow_client, tmp_path):
    first = MLflowSink(tmp_path / "mlruns", experiment="e")
    second = MLflowSink(tmp_path / "mlruns", run_id=first.run_id, tags={"who": "second"})
    with second:
        second.log(3, {"b": 2.0})
    client = mlflow_client(tracking_uri=first.tracking_uri)
    found = client.get_run(first.run_id)
    assert found.info.status == "RUNNING" and found.data.metrics == {"b": 2.0}
    assert found.data.tags["who"] == "second"
    with pytest.raises(ValueError, match="`experiment` must be a non-empty str"):
        MLflowSink(tmp_path / "mlruns", experiment="")


def test_mlflow_sink_as_a_context_manager_fails_its_run_on_an_error(mlflow_client, tmp_path):
    with pytest.raises(ZeroDivisionError):
        with MLflowSink(tmp_path / "mlruns", experiment="e") as sink:
            sink.log(0, {"a": 1.0})
            raise ZeroDivisionError("division by zero")
    found = mlflow_client(tracking_uri=sink.tracking_uri).get_run(sink.run_id)
    assert found.info.status == "FAILED"
    assert found.data.tags["ncdynamics.error"] == "ZeroDivisionError: division by zero"


# ---------------------------------------------------------------------------- W&B
def _wandb_records(path):
    """The protobuf records of a W&B ``.wandb`` file (a LevelDB-style log of 32 KiB blocks:
    a 7-byte file header, then records of crc32 (4), length (2), type (1) and data)."""
    from wandb.proto import wandb_internal_pb2

    raw = path.read_bytes()
    assert raw[:4] == b":W&B", raw[:7]
    pos, block, pieces = 7, 32768, b""
    while pos + 7 <= len(raw):
        left = block - pos % block
        if left < 7:  # a block's tail too short for a header is padding
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", raw[pos : pos + 7])
        if (length == 0 and kind == 0) or pos + 7 + length > len(raw):
            break  # the end, or a record still being written
        data, pos = raw[pos + 7 : pos + 7 + length], pos + 7 + length
        if kind in (1, 2):  # full, first
            pieces = data
        else:  # middle, last
            pieces += data
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pieces)
            yield record


def _finished_wandb_log(path, patience=60.0):
    """The records of a W&B log once its `exit` record is there: W&B's service process
    writes the file and may still be closing it when `run.finish()` returns."""
    import time

    deadline = time.monotonic() + patience
    while True:
        records = list(_wandb_records(path))
        if any(r.WhichOneof("record_type") == "exit" for r in records):
            return records
        assert time.monotonic() < deadline, f"{path.name} has no exit record after {patience} s"
        time.sleep(0.2)


def test_wandb_sink_offline_run_holds_the_history_summary_and_arrays(rng, tmp_path, monkeypatch):
    pytest.importorskip("wandb", reason="wandb is not installed (pip install '.[wandb]')")
    import json

    for var in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR"):
        monkeypatch.setenv(var, str(tmp_path / var.lower()))
    monkeypatch.setenv("WANDB_SILENT", "true")
    run = create(tmp_path / "run")
    sink = WandbSink("trackers", name="r1", config=CONFIG, dir=tmp_path / "wb", mode="offline")
    tee = TeeSink(run, sink)
    _record_three_steps(tee, rng)
    tee.finish()

    (run_dir,) = (tmp_path / "wb" / "wandb").glob("offline-run-*")
    (log_file,) = run_dir.glob("run-*.wandb")
    history, summary, files, config = {}, {}, [], {}
    for record in _finished_wandb_log(log_file):
        kind = record.WhichOneof("record_type")
        if kind == "history":
            row = {
                "/".join(i.nested_key) or i.key: json.loads(i.value_json)
                for i in record.history.item
            }
            history[row["_step"]] = row
        elif kind == "summary":
            for u in record.summary.update:
                summary["/".join(u.nested_key) or u.key] = json.loads(u.value_json)
        elif kind == "files":
            files += [f.path for f in record.files.files]
        elif kind == "run":
            for u in record.run.config.update:
                config[u.key] = json.loads(u.value_json)
    stored = run.metrics_wide()
    assert sorted(history) == [0, 1, 2]
    for name in ("ce/nc/nc1", "ce/loss"):
        np.testing.assert_allclose([history[s][name] for s in range(3)], stored[name].to_numpy())
        assert summary[name] == pytest.approx(stored[name].iloc[-1])
    assert config["model.width"] == 8 and config["lr"] == 0.1
    assert "arrays/ce.class_means_logits/000000001.npy" in files
    saved = np.load(run_dir / "files" / "arrays" / "ce.class_means_logits" / "000000001.npy")
    np.testing.assert_array_equal(saved, run.arrays("ce.class_means_logits")[1])


def test_wandb_sink_rejects_an_unknown_mode():
    with pytest.raises(ValueError, match="`mode` must be one of 'online', 'offline'"):
        WandbSink(mode="offline-ish")


# ---------------------------------------------------------------------------- transformers
class _HFNet(nn.Module):
    """A user's module for the Trainer: takes ``x`` (and ``labels``), returns a dict."""

    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.body = nn.Sequential(nn.Linear(6, 16), nn.ReLU())
        self.head = nn.Linear(16, 3)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(0.4 * torch.randn(p.shape, generator=g))

    def forward(self, x, labels=None):
        logits = self.head(self.body(x))
        out = {"logits": logits}
        if labels is not None:
            out["loss"] = nn.functional.cross_entropy(logits, labels)
        return out


class _Items(torch.utils.data.Dataset):
    def __init__(self, x, y):
        self.x, self.y = torch.from_numpy(x), torch.from_numpy(y)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return {"x": self.x[i], "labels": self.y[i]}


def _trainer(tmp_path, callback, x, y, epochs=3):
    transformers = pytest.importorskip("transformers")
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "hf"),
        num_train_epochs=epochs,
        per_device_train_batch_size=20,
        learning_rate=0.1,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
    )
    return transformers.Trainer(
        model=_HFNet(), args=args, train_dataset=_Items(x, y), callbacks=[callback]
    )


def test_transformers_callback_records_each_epoch_and_completes_the_run(rng, tmp_path):
    pytest.importorskip("transformers", reason="transformers is not installed")
    pytest.importorskip("accelerate", reason="the Trainer needs accelerate")
    x, y = _probe_set(rng, n=60)
    run = create(tmp_path / "run")
    rec = Recorder(run, x, y, probes=["collapse", "performance"], layer="head")
    trainer = _trainer(tmp_path, transformers_callback(rec), x, y.astype(np.int64))
    trainer.train()
    assert run.state == "completed"
    wide = run.metrics_wide()
    assert wide.index.tolist() == [0, 1, 2, 3]
    assert wide["nc/nc1"].notna().all() and wide["probe/accuracy"].notna().all()
    # three batches an epoch, logged every step: the last loss of each epoch, once
    assert wide["hf/loss"].notna().tolist() == [False, True, True, True]
    long = run.metrics
    assert not long.duplicated(["step", "name"]).any()
    assert trainer.state.log_history[2]["loss"] == pytest.approx(wide.loc[1, "hf/loss"])


def test_transformers_callback_by_optimiser_step_leaves_the_run_open(rng, tmp_path):
    pytest.importorskip("transformers", reason="transformers is not installed")
    pytest.importorskip("accelerate", reason="the Trainer needs accelerate")
    x, y = _probe_set(rng, n=40)
    sink = _ListSink()
    rec = Recorder(sink, x, y, probes=["collapse"], layer="head", schedule=2)
    callback = transformers_callback(rec, unit="step", log_metrics=False, close_run=False)
    _trainer(tmp_path, callback, x, y.astype(np.int64), epochs=2).train()
    assert [s for s, _ in sink.logged] == [0, 2, 4]  # 2 batches x 2 epochs, every 2 steps
    assert all("nc/nc1" in v and not any(k.startswith("hf/") for k in v) for _, v in sink.logged)


def test_transformers_callback_checks_its_arguments_and_reads_logits():
    pytest.importorskip("transformers", reason="transformers is not installed")
    with pytest.raises(TypeError, match="`recorder` must be a Recorder"):
        transformers_callback(object())
    rec = Recorder(_ListSink(), np.ones((3, 2)), [0, 1, 2])
    with pytest.raises(ValueError, match="`unit` must be one of 'epoch', 'step'"):
        transformers_callback(rec, unit="batch")
    t = torch.ones(2, 3)
    assert logits_of(t) is t and logits_of({"logits": t}) is t
    with pytest.raises(TypeError, match=r"hold them as `.logits` or \['logits'\]; got tuple"):
        logits_of((t,))


def test_ends_once_needs_an_end_and_ends_once():
    import pytest as _pytest

    from ncdynamics.training.sinks import EndsOnce

    with _pytest.raises(TypeError):
        EndsOnce()  # type: ignore[abstract]

    class Counting(EndsOnce):
        def __init__(self) -> None:
            self.ends: list[object] = []

        def _end(self, error):
            self.ends.append(error)

    sink = Counting()
    with sink:
        pass
    sink.close()
    assert sink.ends == [None]
