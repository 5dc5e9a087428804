"""Cassette entries as a reader sees them (the viewer's transcripts): typed and lenient,
so an entry of another version is read for what it has and one that is not an entry is
passed over. The client reads and writes cassettes through judgekit.llm.cassette."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = ["RecordedEntry", "RecordedIdentity", "RecordedResponse", "recorded_entries"]


class RecordedTemplate(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str | None = None


class RecordedIdentity(BaseModel):
    """What a reader (the viewer) takes from an entry's identity; the rest rides along."""

    model_config = ConfigDict(extra="allow")
    model: str | None = None
    messages: list[Any] = Field(default_factory=list)
    template: RecordedTemplate | None = None

    def text(self) -> str:
        """The messages' contents, joined (what an item's text is looked for in)."""
        return " ".join(str(m.get("content", "")) for m in self.messages
                        if isinstance(m, dict))


class RecordedResponse(BaseModel):
    model_config = ConfigDict(extra="allow")
    text: str | None = None
    parsed: Any = None
    error: str | None = None
    usage: dict[str, Any] | None = None


class RecordedEntry(BaseModel):
    """A cassette entry as a reader sees it (lenient: an entry of another version is
    read for what it has)."""

    model_config = ConfigDict(extra="allow")
    identity: RecordedIdentity = Field(default_factory=RecordedIdentity)
    response: RecordedResponse = Field(default_factory=RecordedResponse)


def recorded_entries(doc: Any) -> list[RecordedEntry]:
    """The entries of a cassette document (``{"entries": [...]}``) a reader can use; an
    entry that is not one is passed over, not fatal to the others."""
    raw = doc.get("entries") if isinstance(doc, dict) else None
    out = []
    for e in raw if isinstance(raw, list) else []:
        try:
            out.append(RecordedEntry.model_validate(e))
        except ValidationError:
            continue
    return out
