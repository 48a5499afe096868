"""Regenerate the screenshots of the reviewer's page in docs/images/ (issues 21 and 31): the Markdown comment as a
GitHub pull request shows it and the HTML page, for a passing, a near-miss, a failing, an ``OK*``, an ``UNDECIDED``
and a many-spec case.

Not part of the test suite. It needs, besides the project's test environment:

- ``markdown-it-py`` (PyPI; CommonMark with GitHub's tables, raw HTML kept, as GitHub renders a comment) and
  ``Pillow`` (to trim the full-page shots and make the PNGs small): ``pip install markdown-it-py pillow``;
- GitHub's stylesheet for Markdown, the npm package ``github-markdown-css`` (installed with ``npm`` into
  ``--npm-cache`` when it is not there yet);
- Debian's Chromium and an emoji font, run headless (``apt-get install chromium fonts-noto-color-emoji``: without
  the font GitHub's ✅ ❌ ⚠️ show as empty boxes);
- ``optipng`` (optional, ``apt-get install optipng``): a few percent smaller files;
- the shared TREC data beside the repository (``../shared/data``) for the ``UNDECIDED`` case (DL19 passages,
  monoBERT against monoT5 with qrels pooled from the top 10 of three other rankers, as tests/test_judgments.py
  pools them: two gates stay undecided after the plausible gradings) and the many-spec case (two example specs and
  two DL-HARD specs, 66 gates); without it those cases are left out.

Each case runs pytest in a copy of example_project/ as a user would (``pytest bvtest.yaml --bvtest-run RUN
--bvtest-markdown ... --bvtest-html ...``); the failing and ``OK*`` runs are made by tests/example_cases.py.

    .venv/bin/python docs/images/make_screenshots.py            # all cases, into docs/images/
    .venv/bin/python docs/images/make_screenshots.py --keep DIR # also keep the reports and pages rendered
"""

from __future__ import annotations

import argparse
import io
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt
from PIL import Image, ImageChops

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "example_project"
SHARED = REPO.parent / "shared"
sys.path.insert(0, str(REPO / "tests"))
from example_cases import broken_run, truncated_run  # noqa: E402

WIDTH = 1000
FIRST_SCREEN = 1400
#: The tallest full-page shot; a page longer than this is cut (its per-topic tables).
TALLEST = 9000


@dataclass(frozen=True)
class Case:
    name: str
    specs: tuple[str, ...]
    run: str | None  # None: each spec's own candidate
    what: str
    shared: bool = False  # reads the shared TREC data


CASES = (
    Case("passing", ("bvtest.yaml",), "runs/candidate-pass.run", "the example's passing candidate"),
    Case("nearmiss", ("bvtest.yaml",), "runs/candidate-risky.run", "the risky candidate, Var 0.0840 for 0.0841"),
    Case("failing", ("bvtest.yaml",), "runs/broken.run", "production with five hard topics broken"),
    Case("okstar", ("bvtest.yaml",), "runs/truncated.run", "the passing candidate without three topics"),
    Case(
        "undecided",
        ("trec/bvtest-dl19-pooled.yaml",),
        None,
        "DL19, monoBERT against monoT5, qrels pooled from three other rankers",
        shared=True,
    ),
    Case(
        "manyspecs",
        ("bvtest-broken.yaml", "bvtest-risky.yaml", "trec/bvtest-dl-hard.yaml", "trec/bvtest-dl-hard-wide.yaml"),
        None,
        "two example specs and two DL-HARD specs, 66 gates",
        shared=True,
    ),
)

#: The measures of the wide DL-HARD spec of the many-spec case (4 gates each).
WIDE_MEASURES = (
    "nDCG@10, nDCG@5, nDCG@20, AP(rel=2), RR(rel=2), P(rel=2)@10, P(rel=2)@5, R(rel=2)@100, nDCG@100, RR(rel=2)@10, "
    "AP(rel=2)@100"
)


