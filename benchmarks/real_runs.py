"""Small real trainings inside each theory's regime, confronted as ``ncdyn compare`` and
``ncdyn forecast`` do, and tabled in docs/real-runs.md (issue 28, item 9).

Every theory here has a declared family of settings (:data:`SETTINGS`), each trained with
the project's own loop (:func:`ncdynamics.training.train` and the Recorder's probes) at seeds
0, 1 and 2 (the seed draws the data, the initial weights and the batch order). Each run is
then given to :func:`ncdynamics.experiments.compare.compare` and
:func:`ncdynamics.experiments.forecast.forecast`, the library calls behind the two commands,
so the table follows the engine: a change to a confrontation changes the table at the next
run of this script. Per run the results keep the verdict of the whole run (with its windows),
the head of its reason, the fitted parameters with their intervals, the windows' verdicts
and reason heads, the step where the theory's regime starts (:func:`regime_start_step`), and
per forecast origin whether the theory beat both baselines (last value and power law) on
every observable, an origin whose fit is degenerate never counting as a win, and if not, why
(:func:`ncdynamics.experiments.forecast.origin_miss`).

Results go to ``benchmarks/results/real_runs/<theory>.json`` (one file per theory, replaced
when that theory is run again). ``--render`` writes docs/real-runs.md from every file there,
whole: nothing in it is typed by hand.

Usage::

    nice python benchmarks/real_runs.py [--theories lesde ntk_collapse] [--workers 2]
    python benchmarks/real_runs.py --render [--check]

``--check`` changes nothing and exits 1 when docs/real-runs.md differs from what the stored
results give. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ncdynamics.theories import verdict

HERE = Path(__file__).parent
ROOT = HERE.parent
DOCS = ROOT / "docs" / "real-runs.md"
RESULTS = HERE / "results" / "real_runs"
SEEDS = (0, 1, 2)

#: Verdicts that count towards item 9's target of two thirds (a window only where the regime
#: starts late: :func:`counts_as_holding`).
HOLDING = ("holds", "holds in a window")


def counts_as_holding(run: dict[str, Any]) -> bool:
    """Whether one stored run counts towards item 9's two thirds: ``holds`` on the whole
    stream, or ``holds in a window`` where the regime starts late (the run's
    ``regime_start`` after its first record: a stream out of regime as a whole, judged
    inside its regime). A window that holds on a stream in regime from its first record is
    the theory describing a part of what it should describe whole, and is not counted."""
    if run["verdict"] == "holds":
        return True
    if run["verdict"] != "holds in a window":
        return False
    start, first = run.get("regime_start"), run.get("first_step")
    return start is not None and first is not None and start > first


#: Columns of the verdict table, in the engine's order (anything else goes under "other").
VERDICTS = tuple(v for v in verdict.VERDICTS if v not in ("missing", "error"))
REASON_HEAD = 200


@dataclass(frozen=True)
class Setting:
    """One setting of a theory's family: a name, what it is in words, and its knobs."""

    name: str
    text: str
    knobs: dict[str, Any] = field(default_factory=dict)


def _lesde(name: str, text: str, **changes: Any) -> Setting:
    knobs: dict[str, Any] = {
        "width": 32,  # one hidden layer; 0 is the linear softmax model
        "dim": 8,
        "per_class": 40,
        "separation": 3.0,
        "lr": 0.05,
        "batch_size": None,  # full batch
        "epochs": 200,
        "first_record": 20,
        "n_records": 25,
    }
    knobs.update(changes)
    return Setting(name, text, knobs)


#: lesde (docs/theories/lesde.md, "Small real trainings inside the regime"): 3 Gaussian
#: classes, softmax cross-entropy, plain GD at a constant rate, class-mean logits recorded at
#: 25 log-spaced epochs. The paragraph names the ranges, not the nine combinations; here the
#: base setting is the one tests/theories/test_lesde_confront_runs.py trains, and each other
#: setting changes one or two knobs of it to the other end of its range.
LESDE = (
    _lesde("base", "MLP 32, 8 dims, 40/class, separation 3, lr 0.05, full batch, 200 epochs"),
    _lesde("wide", "base with a hidden layer of 128", width=128),
    _lesde("linear", "base with the linear softmax model (no hidden layer)", width=0),
    _lesde("dim32", "base in 32 dims", dim=32),
    _lesde("n200", "base with 200 samples per class", per_class=200),
    _lesde("close", "base at separation 1.5", separation=1.5),
    _lesde("slow", "base at lr 0.01 for 400 epochs", lr=0.01, epochs=400),
    _lesde("batch8", "base in batches of 8 for 100 epochs", batch_size=8, epochs=100),
    _lesde("from1", "base recorded from epoch 1", first_record=1),
)

#: ntk_collapse (docs/theories/ntk_collapse.md, "Real runs in the regime"): 16 inputs, two
#: hidden layers of 32, 4 Gaussian classes of 8 samples, full-batch GD on the squared error;
#: the within-class scatter and the kernel recorded only in the terminal phase, so the
#: stream starts where the regime does.
NTK_COLLAPSE = (
    Setting(
        "eta0.05",
        "lr 0.05, epochs 100-200, records every 10",
        {"lr": 0.05, "first": 100, "last": 200, "every": 10},
    ),
    Setting(
        "eta0.1",
        "lr 0.1, epochs 400-2000, records every 50",
        {"lr": 0.1, "first": 400, "last": 2000, "every": 50},
    ),
)

