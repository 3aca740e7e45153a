"""Publish a run of the regime atlas in docs/atlas.md (nothing in the tables is typed by hand).

Two regions of ``docs/atlas.md`` are generated:

``<!-- atlas:plans -->`` ... ``<!-- /atlas:plans -->``
    the plans of the presets, from :data:`ncdynamics.experiments.atlas.PLANS`;
``<!-- atlas:table -->`` ... ``<!-- /atlas -->``
    the published atlas, from the newest results folder under ``benchmarks/results/atlas/``:
    which part of the grid it covers, per theory where it holds, fails, is not told apart
    from a generic curve, where the data cannot decide, where it is out of regime or not
    recorded, the boundaries the papers predict against the measured verdicts along each
    block's axis, and the dependence checks.

Usage::

    python benchmarks/atlas_table.py --atlas runs/atlas-cpu   # copy its tables, then render
    python benchmarks/atlas_table.py --render [--check]        # from the committed results

``--atlas DIR`` copies ``atlas.json``, ``runs.csv``, ``cells.csv`` and ``dependence.csv`` of an
atlas directory into ``benchmarks/results/atlas/<preset>-<date>/``, and writes there
``probes.csv``: the forced fits past each declared boundary (:func:`probe_boundaries`; they
are cached in the runs, so a second call fits nothing); ``--check`` changes nothing and exits
1 when the docs differ from what the results give.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pandas as pd

HERE = Path(__file__).parent
DOCS = HERE.parent / "docs" / "atlas.md"
RESULTS = HERE / "results" / "atlas"
_FILES = ("atlas.json", "runs.csv", "cells.csv", "dependence.csv")

_PLANS = re.compile(r"(<!-- atlas:plans -->\n)(?P<body>.*?)(<!-- /atlas:plans -->)", re.S)
_TABLE = re.compile(r"(<!-- atlas:table -->\n)(?P<body>.*?)(<!-- /atlas -->)", re.S)

#: How the published atlas groups the verdicts (as the atlas page does).
GROUPS: dict[str, tuple[str, ...]] = {
    "holds": ("holds",),
    # a window: where the regime starts late (the theory judged inside it), or the theory
    # describing a part of a stream it should describe whole; the cell's reason says which
    "holds in a window": ("holds in a window",),
    "fails": ("fails",),
    "not distinguished from a generic curve": ("not distinguished",),
    "the data cannot decide": ("degenerate", "error"),
    "out of regime": ("out of regime",),
    "records missing": ("missing",),
}

#: The boundaries the papers predict: (theory, block, what the paper says, rule). A rule is
#: ``("never", where)``: the theory should hold in no cell of the block matching ``where``; or
#: ``("falls", axis, where)``: its holds share should be lower at the largest value of ``axis``
#: than at the best other value, among the cells matching ``where``.
BOUNDARIES: tuple[tuple[str, str, str, tuple[Any, ...]], ...] = (
    (
        "alignment",
        "init",
        "the two-point theory breaks down at very large initial scale",
        ("falls", "init_scale", {"loss": ("mse",)}),
    ),
    (
        "alignment",
        "adam",
        "with Adam the theory fits poorly (Fig. 15, App. C.5)",
        ("never", {"loss": ("mse",)}),
    ),
    (
        "alignment",
        "optimiser",
        "plain gradient descent (eq. (3)): momentum is outside",
        ("never", {"loss": ("mse",), "optimizer": ("momentum",)}),
    ),
    (
        "hadamard",
        "classes",
        "exact only for K a power of two (Sec. 3)",
        ("never", {"n_classes": (3, 5, 6, 7, 9, 10)}),
    ),
    (
        "hadamard",
        "ufm-classes",
        "exact only for K a power of two (Sec. 3)",
        ("never", {"n_classes": (3, 5, 6, 7, 9, 10)}),
    ),
    (
        "hadamard",
        "optimiser",
        "full-batch gradient descent without momentum (eq. (9))",
        ("never", {"optimizer": ("sgd", "momentum")}),
    ),
    (
        "hadamard",
        "ufm",
        "the reduced ODE (9) is derived for cross-entropy (eq. (1))",
        ("never", {"loss": ("mse",)}),
    ),
    (
        "hadamard",
        "ufm-optimiser",
        "full-batch gradient descent without momentum (eq. (9))",
        ("never", {"loss": ("cross-entropy",), "optimizer": ("sgd", "momentum")}),
    ),
    (
        "hadamard",
        "ufm-adam",
        "gradient descent on the loss (1): an adaptive step is outside",
        ("never", {"loss": ("cross-entropy",)}),
    ),
    (
        "lesde",
        "lr",
        "the logit dynamics of softmax cross-entropy (App. B)",
        ("never", {"loss": ("mse",)}),
    ),
    (
        "ntk_collapse",
        "lr",
        "the flows are derived for the squared error (eqs. (19)-(44))",
        ("never", {"loss": ("cross-entropy",)}),
    ),
)

#: The near side of a boundary whose own block does not vary the setting the theory needs
#: (the optimiser blocks hold no gradient-descent cell): (theory, block) -> (the block whose
#: cells are the near side, which of them). The cells differ from the far side's only in that
#: setting (and the learning rates an optimiser is run at).
NEAR: dict[tuple[str, str], tuple[str, dict[str, tuple[Any, ...]]]] = {
    ("alignment", "adam"): ("lr", {"loss": ("mse",)}),
    ("hadamard", "ufm-optimiser"): ("ufm", {"loss": ("cross-entropy",)}),
    ("hadamard", "ufm-adam"): ("ufm", {"loss": ("cross-entropy",)}),
}

#: Verdicts of a forced fit (a probe past the declared regime) that count as holding.
_HOLDS = ("holds", "holds in a window")


def _held(r: pd.Series) -> float:
    return float(r.get("share.holds", 0.0)) + float(r.get("share.holds in a window", 0.0))


def _located(cells: pd.DataFrame, near: pd.DataFrame | None = None) -> bool:
    """Whether the theory holds in some cell of a block, or of its near side (:data:`NEAR`):
    only then can a boundary be located."""
    return any(
        c is not None and not c.empty and bool((c.apply(_held, axis=1) > 0).any())
        for c in (cells, near)
    )


def _match(cells: pd.DataFrame, where: dict[str, tuple[Any, ...]]) -> pd.DataFrame:
    keep = pd.Series(True, index=cells.index)
    for k, values in where.items():
        keep &= cells[k].astype(str).isin([str(v) for v in values])
    return cells[keep]


def _out_of_regime(r: pd.Series) -> bool:
    return float(r.get("share.out of regime", 0.0)) >= 1.0


def judge_boundary(
    cells: pd.DataFrame,
    rule: tuple[Any, ...],
    *,
    near: pd.DataFrame | None = None,
    probes: pd.DataFrame | None = None,
) -> str:
    """Whether the measured verdicts of a block's cells agree with a paper's boundary (see
    :data:`BOUNDARIES`), in words with the numbers.

    The judgment can only be ``agrees`` where it could have failed: the theory must hold in
    some cell of the block, or of its ``near`` side (:data:`NEAR`), else the boundary is ``not
    located``. Cells beyond a boundary that the theory's declared regime already draws are
    ``out of regime``, unfitted: they confirm nothing measured (``by declaration only``)
    unless ``probes`` holds the forced fits of their runs (one row per run and stream, with
    the ``forced_verdict`` of :func:`ncdynamics.experiments.atlas.probe_run`), which then
    decide: ``agrees`` (measured past the declaration) when none holds, ``does not agree``
    when some does."""
    if not _located(cells, near):
        return "not located: the theory holds in no cell of this block, on either side"
    if rule[0] == "never":
        return _judge_never(cells, rule[1], probes)
    _, axis, where = rule
    sub = _match(cells, where)
    values = pd.to_numeric(sub[axis], errors="coerce")
    if sub.empty or values.nunique() < 2:
        return "not enough cells along the axis"
    top = values.max()
    at_top = float(sub[values == top].apply(_held, axis=1).max())
    others = sub[values != top]
    best = others.apply(_held, axis=1)
    if float(best.max()) <= 0:
        return f"not located: the theory holds in no cell below {axis}={_fmt(float(top))}"
    best_value = others.loc[best.idxmax(), axis]
    word = "agrees" if at_top < float(best.max()) else "does not agree"
    return (
        f"{word}: holds share {at_top:.0%} at {axis}={_fmt(float(top))}, "
        f"{float(best.max()):.0%} at {axis}={_fmt(float(best_value))}"
    )


def _judge_never(
    cells: pd.DataFrame, where: dict[str, tuple[Any, ...]], probes: pd.DataFrame | None
) -> str:
    sub = _match(cells, where)
    if sub.empty:
        return "no cell of the block is on the far side"
    held = sub[sub.apply(_held, axis=1) > 0]
    if not held.empty:
        return f"does not agree: holds in {len(held)} of the {len(sub)} cells beyond it"
    if not sub.apply(_out_of_regime, axis=1).all():
        return f"agrees: holds in none of the {len(sub)} cells beyond it"
    beyond = _match(probes, where) if probes is not None and not probes.empty else None
    if beyond is None or beyond.empty:
        return (
            f"by declaration only: the {len(sub)} cells beyond it are out of the theory's "
            "declared regime, so no fit was tried there"
        )
    forced = beyond["forced_verdict"].fillna(beyond["verdict"]).astype(str)
    if (forced == "out of regime").all():  # the fit itself refused (NotApplicable)
        return (
            f"by construction: fitted anyway, the theory's fit refuses all {len(forced)} runs "
            f"beyond it ({_first_clause(str(beyond['reason'].iloc[0]), 90)})"
        )
    counts = ", ".join(f"{v} {n}" for v, n in forced.value_counts().sort_index().items())
    n_held = int(forced.isin(_HOLDS).sum())
    if n_held:
        return (
            f"does not agree, measured past its declared regime: fitted anyway, the theory "
            f"holds on {n_held} of the {len(forced)} runs beyond it ({counts})"
        )
    return (
        f"agrees, measured past its declared regime: fitted anyway, the theory holds on none "
        f"of the {len(forced)} runs beyond it ({counts})"
    )


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        if math.isnan(x):
            return ""
        return f"{x:.2g}"
    return str(x)


def render_plans() -> str:
    """The presets' plans as a Markdown table."""
    from ncdynamics.experiments.atlas import PLANS

    lines = [
        "| preset | cell preset | seeds | fixed | blocks (axes: values) | runs |",
        "|---|---|---|---|---|---|",
    ]
    for name, plan in PLANS.items():
        blocks = []
        runs = 0
        for b in plan.blocks:
            axes = "; ".join(f"{a}: {', '.join(map(str, v))}" for a, v in b.axes.items())
            fixed = f" ({', '.join(f'{k}={v}' for k, v in b.fixed.items())})" if b.fixed else ""
            blocks.append(f"**{b.name}**{fixed}: {axes}")
            runs += math.prod(len(v) for v in b.axes.values()) * plan.seeds
        fixed = ", ".join(f"{k}={v}" for k, v in plan.fixed.items()) or "-"
        lines.append(
            f"| `{name}` | `{plan.preset}` | {plan.seeds} | {fixed} | {'<br>'.join(blocks)} | "
            f"{runs} |"
        )
    return "\n".join(lines) + "\n"


