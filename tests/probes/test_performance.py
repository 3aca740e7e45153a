"""The performance probe (NumPy) against classification_loss (torch)."""

import pytest
import torch

from ncdynamics.probes import PerformanceProbe, ProbeInput, classification_loss
from ncdynamics.probes.performance import loss_and_accuracy


def probe_input(logits, y):
    return ProbeInput(model=None, x=None, y=y, features=None, logits=logits, classifier=None,
                      num_classes=logits.shape[1])  # fmt: skip


@pytest.mark.parametrize("loss", ["mse", "cross-entropy"])
@pytest.mark.parametrize("scale", [1.0, 60.0])  # large logits: the softmax must not overflow
def test_probe_matches_the_training_loss_and_accuracy(loss, scale):
    gen = torch.Generator().manual_seed(0)
    logits = scale * torch.randn(257, 7, generator=gen, dtype=torch.float64)
    y = torch.randint(0, 7, (257,), generator=gen)
    out = PerformanceProbe(loss=loss, prefix="p")(probe_input(logits.float(), y)).scalars
    expected = float(classification_loss(logits.float().double(), y, loss))
    assert out["p/loss"] == pytest.approx(expected, rel=1e-12)
    assert out["p/accuracy"] == float((logits.argmax(1) == y).double().mean())
    assert logits.isfinite().all()


def test_probe_leaves_the_logits_alone():
    logits, y = torch.eye(3), torch.tensor([0, 1, 2])
    out = PerformanceProbe(loss="mse")(probe_input(logits, y)).scalars
    assert out["probe/loss"] == 0.0 and out["probe/accuracy"] == 1.0
    assert torch.equal(logits, torch.eye(3))


def test_loss_and_accuracy_takes_numpy_and_refuses_an_unknown_loss():
    logits, y = torch.eye(3) * 2.0, torch.tensor([0, 1, 1])
    from_numpy = loss_and_accuracy(logits.numpy(), y.numpy(), "cross-entropy")
    assert from_numpy == loss_and_accuracy(logits, y, "cross-entropy")
    assert from_numpy[1] == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="`loss` must be one of"):
        loss_and_accuracy(logits, y, "hinge")
