"""The documents travel with the code (issue 27 Deliver 3).

* docs/architecture.md lists every module of ``mdae_fmu`` and every file of ``templates/`` in its
  "Modules" section, and lists nothing that is absent;
* docstrings, comments, messages, docs, reference models and tests cite the theory through
  docs/theory.md (or the papers' own numbering), never through notes that are not in the
  repository, and every ``docs/theory.md §N.M`` they cite exists;
* every relative link of README.md, CONTRIBUTING.md, reference_models/README.md and docs/*.md
  points to an existing file.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

#: Files whose text is checked for citations: the package, the templates, the reference models,
#: the tests, the benchmarks and the documents.
CITING_SUFFIXES = {".py", ".c", ".h", ".j2", ".lark", ".xsd", ".md", ".mo"}

#: Citations of the implementation notes that lived outside the repository (a clone does not
#: have them): their file names, their abbreviations followed by a section sign, and paths into
#: the workspace that held them. "RR-9334 §7" (the paper) is fine; "9334 §7" (the note) is not.
FOREIGN_CITATION = re.compile(
    r"\b(?:theory|examples) notes?\b"
    r"|(?<![-\w])(?:003|9334|001-004|TA|EX|SA)\s?§"
    r"|\btheory (?:003|9334)\b"
    r"|9334-(?:theory|examples)|003-structural|001-004-multimode"
    r"|shared/(?:theory|seeds|ecosystem)|/work/shared|ecosystem/[\w-]+\.md"
    r"|compilers-multimode-formats|fmi-export\.md"
    r"|(?<![/\w])ARCHITECTURE\.md")             # the workspace's, not docs/architecture.md

#: ``docs/theory.md §4.3, §4.6`` or ``theory.md §5.2–§5.4``: the run of sections after the name.
THEORY_CITATION = re.compile(
    r"theory\.md\)?\s+((?:§\d+(?:\.\d+)?(?:\s*[–-]\s*§?\d+(?:\.\d+)?)?(?:,\s*|;\s*|\s+and\s+)?)+)")

#: Markdown links ``[text](target)``; ``x[1](2)`` (an indexed name in the text) is not one.
MD_LINK = re.compile(r"(?<![\w\]])\[[^\]\n]*\]\(([^)\s]+)\)")
#: Inline code spans, whose brackets are not links.
CODE_SPAN = re.compile(r"`[^`\n]*`")

#: Rows of the module tables: the first cell is the path in backquotes.
MODULE_ROW = re.compile(r"^\|\s*`((?:mdae_fmu|templates)/[^`]+)`\s*\|", re.M)


def _tree_files(top: str) -> set[str]:
    return {p.relative_to(ROOT).as_posix() for p in (ROOT / top).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}


def _modules_section() -> str:
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    start = text.find("\n## Modules")
    assert start >= 0, "docs/architecture.md has no '## Modules' section"
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def _citing_files() -> list[Path]:
    files = [p for top in ("mdae_fmu", "templates", "reference_models", "tests", "benchmarks")
             for p in (ROOT / top).rglob("*")
             if p.is_file() and p.suffix in CITING_SUFFIXES and "__pycache__" not in p.parts
             and p != Path(__file__).resolve()]      # this file spells the patterns out
    files += sorted(DOCS.glob("*.md"))
    files += [ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
    return sorted(files)


def _theory_sections() -> set[str]:
    """The section numbers docs/theory.md defines: ``## §N`` headings and ``**§N.M`` items."""
    text = (DOCS / "theory.md").read_text(encoding="utf-8")
    return (set(re.findall(r"^## §(\d+)\b", text, re.M))
            | set(re.findall(r"^\*\*§(\d+\.\d+)\b", text, re.M)))


def foreign_citations(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` of every line of ``text`` that cites a note absent from the
    repository."""
    return [(i, line.strip()) for i, line in enumerate(text.splitlines(), 1)
            if FOREIGN_CITATION.search(line)]


def theory_references(text: str) -> list[str]:
    """Every section number cited as ``theory.md §…`` in ``text`` (ranges give both ends)."""
    refs = []
    for m in THEORY_CITATION.finditer(text):
        refs += re.findall(r"(\d+(?:\.\d+)?)", m.group(1))
    return refs


def test_every_module_is_listed_in_architecture() -> None:
    listed = set(MODULE_ROW.findall(_modules_section()))
    present = _tree_files("mdae_fmu") | _tree_files("templates")
    assert sorted(present - listed) == [], \
        "modules missing from docs/architecture.md, section Modules"
    assert sorted(listed - present) == [], \
        "docs/architecture.md lists modules that are not in the tree"


def test_no_citation_of_notes_outside_the_repository() -> None:
    found = [f"{p.relative_to(ROOT)}:{i}: {line}"
             for p in _citing_files()
             for i, line in foreign_citations(p.read_text(encoding="utf-8", errors="replace"))]
    assert found == [], "cite docs/theory.md (or the paper's numbering) instead:\n" + \
        "\n".join(found)


def test_cited_theory_sections_exist() -> None:
    sections = _theory_sections()
    assert {"1", "1.1", "2.4", "4.3", "6.6", "9.7", "10.2"} <= sections
    missing = sorted({f"{p.relative_to(ROOT)}: §{ref}"
                      for p in _citing_files()
                      for ref in theory_references(p.read_text(encoding="utf-8",
                                                               errors="replace"))
                      if ref not in sections})
    assert missing == [], "sections cited but not in docs/theory.md:\n" + "\n".join(missing)


def test_relative_links_of_the_documents_exist() -> None:
    broken = []
    for doc in [ROOT / "README.md", ROOT / "CONTRIBUTING.md",
                ROOT / "reference_models" / "README.md", *sorted(DOCS.glob("*.md"))]:
        for target in MD_LINK.findall(CODE_SPAN.sub("", doc.read_text(encoding="utf-8"))):
            if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue                        # a URL (http:, mailto:) or an anchor
            path = target.split("#", 1)[0]
            if not (doc.parent / path).exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target}")
    assert broken == [], "relative links to missing files:\n" + "\n".join(broken)


def test_the_checks_catch_what_they_are_for() -> None:
    """The patterns themselves: a foreign citation is found, a paper's numbering is not, a
    run of theory.md sections is read whole."""
    assert foreign_citations("x (theory 003 §4.3 Def 15) y")
    assert foreign_citations("see 9334-theory-algorithms §2.8")
    assert foreign_citations("(TA §1.4, Defs 30, 33)")
    assert foreign_citations("summary in /work/shared/ecosystem/fmi-export.md §1.1")
    assert foreign_citations("(ARCHITECTURE.md, command line)")
    assert not foreign_citations("the stages: docs/architecture.md")
    assert not foreign_citations("RR-9334 §7.3.4 and RR-9387 Lemma 6, docs/theory.md §2.3")
    assert theory_references("(docs/theory.md §4.6, §4.7; RR-9334 Def 24)") == ["4.6", "4.7"]
    assert theory_references("docs/theory.md §5.1–§5.4 (RR-9334)") == ["5.1", "5.4"]
    assert "12.9" not in _theory_sections()
    assert MD_LINK.findall("[theory.md](theory.md) and x[1](2)") == ["theory.md"]