def _load(folder: Path) -> dict[str, Any]:
    meta = json.loads((folder / "atlas.json").read_text(encoding="utf-8"))
    axes = list(dict.fromkeys(a for b in meta["plan"]["blocks"] for a in b["axes"]))
    out: dict[str, Any] = {"meta": meta, "axes": axes, "folder": folder}
    for name in ("runs", "cells", "dependence"):
        f = folder / f"{name}.csv"
        out[name] = pd.read_csv(f) if f.stat().st_size > 1 else pd.DataFrame()
    probes = folder / "probes.csv"  # absent in results published before the probes
    out["probes"] = pd.read_csv(probes) if probes.is_file() and probes.stat().st_size > 1 else None
    return out


def _base_point(meta: dict[str, Any]) -> dict[str, Any]:
    from ncdynamics.experiments._registry import get
    from ncdynamics.theories.experiment import config_to_dict

    plan = meta["plan"]
    return config_to_dict(get(plan["experiment"]).make_config(plan["preset"], dict(plan["fixed"])))


def _label(row: pd.Series, axes: list[str], base: dict[str, Any]) -> str:
    parts = []
    for a in axes:
        v = row[a]
        if a == "loss" or str(v) != str(base.get(a)):
            parts.append(f"{a}={_fmt(v) if isinstance(v, float) else v}")
    return ", ".join(parts)


