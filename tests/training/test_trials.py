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


def device_seen_in_worker(_: int) -> str:
    from ncdynamics.training.devices import chosen_device, current_device

    return f"{chosen_device()}|{current_device()}"


def test_the_chosen_device_reaches_every_worker_process():
    # a spawned worker starts with no chosen device and would fall back to auto's choice
    # (CUDA where present) unless the parent's choice is handed over
    from ncdynamics.training import use_device

    with use_device("cpu"):
        seen = run_trials(device_seen_in_worker, range(4), workers=2)
    assert seen == ["cpu|cpu"] * 4


def test_workers_keep_autos_choice_when_no_device_was_chosen():
    from ncdynamics.training import resolve_device

    seen = run_trials(device_seen_in_worker, range(2), workers=2)
    assert seen == [f"None|{resolve_device('auto')}"] * 2


@pytest.mark.parametrize("workers", [1, 2])
def test_each_result_is_handed_over_as_its_trial_ends(workers):
    seen = {}
    got = run_trials(fail_on_three, [0, 1, 2], workers=workers, on_result=seen.__setitem__)
    assert seen == {0: 0, 1: 1, 2: 2} and got == [0, 1, 2]
