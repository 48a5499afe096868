"""No text of the inputs becomes a workflow command, a mention, a link or a terminal escape (pytest_bvtest.report.
untrusted), checked as GitHub reads each output: the runner's parser of workflow commands (actions/runner's
``ActionCommand.TryParseV2`` and ``TryParse``, ported below) on every line of the log, and GitHub's own Markdown
parser (cmark-gfm, through cmarkgfm) on the step summary and the pull-request comment, with the mentions and issue
references GitHub adds after it.

The attack that started it: a baseline named ``"p\\n::error file=README.md,line=1::forged annotation"`` forged an
annotation, ``@team`` in a query text pinged people from the comment, ``[approve](...) ![t](https://...)`` in a
query became a link and a remote image, and an ESC in the topics file recoloured the terminal.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import cmarkgfm
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_bvtest.errors import visible_controls
from pytest_bvtest.report import github
from pytest_bvtest.report.untrusted import ZERO_WIDTH_SPACE, html_text, markdown_text, terminal_text

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"

#: The commands the runner knows (a line naming another one is printed as it is).
RUNNER_COMMANDS = {
    "error",
    "warning",
    "notice",
    "debug",
    "add-mask",
    "stop-commands",
    "set-output",
    "set-env",
    "add-path",
    "save-state",
    "group",
    "endgroup",
    "echo",
    "add-matcher",
    "remove-matcher",
}


def runner_lines(text: str) -> list[str]:
    """``text`` as the runner reads a step's output: lines ended by LF, CR or CR LF (.NET's ``ReadLine``)."""
    return re.split(r"\r\n|\r|\n", text)


def runner_command(line: str) -> str | None:
    """The workflow command GitHub's runner reads in one ``line``, or ``None``: ``::NAME ...::DATA`` once leading
    blanks are trimmed (TryParseV2), ``##[NAME ...]DATA`` anywhere in it (TryParse); Azure Pipelines' ``##vso[``
    and TeamCity's ``##teamcity[`` likewise anywhere."""
    message = line.lstrip()
    if message.startswith("::"):
        end = message.find("::", 2)
        if end >= 0 and message[2:end].split(" ", 1)[0].lower() in RUNNER_COMMANDS:
            return message[:end]
    start = line.find("##[")
    if start >= 0 and line.find("]", start) >= 0:
        name = line[start + 3 : line.find("]", start)].split(" ", 1)[0]
        if name.lower() in RUNNER_COMMANDS:
            return line[start:]
    lowered = line.lower()
    return line if "##vso[" in lowered or "##teamcity[" in lowered else None


COMMAND_PAYLOADS = [
    "::error file=README.md,line=1::forged annotation",
    "  ::add-mask::injected",
    "\t::stop-commands::token",
    "\u00a0\u2003::set-output name=x::y",  # .NET trims Unicode blanks too
    "p\n::error file=README.md,line=1::forged",
    "p\r::warning::forged after a carriage return",
    "query ##[error]old syntax anywhere in a line",
    "##[add-mask]secret",
    "##vso[task.setvariable variable=x]1",
    "x ##teamcity[message text='y']",
]


@pytest.mark.parametrize("payload", COMMAND_PAYLOADS)
def test_the_runner_reads_each_payload_as_a_command_and_none_once_written_for_the_terminal(payload: str) -> None:
    assert any(runner_command(line) for line in runner_lines(payload)), payload  # the oracle sees the attack
    shown = terminal_text(payload)
    assert not [line for line in runner_lines(shown) if runner_command(line)], repr(shown)
    assert shown.replace(ZERO_WIDTH_SPACE, "") == visible_controls(payload, keep="\n")  # it reads the same


def test_control_characters_are_shown_as_escapes_in_the_terminal() -> None:
    payload = "\x1b[31mRED\x1b[0m \x9b31m \x7f \x00 \x08 \u202eevil \u2028 \x85 tab\there"
    shown = terminal_text(payload)
    assert shown == "\\x1b[31mRED\\x1b[0m \\x9b31m \\x7f \\x00 \\x08 \\u202eevil \\u2028 \\x85 tab\\there"
    assert terminal_text("two\nlines") == "two\nlines"  # our own lines stay lines