#: alignment (tests/theories/test_alignment_confront_calibration.py's in-regime case): a
#: leaky-ReLU MLP, Xavier init, trained full-batch by plain GD on the squared error (eq. (1))
#: on the two points of [1] with centred targets, by the theory's own training loop
#: (``train_recording``); the pair's (a, b, w) at hidden layer 1 written every 10 epochs.
ALIGNMENT = (
    Setting(
        "ref",
        "2 x 32, gain 0.5, lr 0.02, 1200 epochs",
        {"width": 32, "depth": 2, "gain": 0.5, "lr": 0.02, "epochs": 1200},
    ),
    Setting(
        "slow",
        "2 x 32, gain 0.5, lr 0.01, 2400 epochs",
        {"width": 32, "depth": 2, "gain": 0.5, "lr": 0.01, "epochs": 2400},
    ),
    Setting(
        "wide",
        "2 x 64, gain 0.5, lr 0.02, 1200 epochs",
        {"width": 64, "depth": 2, "gain": 0.5, "lr": 0.02, "epochs": 1200},
    ),
    # Table 1 nets as the authors' code trains them (two_point.TWO_POINT_SETTINGS
    # "authors-code": dx^2 = 1, dy^2 = 0.5, 1/2 MSE, the authors' hidden layer; the
    # universality experiment's recipe)
    Setting(
        "authors-shallow",
        "Table 1 Shallow (2 x 500, gain 0.35, lr 0.01, 6000 epochs) at the authors' code",
        {"arch": "shallow"},
    ),
    Setting(
        "authors-narrow",
        "Table 1 Narrow (20 x 50, gain 1.05, lr 0.005, 6000 epochs) at the authors' code",
        {"arch": "narrow"},
    ),
    Setting(
        "authors-default",
        "Table 1 Default (20 x 500, gain 1, lr 0.005, 6000 epochs) at the authors' code",
        {"arch": "default"},
    ),
)

#: hadamard (tests/theories/test_hadamard_confront.py's random-init case): gradient descent on
#: the unconstrained features model from a small random initialisation (K = 4, d = 4,
#: cross-entropy), the ``hadamard.fig2`` experiment at its smoke preset, one realisation,
#: 6000 iterations, 40 log-spaced records; its ``random.`` stream.
HADAMARD = (
    Setting(
        "eta0.01",
        "eta 0.01, random scale e^-6/sqrt(K)",
        {"learning_rate": 0.01, "delta": 6.0, "n_iterations": 6000, "n_log": 40},
    ),
    Setting(
        "eta0.02",
        "eta 0.02, random scale e^-6/sqrt(K)",
        {"learning_rate": 0.02, "delta": 6.0, "n_iterations": 6000, "n_log": 40},
    ),
    Setting(
        "delta3",
        "eta 0.01, random scale e^-3/sqrt(K)",
        {"learning_rate": 0.01, "delta": 3.0, "n_iterations": 6000, "n_log": 40},
    ),
)

#: The stream a theory's runs are confronted on, where the run holds several.
STREAMS = {"hadamard": "random."}

SETTINGS: dict[str, tuple[Setting, ...]] = {
    "lesde": LESDE,
    "ntk_collapse": NTK_COLLAPSE,
    "alignment": ALIGNMENT,
    "hadamard": HADAMARD,
}

#: What each theory's family holds in common, for the page.
FAMILIES = {
    "lesde": (
        "3 Gaussian classes (`gaussian-clusters`, spread 1), softmax cross-entropy, plain "
        "gradient descent (no momentum, no weight decay) at a constant rate; the class-mean "
        "logits (`class_means` probe) recorded at 25 epochs log-spaced from the first record "
        "to the last epoch (recording from epoch 1, rounding to whole epochs leaves 22 "
        "distinct ones), plus the initialisation (step 0), which the training loop always "
        "records; seeds 0-2 draw the data, the weights and the batch order."
    ),
    "ntk_collapse": (
        "An MLP (16 inputs, two hidden layers of 32, ReLU) on 4 Gaussian classes of 8 samples "
        "(class means N(0, I), spread 0.5), full-batch gradient descent on the squared error "
        "without momentum; the `invariant` probe (within-class scatter and the classifier's "
        "Gram matrix) recorded from the first to the last epoch named, where train accuracy "
        "is 1, plus the initialisation (step 0), which the training loop always records: "
        "so each stream is out of regime as a whole (train accuracy below 0.95 at step 0) "
        "and its verdict is that of the windows inside the regime (`holds in a window`, or "
        "`out of regime` when no window holds); seeds 0-2 draw the data, the weights and "
        "the batch order."
    ),
    "hadamard": (
        "Gradient descent on the unconstrained features model (K = 4 classes, d = 4, one "
        "sample per class, cross-entropy) from a small Gaussian initialisation, the "
        "`hadamard.fig2` experiment at its smoke preset (one realisation, 6000 iterations, "
        "class-mean logits at 40 log-spaced iterations), its `random.` stream; it starts "
        "off the Hadamard subspace, so the stream is out of regime as a whole and its "
        "verdict is that of the windows inside the regime; seeds 0-2 draw the "
        "initialisation."
    ),
    "alignment": (
        "The two points of [1] (`two-point` data, dx = 0.5, dy = 1, targets centred at "
        "-0.5 and 0.5), a leaky-ReLU MLP with Xavier initial weights, full-batch plain "
        "gradient descent on the squared error at a constant rate, trained by the theory's "
        "own loop (`alignment.training.train_recording`, hidden layer 1); the `authors-` "
        "settings are Table 1 rows trained as the authors' code does and as the "
        "universality experiment does (dx^2 = 1, dy^2 = 0.5, targets 0.6 and 0.6 + "
        "sqrt(0.5), half the squared error, the authors' hidden layer: "
        "`two_point.TWO_POINT_SETTINGS['authors-code']`); a, b, w, X, Y written every 10 "
        "epochs from epoch 0; seeds 0-2 draw the initial weights (the two points are fixed)."
    ),
}