def _params(row: pd.Series) -> str:
    from ncdynamics.experiments.atlas import KEY_PARAMS

    out = []
    for p in KEY_PARAMS.get(str(row["theory"]), ()):
        v = row.get(p)
        if isinstance(v, float) and math.isfinite(v):
            text = f"{p} {_fmt(v)} [{_fmt(row.get(f'{p}.low'))}, {_fmt(row.get(f'{p}.high'))}]"
            e = row.get(f"{p}.expected")
            if isinstance(e, float) and math.isfinite(e):
                text += f", predicted {_fmt(e)}"
            out.append(text)
    return "; ".join(out)


def _coverage(found: dict[str, Any]) -> str:
    meta, runs = found["meta"], found["runs"]
    plan = meta["plan"]
    lines = []
    total_planned = total_done = 0
    for b in plan["blocks"]:
        planned = math.prod(len(v) for v in b["axes"].values()) * plan["seeds"]
        sub = runs[(runs["block"] == b["name"]) & (runs["status"] == "completed")]
        done = sub["run"].nunique() if not sub.empty else 0
        total_planned += planned
        total_done += done
        lines.append(f"{b['name']} {done}/{planned}")
    return (
        f"Generated from the `{plan['preset']}` plan: {total_done} of {total_planned} planned runs "
        f"completed and confronted ({'; '.join(lines)} by block), {plan['seeds']} seeds per "
        f"cell, engine key `{meta.get('engine', '?')}`.\n"
    )


