"""Oracle 13 (docs/theories/lesde.md, Oracles): real GEOMNIST training (slow; about 2-4 minutes)."""

import numpy as np
import pytest

from ncdynamics.data import load
from ncdynamics.theories.lesde.estimate import (
    class_means_from_records,
    estimate_ab_L,
    estimate_ab_l,
    tail_index,
)
from ncdynamics.theories.lesde.trials import train_trials


def _train(p_err):
    ds = load("geomnist", n_train_per_class=500, n_test_per_class=500, seed=0, label_noise=p_err)
    rec = train_trials(
        ds.x_train,
        ds.y_train,
        ds.x_test,
        ds.y_test,
        n_trials=20,
        n_iter=6000,
        seed=0,
        lr=0.005,
        eval_every=1000,
        val_subset=150,
    )
    means = class_means_from_records(rec.logits, rec.labels, 3, fill="ffill")
    return rec, means


@pytest.mark.slow
def test_clean_labels_learn_and_are_locally_elastic():
    rec, means = _train(0.0)
    assert rec.val_acc[-1].mean() >= 0.95
    ab = estimate_ab_l(means)
    assert ab.A[-1] > 5 and ab.B[-1] < 0
    assert estimate_ab_L(means).B[-1] < 0
    assert tail_index(ab.A) < 1


@pytest.mark.slow
def test_heavy_label_noise_does_not_learn():
    rec, means = _train(0.8)
    assert rec.val_acc[-1].mean() < 0.34
    assert rec.val_loss[-1].mean() > np.log(3) - 0.01
    assert tail_index(estimate_ab_l(means).A) > 1
