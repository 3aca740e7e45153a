"""The repository cites no document that lives outside it.

The planning documents the project was written from (per-paper implementation notes, a house
style guide, a design note and a performance note) are not part of the repository, so a
person who clones it cannot follow a citation of them. Every convention, correction and
derivation a reader needs is stated in the repository itself: in the paper it cites, in a
docstring, or in ``docs/`` (``docs/architecture.md``, ``docs/theories/<name>.md``, ...). This
test scans the sources, tests, docs and benchmarks for citations of those outside documents.

Python's import machinery also says "spec" (``importlib.util.find_spec``,
``spec_from_file_location``, a module's ``__spec__``) and so do the registry's
``ExperimentSpec`` objects; the patterns below match only prose that cites a document.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("src", "tests", "docs", "benchmarks", "README.md", "CONTRIBUTING.md")
SUFFIXES = {".py", ".md", ".json", ".toml", ".txt", ".cfg", ".yml", ".yaml"}

_SPEC_WORD = r"specs?(?:'s)?"
_SECTION = r"(?:§|\\u00a7)"  # claims-cpu.json stores the section sign escaped
_THEORY = r"(?:ntk_collapse|ntk collapse|NTK-collapse|lesde|LE-SDE|hadamard|alignment|truncation)"
PATTERNS = {
    # "spec §2.5", "spec O17", "spec E7", "spec T22", "spec ntk_collapse §4", "spec oracles"
    "a section, oracle or experiment of a spec": re.compile(
        rf"\b{_SPEC_WORD}\s+(?:{_SECTION}|[A-Z]{{0,2}}\d|{_THEORY}\b|oracles?\b|settings\b|setup\b)",
        re.IGNORECASE,
    ),
    # "the spec", "of the spec", "the LE-SDE spec", "the project's spec", "the spec's pilot"
    "a spec as a document": re.compile(
        rf"\b(?:the|this|of|project's|{_THEORY})\s+{_SPEC_WORD}(?![\w(])", re.IGNORECASE
    ),
    "a spec section number": re.compile(rf"{_SECTION}\s?\d[\d.]*\s+of\s+the\s+spec", re.IGNORECASE),
    "the style guide": re.compile(r"\bSTYLE(?:\.md\b|\s+[A-Z]\.\d)"),
    "the design note": re.compile(r"\bDESIGN\.md\b"),
    "the performance note": re.compile(r"\bPERF\.md\b"),
    "the planning notes": re.compile(r"\bplanning notes?\b", re.IGNORECASE),
    "the planning folder": re.compile(r"(?:\.\./|shared/)(?:specs|seeds)\b|\bseed 0\d\d\b"),
}


def _files() -> list[Path]:
    out: list[Path] = []
    for name in SCANNED:
        path = ROOT / name
        if path.is_file():
            out.append(path)
        elif path.is_dir():
            out.extend(
                p
                for p in sorted(path.rglob("*"))
                if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts
            )
    return [p for p in out if p != Path(__file__).resolve()]


def _hits(paths: list[Path]) -> list[str]:
    hits = []
    for path in paths:
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            for what, pattern in PATTERNS.items():
                if pattern.search(line):
                    where = path.relative_to(ROOT).as_posix()
                    hits.append(f"{where}:{number}: {what}: {line.strip()[:100]}")
    return hits


def test_patterns_catch_the_forms_that_were_used() -> None:
    cited = [
        "(spec §2.5)",
        "spec ntk_collapse §4",
        "the LE-SDE spec",
        "spec O17",
        "spec E8 (b)",
        "the spec's pilot",
        "see STYLE B.5",
        "DESIGN.md puts",
        "PERF.md",
        "§3.1 of the spec",
        "spec \\u00a73 E2",
        "../specs/lesde.md",
        "Spec §2.4: final loss",
        "arXiv preprint (seed 003 of this project)",
        "the comparison of the planning notes",
    ]
    for line in cited:
        assert any(p.search(line) for p in PATTERNS.values()), line
    not_cited = [
        "spec = importlib.util.spec_from_file_location(name, path)",
        "module = importlib.util.module_from_spec(spec)",
        'spec = importlib.util.find_spec("mlxtend")',
        "for spec in EXPERIMENTS:",
        "specs = {s.name: s for s in list_experiments()}",
        "config = spec.make_config(preset)",
        "The experiment spec and typed config stored in a run directory.",
        "_LINESTYLES = ('-', '--')",
    ]
    for line in not_cited:
        assert not any(p.search(line) for p in PATTERNS.values()), line


def test_no_reference_to_a_document_outside_the_repository() -> None:
    hits = _hits(list(_files()))
    assert not hits, "cites a document outside the repository:\n" + "\n".join(hits)
