"""The registered hadamard experiments run, write figures and check the paper's claims."""

import numpy as np
import pytest

from ncdynamics.experiments._registry import get, list_experiments, run

NAMES = [
    "hadamard.fig1",
    "hadamard.fig2",
    "hadamard.fig3",
    "hadamard.fig4",
    "hadamard.fig5",
    "hadamard.fig6",
    "hadamard.fig7",
    "hadamard.fig8",
    "hadamard.fig9",
    "hadamard.fig10",
    "hadamard.thm8",
]


def test_every_figure_is_registered_with_three_presets():
    names = {s.name for s in list_experiments()}
    assert set(NAMES) <= names
    for name in NAMES:
        spec = get(name)
        assert spec.theory == "hadamard"
        for preset in ("smoke", "cpu", "paper"):
            spec.make_config(preset)


def test_figure_settings_are_baked_into_presets():
    for name, K, d, delta in (
        ("hadamard.fig5", 16, 16, 6.0),
        ("hadamard.fig7", 8, 8, 0.0),
        ("hadamard.fig9", 8, 80, 6.0),
    ):
        for preset in ("smoke", "cpu", "paper"):
            cfg = get(name).make_config(preset)
            assert (cfg.K, cfg.d, cfg.delta) == (K, d, delta)
    assert get("hadamard.fig2").make_config("paper").n_iterations == 1_000_000


def test_comparison_smoke_writes_figure_and_holds_structural_claims(tmp_path):
    r = run("hadamard.fig2", preset="smoke", out=tmp_path / "fig2", progress=False)
    assert [p.name for p in r.figures()] == ["comparison.png"]
    parts = {p["part"]: p for c in r.summary["claims"] for p in c["parts"]}
    assert parts["Hadamard residual energy stays 0"]["held"]
    assert parts["Hadamard KL decreases monotonically (Thm 3)"]["held"]
    assert parts["Hadamard normalised singular values match the ODE"]["held"]
    # 300 iterations never leave the burn-in: that part is reported, and not held
    assert not parts["burn-in lasts about 1000 iterations"]["held"]
    assert "hadamard_kl" in set(r.metrics["name"])
    arr = np.stack(list(r.arrays("hadamard_sigma").values()))
    assert arr.shape[-1] == 3


def test_fig1_and_fig3_reproduce_reference_numbers(tmp_path):
    r1 = run("hadamard.fig1", preset="smoke", out=tmp_path / "fig1", progress=False)
    s1 = r1.summary
    assert s1["M0"] == pytest.approx(0.053384, abs=1e-6)
    (fig1,) = s1["claims"]
    held = {p["part"]: p["held"] for p in fig1["parts"]}
    # t <= 1e4 ends before M's maximum (t ~ 8e6): the turn back toward 0 is not visible
    assert held.pop("M eventually turns back toward 0") is False
    assert all(held.values())
    r3 = run("hadamard.fig3", preset="smoke", out=tmp_path / "fig3", progress=False)
    m = r3.summary["margins"]
    assert m["uniform on support"] == pytest.approx(0.0625)
    assert m["max-min margin (LP)"] == pytest.approx(0.1)
    np.testing.assert_allclose(r3.summary["lp_ahat"], [0.2, 0.2, 0.2, 0.4, 0, 0, 0], atol=1e-8)


def test_fig10_and_thm8_smoke_hold_their_claims(tmp_path):
    r10 = run("hadamard.fig10", preset="smoke", out=tmp_path / "fig10", progress=False)
    assert [p.name for p in r10.figures()] == ["fig10.png"]
    (fig10,) = r10.summary["claims"]
    held = {p["part"]: p["held"] for p in fig10["parts"]}
    # the smoke grid stops at t = 1e4, before the regular flow's t = 1e6
    assert held.pop("regular flow not there by t = 1e6") is False
    assert held.pop("KL and M converge orders of magnitude faster") is False
    assert all(held.values())
    r8 = run("hadamard.thm8", preset="smoke", out=tmp_path / "thm8", progress=False)
    assert all(c["held"] for c in r8.summary["claims"])
    dist = r8.summary["etf_distance_mean"]
    assert dist["8"] > dist["32"] > 0


def test_bad_override_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="unknown option"):
        run("hadamard.fig2", preset="smoke", out=tmp_path / "x", progress=False, width=3)
    with pytest.raises(ValueError, match="power of 2"):
        run("hadamard.fig2", preset="smoke", out=tmp_path / "y", progress=False, K=6, d=6)
