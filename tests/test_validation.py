import numpy as np
import pytest

from ncdynamics._validation import (
    check_array,
    check_int,
    check_labels,
    check_option,
    check_scalar,
)


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: check_array(np.ones((2, 3)), "x", ndim=1), ValueError, r"`x` must have 1 dim"),
        (
            lambda: check_array(np.ones((3, 2)), "ys", shape=(2, 3)),
            ValueError,
            "Pass the transpose",
        ),
        (lambda: check_array([1.0, np.nan], "x"), ValueError, "1 NaN or Inf"),
        (lambda: check_array([1.0, np.inf], "x"), ValueError, "must be finite"),
        (lambda: check_array(["a"], "x"), TypeError, "numeric array"),
        (lambda: check_array([], "x", min_size=1), ValueError, "at least 1 element"),
        (lambda: check_scalar("a", "lr"), TypeError, "`lr` must be a real number"),
        (lambda: check_scalar(True, "lr"), TypeError, "real number"),
        (lambda: check_scalar(5, "x", high=4), ValueError, r"`x` == 5, must be <= 4"),
        (lambda: check_scalar(0.0, "x", low=0.0, closed="neither"), ValueError, "must be > 0"),
        (lambda: check_scalar(float("nan"), "x"), ValueError, "finite"),
        (lambda: check_int(1.5, "n"), TypeError, "integer"),
        (lambda: check_option("c", "mode", ("a", "b")), ValueError, "one of 'a', 'b'; got 'c'"),
        (lambda: check_labels([0, 1, 5], "y", num_classes=3), ValueError, "num_classes=3"),
        (lambda: check_labels([0, -1], "y"), ValueError, ">= 0"),
        (lambda: check_labels([0, 0, 1], "y", min_per_class=2), ValueError, "class 1 has 1"),
        (lambda: check_labels([0.5, 1.0], "y"), TypeError, "integer class labels"),
        (lambda: check_labels([0, 1], "y", n_samples=3), ValueError, "length 3"),
    ],
)
def test_bad_input_is_rejected_with_named_argument(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_valid_inputs_pass_through():
    assert check_array([[1, 2]], "x", shape=(1, None)).shape == (1, 2)
    assert check_int(3, "n", low=1) == 3
    assert check_labels(np.array([0.0, 2.0]), "y").dtype == np.int64
