"""The documentation stays true to the code: options, spec keys, statistics, links, examples."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import yaml

from pytest_bvtest.io.tables import LONG_COLUMNS, TABLE_FORMATS
from pytest_bvtest.spec import reader as spec_module
from pytest_bvtest.spec.measures import parse_measure
from pytest_bvtest.stats.biasvar import NORMALIZATIONS
from pytest_bvtest.stats.registry import STATISTICS, docs_table

REPOSITORY = Path(__file__).resolve().parents[1]
DOCS = REPOSITORY / "docs"
MARKDOWN_FILES = [REPOSITORY / "README.md", *sorted(DOCS.glob("*.md"))]

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def read(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def code_blocks(text: str, language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(text) if lang == language]


def prose(text: str) -> str:
    """``text`` without its fenced code blocks (headings and links there are not Markdown)."""
    return FENCE.sub("", text)


def anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens, repeats numbered."""
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*$", prose(markdown), re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        candidate, number = slug, 0
        while candidate in found:
            number += 1
            candidate = f"{slug}-{number}"
        found.add(candidate)
    return found


def documented_options(pytester: pytest.Pytester) -> tuple[set[str], set[str]]:
    """The ``--bvtest-*`` options and ``bvtest_*`` ini settings pytest's own help lists."""
    result = pytester.runpytest("--help", "-p", "no:cacheprovider")
    help_text = result.stdout.str()
    return set(re.findall(r"--bvtest-[a-z-]+", help_text)), set(
        re.findall(r"^\s+(bvtest_[a-z_]+) \(", help_text, re.MULTILINE)
    )


def test_every_pytest_option_and_ini_setting_is_documented(pytester: pytest.Pytester) -> None:
    options, ini_names = documented_options(pytester)
    assert {"--bvtest-run", "--bvtest-update"} <= options and "bvtest_json" in ini_names  # the help was read
    text = read("options.md")
    missing = sorted(name for name in options | ini_names if f"`{name}" not in text)
    assert not missing, f"docs/options.md does not document: {', '.join(missing)}"


def code_words(markdown: str) -> set[str]:
    """Every word inside an inline code span of the prose (`` `max_increase: 5%` `` gives max_increase, 5)."""
    spans = re.findall(r"`([^`\n]+)`", prose(markdown))
    return {word for span in spans for word in re.split(r"[^\w-]+", span) if word}


def test_every_spec_key_table_layout_and_statistic_is_in_the_spec_reference() -> None:
    words = code_words(read("spec.md"))
    names = [
        *spec_module._TOP_KEYS,
        *spec_module._ANALYSIS_KEYS,
        *spec_module._GATE_KEYS,
        *NORMALIZATIONS,
        *STATISTICS,
        *TABLE_FORMATS,
        *(label for labels in LONG_COLUMNS.values() for label in labels),
    ]
    missing = sorted({name for name in names if name not in words})
    assert not missing, f"docs/spec.md does not mention: {', '.join(missing)}"


def test_every_statistic_has_a_row_with_its_direction_in_the_spec_reference() -> None:
    rows = {
        match[0]: match[1]
        for match in re.findall(r"^\| `(\w+)` \| [^|]+ \| (higher|lower) \|", read("spec.md"), re.MULTILINE)
    }
    expected = {name: "higher" if statistic.higher_is_better else "lower" for name, statistic in STATISTICS.items()}
    assert rows == expected


def test_the_statistics_table_of_the_spec_reference_is_the_catalogues() -> None:
    """The table is written from :data:`STATISTICS` (``docs_table()``): a new entry shows up as a diff here."""
    assert docs_table() in read("spec.md"), "docs/spec.md's statistics table differs from stats.registry.docs_table()"


