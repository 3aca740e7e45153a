import numpy as np
import pytest

from ncdynamics import data


def test_corrupt_labels_flips_at_rate_p_to_other_classes(rng):
    y = np.repeat(np.arange(5), 4000)
    y_new, flipped = data.corrupt_labels(y, 0.3, 5, rng)
    rate = flipped.mean()
    assert abs(rate - 0.3) < 4 * np.sqrt(0.3 * 0.7 / y.size)
    assert np.all(y_new[flipped] != y[flipped]) and np.all(y_new[~flipped] == y[~flipped])
    # flips are uniform over the 4 other classes
    dest = (y_new[flipped] - y[flipped]) % 5
    counts = np.bincount(dest, minlength=5)[1:]
    assert np.all(np.abs(counts / counts.sum() - 0.25) < 0.02)


def test_corrupt_labels_rejects_bad_probability(rng):
    with pytest.raises(ValueError, match="`p` == 1.5"):
        data.corrupt_labels(np.zeros(3, int), 1.5, 2, rng)


def test_class_balanced_batches_have_exactly_m_per_class(rng):
    y = rng.integers(0, 4, 500)
    batches = list(data.class_balanced_batches(y, 3, rng, num_classes=4))
    assert len(batches) == np.bincount(y).min() // 3
    seen = np.concatenate(batches)
    assert len(np.unique(seen)) == seen.size  # no sample twice within a pass
    for b in batches:
        np.testing.assert_array_equal(np.bincount(y[b], minlength=4), [3, 3, 3, 3])


def test_balanced_subset_is_class_major(rng):
    y = np.array([2, 0, 1, 0, 2, 1, 1, 0, 2])
    idx = data.balanced_subset(y, 2, rng)
    np.testing.assert_array_equal(y[idx], [0, 0, 1, 1, 2, 2])
    with pytest.raises(ValueError, match="exceeds the 3 samples of class 0"):
        data.balanced_subset(y, 4)
