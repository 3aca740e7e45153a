"""The new user's script of issue 20, end to end.

A researcher with their own ``nn.Sequential`` and their own training loop records it with a
Recorder (classifier named by ``layer=``), the two-point alignment probe and a CKA probe on
hidden layers named by module, NTK block statistics computed by hand and logged into the
run, an MLflow tracker beside the run directory, then writes the report and confronts the
theories with ``ncdyn compare``. Only the MLflow part depends on an optional extra: without
MLflow the script records into the run alone and everything else is still checked.
"""

import contextlib
import importlib.util

import numpy as np
import pytest
import torch
from torch import nn

import ncdynamics
from ncdynamics.cli import main
from ncdynamics.probes import PairAlignmentProbe, SimilarityProbe, empirical_ntk
from ncdynamics.training import MLflowSink, Recorder, TeeSink

HAVE_MLFLOW = importlib.util.find_spec("mlflow") is not None


def _their_script(tmp_path, n_epochs=8):
    """What the user writes (only the paths come from the test)."""
    ds = ncdynamics.data.load("digits")
    rng = np.random.default_rng(0)
    probe_idx = ncdynamics.data.balanced_subset(ds.y_train, 10, rng)  # 10 per digit
    x_probe, y_probe = ds.x_train[probe_idx], ds.y_train[probe_idx]
    ntk_idx = ncdynamics.data.balanced_subset(ds.y_train, 2, rng)  # 20 inputs for the NTK
    x_ntk = torch.from_numpy(ds.x_train[ntk_idx]).float()
    pair = (int(np.flatnonzero(y_probe == 0)[0]), int(np.flatnonzero(y_probe == 1)[0]))

    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10)
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x_all = torch.from_numpy(ds.x_train).float()
    y_all = torch.from_numpy(ds.y_train).long()
    config = {"lr": 0.05, "momentum": 0.9, "epochs": n_epochs, "widths": [64, 32]}

    tracker = (
        MLflowSink(tmp_path / "mlruns", experiment="my-mlp", params=config)
        if HAVE_MLFLOW
        else contextlib.nullcontext()
    )
    with ncdynamics.runs.create(tmp_path / "run", config=config) as run, tracker:
        sink = TeeSink(run, tracker) if HAVE_MLFLOW else run
        rec = Recorder(
            sink,
            x_probe,
            y_probe,
            probes=[
                "collapse",
                "performance",
                "class_means",
                PairAlignmentProbe(pair=pair, layer="2"),
                SimilarityProbe(layer="4"),
            ],
            layer="5",
        )
        for epoch in range(n_epochs + 1):
            if epoch > 0:
                perm = torch.randperm(len(y_all))
                for s in range(0, len(perm), 64):
                    idx = perm[s : s + 64]
                    loss = nn.functional.cross_entropy(model(x_all[idx]), y_all[idx])
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
            rec.step(model, epoch, **({"loss": loss.item()} if epoch else {}))
            if epoch % 4 == 0:
                kernel = empirical_ntk(model, x_ntk)  # (20, 20, 10, 10)
                ncdynamics.runs.log_kernel(run, "ntk", epoch, kernel, ds.y_train[ntk_idx])
        rec.close()
    return run, tracker


def test_the_new_users_script_runs_end_to_end(tmp_path, capsys):
    run, tracker = _their_script(tmp_path)

    # the run: completed by the `with` block, every record there
    run = ncdynamics.runs.open(tmp_path / "run")
    assert run.state == "completed"
    wide = run.metrics_wide()
    assert wide.index.tolist() == list(range(9))
    for name in ("nc/nc1", "nc/nc3", "nc/nc4", "probe/accuracy", "pair_a", "similarity/cka"):
        assert wide[name].notna().all(), name
    assert wide["similarity/cka"].iloc[0] == pytest.approx(1.0, abs=1e-12)
    assert wide["similarity/cka"].iloc[-1] < 1.0
    assert wide["nc/nc1"].iloc[-1] < wide["nc/nc1"].iloc[0]  # training collapses the classes
    assert wide["ntk/alignment"].dropna().index.tolist() == [0, 4, 8]
    assert run.arrays("ntk.traced")[8].shape == (20, 20)

    # the report and the theories confronted with the run
    report = ncdynamics.report.write_report(tmp_path / "run")
    assert report.is_file() and "<img" in report.read_text()
    assert main(["compare", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    import pandas as pd

    table = pd.read_csv(tmp_path / "run" / "compare" / "table.csv")
    fitted = set(table.loc[table["status"] == "fitted", "theory"])
    assert "lesde" in fitted  # the LE-SDE allows heavy-ball momentum (it rescales its rates)
    # the two-point theory is plain gradient descent: momentum 0.9 puts the run outside it
    alignment = table[table["theory"] == "alignment"].iloc[0]
    assert alignment["verdict"] == "out of regime" and "momentum 0.9" in alignment["reason"]
    assert (tmp_path / "run" / "compare" / "report.html").is_file()

    # the same records in MLflow, read back through its own client
    if not HAVE_MLFLOW:
        return
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracker.tracking_uri)
    found = client.get_run(tracker.run_id)
    assert found.info.status == "FINISHED" and found.data.params["widths"] == "[64, 32]"
    history = client.get_metric_history(tracker.run_id, "nc/nc1")
    assert [m.step for m in history] == list(range(9))
    np.testing.assert_allclose([m.value for m in history], wide["nc/nc1"].to_numpy())
    artifacts = [f.path for f in client.list_artifacts(tracker.run_id, "arrays")]
    assert "arrays/class_means_logits" in artifacts