# --------------------------------------------------------------------------- training


def _train_lesde(knobs: dict[str, Any], seed: int, path: Path) -> None:
    import numpy as np
    import torch

    from ncdynamics import data, runs
    from ncdynamics.models import MLP
    from ncdynamics.training import Recorder, Schedule

    k = 3
    ds = data.load(
        "gaussian-clusters",
        num_classes=k,
        dim=knobs["dim"],
        n_train_per_class=knobs["per_class"],
        n_test_per_class=0,
        separation=knobs["separation"],
        seed=seed,
    )
    n = k * knobs["per_class"]
    settings = {
        "loss": "cross-entropy",
        "lr": knobs["lr"],
        "epochs": knobs["epochs"],
        "momentum": 0.0,
        "weight_decay": 0.0,
        "batch_size": knobs["batch_size"] or n,
    }
    run = runs.create(path, config=settings, seed=seed)
    steps = np.geomspace(knobs["first_record"], knobs["epochs"], knobs["n_records"])
    schedule = Schedule(every=None, steps=tuple(int(s) for s in np.unique(np.round(steps))))
    rec = Recorder(
        run, ds.x_train, ds.y_train, probes=["class_means"], schedule=schedule, num_classes=k
    )
    depth = 1 if knobs["width"] else 0
    model = MLP(
        knobs["dim"],
        k,
        depth=depth,
        width=knobs["width"] or 1,
        generator=torch.Generator().manual_seed(seed),
    )
    _train_recorded(model, ds, rec, seed, settings)


def _train_recorded(model: Any, data: Any, rec: Any, seed: int, settings: dict[str, Any]) -> None:
    """Full training on the CPU with ``rec`` recording; the run is closed and marked complete."""
    from ncdynamics.training import train

    train(
        model,
        data,
        device="cpu",
        recorder=rec,
        seed=seed,
        evaluate_test=False,
        progress=False,
        **settings,
    )
    rec.close()
    rec.run.mark_completed()


def _train_ntk_collapse(knobs: dict[str, Any], seed: int, path: Path) -> None:
    import numpy as np
    import torch

    from ncdynamics import runs
    from ncdynamics.models.mlp import MLP
    from ncdynamics.probes.invariant import InvariantProbe
    from ncdynamics.training import Recorder, Schedule

    n_cls, per, d = 4, 8, 16
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(n_cls), per)
    x = rng.standard_normal((n_cls, d))[y] + 0.5 * rng.standard_normal((n_cls * per, d))
    settings = {
        "loss": "mse",
        "lr": knobs["lr"],
        "momentum": 0.0,
        "weight_decay": 0.0,
        "batch_size": n_cls * per,
        "epochs": knobs["last"],
    }
    run = runs.create(path, config=settings, seed=seed)
    steps = tuple(range(knobs["first"], knobs["last"] + 1, knobs["every"]))
    probe = InvariantProbe(per_class=per, logits=False)
    rec = Recorder(
        run,
        x.astype(np.float32),
        y,
        probes=[probe],
        schedule=Schedule(every=None, steps=steps),
        num_classes=n_cls,
    )
    model = MLP(d, n_cls, depth=2, width=32, generator=torch.Generator().manual_seed(seed))
    _train_recorded(model, (x.astype(np.float32), y), rec, seed, settings)


def _train_alignment(knobs: dict[str, Any], seed: int, path: Path) -> None:
    from ncdynamics import data, runs
    from ncdynamics.theories.alignment.experiments.trials import net_config, two_point_trial
    from ncdynamics.theories.alignment.experiments.two_point import (
        setting_job,
        two_point_setting,
    )
    from ncdynamics.theories.alignment.training import NetConfig, train_recording

    if "arch" in knobs:  # a Table 1 row, trained as the universality experiment does
        cfg = net_config(knobs["arch"])
        st = two_point_setting("authors-code")
        h = two_point_trial(*setting_job(cfg, seed, st))
        loss = st.loss
    else:
        cfg = NetConfig(
            gain=knobs["gain"],
            lr=knobs["lr"],
            epochs=knobs["epochs"],
            width=knobs["width"],
            depth=knobs["depth"],
        )
        ds = data.load("two-point", y1=-0.5)
        h = train_recording(
            cfg, ds.x_train, ds.info["targets_train"], seed=seed, loss="mse", layer=1
        )
        loss = "mse"
    settings = {"loss": loss, "optimizer": "sgd", "lr": cfg.lr, "epochs": cfg.epochs}
    run = runs.create(path, config=settings, seed=seed)
    for k in range(0, h.epochs.size, 10):
        run.log(
            int(h.epochs[k]),
            {"pair_a": h.a[k], "pair_b": h.b[k], "pair_w": h.w[k], "pair_X": h.X, "pair_Y": h.Y},
        )
    run.flush()
    run.mark_completed()


