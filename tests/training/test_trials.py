import numpy as np
import pytest

from ncdynamics.training import TrialError, run_trials


def square_with_noise(seed: int, scale: float) -> float:
    return float(np.random.default_rng(seed).standard_normal() * scale) ** 2


def fail_on_three(seed: int) -> int:
    if seed == 3:
        raise ValueError("bad seed")
    return seed


@pytest.mark.parametrize("workers", [1, 2])
def test_results_come_back_in_order_and_reproducible(workers):
    args = [(s, 2.0) for s in range(6)]
    got = run_trials(square_with_noise, args, workers=workers)
    assert got == [square_with_noise(*a) for a in args]


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failing_trial_is_reported_with_its_arguments(workers):
    with pytest.raises(TrialError, match=r"trial 3 with arguments 3 failed: ValueError: bad seed"):
        run_trials(fail_on_three, range(5), workers=workers)


def test_bad_worker_count_is_rejected():
    with pytest.raises(ValueError, match="`workers` == 0"):
        run_trials(fail_on_three, [1], workers=0)
