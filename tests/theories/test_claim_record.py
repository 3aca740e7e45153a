"""The shared claim record (ncdynamics.theories.claims)."""

import json

import numpy as np
import pytest

from ncdynamics.theories.claims import Part, claim


def test_claim_holds_only_when_every_part_holds() -> None:
    one = Part("after training", "Spearman rho < -0.5", -0.9, True)
    other = Part("absent at init", "|Spearman rho| < 0.3", -0.93, False)
    rec = claim("trend after training, absent at init", "Fig. 14", [one, other])
    assert rec["held"] is False
    assert [p["held"] for p in rec["parts"]] == [True, False]
    assert claim("s", "Fig. 14", [one])["held"] is True


def test_numpy_values_become_json() -> None:
    rec = claim(
        "s", "Eq. (3)", [Part("p", "c", {"a": np.float32(1.5), "b": np.arange(2)}, np.bool_(True))]
    )
    assert json.loads(json.dumps(rec))["ours"] == {"a": 1.5, "b": [0, 1]}


def test_non_finite_measurement_cannot_hold() -> None:
    with pytest.raises(ValueError, match="non-finite"):
        Part("p", "c", [1.0, float("inf")], True)
    assert Part("p", "c", float("nan"), False).held is False


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("", "Fig. 1", [Part("p", "c", 1, True)]), "statement"),
        (("s", " ", [Part("p", "c", 1, True)]), "source"),
        (("s", "Fig. 1", []), "parts"),
        (("s", "Fig. 1", [Part("p", "c", 1, True), Part("p", "d", 2, True)]), "distinct"),
    ],
)
def test_bad_claims_are_refused(args: tuple, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        claim(*args)


def test_objects_json_cannot_carry_are_refused() -> None:
    with pytest.raises(TypeError, match="JSON-ready"):
        Part("p", "c", object(), True)