def make_project(root: Path) -> Path:
    """A copy of example_project/ with the failing and truncated runs and the specs of the many-spec case, placed so
    that its TREC specs' relative paths (``../../../shared/data``) reach the shared data."""
    project = root / "repo" / "example_project"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".bvtest_cache", "reports", "__pycache__"))
    broken_run(EXAMPLE / "runs" / "production.run", EXAMPLE / "eval" / "qrels.txt", project / "runs" / "broken.run")
    truncated_run(EXAMPLE / "runs" / "candidate-pass.run", project / "runs" / "truncated.run")
    spec = (EXAMPLE / "bvtest.yaml").read_text(encoding="utf-8")
    for name, run in (("broken", "runs/broken.run"), ("risky", "runs/candidate-risky.run")):
        (project / f"bvtest-{name}.yaml").write_text(
            re.sub(r"(?m)^candidate: .*$", f"candidate: {run}", spec), encoding="utf-8"
        )
    if (SHARED / "data").is_dir():
        (root / "shared").symlink_to(SHARED, target_is_directory=True)
        dl_hard = (EXAMPLE / "trec" / "bvtest-dl-hard.yaml").read_text(encoding="utf-8")
        (project / "trec" / "bvtest-dl-hard-wide.yaml").write_text(
            re.sub(r"(?m)^measures: .*$", f"measures: [{WIDE_MEASURES}]", dl_hard), encoding="utf-8"
        )
        dl19_pooled(project / "trec")
    return project


def dl19_pooled(folder: Path) -> None:
    """DL19 passages: monoBERT against monoT5, with the qrels kept to the pairs the top 10 of monoT5, ColBERT and
    DRMM pooled (tests/test_judgments.py's case: two gates stay undecided after the plausible gradings)."""
    from test_judgments import DL19_RUNS, GATES, pooled_qrels

    data = SHARED / "data"
    runs = data / "dl19_passage_qppeval_runs" / "runs"
    pooled_qrels(
        data / "anserini_tools_qrels_topics" / "qrels" / "qrels.dl19-passage.txt",
        [runs / DL19_RUNS[name] for name in ("monot5", "colbert", "drmm")],
        10,
        folder / "dl19-pooled.qrels",
    )
    shared = "../../../shared/data"
    relative = f"{shared}/dl19_passage_qppeval_runs/runs"
    baselines = "".join(f"  {name}: {relative}/{DL19_RUNS[name]}\n" for name in ("monot5", "colbert", "drmm"))
    (folder / "bvtest-dl19-pooled.yaml").write_text(
        "# DL19 passages with pooled qrels: monoBERT's top 10 holds unjudged passages the pool never saw\n"
        f"qrels: dl19-pooled.qrels\ntopics: {shared}/anserini_tools_qrels_topics/topics/topics.dl19-passage.txt\n"
        f"measures: [nDCG@10]\nbaselines:\n{baselines}"
        f"candidate: {{run: {relative}/{DL19_RUNS['monobert']}, name: monobert}}\nreference: monot5\n"
        f"analysis: {{risk_alpha: 1}}\n{GATES}",
        encoding="utf-8",
    )


def run_case(project: Path, case: Case) -> tuple[Path, Path]:
    """pytest on the case as a user runs it; the Markdown and HTML reports it wrote."""
    markdown, page = Path("reports") / f"{case.name}.md", Path("reports") / f"{case.name}.html"
    command = [sys.executable, "-m", "pytest", *case.specs, "-p", "no:cacheprovider", "--bvtest-no-cache"]
    command += ["--bvtest-run", case.run] if case.run else []
    command += ["--bvtest-markdown", str(markdown), "--bvtest-html", str(page)]
    done = subprocess.run(command, cwd=project, capture_output=True, text=True, check=False)
    print(f"{case.name} ({case.what}): pytest exit {done.returncode}: {done.stdout.strip().splitlines()[-1]}")
    if done.returncode not in (0, 1):
        raise SystemExit(done.stdout + done.stderr)
    text = (project / markdown).read_text(encoding="utf-8")
    print(f"  {len(text):,} characters; its first ten lines:")
    print("\n".join(f"  | {line}" for line in text.splitlines()[:10]))
    return project / markdown, project / page


def github_css(npm_cache: Path) -> str:
    css = npm_cache / "node_modules" / "github-markdown-css" / "github-markdown-light.css"
    if not css.is_file():
        npm_cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--silent", "--prefix", str(npm_cache), "github-markdown-css"], check=True)
    return css.read_text(encoding="utf-8")


#: A pull-request comment's frame: GitHub's timeline comment, its header line and its padding.
COMMENT_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><style>{css}
body {{ margin: 0; background: #fff; font-family: -apple-system, BlinkMacSystemFont, "Segoe UI", "Noto Sans",
  Helvetica, Arial, sans-serif; }}
