"""The truncation experiments' claim records: one part per condition, and a claim whose
condition fails reports held=False (issue #19 item 5)."""

import json
import math

import pytest

from ncdynamics.theories.truncation.experiments.e1_gradient_formulas import gradient_claims
from ncdynamics.theories.truncation.experiments.e2_truncation_staircase import staircase_claims
from ncdynamics.theories.truncation.experiments.e3_coupled_flow_vs_network import (
    coupled_flow_claims,
)
from ncdynamics.theories.truncation.experiments.e4_finite_time_truncation import prop42_claims
from ncdynamics.theories.truncation.experiments.e5_paper_vs_corrected_omega import (
    paper_omega_claims,
)
from ncdynamics.theories.truncation.experiments.e6_conserved_quantity import collapsed_claims
from ncdynamics.theories.truncation.experiments.e7_output_layer_closed_form import (
    untruncated_claims,
)
from ncdynamics.theories.truncation.experiments.e8_layer_weight_descent import layer_gd_claims


def _by_source(records):
    return {r["source"]: r for r in records}


def _part(record, name):
    (p,) = [p for p in record["parts"] if p["part"] == name]
    return p


def _well_formed(records):
    json.dumps(records)  # JSON-ready
    for r in records:
        assert set(r) == {"claim", "source", "parts", "held", "ours"}
        assert r["parts"] and r["held"] == all(p["held"] for p in r["parts"])


# ---------------------------------------------------------------------------- E1
RANDOM = {"fd_beta": 1e-9, "fd_omega": 2e-9, "autograd": 1e-15, "thm51": 1e-15}
SEPARATED = {
    "beta_fd": 1e-9,
    "corrected_fd": 1e-9,
    "paper_fd": 1e-3,
    "paper_gap_predicted": 1e-18,
    "moments": 1e-17,
    "general_vs_separated": 1e-15,
}


def test_e1_printed_equations_fail_their_claims_and_corrections_hold():
    recs = gradient_claims({**RANDOM, "thm51_paper": 3e-16}, SEPARATED)
    _well_formed(recs)
    thm32, thm51, fixed = recs
    # Thm 3.2: the bias half holds, the printed Omega half fails -> the claim fails
    assert _part(thm32, "bias flow (3.19) is minus the beta gradient")["held"]
    assert not _part(thm32, "Omega (3.22) as printed is the Riemannian gradient in R")["held"]
    assert not thm32["held"]
    # (5.4) as printed equals +grad: ascent, so Thm 5.1 as printed fails
    assert not thm51["held"]
    assert fixed["held"]


def test_e1_one_failing_correction_fails_its_claim():
    recs = gradient_claims({**RANDOM, "thm51_paper": 1.0, "autograd": 1e-6}, SEPARATED)
    assert recs[1]["held"]  # (5.4) now differs from +grad and the rest holds
    assert not recs[2]["held"]
    assert not _part(recs[2], "reverse accumulation equals autograd through the network")["held"]


# ---------------------------------------------------------------------------- E2
EDGE = {
    "mid_final_rate": 0.5,
    "mid_expected": 0.5,
    "static_final_rate": 0.0,
    "down_stopped": True,
    "down_limit_minus_x1": 0.0,
}


def _e2(**change):
    kw = {
        "err_formula": 1e-16,
        "gd_errs": {1e-3: 1e-3, 1e-4: 1e-4},
        "slope_err": 1e-5,
        "eta_min": 1e-4,
        "last_event": 1.0,
        "edge": EDGE,
        "qd_violation": 1e-12,
        "qd_gd_vs_exact": 1e-14,
    }
    kw.update(change)
    return staircase_claims(kw.pop("err_formula"), kw.pop("gd_errs"), kw.pop("slope_err"), **kw)


def test_e2_all_conditions_hold_then_each_failure_is_reported():
    recs = _e2()
    _well_formed(recs)
    assert all(r["held"] for r in recs)
    assert not _e2(slope_err=0.05)[0]["held"]
    assert not _e2(gd_errs={1e-3: 1.0})[1]["held"]
    # the static start is its own condition: a moving "static" start fails the edge claim
    edge = _e2(edge={**EDGE, "static_final_rate": 0.125})[2]
    assert not edge["held"]
    assert not _part(edge, "start below the cluster: static")["held"]
    assert _part(edge, "label inside: final rate m/N")["held"]


# ---------------------------------------------------------------------------- E3
ROW = {
    "s1": [0.9, 1.5],
    "rate_after_s1": [-math.log(1 - 2e-3) / 2e-3] * 2,
    "r_change_after_s1": 0.0,
    "max_diameter": 0.0,
    "final_cost": 1e-9,
    "min_separation": 0.4,
    "net_gap": 1e-13,
    "paper_vs_net_gap": 1e-3,
    "order": 1.05,
}


