"""The pair scalars the alignment experiments record for the confrontation."""

import numpy as np
import pytest

from ncdynamics import data, runs
from ncdynamics.experiments.streams import find_streams
from ncdynamics.theories.alignment.confront import CONFRONTATION
from ncdynamics.theories.alignment.experiments.pair_records import pair_records, record_pair
from ncdynamics.theories.alignment.training import NetConfig, train_recording
from ncdynamics.theories.confrontation import Stream

SMALL = NetConfig(gain=0.5, lr=0.01, epochs=9, width=4, depth=2)


@pytest.fixture(scope="module")
def history():
    ds = data.load("two-point")
    return train_recording(SMALL, ds.x_train, ds.info["targets_train"], seed=0, layer="all")


def test_records_are_strided_with_first_and_last_epoch(history):
    mid = history.a[:, 0]
    rec = pair_records(history, "net", n_points=4, a=mid)
    assert list(rec) == [0, 2, 4, 6, 8, 9]  # stride 10 // 4 = 2, the last epoch added
    assert set(rec[9]) == {f"net.pair_{v}" for v in ("a", "b", "w", "X", "Y")}
    assert rec[4]["net.pair_a"] == mid[4] and rec[4]["net.pair_w"] == history.w[4]
    assert rec[0]["net.pair_X"] == pytest.approx(0.25) and rec[0]["net.pair_Y"] == 1.0


def test_all_layer_history_needs_one_layer(history):
    with pytest.raises(ValueError, match=r"`a` must be one hidden layer's distances"):
        pair_records(history, "net")


def test_recorded_pair_is_a_stream_of_the_confrontation(history, tmp_path):
    run = runs.create(tmp_path / "r", config={"experiment": "alignment.depth"})
    record_pair(run, "layer1", history, a=history.a[:, 0])
    assert find_streams(CONFRONTATION, run) == ["layer1."]
    steps, a = CONFRONTATION.observe(Stream(run, "layer1."))["pair_distance"]
    np.testing.assert_array_equal(steps, np.arange(10.0))
    np.testing.assert_allclose(a, history.a[:, 0])
