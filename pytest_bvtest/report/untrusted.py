"""Text from the inputs, as each output that something else reads shows it: one function per kind of output.

Names, topic ids and query texts come from files a team does not write itself (a query log, a search engine's
runs). What pytest-bvtest prints runs inside GitHub: the log of a job (stdout and stderr) is read for workflow
commands, the step summary and the pull-request comment are Markdown that mentions people and links. No text of
the inputs may become a command, a mention, a link or a terminal's escape sequence; the words stay readable, with a
zero-width space where a mark must not meet the next one.

- :func:`terminal_text`: pytest's and ``bvtest``'s terminal output and the CI log (the summary, failure messages,
  warnings, errors).
- :func:`markdown_text`: Markdown prose (``report.markdown.prose``, the step summary and the comment);
  :func:`code_text` inside a code span or block.
- :func:`html_text`: the HTML report and its SVG charts (``html.escape`` as before, control characters visible).
- GitHub annotations: :func:`pytest_bvtest.report.github.escape_data`, which makes the controls visible here too.

Kept free of heavy imports: the plugin and the command line print errors through it before loading the pipeline.
"""

from __future__ import annotations

import html
import re

from pytest_bvtest.errors import RUNNER_COMMAND_MARK, visible_controls

#: Goes between two marks that must not meet (``:`` and ``:``, ``@`` and a name); shown as nothing.
ZERO_WIDTH_SPACE = "\u200b"

# GitHub Actions reads a line as a workflow command when it starts with `::` after blanks (actions/runner trims
# them: `  ::error::x` is one) and, in its first syntax, when it holds `##[` anywhere (RUNNER_COMMAND_MARK).
_COMMAND_START = re.compile(r"^(\s*):(?=:)", flags=re.MULTILINE)

# What GitHub's Markdown turns into a link or a notification:
_MENTION = re.compile(r"@(?![0-9]+(?![\w.@-]))|(?<![A-Za-z0-9_])@")  # @user, @org/team, a@b.c; not nDCG@10
_LINK = re.compile(r"\](?=[(\[:])")  # [text](url), ![image](url), [text][ref], [ref]: url
_BARE_URL = re.compile(r"(?<=:)(?=//)|(?<=\bwww)(?=\.)", flags=re.IGNORECASE)  # https://..., www.example.org
_REFERENCE = re.compile(r"#(?=[0-9])|(?<=\bGH)(?=-[0-9])", flags=re.IGNORECASE)  # #123, owner/repo#123, GH-123


def terminal_text(text: str) -> str:
    """``text`` for a terminal or a CI log: every control character but the newline written as its escape (an ESC
    recoloured the terminal, a carriage return began a line of its own in GitHub's log), and no line a CI runner
    runs as a command: a zero-width space splits a line-leading ``::`` and a ``##[``."""
    text = visible_controls(text, keep="\n")
    text = _COMMAND_START.sub(lambda match: f"{match.group(1)}:{ZERO_WIDTH_SPACE}", text)
    return RUNNER_COMMAND_MARK.sub(lambda match: f"#{ZERO_WIDTH_SPACE}{match.group()[1:]}", text)


def markdown_text(text: str) -> str:
    """``text`` as GitHub-flavoured Markdown prose that GitHub shows as written: ``&``, ``<`` and ``>`` escaped (no
    HTML), control characters visible, and nothing of it a mention (``@user``, ``@org/team``, which notify), an
    e-mail address, a link or an image (``[text](url)``, ``![alt](url)``, a reference), a bare URL
    (``https://...``, ``www.``) or an issue reference (``#123``, ``GH-123``, which notify the issue): a zero-width
    space parts the marks. A measure's cut-off (``nDCG@10``) is left as it is."""
    text = visible_controls(html.escape(str(text), quote=False), keep="\n")
    for pattern in (_MENTION, _LINK, _BARE_URL, _REFERENCE):
        text = pattern.sub(lambda match: match.group() + ZERO_WIDTH_SPACE, text)
    return text


def code_text(text: str) -> str:
    """``text`` inside a Markdown code span or block, which GitHub shows as written (no mention, link or HTML
    there): only its control characters made visible."""
    return visible_controls(str(text), keep="\n")


def html_text(text: str, quote: bool = True) -> str:
    """``text`` for the HTML report: :func:`html.escape` (``quote`` escapes quotes too, for an attribute) with the
    control characters but tab and newline visible (an ESC in a query text reached the page)."""
    return visible_controls(html.escape(str(text), quote=quote), keep="\n\t")