def _train_hadamard(knobs: dict[str, Any], seed: int, path: Path) -> None:
    from ncdynamics.experiments._registry import run as run_experiment

    run_experiment(
        "hadamard.fig2",
        preset="smoke",
        out=path,
        seed=seed,
        progress=False,
        device="cpu",
        n_realizations=1,
        **knobs,
    )


TRAINERS = {
    "hadamard": _train_hadamard,
    "lesde": _train_lesde,
    "ntk_collapse": _train_ntk_collapse,
    "alignment": _train_alignment,
}


# --------------------------------------------------------------------------- confronting


def _number(x: Any) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def confront(path: Path, theory: str) -> dict[str, Any]:
    """``compare`` and ``forecast`` on the run at ``path``, ``theory``'s entries only."""
    from ncdynamics.experiments.compare import compare
    from ncdynamics.experiments.forecast import forecast, origin_miss

    def ours(e: Any) -> bool:
        return e.theory == theory and (theory not in STREAMS or e.stream == STREAMS[theory])

    entries = [e for e in compare(path) if ours(e)]
    forecasts = [e for e in forecast(path) if ours(e)]
    if len(entries) != 1 or len(forecasts) != 1:
        raise RuntimeError(
            f"expected one {theory} stream in {path}; got {len(entries)} compare and "
            f"{len(forecasts)} forecast entries"
        )
    entry, fc = entries[0], forecasts[0]
    params: dict[str, list[float | None]] = {}
    if entry.fit is not None:
        for k, p in entry.fit.params.items():
            low, high = p.interval if p.interval is not None else (math.nan, math.nan)
            params[k] = [_number(p.value), _number(low), _number(high)]
    elif entry.verdict.window is not None:  # out of regime as a whole: the window's fit
        for w in entry.windows:
            if (w.since, w.until) != tuple(entry.verdict.window):
                continue
            for k, v in w.params.items():
                low, high = w.intervals.get(k, (math.nan, math.nan))
                params[k] = [_number(v), _number(low), _number(high)]
    steps = [s for s, _ in entry.observed.values() if s.size]
    start = regime_start_step(path, theory, entry.stream, steps[0]) if steps else None
    return {
        "n_records": int(steps[0].size) if steps else 0,
        "first_step": float(steps[0][0]) if steps else None,
        "last_step": float(steps[0][-1]) if steps else None,
        "verdict": entry.verdict.verdict,
        "reason": entry.verdict.reason[:REASON_HEAD],
        "window": list(entry.verdict.window) if entry.verdict.window else None,
        "regime_start": start,
        "params": params,
        "windows": [[w.since, w.until, w.verdict.verdict] for w in entry.windows],
        "window_reasons": [w.verdict.reason[:REASON_HEAD] for w in entry.windows],
        "forecast": {
            "verdict": fc.verdict.verdict,
            "reason": fc.verdict.reason[:REASON_HEAD],
            "origins": [
                {
                    "cut": o.cut,
                    "placed_by": o.placed_by,
                    "fit_verdict": o.verdict.verdict,
                    "fit_reason": o.verdict.reason[:REASON_HEAD],
                    "win": (miss := origin_miss(o)) is None,
                    "miss": miss,
                    "worst_skill": _worst_skill(o.scores),
                }
                for o in fc.origins
            ],
        },
    }


def _worst_skill(rows: list[dict[str, Any]]) -> dict[str, float | None]:
    """The theory's lowest skill against each baseline over the observables of one origin
    (``None`` when not scored or not finite)."""
    out: dict[str, float | None] = {}
    for base in ("last_value", "power_law"):
        skills = [
            float(r.get(f"skill_vs_{base}", math.nan))
            for r in rows
            if r["method"].startswith("theory")
        ]
        out[base] = _number(min(skills)) if skills else None
    return out


def regime_start_step(path: Path, theory: str, label: str, steps: Any) -> float | None:
    """The first record of the stream ``label`` (as the entries name it) of ``theory`` in the
    run at ``path`` from which every assumption of the theory holds over the rest of the
    stream: its first record when the whole stream is inside the regime, else the start of
    the window that :func:`ncdynamics.experiments.windows.regime_start` finds (the window
    ``ncdyn compare`` fits from the regime's start), else ``None`` (no such window)."""
    from ncdynamics.experiments import streams
    from ncdynamics.experiments.windows import MIN_WINDOW_RECORDS, regime_start
    from ncdynamics.theories.confrontation import Stream

    conf = next(c for c in streams.confrontations() if c.theory == theory)
    run, wide = streams.open_streams(path)
    prefixes = [p for p in streams.find_streams(conf, run, list(wide.columns))]
    prefix = next(p for p in prefixes if (p or "(no prefix)") == label)
    stream = Stream(run, prefix, wide=wide)
    if not streams.out_of_regime_reasons(streams.check_regime(conf, stream)):
        return float(steps[0])
    window = regime_start(conf, stream, steps, MIN_WINDOW_RECORDS)
    return None if window is None else window[0]


def one_run(theory: str, setting: Setting, seed: int) -> dict[str, Any]:
    """Train one setting at one seed in a temporary folder and confront it."""
    import torch

    torch.set_num_threads(1)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run"
        TRAINERS[theory](setting.knobs, seed, path)
        trained = time.perf_counter() - start
        out = confront(path, theory)
    return {
        "setting": setting.name,
        "seed": seed,
        **out,
        "train_s": round(trained, 1),
        "total_s": round(time.perf_counter() - start, 1),
    }