_NOT_FITTED = " (not fitted; --force fits it anyway)"


def _first_clause(reason: str, limit: int = 110) -> str:
    """A reason's first clause (up to the first ``; `` outside parentheses), without the
    note that the stream was not fitted."""
    text = reason.replace(_NOT_FITTED, "")
    depth = 0
    for i, c in enumerate(text):
        depth += (c == "(") - (c == ")")
        if depth == 0 and text.startswith("; ", i):
            text = text[:i]
            break
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _why(hit: pd.DataFrame, group: str) -> str:
    """Out of regime: the assumptions the cells are outside, with counts; missing: what the
    runs say (or what the theory needs)."""
    if group == "out of regime" and "outside" in hit.columns:
        keys = hit["outside"].fillna("").astype(str).replace("", "unnamed")
        counts = keys.value_counts()
        return "outside " + "; ".join(f"{k} ({n} cells)" for k, n in counts.items())
    notes = (
        hit["reason"]
        .astype(str)
        .map(
            lambda r: r.split("the run says why not: ")[-1] if "why not" in r else _first_clause(r)
        )
    )
    counts = notes.value_counts()
    return "; ".join(f"{k} ({n} cells)" for k, n in counts.items())


def render(found: dict[str, Any]) -> str:
    """The published atlas (module docstring) as Markdown."""
    meta, axes = found["meta"], found["axes"]
    cells = found["cells"]
    base = _base_point(meta)
    out = [_coverage(found), ""]
    out.append("### Where each theory holds\n")
    out.append("| theory | " + " | ".join(GROUPS) + " |")
    out.append("|---" * (len(GROUPS) + 1) + "|")
    for theory, sub in cells.groupby("theory", sort=True):
        counts = [str(int(sub["verdict"].isin(v).sum())) for v in GROUPS.values()]
        out.append(f"| {theory} | " + " | ".join(counts) + " |")
    out.append("\nCells counted by their most common verdict over the seeds.\n")
    for theory, sub in cells.groupby("theory", sort=True):
        out.append(f"#### {theory}\n")
        for group, verdicts in GROUPS.items():
            hit = sub[sub["verdict"].isin(verdicts)]
            if hit.empty:
                continue
            if group in ("out of regime", "records missing"):
                out.append(f"- **{group}** in {len(hit)} cells: {_why(hit, group)}.")
                continue
            items = []
            for _, r in hit.iterrows():
                share = sum(float(r.get(f"share.{v}", 0.0)) for v in verdicts)
                text = f"{_label(r, axes, base)} ({share:.0%} of {int(r['n_runs'])})"
                params = _params(r)
                text = f"{text}: {params}" if params else text
                items.append(f"{text} ({_first_clause(str(r['reason']))})")
            out.append(f"- **{group}** in {len(hit)} cells: " + "; ".join(items) + ".")
        out.append("")
    out.append("### The boundaries the papers predict, against the measured verdicts\n")
    out.append("| theory | block | the paper | measured (holds share, verdict) | the atlas |")
    out.append("|---|---|---|---|---|")
    runs = found["runs"]
    for theory, block, paper, rule in BOUNDARIES:
        agg = _block_cells(runs, theory, block, axes)
        if agg.empty:
            out.append(f"| {theory} | {block} | {paper} | no completed run | |")
            continue
        names = next(b["axes"] for b in meta["plan"]["blocks"] if b["name"] == block)
        parts = []
        for _, r in agg.iterrows():
            where = ", ".join(
                f"{a}={_fmt(r[a]) if isinstance(r[a], float) else r[a]}" for a in names
            )
            parts.append(f"{where}: {_held(r):.0%}, {r['verdict']}")
        near = _near_cells(runs, theory, block, axes)
        if near is not None:
            parts.append(
                f"near side (block {NEAR[theory, block][0]}): holds in "
                f"{int((near.apply(_held, axis=1) > 0).sum())} of {len(near)} cells"
            )
        probes = _probes_of(found.get("probes"), theory, block)
        verdict = judge_boundary(agg, rule, near=near, probes=probes)
        out.append(f"| {theory} | {block} | {paper} | {'<br>'.join(parts)} | {verdict} |")
    out.append("")
    out.append("### Dependence on the learning rate, against the prediction\n")
    deps = found["dependence"]
    if deps.empty:
        out.append(
            "No predicted dependence could be fitted: no theory's fit described the records "
            "(holds, holds in a window, not distinguished) at two learning rates of one line.\n"
        )
    else:
        out.append(
            "| theory | parameter | line | predicted exponent | fitted (95%) | verdict | runs |"
        )
        out.append("|---|---|---|---|---|---|---|")
        for _, r in deps.iterrows():
            out.append(
                f"| {r['theory']} | {r['param']} | {r['line']} | {_fmt(float(r['predicted']))} | "
                f"{_interval(r)} | {r['verdict']} | "
                f"{int(r['n_runs'])} at {int(r['n_settings'])} rates |"
            )
        out.append("")
    return "\n".join(out)