.comment {{ margin: 16px; border: 1px solid #d1d9e0; border-radius: 6px; }}
.comment-header {{ background: #f6f8fa; border-bottom: 1px solid #d1d9e0; padding: 8px 16px; font-size: 14px;
  color: #59636e; border-radius: 6px 6px 0 0; }}
.comment-header b {{ color: #1f2328; }}
.markdown-body {{ padding: 16px; font-size: 14px; }}
</style></head><body><div class="comment"><div class="comment-header"><b>github-actions</b> bot commented</div>
<article class="markdown-body">{body}</article></div></body></html>
"""


def comment_page(markdown: str, css: str, open_details: bool) -> str:
    """The Markdown as GitHub shows it in a comment: CommonMark with tables and raw HTML (``<details>``)."""
    body = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]).render(markdown)
    if open_details:
        body = open_all_details(body)
    return COMMENT_PAGE.format(css=css, body=body)


def open_all_details(page: str) -> str:
    return re.sub(r"<details(?=[ >])", "<details open", page)


def screenshot(page: Path, out: Path, height: int, chromium: str) -> None:
    """Chromium's headless shot of ``page`` in a window ``WIDTH`` x ``height``; a tall one is trimmed to the
    page's content."""
    shot = out.with_suffix(".raw.png")
    command = [chromium, "--headless", "--no-sandbox", "--hide-scrollbars", "--disable-gpu"]
    command += [f"--window-size={WIDTH},{height}", f"--screenshot={shot}", page.as_uri()]
    subprocess.run(command, check=True, capture_output=True)
    image = Image.open(shot).convert("RGB")
    shot.unlink()
    if height > FIRST_SCREEN:
        blank = Image.new("RGB", image.size, image.getpixel((image.width - 1, image.height - 1)))
        box = ImageChops.difference(image, blank).getbbox()
        if box:
            image = image.crop((0, 0, image.width, min(image.height, box[3] + 24)))
    # 256 colours keep text sharp and make the files a quarter of their size; the octree keeps the plots' few
    # saturated colours (a median cut shifted them)
    small = image.quantize(colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    buffer = io.BytesIO()
    small.save(buffer, format="PNG", optimize=True)
    out.write_bytes(buffer.getvalue())
    if shutil.which("optipng"):
        subprocess.run(["optipng", "-quiet", "-o2", str(out)], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    parser.add_argument("--keep", type=Path, help="also keep the reports and the rendered comment pages here")
    parser.add_argument("--npm-cache", type=Path, default=Path.home() / ".cache" / "pytest-bvtest-screenshots")
    parser.add_argument("--chromium", default="chromium")
    parser.add_argument("--case", action="append", choices=[case.name for case in CASES], help="only these cases")
    options = parser.parse_args()
    css = github_css(options.npm_cache)
    with tempfile.TemporaryDirectory(prefix="bvtest-shots-") as scratch:
        project = make_project(Path(scratch))
        for case in CASES:
            if options.case and case.name not in options.case:
                continue
            if case.shared and not (SHARED / "data").is_dir():
                print(f"{case.name}: left out, no shared data at", SHARED / "data")
                continue
            markdown, page = run_case(project, case)
            text = markdown.read_text(encoding="utf-8")
            rendered = project / "reports" / f"{case.name}-comment.html"
            rendered.write_text(comment_page(text, css, open_details=False), encoding="utf-8")
            screenshot(rendered, options.out / f"reviewer-{case.name}-comment.png", FIRST_SCREEN, options.chromium)
            screenshot(page, options.out / f"reviewer-{case.name}-html.png", FIRST_SCREEN, options.chromium)
            if case.name == "failing":
                opened = project / "reports" / f"{case.name}-comment-open.html"
                opened.write_text(comment_page(text, css, open_details=True), encoding="utf-8")
                screenshot(opened, options.out / f"reviewer-{case.name}-comment-full.png", TALLEST, options.chromium)
                opened_page = project / "reports" / f"{case.name}-open.html"
                opened_page.write_text(open_all_details(page.read_text(encoding="utf-8")), encoding="utf-8")
                screenshot(opened_page, options.out / f"reviewer-{case.name}-html-full.png", TALLEST, options.chromium)
        if options.keep:
            shutil.copytree(project / "reports", options.keep, dirs_exist_ok=True)


if __name__ == "__main__":
    main()
