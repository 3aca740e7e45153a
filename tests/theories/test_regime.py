"""The shared learning-rate regime check: recorded rates first, configured drops second."""

from ncdynamics import runs
from ncdynamics.theories.confrontation import Stream
from ncdynamics.theories.regime import learning_rate_change


def test_recorded_rates_decide_and_a_window_before_the_drop_is_constant(tmp_path):
    run = runs.create(tmp_path / "r", config={"milestones": [3]})
    for t in range(6):
        run.log(t, {"lr": 0.1 if t < 3 else 0.01})
    stream = Stream(run)
    assert learning_rate_change(stream) == "recorded lr changes from 0.1 to 0.01 at step 3"
    assert learning_rate_change(stream.window(0, 2)) is None


def test_configured_drops_count_only_without_records_and_with_a_real_factor(tmp_path):
    drops = runs.create(tmp_path / "a", config={"milestones": [10, 20], "gamma": 0.5})
    assert (
        learning_rate_change(Stream(drops))
        == "configured learning-rate drops at [10, 20] (factor 0.5)"
    )
    flat = runs.create(tmp_path / "b", config={"milestones": [10], "gamma": 1.0})
    assert learning_rate_change(Stream(flat)) is None
    assert learning_rate_change(Stream(runs.create(tmp_path / "c"))) is None


def test_constant_learning_rate_check_gives_the_change_and_the_reason(tmp_path):
    from ncdynamics import runs
    from ncdynamics.theories.confrontation import Stream
    from ncdynamics.theories.regime import constant_learning_rate

    run = runs.create(tmp_path / "r")
    for step, lr in ((0, 0.1), (1, 0.1), (2, 0.01)):
        run.log(step, {"lr": lr})
    run.flush()
    check = constant_learning_rate("rates need a fixed step (eq. (1))")
    assert check(Stream(run)) == (
        "recorded lr changes from 0.1 to 0.01 at step 2; rates need a fixed step (eq. (1))"
    )
    assert check(Stream(run).cut(1)) is None