def _block_cells(runs: pd.DataFrame, theory: str, block: str, axes: list[str]) -> pd.DataFrame:
    """The cells of one block for one theory (:func:`~ncdynamics.experiments.atlas.
    aggregate_cells`); empty when the block has no completed run."""
    from ncdynamics.experiments.atlas import aggregate_cells

    sub = runs[(runs["block"] == block) & (runs["theory"] == theory)]
    if sub.empty:
        return pd.DataFrame()
    sub = sub.copy()
    sub.attrs["axes"] = axes
    return aggregate_cells(sub)


def _near_cells(
    runs: pd.DataFrame, theory: str, block: str, axes: list[str]
) -> pd.DataFrame | None:
    """The near-side cells of a boundary from another block (:data:`NEAR`), or ``None``."""
    if (theory, block) not in NEAR:
        return None
    other, where = NEAR[theory, block]
    cells = _block_cells(runs, theory, other, axes)
    return _match(cells, where) if not cells.empty else cells


def _probes_of(probes: pd.DataFrame | None, theory: str, block: str) -> pd.DataFrame | None:
    if probes is None or probes.empty:
        return None
    return probes[(probes["theory"] == theory) & (probes["block"] == block)]


def _to_probe(runs: pd.DataFrame, axes: list[str]) -> list[tuple[str, str, str]]:
    """``(theory, block, run)`` of the runs whose forced fits decide a boundary: the runs of
    the far-side cells of a ``never`` boundary that are all out of the theory's declared
    regime, where the theory holds on the near side (else nothing could be located)."""
    out = []
    for theory, block, _, rule in BOUNDARIES:
        cells = _block_cells(runs, theory, block, axes)
        if rule[0] != "never" or cells.empty:
            continue
        near = _near_cells(runs, theory, block, axes)
        far = _match(cells, rule[1])
        if not _located(cells, near) or far.empty or not far.apply(_out_of_regime, axis=1).all():
            continue
        sub = _match(runs[(runs["block"] == block) & (runs["theory"] == theory)], rule[1])
        out += [(theory, block, str(r)) for r in sorted(set(sub["run"]))]
    return out


