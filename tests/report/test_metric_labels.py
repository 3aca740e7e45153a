"""One table of display names: every key a probe writes has a label; any prefix is found."""

import numpy as np
import pytest

from ncdynamics.probes import collapse_metrics
from ncdynamics.report.labels import display, label, sort_key, split_names


def test_every_collapse_metric_has_a_known_label():
    rng = np.random.default_rng(0)
    h = rng.normal(size=(60, 8))
    y = np.arange(60) % 4
    w = rng.normal(size=(4, 8))
    keys = collapse_metrics(h, y, weight=w, bias=np.zeros(4))
    for k in keys:
        lab = label(f"nc/{k}")
        assert lab.known and lab.family == "nc", k
        assert lab.title != f"nc/{k}" and lab.axis


@pytest.mark.parametrize(
    ("key", "title", "scale"),
    [
        ("nc/nc1", "NC1: within-class variability", "log"),
        ("nc/nc2_etf", "NC2: distance to the simplex ETF", "auto"),
        ("test/accuracy", "Test accuracy", "linear"),
        ("train/loss", "Training loss", "auto"),
        ("lr", "Learning rate", "auto"),
        ("pair_X", "Input distance X (squared)", "linear"),
        (
            "ntk_alignment_logits_centered",
            "Kernel-label alignment of the logit kernel K_f (centred)",
            "linear",
        ),
        ("ntk_gamma_c", "NTK logit kernel: same class block γ_c", "auto"),
        ("elasticity/ratio", "Elasticity ratio (same / other)", "auto"),
    ],
)
def test_known_keys_read_as_words(key, title, scale):
    lab = label(key)
    assert (lab.title, lab.scale, lab.known) == (title, scale, True)


@pytest.mark.parametrize(
    ("key", "title"),
    [
        ("my_metric", "My metric"),
        ("grad/norm_layer1", "Norm layer1 (grad)"),
        ("nc/extra", "Extra (nc)"),
    ],
)
def test_unknown_keys_get_a_readable_fallback(key, title):
    lab = label(key)
    assert not lab.known and lab.title == title and "_" not in lab.title.split(" (")[0]


def test_any_recorder_prefix_is_a_series_and_families_are_not():
    names = [
        "adam/nc/nc1",
        "adam/my_thing",
        "sgd.v2/train/loss",
        "nc/nc1",
        "train/loss",
        "loss/total",
        "loss/ce",
    ]
    split = split_names(names)
    assert split["adam/nc/nc1"] == ("adam", "nc/nc1")
    assert split["adam/my_thing"] == ("adam", "my_thing")  # same prefix, unknown key
    assert split["sgd.v2/train/loss"] == ("sgd.v2", "train/loss")
    assert split["nc/nc1"] == ("", "nc/nc1") and split["train/loss"] == ("", "train/loss")
    assert split["loss/total"] == ("", "loss/total")  # 'loss' prefixes no known key
    assert display("adam/nc/nc1", names) == "NC1: within-class variability (adam)"


def test_reports_order_nc1_first_and_losses_before_accuracies():
    keys = ["nc/within_trace", "test/accuracy", "nc/nc4", "train/accuracy", "nc/nc1", "test/loss"]
    assert sorted(keys, key=sort_key) == [
        "nc/nc1",
        "nc/nc4",
        "nc/within_trace",
        "test/loss",
        "train/accuracy",
        "test/accuracy",
    ]
