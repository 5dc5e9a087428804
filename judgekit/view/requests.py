"""What the viewer's API accepts, typed: each query string and JSON body is read once
through its model here, so a bad value is one 400 line naming the field."""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from judgekit.core.errors import describe_validation, invalid_fields

__all__ = ["LabelBody", "NextQuery", "PageQuery", "ReportQuery", "RowQuery", "RunBody",
           "body_of", "page_query", "parsed"]

M = TypeVar("M", bound=BaseModel)


class _Request(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ReportQuery(_Request):
    """``/report``: a run (``name``) or a `judgekit choose` folder (``choice``)."""

    name: str = ""
    choice: str | None = None


class PageQuery(_Request):
    """``/api/items`` and ``/api/samples``: one page after search, filter and sort."""

    run: str = ""
    offset: int = Field(0, ge=0)
    limit: int = 100
    q: str = ""
    filter: str = ""
    sort: str = ""
    dir: Literal["", "asc", "desc"] = ""

    @property
    def paged(self) -> bool:
        """Whether a page was asked for (else every record, flat)."""
        return bool(self.model_fields_set & {"offset", "limit", "q", "filter", "sort"})


class RowQuery(_Request):
    """``/api/item``: one record, by id or by line number."""

    run: str = ""
    id: str = ""
    row: str | None = None


class NextQuery(_Request):
    """``GET /api/next``: the figures and pending items of a run."""

    run: str = ""
    label_error: str | None = None


class RunBody(_Request):
    """A labelling POST: the run it is about."""

    run: str = Field(min_length=1)
    annotator: str | None = None
    label_error: Any = None


class LabelBody(RunBody):
    """``POST /api/label``: a label for an item (and whether to draw the next)."""

    id: str | None = None
    label: Any = None
    next: bool = True


def parsed(model: type[M], data: Any, why: str | None = None) -> M:
    """``data`` (a query's or a body's fields) as ``model``; else a 400 naming the field
    (or saying ``why``)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise web.HTTPBadRequest(text=why or describe_validation(exc)) from None


def page_query(request: web.Request) -> PageQuery:
    """The page's query; offset and limit that are not whole numbers are one line."""
    try:
        return PageQuery.model_validate(dict(request.query))
    except ValidationError as exc:
        raise web.HTTPBadRequest(
            text="offset and limit must be whole numbers"
            if invalid_fields(exc) & {"offset", "limit"}
            else describe_validation(exc)) from None


async def body_of(request: web.Request, model: type[M]) -> M:
    """A POST's JSON body as ``model``; else a 415 or 400 naming what is wrong."""
    if request.content_type != "application/json":
        raise web.HTTPUnsupportedMediaType(text="send JSON (Content-Type: application/json)")
    try:
        body = await request.json()
    except ValueError:
        raise web.HTTPBadRequest(text="the body is not JSON") from None
    if not isinstance(body, dict):
        raise web.HTTPBadRequest(text="the body needs \"run\"")
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise web.HTTPBadRequest(text="the body needs \"run\"" if "run" in
                                 invalid_fields(exc) else describe_validation(exc)) from None