def test_e3_collapse_claim_needs_every_condition():
    recs = coupled_flow_claims({2: ROW, 3: ROW}, eta=2e-3)
    _well_formed(recs)
    assert all(r["held"] for r in recs)
    bad = {2: ROW, 3: {**ROW, "s1": [0.9, float("inf")]}}
    collapse = coupled_flow_claims(bad, eta=2e-3)[0]
    assert not collapse["held"]
    assert not _part(collapse, "finite s1 for every cluster")["held"]
    lost = coupled_flow_claims({2: {**ROW, "min_separation": -0.01}}, eta=2e-3)[0]
    assert not lost["held"] and _part(lost, "cost tends to zero")["held"]
    same = coupled_flow_claims({2: {**ROW, "paper_vs_net_gap": 1e-14}}, eta=2e-3)[1]
    assert not _part(same, "paper Omega departs from network GD")["held"]


# ---------------------------------------------------------------------------- E4
CHECK = {
    "eta0": 0.05,
    "eta1": 0.05,
    "gamma": 0.05,
    "s1": 0.5,
    "bound_s1": 3.0,
    "bound_s1_sharp": 2.9,
    "r_bound_ratio": 0.2,
    "bt_bound_ratio": 0.9,
    "small_constants": True,
    "finite_s1": True,
    "s1_bound_holds": True,
    "s1_sharp_holds": True,
    "r_bound_holds": True,
    "bt_bound_holds": True,
}


def test_e4_unmet_premise_fails_prop42_even_when_conclusions_hold():
    recs = prop42_claims([CHECK, CHECK])
    _well_formed(recs)
    assert all(r["held"] for r in recs)
    off = prop42_claims([CHECK, {**CHECK, "gamma": 0.19, "small_constants": False}])[0]
    assert not off["held"]
    held = {p["part"]: p["held"] for p in off["parts"]}
    assert held.pop("premise: eta0, eta1, gamma < 1/10 at this start") is False
    assert all(held.values())
    assert not prop42_claims([])[0]["held"]


# ---------------------------------------------------------------------------- E5
DESIGN = {
    "paper_cost_increases": False,
    "corrected_cost_increases": False,
    "paper_max_dCds": -1e-7,
    "corrected_max_dCds": -1e-6,
    "final_cost_corrected": 1e-5,
    "final_cost_paper": 2e-4,
}


def test_e5_cost_monotonicity_is_graded_over_designs():
    recs = paper_omega_claims([DESIGN] * 3)
    _well_formed(recs)
    assert all(r["held"] for r in recs)
    rises = paper_omega_claims([DESIGN, {**DESIGN, "paper_cost_increases": True}, DESIGN])
    mono, lower = rises
    assert not mono["held"]
    p = _part(mono, "cost never increases with Omega (3.22) as printed")
    assert p["ours"] == pytest.approx(2 / 3)
    assert _part(mono, "cost never increases with the corrected Omega (the true gradient flow)")[
        "held"
    ]
    assert lower["held"]


# ---------------------------------------------------------------------------- E6
CASE = {
    "lambda0": 2.0,
    "invariant_drift": 1e-12,
    "bound_holds": True,
    "final_residual": 1e-6,
    "propagator_error": 1e-11,
    "gd_invariant_identity_error": 1e-16,
    "W_norm_max": 3.0,
    "B_norm_max": 3.0,
}
NET = {
    "max_abs_omega_adapted": 0.0,
    "max_abs_omega": 5e-15,
    "gap_bilinear_gd": 1e-15,
    "all_truncated_fraction": 1.0,
    "min_separation": 0.6,
}


def _cases(**neg):
    return {
        "positive": dict(CASE),
        "negative": {**CASE, **neg},
        "indefinite": {**CASE, "lambda0": 0.0, "bound_holds": None},
    }


def test_e6_each_definite_case_is_its_own_condition():
    recs = collapsed_claims(_cases(), NET)
    _well_formed(recs)
    assert all(r["held"] for r in recs)
    thm = collapsed_claims(_cases(bound_holds=False), NET)[0]
    assert not thm["held"]
    assert _part(thm, "C(s) <= e^{-2 lambda0 s} C(0) when I(0) > 0")["held"]
    assert not _part(thm, "C(s) <= e^{-2 lambda0 s} C(0) when -I(0) > 0")["held"]
    net = collapsed_claims(_cases(), {**NET, "all_truncated_fraction": 0.98})[2]
    assert not net["held"]


# ---------------------------------------------------------------------------- E7
def test_e7_a_gradient_in_the_hidden_parameters_fails_thm91():
    good = dict(max_adapted=0.0, max_param_grad=1e-15, err_discrete=1e-14, err_cont=2e-3, eta=1e-2)
    recs = untruncated_claims(1e-12, 1e-15, **good)
    _well_formed(recs)
    assert all(r["held"] for r in recs)
    bad = untruncated_claims(1e-12, 1e-15, **{**good, "max_adapted": 1e-17})[0]
    assert not bad["held"]
    assert _part(bad, "W(s) follows (9.10)")["held"]
    assert not untruncated_claims(1e-12, 1e-15, **{**good, "err_cont": 0.2})[1]["held"]


# ---------------------------------------------------------------------------- E8
def test_e8_records_the_defect_and_the_collapse_separately():
    recs = layer_gd_claims(0.126, [0.0, 0.0, 0.0])
    _well_formed(recs)
    assert [r["held"] for r in recs] == [False, True]
    assert not layer_gd_claims(0.0, [0.0, 1e-3, 0.0])[1]["held"]
    assert layer_gd_claims(1e-9, [0.0])[0]["held"]
