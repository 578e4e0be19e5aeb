"""The code examples of README.md and docs/ run as tests, so that a page whose example stops
being true fails CI (issue 55).

Every ```python fenced block of a page runs, the page's blocks in order in one namespace (a
tour builds on its earlier blocks), in a fresh temporary working directory. A block that
needs what the tests do not have (S3, a cluster, YARN, Kubernetes) is preceded by a comment
`<!-- not run: <reason> -->`; such a block gets no test item at all, since CI treats a skipped
test as a failure, and the marker must say why. ```bash blocks are not run. A page whose
examples use Spark gets the tests' local[2] session (conftest's `spark`), which
`lance_core.spark.session(...)` in the example then returns."""

from __future__ import annotations

import re
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

# CommonMark's fences: 3+ backticks or tildes, indented as their list item; a backtick fence's
# info string has no backtick (```` ```python ```` in a sentence is inline code).
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}(?=[^`]*$)|~{3,})\s*(?P<lang>[^\s`]*)")
NOT_RUN = re.compile(r"^\s*<!--\s*not run\b(?P<rest>.*?)-->\s*$", re.IGNORECASE)
# Examples that start Spark jobs: they need the tests' Spark session.
USES_SPARK = re.compile(r"\bpyspark\b|\blance_core\.spark\b|\bspark\.")


@dataclass
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    not_run: str | None  # the marker's reason; None for a block that runs


@dataclass
class Marker:
    page: Path
    line: int
    reason: str
    block: Block | None  # the fenced block it stands before, if any


def parse(page: Path, text: str | None = None) -> tuple[list[Block], list[Marker]]:
    """The page's fenced blocks and its not-run markers. A marker applies to the fenced block
    right after it (blank lines between them allowed)."""
    lines = (page.read_text(encoding="utf-8") if text is None else text).splitlines()
    blocks, markers = [], []
    pending = None  # a marker waiting for its block
    i = 0
    while i < len(lines):
        text = lines[i]
        opening = FENCE.match(text)
        marker = NOT_RUN.match(text)
        if marker:
            reason = marker.group("rest").strip().lstrip(":").strip()
            pending = Marker(page, i + 1, reason, None)
            markers.append(pending)
        elif opening:
            indent, fence = opening.group("indent"), opening.group("fence")
            body = []
            i += 1
            while i < len(lines) and not re.fullmatch(re.escape(fence[0]) + "{%d,}" % len(fence), lines[i].strip()):
                # Blocks inside list items are indented as their fence is.
                body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
                i += 1
            block = Block(page, i - len(body), opening.group("lang").lower(), "\n".join(body) + "\n",
                          pending.reason if pending else None)
            if pending:
                pending.block = block
            pending = None
            blocks.append(block)
        elif text.strip():
            pending = None
        i += 1
    return blocks, markers


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def _runnable(page: Path) -> list[Block]:
    return [b for b in parse(page)[0] if b.lang == "python" and b.not_run is None]


def _params():
    for page in PAGES:
        blocks = _runnable(page)
        if not blocks:
            continue
        spark = any(USES_SPARK.search(b.code) for b in blocks)
        # One worker runs every Spark page, on one Spark session.
        marks = [pytest.mark.xdist_group("docs_spark")] if spark else []
        yield pytest.param(page, spark, id=_name(page), marks=marks)


@pytest.mark.parametrize("page, uses_spark", list(_params()))
def test_page_examples(page, uses_spark, request, tmp_path, monkeypatch):
    if uses_spark:
        request.getfixturevalue("spark")
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": f"docs_example_{page.stem}"}
    for block in _runnable(page):
        where = f"{_name(page)}:{block.line}"
        failure = None
        try:
            # Padded so that a traceback's line numbers are the page's.
            exec(compile("\n" * block.line + block.code, _name(page), "exec"), namespace)
        except Exception as e:
            # The page and line of the example, and the last frames (the example's own line
            # among them: its file name is the page).
            failure = (f"the example at {where} fails: {type(e).__name__}: {e}\n"
                       + "".join(traceback.format_exception(type(e), e, e.__traceback__)[-6:]))
        if failure:
            pytest.fail(failure, pytrace=False)


def test_examples_are_found():
    """The collector sees the pages' examples: the README's tour runs, and so do most of
    the docs' blocks, so a change of fences cannot silently leave the docs untested."""
    assert _runnable(ROOT / "README.md"), "no runnable ```python block in README.md"
    docs = [b for p in PAGES[1:] for b in parse(p)[0] if b.lang == "python"]
    run = [b for b in docs if b.not_run is None]
    assert docs and len(run) >= len(docs) // 2, f"{len(run)} of the docs' {len(docs)} python blocks run"


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_not_run_markers(page):
    """Each `<!-- not run: ... -->` names its reason and stands right before a python block
    (a marker anywhere else would mean nothing, and could hide that an example stopped running)."""
    for marker in parse(page)[1]:
        where = f"{_name(page)}:{marker.line}"
        assert marker.reason, f"{where}: a not-run marker must say why (`<!-- not run: needs S3 -->`)"
        assert marker.block is not None and marker.block.lang == "python", \
            f"{where}: a not-run marker must stand right before a ```python block"


def test_parser_reads_fences_markers_and_lists():
    """The collector's own rules, on a page written for them."""
    blocks, markers = parse(Path("sample.md"), (
        "# t\n\n```python\nx = 1\n```\n\n<!-- not run: needs S3 -->\n\n```python\ns3()\n```\n"
        "- item\n  ```python\n  y = x + 1\n  ```\n<!-- not run -->\ntext\n```bash\nls\n```\n"
        "```` ```python ```` in a sentence\n````python\nz = 3\n```\n````\n"))
    assert [(b.lang, b.code, b.not_run) for b in blocks] == [
        ("python", "x = 1\n", None), ("python", "s3()\n", "needs S3"), ("python", "y = x + 1\n", None),
        ("bash", "ls\n", None), ("python", "z = 3\n```\n", None)]
    assert [(m.reason, m.block is not None) for m in markers] == [("needs S3", True), ("", False)]


LINK = re.compile(r"(?<!!)\[[^\]]*\]\((?P<target>[^)\s]+)\)")
INLINE_CODE = re.compile(r"(`+).*?\1")


def _slug(heading: str) -> str:
    """A heading's anchor, as GitHub and mkdocs' toc both make it for these pages' headings."""
    text = re.sub(r"[^\w\s-]", "", heading.strip().lower())
    return re.sub(r"\s+", "-", text)


def _prose(page: Path) -> list[tuple[int, str]]:
    """The page's lines outside fenced blocks, with inline code removed."""
    fenced = set()
    lines = page.read_text(encoding="utf-8").splitlines()
    for block in parse(page)[0]:
        fenced.update(range(block.line, block.line + block.code.count("\n") + 2))
    return [(n, INLINE_CODE.sub("", text)) for n, text in enumerate(lines, 1) if n not in fenced]


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_relative_links_resolve(page):
    """Every relative link of the README and the docs reaches a file of the repository (and
    a heading of it, for an anchor into a page), on GitHub as in the built site."""
    for n, text in _prose(page):
        for link in LINK.finditer(text):
            target = link.group("target")
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # an absolute URL
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            where = f"{_name(page)}:{n}: link {target!r}"
            assert resolved.exists(), f"{where}: no file {resolved}"
            if anchor and resolved.suffix == ".md":
                slugs = {_slug(t.lstrip("#")) for _, t in _prose(resolved) if re.match(r"^#{1,6} ", t)}
                assert anchor in slugs, f"{where}: {_name(resolved)} has no heading #{anchor}"