@given(st.text(alphabet=st.sampled_from(list(": #[]@vsoerrorad-mk\n\r\t \u00a0\x1b\x85\u2028\u202e")), max_size=40))
def test_no_text_becomes_a_command_and_it_reads_the_same(text: str) -> None:
    shown = terminal_text(text)
    assert not [line for line in runner_lines(shown) if runner_command(line)], repr(shown)
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u202e]", shown)
    assert terminal_text(shown) == shown  # written twice (a summary line through bvtest's stdout), the same


class _Text(HTMLParser):
    """The text GitHub's filters read after cmark-gfm: outside code, pre and links."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.inside = 0
        self.parts: list[str] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.add(tag)
        self.inside += tag in ("code", "pre", "a")

    def handle_endtag(self, tag: str) -> None:
        self.inside -= tag in ("code", "pre", "a")

    def handle_data(self, data: str) -> None:
        if not self.inside:
            self.parts.append(data)


def github_reads(markdown: str) -> tuple[set[str], list[str]]:
    """The HTML tags cmark-gfm (GitHub's parser, autolinks and tables on) makes of ``markdown``, raw HTML kept as
    GitHub keeps it before sanitizing, and what GitHub's mention and reference filters would turn into a link in
    its text: ``@user`` after a non-word character, ``#123`` and ``GH-123``."""
    rendered = cmarkgfm.github_flavored_markdown_to_html(markdown, options=cmarkgfm.cmark.Options.CMARK_OPT_UNSAFE)
    parser = _Text()
    parser.feed(rendered)
    text = "".join(parser.parts)
    notified = re.findall(r"(?:^|[^A-Za-z0-9_])@[A-Za-z0-9]|#[0-9]|\bGH-[0-9]", text, flags=re.IGNORECASE)
    return parser.tags, notified


MARKDOWN_PAYLOADS = [
    "@octocat please look",
    "cc @org/team-reviewers",
    "mail me@example.com",
    "[approve](https://evil.example/x)",
    "![tracker](https://evil.example/t.png)",
    "[approve][ref]\n\n[ref]: https://evil.example",
    "see https://evil.example/path and www.evil.example",
    "<https://evil.example>",
    "<img src=x onerror=alert(1)> <b>bold</b>",
    "fixes #12 and org/repo#34 and GH-56",
    "&#64;octocat",
]


@pytest.mark.parametrize("payload", MARKDOWN_PAYLOADS)
def test_github_reads_no_link_mention_image_or_html_in_markdown_prose(payload: str) -> None:
    tags, notified = github_reads(payload)
    assert tags & {"a", "img", "b"} or notified or "&#64;" in payload, payload  # the oracle sees the attack
    tags, notified = github_reads(markdown_text(payload))
    assert not tags & {"a", "img", "b"} and not notified, (payload, tags, notified)
    assert markdown_text(payload).replace(ZERO_WIDTH_SPACE, "") == payload.replace("&", "&amp;").replace(
        "<", "&lt;"
    ).replace(">", "&gt;")


def test_a_measure_cut_off_keeps_its_at_sign() -> None:
    """``nDCG@10`` mentions no one (the ``@`` follows a letter), and is written as it is everywhere."""
    assert markdown_text("nDCG@10 and P@5 vs R@1000; a@10.example.org") == (
        f"nDCG@10 and P@5 vs R@1000; a@{ZERO_WIDTH_SPACE}10.example.org"
    )


def test_html_keeps_its_escaping_and_shows_control_characters() -> None:
    assert html_text('<img src=x> & "q"') == "&lt;img src=x&gt; &amp; &quot;q&quot;"
    assert html_text("\x1b[31mred\x1b[0m\u202e") == "\\x1b[31mred\\x1b[0m\\u202e"
    assert github.escape_data("a\x1bb\nc") == "a\\x1bb%0Ac"


TOPICS = {"23": "::error::pwned", "18": "##[add-mask]secret"}
HOSTILE_QUERY = (
    "@octocat see [approve](https://evil.example/x) ![t](https://evil.example/t.png) \x1b[31mRED\x1b[0m "
    "<b>x</b> #12 www.evil.example a@b.co"
)
HOSTILE_SPEC = """\
qrels: eval/qrels.txt
topics: eval/topics.tsv
measures: [nDCG@10]
baselines:
  "@octocat [x](https://e.x)": runs/production.run
  '::error::base $\\frac{a$': runs/bm25-alt.run
candidate: {run: runs/candidate-risky.run, name: "::warning::cand ##[add-mask]c"}
reference: "@octocat [x](https://e.x)"
cache: false
gates:
  - {statistic: mean, max_decrease: 0.0, name: "::error::floor"}
  - {statistic: trisk, name: "@team/reviewers ![i](https://e.x/i.png)", max_decrease: 0.0}
  - {statistic: var, max_increase: 0.0, name: "var #[warning]"}
"""


def hostile_project(folder: Path) -> Path:
    """The example project with topic ids and query texts from an attacker (a query log): topics 23 and 18 renamed
    to workflow commands in the qrels, the runs and the topic file, topic 23's and 39's query texts hostile; the
    spec's names too, as far as the spec allows them (no control character)."""
    shutil.copytree(EXAMPLE / "eval", folder / "eval")
    shutil.copytree(EXAMPLE / "runs", folder / "runs")

    def rename(path: Path, separator: str) -> None:
        lines = []
        for line in path.read_text(encoding="utf-8").splitlines():
            fields = line.split(separator) if separator else line.split()
            fields[0] = TOPICS.get(fields[0], fields[0])
            lines.append((separator or " ").join(fields))
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    rename(folder / "eval" / "qrels.txt", "")
    for run in (folder / "runs").glob("*.run"):
        rename(run, "")
    rename(folder / "eval" / "topics.tsv", "\t")
    topics = folder / "eval" / "topics.tsv"
    texts = {"::error::pwned": HOSTILE_QUERY, "39": "::warning::forged from topics \u202eabc \x85 ##[error]x"}
    topics.write_text(
        "".join(
            f"{topic}\t{texts.get(topic, text)}\n"
            for topic, text in (line.split("\t", 1) for line in topics.read_text(encoding="utf-8").splitlines())
        ),
        encoding="utf-8",
    )
    spec = folder / "bvtest.yaml"
    spec.write_text(HOSTILE_SPEC, encoding="utf-8")
    return spec


def assert_no_command_but_ours(output: str, ours: list[str]) -> None:
    forged = [line for line in runner_lines(output) if runner_command(line) and line not in ours]
    assert not forged, forged
    assert "\x1b" not in output and "\u202e" not in output


def test_a_hostile_project_under_github_actions_forges_nothing(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest's whole output (test ids, failures, warnings, the summary, -v and -rA) under ``GITHUB_ACTIONS=true``,
    the step summary, the Markdown and the HTML of a project whose topics and names attack each."""
    hostile_project(pytester.path)
    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-v", "-rA", "--bvtest-json=out.json", "--bvtest-html=out.html", "bvtest.yaml"
    )
    output = "\n".join(result.outlines + result.errlines)
    assert "topics that moved" in output and "pwned" in output and "forged from topics" in output
    import json

    document = json.loads((pytester.path / "out.json").read_text(encoding="utf-8"))
    ours = github.annotations(document)
    assert ours and all(line in result.outlines for line in ours)
    assert_no_command_but_ours(output, ours)
    markdown = summary.read_text(encoding="utf-8")
    assert "pwned" in markdown and "evil.example" in markdown
    tags, notified = github_reads(markdown)
    assert not tags & {"a", "img", "b"} and not notified, (tags, notified)
    assert "\x1b" not in markdown and "\u202e" not in markdown
    page = (pytester.path / "out.html").read_text(encoding="utf-8")
    assert "\x1b" not in page and "<b>x</b>" not in page and "\\x1b[31mRED" in page


def test_bvtest_check_on_a_hostile_project_forges_nothing(tmp_path: Path) -> None:
    """``bvtest check``'s stdout and stderr, and its Markdown; its plots draw a name with ``$`` as written
    (matplotlib read ``$\\frac{a$`` as mathematics and raised a ValueError)."""
    spec = hostile_project(tmp_path)
    markdown, plots = str(tmp_path / "out.md"), str(tmp_path / "plots")
    result = subprocess.run(
        [sys.executable, "-m", "pytest_bvtest.cli", "check", str(spec), "--markdown", markdown, "--plots", plots],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert result.returncode == 1, result.stderr
    assert "pwned" in result.stdout and len(list((tmp_path / "plots").glob("*.png"))) == 3
    assert_no_command_but_ours(result.stdout + result.stderr, [])
    tags, notified = github_reads((tmp_path / "out.md").read_text(encoding="utf-8"))
    assert not tags & {"a", "img", "b"} and not notified, (tags, notified)