def probe_boundaries(atlas_dir: Path, runs: pd.DataFrame, axes: list[str]) -> pd.DataFrame:
    """The forced fits (:func:`ncdynamics.experiments.atlas.probe_run`, cached in each run)
    of the runs :func:`_to_probe` names: one row per run and stream, with the run's settings,
    its ``verdict`` (``out of regime``), the ``forced_verdict`` and the reason's head."""
    from ncdynamics.experiments.atlas import probe_run

    todo = _to_probe(runs, axes)
    rows = []
    for i, (theory, block, run) in enumerate(todo, 1):
        print(f"probe {i}/{len(todo)}: {theory} on {block}/{run}", file=sys.stderr, flush=True)
        settings = runs[(runs["block"] == block) & (runs["run"] == run)].iloc[0]
        for r in probe_run(atlas_dir / "sweeps" / block / run, theory):
            rows.append(
                {
                    "theory": theory,
                    "block": block,
                    "run": run,
                    **{a: settings[a] for a in axes if a in settings},
                    "seed": settings.get("seed"),
                    "stream": r.get("stream", ""),
                    "verdict": r.get("verdict", ""),
                    "forced_verdict": r.get("forced_verdict", ""),
                    "reason": _first_clause(str(r.get("reason", "")), 300),
                }
            )
    return pd.DataFrame(rows)


def _interval(r: pd.Series) -> str:
    if not math.isfinite(float(r["slope"])):
        return "-"
    return f"{_fmt(float(r['slope']))} [{_fmt(float(r['low']))}, {_fmt(float(r['high']))}]"


def rewrite(text: str, found: dict[str, Any] | None) -> str:
    """``text`` with both regions regenerated (the table region only when ``found``)."""
    if not _PLANS.search(text) or not _TABLE.search(text):
        raise ValueError(f"{DOCS} must hold the atlas:plans and atlas:table markers.")
    text = _PLANS.sub(lambda m: m.group(1) + render_plans() + m.group(3), text)
    if found is not None:
        text = _TABLE.sub(lambda m: m.group(1) + render(found) + m.group(3), text)
    return text


def newest_results(folder: Path = RESULTS) -> Path:
    """The newest results folder (by name: ``<preset>-<date>``)."""
    found = sorted(p for p in folder.iterdir() if (p / "atlas.json").is_file())
    if not found:
        raise FileNotFoundError(f"no atlas results under {folder}; run with --atlas DIR first.")
    return found[-1]


def copy_results(atlas_dir: Path) -> Path:
    """Copy an atlas directory's tables into ``benchmarks/results/atlas/<preset>-<date>``."""
    meta = json.loads((atlas_dir / "atlas.json").read_text(encoding="utf-8"))
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d")
    dest = RESULTS / f"{meta['plan']['preset']}-{stamp}"
    dest.mkdir(parents=True, exist_ok=True)
    for name in _FILES:
        shutil.copyfile(atlas_dir / name, dest / name)
    found = _load(dest)
    probes = probe_boundaries(atlas_dir, found["runs"], found["axes"])
    probes.to_csv(dest / "probes.csv", index=False)
    return dest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--atlas", type=Path, help="an atlas directory to publish")
    parser.add_argument("--render", action="store_true", help="from the committed results")
    parser.add_argument("--check", action="store_true", help="exit 1 when the docs are stale")
    args = parser.parse_args()
    folder = copy_results(args.atlas) if args.atlas else newest_results()
    text = DOCS.read_text(encoding="utf-8")
    new = rewrite(text, _load(folder))
    if args.check:
        if new != text:
            print(f"{DOCS} is stale: run `python benchmarks/atlas_table.py --render`")
            return 1
        return 0
    DOCS.write_text(new, encoding="utf-8")
    print(f"wrote {DOCS} from {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