@pytest.mark.parametrize("markdown", MARKDOWN_FILES, ids=lambda path: path.relative_to(REPOSITORY).as_posix())
def test_relative_links_point_to_existing_files_and_headings(markdown: Path) -> None:
    broken = []
    for target in LINK.findall(prose(markdown.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto
        path_part, _, anchor = target.partition("#")
        destination = (markdown.parent / path_part).resolve() if path_part else markdown
        if not destination.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination.read_text(encoding="utf-8")):
            broken.append(f"{target} (no such heading)")
    assert not broken, f"{markdown.name}: broken links: {'; '.join(broken)}"


def complete_specs() -> list[dict]:
    return [
        yaml.safe_load(block)
        for block in code_blocks(read("spec.md"), "yaml")
        if re.search(r"^measures:", block, re.MULTILINE)
    ]


def test_complete_specs_in_the_reference_parse_and_use_only_real_keys() -> None:
    specs = complete_specs()
    assert len(specs) >= 5
    for document in specs:
        assert set(document) <= set(spec_module._TOP_KEYS), document
        measures = document["measures"]
        for name in [measures] if isinstance(measures, str) else measures:
            parse_measure(name)
        assert set(document.get("analysis") or {}) <= set(spec_module._ANALYSIS_KEYS)
        for gate in document.get("gates", []):
            assert set(gate) <= set(spec_module._GATE_KEYS), gate
            assert gate["statistic"] in STATISTICS
            assert len(set(gate) & set(spec_module.BOUND_KEYS)) == 1 or (
                "false_alarm" in gate and not set(gate) & set(spec_module.BOUND_KEYS)
            ), gate


def test_python_examples_in_the_docs_are_valid_python() -> None:
    blocks = [block for path in MARKDOWN_FILES for block in code_blocks(path.read_text(encoding="utf-8"), "python")]
    assert blocks
    for block in blocks:
        ast.parse(block)


def test_the_fixture_example_in_options_runs_against_the_example_project(pytester: pytest.Pytester) -> None:
    example = code_blocks(read("options.md"), "python")[0]
    spec_line = 'SPEC = Path("example_project/bvtest.yaml").resolve()'
    assert spec_line in example
    pytester.makepyfile(
        test_fixture_example=example.replace(
            spec_line, f"SPEC = Path({str(REPOSITORY / 'example_project' / 'bvtest.yaml')!r})"
        )
    )
    # in a process of its own: run in this one, pytester takes the modules the example's gate imported out of
    # sys.modules afterwards, and a later test's evaluation in worker processes failed to pickle its calls
    # (`concurrent.futures.process._CallItem` "not the same object"; tests/test_report_html.py after this file)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--bvtest-no-cache")
    result.assert_outcomes(passed=4)


def test_every_statistic_has_wording_whose_docs_section_exists() -> None:
    for statistic in STATISTICS.values():
        assert statistic.wording is not None, statistic.name
        page, _, section = statistic.wording.docs.partition("#")
        assert section in anchors(read(page)), f"{statistic.name}: docs/{statistic.wording.docs} does not exist"


def test_no_install_line_pretends_the_package_is_on_an_index() -> None:
    """pytest-bvtest is not on a package index: a bare `pip install pytest-bvtest` (with or without an extra or a
    version) would fail for the reader; the docs install from a checkout, a git URL or a wheel."""
    bare = re.compile(
        r"pip install[^\n`]*?(?<![\w/@.-])['\"]?pytest-bvtest(\[[\w,]+\])?(==[\w.]+)?['\"]?(?![\w/.@-])(?!\s*@)"
    )
    texts = {path.name: path.read_text(encoding="utf-8") for path in [*MARKDOWN_FILES, REPOSITORY / "CHANGELOG.md"]}
    workflows = (REPOSITORY / "example_project" / ".github" / "workflows").glob("*.yml")
    texts |= {path.name: path.read_text(encoding="utf-8") for path in workflows}
    # the sentences that say it finds nothing are not install lines
    found = {
        name: [match.group(0) for match in bare.finditer(text) if "finds nothing" not in text[match.end() :][:20]]
        for name, text in texts.items()
    }
    assert {name: lines for name, lines in found.items() if lines} == {}
    # the check can fail, and passes the forms that work
    assert bare.search("run: pip install -r requirements.txt pytest-bvtest\n")
    assert bare.search("pip install 'pytest-bvtest[plots]'") and bare.search("pip install pytest-bvtest==0.1.0")
    assert not bare.search('pip install "pytest-bvtest @ git+https://github.com/OWNER/pytest-bvtest@main"')
    assert not bare.search('pip install "/path/to/pytest-bvtest[plots]"')
