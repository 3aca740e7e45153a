"""Display names, axis labels, units and preferred scales of recorded metrics, in one table.

Every report (run, comparison, sweep, index) names a metric through this module, so a key
such as ``mse/nc/nc1`` reads as "NC1: within-class variability" everywhere, with the same
y-axis label and scale.

API (for other report modules)
------------------------------
``label(key) -> MetricLabel``
    The label of a metric key *without* its series prefix (``"nc/nc1"``, ``"pair_a"``,
    ``"ntk_alignment_logits"``). Unknown keys get a readable fallback built from the key
    (``MetricLabel.known`` is then False).
``split_names(names) -> dict[name, (prefix, key)]``
    Splits full metric names into a series prefix (a Recorder ``prefix=``: ``"mse"``,
    ``"adam"``; ``""`` for none) and the key. Any prefix is found, not a fixed list: the
    first ``/``-separated part of a name is a prefix when it is not a metric family itself
    (``nc``, ``train``, ...) and at least one name carries a known key after it.
``display(name, names=None) -> str``
    One full name as text: ``"NC1: within-class variability (mse)"``.

``MetricLabel`` fields: ``title`` (panel title), ``short`` (table column), ``axis``
(y-axis label, unit included), ``unit`` (``""`` when dimensionless), ``scale`` (``"log"``,
``"linear"`` or ``"auto"``: log when the values are positive and span more than 30x),
``family`` (the figure a metric is drawn in) and ``known``.

Definitions of the collapse metrics: docs/metrics.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

__all__ = ["MetricLabel", "FAMILIES", "display", "label", "sort_key", "split_names"]

Scale = Literal["log", "linear", "auto"]


@dataclass(frozen=True)
class MetricLabel:
    """How one metric is shown.

    Attributes
    ----------
    title : str
        Panel title and long name, e.g. ``"NC1: within-class variability"``.
    short : str
        Compact name for table columns, e.g. ``"NC1"``.
    axis : str
        y-axis label with its unit, e.g. ``"Tr(Σ_W Σ_B⁺) / C"``.
    unit : str
        ``""`` when dimensionless.
    scale : {"log", "linear", "auto"}
        Preferred y scale; ``"auto"`` is log when the values are positive and span > 30x.
    family : str
        The figure the metric belongs to (a key of :data:`FAMILIES`).
    known : bool
        False for the fallback of a key this table does not list.
    """

    title: str
    short: str
    axis: str
    unit: str = ""
    scale: Scale = "auto"
    family: str = "other"
    known: bool = True


#: figure name -> figure title, in the order reports show them
FAMILIES: dict[str, str] = {
    "nc": "Neural collapse (NC1-NC4)",
    "performance": "Loss and accuracy",
    "pair": "Two-point representation alignment",
    "ntk": "Neural tangent kernel",
    "elasticity": "Local elasticity",
    "similarity": "Representation similarity",
    "schedule": "Schedule",
    "other": "Other metrics",
}

_NC: dict[str, MetricLabel] = {
    "nc1": MetricLabel("NC1: within-class variability", "NC1", "Tr(Σ_W Σ_B⁺) / C", "", "log"),
    "nc1_std": MetricLabel(
        "NC1 (std): within-class spread", "NC1 std", "mean within-class std", "", "auto"
    ),
    "cdnv": MetricLabel(
        "CDNV: class-distance normalised variance",
        "CDNV",
        "(V_c + V_c′) / 2‖μ_c − μ_c′‖²",
        "",
        "log",
    ),
    "nc2_equinorm": MetricLabel(
        "NC2: equinorm (class-mean norms)", "NC2 equinorm", "std / mean of ‖μ_c − μ_G‖", "", "auto"
    ),
    "nc2_equiangular": MetricLabel(
        "NC2: equiangularity", "NC2 equiangular", "std of cos(μ_c, μ_c′)", "", "auto"
    ),
    "nc2_maxangle": MetricLabel(
        "NC2: distance to maximal angle", "NC2 max-angle", "mean |cos + 1/(C−1)|", "", "auto"
    ),
    "nc2_etf": MetricLabel(
        "NC2: distance to the simplex ETF", "NC2 (ETF)", "‖G/‖G‖ − Φ‖_F", "", "auto"
    ),
    "nc3": MetricLabel("NC3: classifier-mean alignment", "NC3", "‖M/‖M‖ − Wᵀ/‖W‖‖_F", "", "auto"),
    "nc3_papyan": MetricLabel(
        "NC3 (squared, Papyan et al.)", "NC3²", "‖M/‖M‖ − Wᵀ/‖W‖‖²_F", "", "auto"
    ),
    "nc4": MetricLabel(
        "NC4: nearest-class-mean disagreement",
        "NC4",
        "fraction of samples",
        "fraction",
        "linear",
    ),
    "within_trace": MetricLabel("Within-class scatter Tr Σ_W", "Tr Σ_W", "Tr Σ_W", "", "auto"),
    "between_trace": MetricLabel("Between-class scatter Tr Σ_B", "Tr Σ_B", "Tr Σ_B", "", "auto"),
}

_SPLITS = {"train": "Training", "test": "Test", "probe": "Probe-set", "val": "Validation"}

_FLAT: dict[str, MetricLabel] = {
    "epochs": MetricLabel("Epochs", "epochs", "epochs", "", "linear", "schedule"),
    "lr": MetricLabel("Learning rate", "LR", "learning rate", "", "auto", "schedule"),
    "epoch": MetricLabel("Epoch", "epoch", "epoch", "", "linear", "schedule"),
    "pair_a": MetricLabel(
        "Pair: representation distance a", "a", "a = ‖h₂ − h₁‖²", "", "auto", "pair"
    ),
    "pair_b": MetricLabel("Pair: output distance b", "b", "b = ‖ŷ₂ − ŷ₁‖²", "", "auto", "pair"),
    "pair_w": MetricLabel(
        "Pair: output-target misalignment w", "w", "w = b − ⟨Δŷ, Δy⟩", "", "auto", "pair"
    ),
    "pair_loss": MetricLabel("Two-point loss", "pair loss", "loss on the pair", "", "auto", "pair"),
    "pair_X": MetricLabel("Input distance X (squared)", "X", "‖x₁ − x₂‖²", "", "linear", "pair"),
    "pair_Y": MetricLabel("Target distance Y (squared)", "Y", "‖y₁ − y₂‖²", "", "linear", "pair"),
    "elasticity/same": MetricLabel(
        "Elasticity: same-class impact", "same class", "mean |Δ output|", "", "auto", "elasticity"
    ),
    "elasticity/other": MetricLabel(
        "Elasticity: other-class impact",
        "other class",
        "mean |Δ output|",
        "",
        "auto",
        "elasticity",
    ),
    "elasticity/ratio": MetricLabel(
        "Elasticity ratio (same / other)", "ratio", "same / other", "", "auto", "elasticity"
    ),
    "invariant_norm": MetricLabel(
        "NTK invariant: norm", "invariant norm", "relative norm", "", "auto", "ntk"
    ),
    "invariant_alignment": MetricLabel(
        "NTK invariant: alignment", "invariant alignment", "alignment", "", "linear", "ntk"
    ),
}

_NTK_WHAT = {"logits": "logit kernel K_f", "features": "feature kernel K_h"}
_BLOCK = {"d": "same sample", "c": "same class", "n": "different class"}
_SYM = {"gamma": ("γ", "logit kernel"), "kappa": ("κ", "feature kernel")}

# pattern rules: (regex over the key, builder of the label from the match)
_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^ntk_alignment_(logits|features)(_centered)?$"), "ntk_alignment"),
    (re.compile(r"^ntk_(gamma|kappa)_([dcn])$"), "ntk_block"),
    (re.compile(r"^ntk_block_residual_(logits|features)$"), "ntk_residual"),
    (re.compile(r"^(train|test|probe|val)/(loss|accuracy|acc|error)$"), "split"),
    (re.compile(r"^(?:cka|similarity)/(.+)$"), "similarity"),
]

#: first name parts that are metric families, never a series prefix
_FAMILY_HEADS = frozenset(
    {"nc", "train", "test", "probe", "val", "elasticity", "cka", "similarity"}
)


def _from_rule(kind: str, m: re.Match[str]) -> MetricLabel:
    if kind == "ntk_alignment":
        what, centred = _NTK_WHAT[m.group(1)], bool(m.group(2))
        title = f"Kernel-label alignment of the {what}" + (" (centred)" if centred else "")
        short = f"A({'K_f' if m.group(1) == 'logits' else 'K_h'})" + (" c" if centred else "")
        return MetricLabel(title, short, "alignment", "", "linear", "ntk")
    if kind == "ntk_block":
        sym, kernel = _SYM[m.group(1)]
        return MetricLabel(
            f"NTK {kernel}: {_BLOCK[m.group(2)]} block {sym}_{m.group(2)}",
            f"{sym}_{m.group(2)}",
            f"{sym}_{m.group(2)}",
            "",
            "auto",
            "ntk",
        )
    if kind == "ntk_residual":
        return MetricLabel(
            f"Block-structure residual of the {_NTK_WHAT[m.group(1)]}",
            f"residual {m.group(1)}",
            "relative residual",
            "",
            "auto",
            "ntk",
        )
    if kind == "split":
        split, what = _SPLITS[m.group(1)], m.group(2)
        if what in ("accuracy", "acc"):
            return MetricLabel(
                f"{split} accuracy",
                f"{m.group(1)} acc.",
                "accuracy",
                "fraction",
                "linear",
                "performance",
            )
        if what == "error":
            return MetricLabel(
                f"{split} error", f"{m.group(1)} error", "error", "fraction", "auto", "performance"
            )
        return MetricLabel(f"{split} loss", f"{m.group(1)} loss", "loss", "", "auto", "performance")
    # similarity
    rest = m.group(1).replace("_", " ").replace("/", " · ")
    return MetricLabel(f"Similarity: {rest}", rest, "similarity", "", "linear", "similarity")


def _fallback(key: str) -> MetricLabel:
    """A readable label for a key the table does not list: ``"foo/bar_baz"`` becomes
    ``"bar baz (foo)"``."""
    head, _, tail = key.rpartition("/")
    words = tail.replace("_", " ").strip() or key
    title = f"{words} ({head.replace('/', ' · ')})" if head else words
    title = title[:1].upper() + title[1:]
    family = "ntk" if key.startswith("ntk_") else "other"
    return MetricLabel(title, words, words, "", "auto", family, known=False)


def label(key: str) -> MetricLabel:
    """The display label of metric ``key`` (a name without its series prefix).

    Examples
    --------
    >>> label("nc/nc1").title
    'NC1: within-class variability'
    >>> label("test/accuracy").short
    'test acc.'
    >>> label("my_metric").known
    False
    """
    if key.startswith("nc/") and key[3:] in _NC:
        base = _NC[key[3:]]
        return MetricLabel(base.title, base.short, base.axis, base.unit, base.scale, "nc")
    if key in _FLAT:
        return _FLAT[key]
    for pattern, kind in _RULES:
        m = pattern.match(key)
        if m:
            return _from_rule(kind, m)
    if key.startswith("nc/"):
        lab = _fallback(key)
        return MetricLabel(lab.title, lab.short, lab.axis, "", "auto", "nc", known=False)
    return _fallback(key)


_NC_ORDER = (
    "nc1", "nc1_std", "cdnv", "nc2_etf", "nc2_equinorm", "nc2_equiangular", "nc2_maxangle",
    "nc3", "nc3_papyan", "nc4", "within_trace", "between_trace",
)  # fmt: skip
_SPLIT_ORDER = ("train", "test", "val", "probe")


def sort_key(key: str) -> tuple[int, int, int, str]:
    """Order of metric keys in reports: by family (:data:`FAMILIES`), collapse metrics
    NC1 to NC4, losses before accuracies and train, test, validation, probe; else by key.

    >>> sorted(["nc/nc4", "test/accuracy", "nc/nc1", "train/loss"], key=sort_key)
    ['nc/nc1', 'nc/nc4', 'train/loss', 'test/accuracy']
    """
    family = list(FAMILIES).index(label(key).family)
    if key.startswith("nc/") and key[3:] in _NC_ORDER:
        return (family, 0, _NC_ORDER.index(key[3:]), key)
    head, _, what = key.partition("/")
    if head in _SPLIT_ORDER and what:
        return (family, 0 if what == "loss" else 1, _SPLIT_ORDER.index(head), key)
    return (family, 2, 0, key)


def _known(key: str) -> bool:
    return label(key).known


def split_names(names: Iterable[str]) -> dict[str, tuple[str, str]]:
    """Split full metric names into ``(series prefix, key)``; ``""`` when there is none.

    A first part ``P`` of ``P/rest`` is a series prefix when ``P`` is not a metric family
    (``nc``, ``train``, ``test``, ...) and some name ``P/rest`` has a known ``rest``. Every
    name starting with that ``P/`` is then split, known key or not.

    Examples
    --------
    >>> split_names(["adam/nc/nc1", "adam/custom", "nc/nc1", "loss/total"])["adam/custom"]
    ('adam', 'custom')
    >>> split_names(["loss/total"])["loss/total"]
    ('', 'loss/total')
    """
    names = [str(n) for n in names]
    prefixes = set()
    for n in names:
        head, sep, rest = n.partition("/")
        if sep and rest and head not in _FAMILY_HEADS and _known(rest):
            prefixes.add(head)
    out: dict[str, tuple[str, str]] = {}
    for n in names:
        head, sep, rest = n.partition("/")
        out[n] = (head, rest) if sep and rest and head in prefixes else ("", n)
    return out


def display(name: str, names: Iterable[str] | None = None) -> str:
    """``name`` as text: its label's title, with the series prefix in parentheses.

    ``names`` (all names of the run) decides what is a prefix; by default ``[name]``.

    >>> display("mse/nc/nc1")
    'NC1: within-class variability (mse)'
    """
    pool = list(names) if names is not None else [name]
    if name not in pool:
        pool.append(name)
    prefix, key = split_names(pool)[name]
    title = label(key).title
    return f"{title} ({prefix})" if prefix else title
