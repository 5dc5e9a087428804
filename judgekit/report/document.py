"""A report as data: headings, paragraphs and tables, rendered to Markdown, HTML or CSV.

Methods describe their report with these blocks (judgekit/report/<method>.py builds
them from a :class:`~judgekit.core.results.RunResult`); the renderers here are the only
place Markdown or HTML text is made, so the HTML never re-parses Markdown.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Any, Union

__all__ = ["Doc", "Heading", "Para", "Table", "cell", "to_csv", "to_html", "to_markdown"]


@dataclass
class Heading:
    level: int
    text: str


@dataclass
class Para:
    text: str
    kind: str = ""  # "warning": a claim the reader must not take at face value


@dataclass
class Table:
    header: list[str]
    rows: list[list[Any]]
    name: str = ""  # the CSV file name stem (tables with a name are exported)


Block = Union[Heading, Para, Table]


@dataclass
class Doc:
    title: str
    blocks: list[Block] = field(default_factory=list)

    def h(self, level: int, text: str) -> Doc:
        self.blocks.append(Heading(level, text))
        return self

    def p(self, text: str) -> Doc:
        if text:
            self.blocks.append(Para(text))
        return self

    def warn(self, text: str) -> Doc:
        """A warning shown before what it qualifies (a headline marked unreliable)."""
        if text:
            self.blocks.append(Para(text, "warning"))
        return self

    def table(self, header: list[str], rows: list[list[Any]], name: str = "") -> Doc:
        self.blocks.append(Table(header, rows, name))
        return self

    def tables(self) -> list[Table]:
        return [b for b in self.blocks if isinstance(b, Table)]


def cell(v: Any) -> str:
    """How a table cell prints: n/a for missing, three decimals for floats."""
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


_CODE = re.compile(r"(`[^`\n]+`)")


def md_text(text: str, *, one_line: bool = False) -> str:
    """Text as Markdown shows it, whatever it holds: outside `code` spans (which
    Markdown renders literally) the characters HTML and links are made of (& < > [ ])
    are escaped, so judged text, ids and reasons cannot open a tag, a comment that
    hides the rows after it, or a link; ``one_line`` (headings, table cells) turns
    line breaks into spaces."""
    out = []
    for part in _CODE.split(text):
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append(part)
        else:
            out.append(html.escape(part, quote=False).replace("[", "\\[")
                       .replace("]", "\\]"))
    joined = "".join(out)
    return re.sub(r"[\r\n]+", " ", joined) if one_line else joined


def _md_cell(v: Any) -> str:
    return md_text(cell(v), one_line=True).replace("|", "\\|")


def to_markdown(doc: Doc) -> str:
    parts = []
    for b in doc.blocks:
        if isinstance(b, Heading):
            parts.append("#" * b.level + " " + md_text(b.text, one_line=True))
        elif isinstance(b, Para):
            text = md_text(b.text)
            parts.append(f"> **Warning:** {text}" if b.kind == "warning" else text)
        else:
            lines = ["| " + " | ".join(_md_cell(h) for h in b.header) + " |",
                     "|" + "---|" * len(b.header)]
            lines += ["| " + " | ".join(_md_cell(v) for v in r) + " |" for r in b.rows]
            parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def _inline(text: str) -> str:
    """Escaped text with `code` spans."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def to_html(doc: Doc) -> str:
    out = []
    for b in doc.blocks:
        if isinstance(b, Heading):
            n = min(max(b.level, 1), 6)
            out.append(f"<h{n}>{_inline(b.text)}</h{n}>")
        elif isinstance(b, Para) and b.kind == "warning":
            out.append(f"<p class='warning' role='alert'><b>Warning:</b> {_inline(b.text)}</p>")
        elif isinstance(b, Para):
            out.append(f"<p>{_inline(b.text)}</p>")
        else:
            head = "".join(f"<th>{_inline(c)}</th>" for c in b.header)
            body = "".join("<tr>" + "".join(f"<td>{_inline(cell(v))}</td>" for v in r)
                           + "</tr>" for r in b.rows)
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    return "\n".join(out)


def to_csv(table: Table) -> str:
    from judgekit.recorded.csvsafe import rows_text

    return rows_text(table.header, table.rows)