def _commit() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "src"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return "unknown"
    return f"{head}{'+dirty' if dirty else ''}" if head else "unknown"


def run_theory(theory: str, workers: int = 1) -> dict[str, Any]:
    """Every setting of ``theory`` at every seed; the results, JSON-ready."""
    settings = SETTINGS[theory]
    jobs = [(theory, s, seed) for s in settings for seed in SEEDS]
    commit = _commit()  # the code the runs use: HEAD when they start, not when they end
    start = time.perf_counter()
    results = []
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            futures = [pool.submit(one_run, *job) for job in jobs]
            for i, fut in enumerate(futures):
                results.append(fut.result())
                _progress(theory, i + 1, len(jobs), results[-1])
    else:
        for i, job in enumerate(jobs):
            results.append(one_run(*job))
            _progress(theory, i + 1, len(jobs), results[-1])
    return {
        "theory": theory,
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": platform.node(),
        "commit": commit,
        "seconds": round(time.perf_counter() - start, 1),
        "seeds": list(SEEDS),
        "settings": [{"name": s.name, "text": s.text, "knobs": s.knobs} for s in settings],
        "runs": results,
    }


def _progress(theory: str, i: int, n: int, r: dict[str, Any]) -> None:
    wins = sum(o["win"] for o in r["forecast"]["origins"])
    print(
        f"[{theory} {i}/{n}] {r['setting']} seed {r['seed']}: {r['verdict']}; forecast "
        f"{wins}/{len(r['forecast']['origins'])} origins won ({r['total_s']:.0f} s)",
        file=sys.stderr,
        flush=True,
    )


# --------------------------------------------------------------------------- rendering


