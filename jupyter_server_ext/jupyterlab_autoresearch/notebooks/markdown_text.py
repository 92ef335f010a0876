"""Markdown that no notebook renderer reads as maths, as src/core/views/markdown-text.ts writes it.

JupyterLab, nbconvert and GitHub all find TeX between dollar signs, and `\\$` is no escape in
JupyterLab (marked turns it into a `$` that MathJax then pairs). A literal dollar is written
`<span>&#36;</span>`: no `$` to a parser of the markdown source, and an element that cuts MathJax's
run of text. The reasoning, and the tests in all three renderers, are in src/core/views/markdown-text.ts.
"""

from __future__ import annotations

import re

LITERAL_DOLLAR = "<span>&#36;</span>"
LITERAL_BACKSLASH = "<span>&#92;</span>"

# ASCII punctuation, which CommonMark lets a backslash escape.
_PUNCTUATION = re.compile(r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~]""")
_ESCAPED = re.compile(r"""\\([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])""")


def _literal(match: re.Match[str]) -> str:
    c = match.group(0)
    return LITERAL_DOLLAR if c == "$" else LITERAL_BACKSLASH if c == "\\" else "\\" + c


def markdown_literal(text: str) -> str:
    """Text a model, a training run or an error wrote, as markdown that shows it as written: no
    emphasis, links, HTML or code from its punctuation, no maths from its `$` or backslashes."""
    return _PUNCTUATION.sub(_literal, text)


def markdown_plain(markdown: str) -> str:
    """The generated markdown as plain text (a bundle's text/plain): bold and code marks gone,
    literal dollars, backslashes and escaped punctuation shown as the characters they stand for."""
    text = _ESCAPED.sub(r"\1", re.sub(r"(?<!\\)(\*\*|`)", "", markdown))
    # After the escapes: a backslash these stand for escapes nothing.
    return text.replace(LITERAL_DOLLAR, "$").replace(LITERAL_BACKSLASH, "\\")
