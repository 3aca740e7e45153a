"""The Recorder as a new user meets it: any probe-set container, clear warnings."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from torch import nn


class ListSink:
    def __init__(self):
        self.logged, self.arrays = [], []

    def log(self, step, values):
        self.logged.append((step, dict(values)))

    def save_array(self, name, step, array):
        self.arrays.append((name, step))

    def flush(self):
        pass


def _sequential(n_out=3):
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, n_out)
    )


def _probe_set(n=30, d=6, c=3):
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, d)).astype(np.float32), np.arange(n) % c


def test_a_layer_whose_width_is_not_the_class_count_warns_once_about_nc3_nc4():
    from ncdynamics.training import Recorder

    x, y = _probe_set()
    rec = Recorder(ListSink(), x, y, probes=["collapse"], layer="2")
    model = _sequential()
    expected = r"layer '2'.*\(8, 16\).*NC3 and NC4.*\(3, 16\).*3 classes"
    with pytest.warns(UserWarning, match=expected) as rec_w:
        scalars = rec.record(model, 0)
    assert rec_w[0].filename == __file__  # stacklevel points at the caller
    assert "nc/nc1" in scalars and "nc/nc3" not in scalars
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rec.record(model, 1)  # once only


def test_the_final_layer_records_nc3_nc4_without_a_warning():
    from ncdynamics.training import Recorder

    x, y = _probe_set()
    rec = Recorder(ListSink(), x, y, probes=["collapse"], layer="4")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scalars = rec.record(_sequential(), 0)
    assert "nc/nc3" in scalars


def _containers():
    from torch.utils.data import DataLoader, TensorDataset

    from ncdynamics.data import Dataset

    x, y = _probe_set()
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)

    class ItemDataset(torch.utils.data.Dataset):  # torchvision style: (tensor, int) items
        def __len__(self):
            return len(y)

        def __getitem__(self, i):
            return xt[i], int(y[i])

    return {
        "arrays": (x, y),
        "tensors": (xt, yt),
        "pair": ((x, y), None),
        "ncdynamics-dataset": (Dataset(x, y, x[:0], y[:0], 3, "mine"), None),
        "tensor-dataset": (TensorDataset(xt, yt), None),
        "item-dataset": (ItemDataset(), None),
        "dataloader": (DataLoader(TensorDataset(xt, yt), batch_size=7), None),
    }


@pytest.mark.parametrize("kind", list(_containers()))
def test_the_probe_set_may_come_in_any_container(kind):
    from ncdynamics.training import Recorder

    x, y = _probe_set()
    data, labels = _containers()[kind]
    model = _sequential()
    expected = Recorder(ListSink(), x, y, probes=["collapse"]).record(model, 0)
    rec = Recorder(ListSink(), data, labels, probes=["collapse"])
    assert rec.record(model, 0) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("data", "error", "match"),
    [
        (np.zeros((4, 2)), TypeError, "without labels; pass the labels as `y`"),
        ("digits", TypeError, "must be one of: arrays or tensors"),
        ((np.zeros((4, 2)),), TypeError, r"\(x, y\) pair; got a tuple of length 1"),
    ],
)
def test_a_probe_set_without_labels_is_refused_by_name(data, error, match):
    from ncdynamics.training import Recorder

    with pytest.raises(error, match=match):
        Recorder(ListSink(), data, probes=["collapse"])


def test_a_torchvision_style_dataset_of_images_asks_for_to_tensor():
    from ncdynamics.training import Recorder

    class Images(torch.utils.data.Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return object(), 0

    with pytest.raises(TypeError, match="ToTensor"):
        Recorder(ListSink(), Images())


@pytest.mark.parametrize("kind", ["tensor-dataset", "dataloader"])
def test_train_accepts_a_torch_dataset_or_dataloader(kind):
    from ncdynamics.data import Dataset
    from ncdynamics.training import train

    x, y = _probe_set()
    data = _containers()[kind][0]
    reference = _sequential()
    ours = _sequential()
    a = train(reference, Dataset(x, y, x[:0], y[:0], 3, "mine"), epochs=2, progress=False)
    b = train(ours, data, epochs=2, progress=False)
    assert b.history == a.history  # the same batches: exactly the same numbers
    for p, q in zip(reference.parameters(), ours.parameters(), strict=True):
        torch.testing.assert_close(p, q)