def in_regime_origins(run: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The forecast origins of one stored run that lie inside the theory's regime: those cut
    at or after the run's ``regime_start`` (none when no record is inside it); ``None`` for
    results stored before the regime's start was (no ``regime_start`` key)."""
    if "regime_start" not in run:
        return None
    start = run["regime_start"]
    if start is None:
        return []
    return [o for o in run["forecast"]["origins"] if o["cut"] >= start]


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def summarise(result: dict[str, Any]) -> dict[str, Any]:
    """Counts of one theory's results: verdicts and origins won, per setting and in all.

    Origins are counted twice: all of them, and those inside the regime
    (:func:`in_regime_origins`; ``None`` when a run's results do not say where its regime
    starts). The item-9 target is met when at least two thirds of the runs hold
    (:func:`counts_as_holding`) and the theory beats both baselines at more than half of the
    forecast origins of all its runs (``forecast_met``: all origins; ``forecast_met_in_regime``:
    the origins inside the regime).
    """
    per: dict[str, dict[str, Any]] = {}
    for r in result["runs"]:
        row = per.setdefault(
            r["setting"],
            {
                "verdicts": Counter(),
                "won": 0,
                "origins": 0,
                "won_in_regime": 0,
                "origins_in_regime": 0,
                "forecast": Counter(),
            },
        )
        row["verdicts"][r["verdict"]] += 1
        row["won"] += sum(o["win"] for o in r["forecast"]["origins"])
        row["origins"] += len(r["forecast"]["origins"])
        inside = in_regime_origins(r)
        row["won_in_regime"] = _add(
            row["won_in_regime"], None if inside is None else sum(o["win"] for o in inside)
        )
        row["origins_in_regime"] = _add(
            row["origins_in_regime"], None if inside is None else len(inside)
        )
        row["forecast"][r["forecast"]["verdict"]] += 1
    n_runs = len(result["runs"])
    n_hold = sum(counts_as_holding(r) for r in result["runs"])
    n_windows_in_regime = sum(
        r["verdict"] == "holds in a window" and not counts_as_holding(r) for r in result["runs"]
    )
    won = sum(row["won"] for row in per.values())
    origins = sum(row["origins"] for row in per.values())
    won_in: int | None = 0
    origins_in: int | None = 0
    for row in per.values():
        won_in = _add(won_in, row["won_in_regime"])
        origins_in = _add(origins_in, row["origins_in_regime"])
    holds_met = n_runs > 0 and 3 * n_hold >= 2 * n_runs
    forecast_met = origins > 0 and 2 * won > origins
    return {
        "per": per,
        "n_runs": n_runs,
        "n_hold": n_hold,
        "n_windows_in_regime": n_windows_in_regime,
        "won": won,
        "origins": origins,
        "won_in_regime": won_in,
        "origins_in_regime": origins_in,
        "holds_met": holds_met,
        "forecast_met": forecast_met,
        "forecast_met_in_regime": (
            None
            if won_in is None or origins_in is None
            else origins_in > 0 and 2 * won_in > origins_in
        ),
    }


def _ratio(won: int | None, origins: int | None) -> str:
    return "n/a" if won is None or origins is None else f"{won}/{origins}"


#: Reason families of the verdicts that do not hold (:func:`reason_family`): a pattern of the
#: engine's reasons (theories/verdict.py), the family it names (``{...}`` filled from the
#: pattern's groups) and the group holding the number the family is measured by.
REASON_FAMILIES: tuple[tuple[str, str, tuple[str, str] | None], ...] = (
    (
        r"but so does (?P<alt>.+?) with \d+ parameters? "
        r"\((?:held-out error ratio (?P<n>[-\d.e+]+))?",
        "not distinguished from {alt}",
        ("n", "held-out error ratio"),
    ),
    (
        r"but (?P<alt>.+?) with \d+ parameters \(\d+ per observable\) explains these records "
        r"better in-sample with its extra parameters paid for \(AICc (?P<n>\S+)",
        "not distinguished: {alt} better in-sample (AICc)",
        None,
    ),
    (
        r"but (?P<alt>\S+) predicts the records .* as well \(error ratio (?P<n>[-\d.e+]+)",
        "not distinguished from the rival {alt}",
        ("n", "rival error ratio"),
    ),
    (
        r"^(?P<alt>.+?) \(\d+ parameters per observable\) explains these records better "
        r"in-sample .*error ratio (?P<n>[-\d.e+]+)",
        "fails: beaten by {alt} (in-sample and held out)",
        ("n", "held-out error ratio"),
    ),
    (r"^(?P<obs>\w+): R² (?P<n>\S+) < ", "fails: R² below the threshold on {obs}", ("n", "R²")),
    (
        r"^(?P<obs>\w+): one record ahead, no better than the last value.*skill (?P<n>[-\d.e+]+)",
        "fails: no better than persistence one record ahead on {obs}",
        ("n", "skill"),
    ),
    (r"predicts from the run's settings", "fails: a parameter from the settings refuted", None),
    (
        r"^(?P<p>\w+) = (?P<n>\S+) is indistinguishable from zero",
        "degenerate: {p} indistinguishable from zero",
        ("n", "value"),
    ),
    (
        r"^(?P<p>\w+) = (?P<n>\S+) is at the (?P<side>lower|upper) bound",
        "degenerate: {p} at the {side} bound of its search",
        ("n", "value"),
    ),
    (r"^(?P<p>\w+) = \S+ is not determined", "degenerate: {p} not determined (interval)", None),
    (r"^(?P<p>\w+) = \S+ is unphysical", "degenerate: {p} unphysical", None),
    (r"^(?P<p>\w+) = \S+ is not finite", "degenerate: {p} not finite", None),
    (r"^(?P<p>\w+) is not identifiable", "degenerate: {p} not identifiable", None),
    (r"records for \d+ free parameters", "degenerate: too few records", None),
    (r"cannot be tested out of sample", "degenerate: nothing held out", None),
)


def reason_family(verdict_name: str, reason: str) -> tuple[str, tuple[str, float] | None]:
    """The family of a reason (:data:`REASON_FAMILIES`, first match) and the number it
    names, as ``(name, value)``, if any; ``"<verdict>: other"`` when no pattern matches."""
    for pattern, family, number in REASON_FAMILIES:
        m = re.search(pattern, reason)
        if m is None:
            continue
        groups = {k: v for k, v in m.groupdict().items() if v is not None}
        value = None
        if number is not None:
            try:
                value = (number[1], float(groups[number[0]]))
            except (KeyError, ValueError):
                value = None
        return family.format(**groups), value
    return f"{verdict_name}: other", None


def why_not(run: dict[str, Any]) -> tuple[str, tuple[str, float] | None]:
    """The reason family of a run that does not hold: that of its verdict's reason, or for a
    run out of regime as a whole, that of the window its verdict names (``ncdyn compare``
    judges such a stream by its window from the regime's start, else its longest window
    inside the regime), prefixed ``out of regime as a whole;``; for a run held
    only in a window of a stream in regime from its start (:func:`counts_as_holding`), that of
    its whole stream's reason."""
    if run["verdict"] == "holds in a window":
        whole = run["reason"].split("on the whole stream ", 1)[-1]
        verdict_name, _, why = whole.partition(": ")
        family, value = reason_family(verdict_name, why)
        if not family.startswith(verdict_name):
            family = f"{verdict_name}: {family}"
        return f"held only in a window; on the whole stream {family}", value
    # a verdict with a window, short of holding, is that of a window of a stream out of
    # regime as a whole (the engine judges it by the window it names)
    tested = run.get("window")
    if run["verdict"] != "out of regime" and tested is None:
        return reason_family(run["verdict"], run["reason"])
    reasons = run.get("window_reasons") or [""] * len(run["windows"])
    inside = [
        (a, b, v, why)
        for (a, b, v), why in zip(run["windows"], reasons, strict=True)
        if v != "out of regime"
    ]
    if not inside:
        return "out of regime, no window inside the regime", None
    start = run.get("regime_start")
    a, b, v, why = max(
        inside,
        key=lambda w: ([w[0], w[1]] == tested, w[0] == start, w[1] - w[0], w[1]),
    )
    family, value = reason_family(v, why) if why else (v, None)
    if not family.startswith(v):
        family = f"{v}: {family}"
    return f"out of regime as a whole; its window {a:g}-{b:g}: {family}", value


def _span(values: list[tuple[str, float]]) -> str:
    if not values:
        return ""
    name = values[0][0]
    low, high = min(v for _, v in values), max(v for _, v in values)
    return f"{name} {low:.3g}" if low == high else f"{name} {low:.3g} to {high:.3g}"


def render_why(result: dict[str, Any]) -> list[str]:
    """Why the runs that do not hold do not, and why the origins not won were not: a table of
    reason families with their counts, the runs and the range of the number each names; and
    the origins by :func:`ncdynamics.experiments.forecast.origin_miss` code."""
    families: dict[str, list[Any]] = {}
    for r in result["runs"]:
        if counts_as_holding(r):
            continue
        family, value = why_not(r)
        row = families.setdefault(family, [0, [], []])
        row[0] += 1
        row[1].append(f"`{r['setting']}` {r['seed']}")
        if value is not None:
            row[2].append(value)
    lines: list[str] = []
    n_runs = len(result["runs"])
    n_not = sum(row[0] for row in families.values())
    if families:
        lines += [
            f"Why {n_not} of {n_runs} runs do not hold (from the reasons the engine gave):",
            "",
        ]
        rows = [
            [family, str(row[0]), ", ".join(row[1]), _span(row[2])]
            for family, row in sorted(families.items(), key=lambda kv: (-kv[1][0], kv[0]))
        ]
        lines += _table(["reason", "runs", "which (setting seed)", "its number (range)"], rows, 0)
        lines.append("")
    misses: Counter[str] = Counter()
    misses_in: Counter[str] = Counter()
    stored = all("miss" in o for r in result["runs"] for o in r["forecast"]["origins"])
    if not stored:
        return lines + ["These results do not store why each origin was not won.", ""]
    any_in = all("regime_start" in r for r in result["runs"])
    for r in result["runs"]:
        inside = {id(o) for o in (in_regime_origins(r) or [])}
        for o in r["forecast"]["origins"]:
            code = o["miss"] or "won"
            misses[code] += 1
            if id(o) in inside:
                misses_in[code] += 1
    lines += [
        "Forecast origins by outcome (`origin_miss`), with why: for an origin whose fit never "
        "wins, the families of the fit's reasons; otherwise the theory's RMSE over the "
        "post-cut records divided by each baseline's, on its worst observable (median over "
        "the origins; above 1 the baseline is better):",
        "",
    ]
    origins = [o for r in result["runs"] for o in r["forecast"]["origins"]]
    rows = [
        [
            f"`{code}`",
            _outcome_detail(code, [o for o in origins if (o["miss"] or "won") == code]),
            str(n),
            str(misses_in.get(code, 0)) if any_in else "n/a",
        ]
        for code, n in sorted(misses.items(), key=lambda kv: (kv[0] != "won", -kv[1], kv[0]))
    ]
    lines += _table(["outcome", "why", "origins (all)", "origins in regime"], rows, 2)
    lines.append("")
    return lines


def _outcome_detail(code: str, origins: list[dict[str, Any]]) -> str:
    """What the origins of one outcome have in common (see :func:`render_why`); empty for
    results stored before the origins kept their fit's reason and skills."""
    if code in ("degenerate", "error", "out of regime"):
        found: Counter[str] = Counter()
        for o in origins:
            if "fit_reason" not in o:
                return ""
            family, _ = reason_family(code, o["fit_reason"])
            found[family.removeprefix(f"{code}: ")] += 1
        return "; ".join(f"{f} ({n})" for f, n in found.most_common())
    if code == "not scored" or any("worst_skill" not in o for o in origins):
        return ""
    parts = []
    for base, name in (("last_value", "last value"), ("power_law", "power law")):
        skills = [o["worst_skill"][base] for o in origins]
        ratios = sorted(math.sqrt(1.0 - x) for x in skills if x is not None and x <= 1.0)
        if ratios:
            parts.append(f"{ratios[len(ratios) // 2]:.2g} × the {name}'s")
    return "RMSE " + ", ".join(parts) if parts else ""


def _table(header: list[str], rows: list[list[str]], numeric: int = 0) -> list[str]:
    """A markdown table; its last ``numeric`` columns are aligned right."""
    align = ["---"] * (len(header) - numeric) + ["---:"] * numeric
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    return lines + ["| " + " | ".join(r) + " |" for r in rows]


def _holding(counts: Counter[str]) -> int:
    """How many of ``counts`` are ``holds`` or ``holds in a window``."""
    return sum(counts.get(v, 0) for v in HOLDING)


def _bold(text: str) -> str:
    return text if text == "n/a" else f"**{text}**"


def _yes(flag: bool) -> str:
    return "met" if flag else "not met"


def render_theory(result: dict[str, Any]) -> list[str]:
    """The section of docs/real-runs.md for one theory's results."""
    theory = result["theory"]
    s = summarise(result)
    lines = [
        f"## {theory}",
        "",
        f"{FAMILIES.get(theory, '')} Run {result['date']} on commit `{result['commit']}`, "
        f"{len(result['runs'])} runs in {result['seconds']:.0f} s.",
        "",
    ]
    lines += _table(
        ["setting", "what"], [[f"`{x['name']}`", x["text"]] for x in result["settings"]]
    )
    lines.append("")
    others = sorted({v for row in s["per"].values() for v in row["verdicts"] if v not in VERDICTS})
    header = [
        "setting",
        *VERDICTS,
        *others,
        "forecast origins won (all)",
        "won (origins in regime)",
        "forecast holds (or in a window)",
    ]
    rows = []
    total: Counter[str] = Counter()
    for x in result["settings"]:
        row = s["per"].get(x["name"])
        if row is None:
            continue
        total.update(row["verdicts"])
        rows.append(
            [f"`{x['name']}`"]
            + [str(row["verdicts"].get(v, 0)) for v in (*VERDICTS, *others)]
            + [
                f"{row['won']}/{row['origins']}",
                _ratio(row["won_in_regime"], row["origins_in_regime"]),
                str(_holding(row["forecast"])),
            ]
        )
    n_fc_holds = sum(_holding(row["forecast"]) for row in s["per"].values())
    rows.append(
        ["**all**"]
        + [f"**{total.get(v, 0)}**" for v in (*VERDICTS, *others)]
        + [
            f"**{s['won']}/{s['origins']}**",
            _bold(_ratio(s["won_in_regime"], s["origins_in_regime"])),
            f"**{n_fc_holds}**",
        ]
    )
    lines += _table(header, rows, numeric=len(header) - 1)
    lines += [
        "",
        f"Item 9's target: `holds` (or `holds in a window` where the regime starts late) in "
        f"{s['n_hold']} of {s['n_runs']} runs, two thirds needed: **{_yes(s['holds_met'])}**"
        + (
            f" ({s['n_windows_in_regime']} more hold only in a window of a stream that is in "
            "regime from its first record: not counted)"
            if s["n_windows_in_regime"]
            else ""
        )
        + "; the forecast beats both "
        f"baselines at {s['won']} of {s['origins']} origins, more than half needed: "
        f"**{_yes(s['forecast_met'])}**; "
        + (
            "these results do not say where each run's regime starts."
            if s["forecast_met_in_regime"] is None
            else f"at {s['won_in_regime']} of the {s['origins_in_regime']} origins inside the "
            "regime (cut at or after the first record from which every assumption holds): "
            f"**{_yes(s['forecast_met_in_regime'])}**."
        ),
        "",
    ]
    lines += render_why(result)
    lines += [
        "Per run (the head of the reason; windows as since-until: verdict):",
        "",
    ]
    run_rows = []
    for r in result["runs"]:
        wins = "".join("+" if o["win"] else "-" for o in r["forecast"]["origins"])
        wins_text = f"{wins or 'none'} ({r['forecast']['verdict']})"
        windows = "; ".join(f"{a:g}-{b:g}: {v}" for a, b, v in r["windows"]) or "none"
        reason = r["reason"].replace("|", "/").replace("\n", " ")
        records = f"{r['n_records']} ({r['first_step']:g}-{r['last_step']:g})"
        run_rows.append(
            [
                f"`{r['setting']}`",
                str(r["seed"]),
                records,
                r["verdict"],
                reason,
                windows,
                wins_text,
            ]
        )
    lines += _table(
        [
            "setting",
            "seed",
            "records (steps)",
            "verdict",
            "reason (head)",
            "windows",
            "origins won (forecast)",
        ],
        run_rows,
        numeric=0,
    )
    lines.append("")
    return lines


def load_results(folder: Path = RESULTS) -> list[dict[str, Any]]:
    """Every stored results file, in the order of :data:`SETTINGS` (others after, by name)."""
    found = {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}
    order = [t for t in SETTINGS if t in found] + sorted(set(found) - set(SETTINGS))
    return [found[t] for t in order]


def render(results: list[dict[str, Any]]) -> str:
    """docs/real-runs.md, whole, from the stored results."""
    lines = [
        "# Small real runs inside each theory's regime",
        "",
        "<!-- generated by benchmarks/real_runs.py --render; do not edit by hand -->",
        "",
        "Issue 28, item 9: small real trainings inside each theory's regime should get "
        "`holds` (or `holds in a window` where the regime starts late) at least two times in "
        "three, and their forecasts "
        "should beat both baselines (the last value and a power law in time) at most "
        "forecast origins. Each run below was trained with `ncdynamics.training.train` and "
        "confronted by the library calls behind `ncdyn compare` and `ncdyn forecast`; an "
        "origin counts as won when the theory beats both baselines on every observable over "
        "the whole post-cut trajectory and its fit there is not degenerate "
        "(`ncdynamics.experiments.forecast.origin_miss`). Origins are counted twice: all of "
        "them, and those inside the regime, cut at or after the first record from which every "
        "assumption of the theory holds over the rest of the stream (the whole stream's first "
        "record when it is inside the regime as a whole, else where "
        "`ncdynamics.experiments.windows.regime_start` puts the regime's start); a stream out "
        "of regime as a whole is forecast only inside its window from the regime's start "
        "(else its longest window in the regime). "
        "Under each theory's counts, the runs that do not "
        "hold are grouped by the family of the engine's reason (a run out of regime as a "
        "whole by the reason of its window from the regime's start), with the range of the "
        "number that reason names, and the origins by why they were not won. Regenerate with "
        "`nice python benchmarks/real_runs.py --theories <name>` (then `--render`).",
        "",
    ]
    missing = [t for t in SETTINGS if t not in {r["theory"] for r in results}]
    for result in results:
        lines += render_theory(result)
    if missing:
        lines += [
            "## Not run",
            "",
            "No stored results for: " + ", ".join(f"`{t}`" for t in missing) + ".",
            "",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--theories", nargs="+", choices=sorted(SETTINGS), default=None)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--render", action="store_true", help="only regenerate the page")
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--docs", type=Path, default=DOCS)
    args = parser.parse_args(argv)
    if not (args.render or args.check):
        args.results.mkdir(parents=True, exist_ok=True)
        for theory in args.theories or list(SETTINGS):
            result = run_theory(theory, workers=args.workers)
            path = args.results / f"{theory}.json"
            path.write_text(json.dumps(result, indent=1) + "\n")
            print(f"wrote {path} ({result['seconds']:.0f} s)", file=sys.stderr)
    page = render(load_results(args.results))
    if args.check:
        current = args.docs.read_text() if args.docs.exists() else ""
        if current != page:
            print(f"{args.docs} is stale; run {Path(__file__).name} --render", file=sys.stderr)
            return 1
        return 0
    args.docs.write_text(page)
    print(f"wrote {args.docs}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
