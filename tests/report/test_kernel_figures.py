"""kernel_figures draws the NTK probes' arrays and metrics of a run, and nothing otherwise."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from ncdynamics.models import MLP
from ncdynamics.probes import ProbeInput, make_probe
from ncdynamics.report.kernels import kernel_figures
from ncdynamics.runs import create


def _record(run, prefix=""):
    model = MLP(5, 3, depth=1, width=4, generator=torch.Generator().manual_seed(0))
    g = torch.Generator().manual_seed(1)
    x = torch.randn(12, 5, generator=g)
    y = torch.arange(3).repeat(4)
    probes = [
        make_probe("ntk_alignment", per_class=3),
        make_probe("ntk_blocks", per_class=3, feature_block_norms=True),
    ]
    for step in (0, 5, 10):
        with torch.no_grad():
            h = model.features(x)
        inp = ProbeInput(
            model=model,
            x=x,
            y=y,
            features=h,
            logits=model.classifier(h),
            classifier=model.classifier,
            num_classes=3,
            step=step,
        )
        for probe in probes:
            out = probe(inp)
            run.log(step, {prefix + k: v for k, v in out.scalars.items()})
            for name, arr in out.arrays.items():
                run.save_array(prefix.replace("/", ".") + name, step, arr)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.1 * torch.randn(p.shape, generator=g))
    run.flush()


@pytest.mark.parametrize("prefix", ["", "mse/"])
def test_figures_from_recorded_probes(tmp_path, prefix):
    run = create(tmp_path / "run", config={}, seed=0)
    _record(run, prefix)
    figs = dict(kernel_figures(run))
    assert set(figs) == {
        "ntk_kernel_heatmaps",
        "ntk_block_norms",
        "ntk_alignment",
        "ntk_block_values",
    }
    heat = figs["ntk_kernel_heatmaps"].axes
    main = [ax for ax in heat if ax.images]
    assert len(main) == 2 and "step 10" in main[0].get_title()
    assert main[0].images[0].get_array().shape == (9, 9)
    assert float(np.max(main[0].images[0].get_array())) == pytest.approx(1.0)
    assert len(main[0].lines) == 4  # two class boundaries, horizontal and vertical
    norms = [ax for ax in figs["ntk_block_norms"].axes if ax.images]
    assert [ax.images[0].get_array().shape for ax in norms] == [(3, 3), (4, 4)]
    align = figs["ntk_alignment"].axes[0]
    assert len(align.lines) == 4 and all(len(ln.get_xdata()) == 3 for ln in align.lines)
    assert {t.get_text() for t in align.get_legend().get_texts()} == {
        "A(K_f)",
        "A(K_f) c",
        "A(K_h)",
        "A(K_h) c",
    }
    assert align.get_xlabel() == "step" and align.get_ylabel() == "alignment"
    gamma = figs["ntk_block_values"].axes[0]
    assert gamma.get_title() == "Logit kernel blocks γ"
    assert len({ln.get_linestyle() for ln in gamma.lines}) == 3  # overlapping lines differ
    for fig in figs.values():
        plt.close(fig)


def test_run_without_ntk_records_gives_no_figures(tmp_path):
    run = create(tmp_path / "run", config={}, seed=0)
    run.log(0, {"loss": 1.0})
    run.save_array("other", 0, np.zeros(3))
    run.flush()
    assert kernel_figures(run) == []
    assert kernel_figures(create(tmp_path / "empty", config={}, seed=0)) == []
