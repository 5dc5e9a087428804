"""The base models of method payloads: closed all the way down (an unknown field is an
error, nested too) and written back exactly as the method computed them.

- :class:`Payload`: a method's result body. Its fields are declared; an optional field
  marked :func:`absent` is left out of results file when the run did not compute it
  (instead of being written as null), so a payload reads back to the same bytes.
- :class:`Record`: a nested group of figures; every field it was not given stays out of
  the JSON.
- :class:`DetailFile`: per-item or per-query records, written as JSONL beside
  results file; results file names the file and its line count. The rows travel with
  the payload in memory and are streamed from the file once the run is loaded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_serializer, model_validator

from judgekit.core.jsontypes import JSONObject
from judgekit.core.textio import clean, json_loads, jsonl_line

M = TypeVar("M", bound=BaseModel)

__all__ = ["AgreementFigures", "DetailFile", "Ensemble", "Figures", "Json", "Payload", "Rate",
           "Record", "Scores", "absent"]

# One row of a JSONL detail file (an item, a query with its replicas) as it is read back.
Json = JSONObject

_ABSENT = "judgekit_absent"


def absent(default: Any = None) -> Any:
    """An optional field left out of the JSON when it was not set (a figure a run
    computes only when its data allows)."""
    return Field(default, json_schema_extra={_ABSENT: True})


def _drop_unset(model: BaseModel, data: JSONObject, only_marked: bool) -> JSONObject:
    fields = type(model).model_fields
    keep = model.model_fields_set
    out = {}
    for k, v in data.items():
        info = fields.get(k)
        marked = info is not None and isinstance(info.json_schema_extra, dict) and \
            info.json_schema_extra.get(_ABSENT)
        if k in keep or (only_marked and not marked):
            out[k] = v
    return out


class Figures(BaseModel):
    """A closed group of figures whose fields are written even when null, except those
    marked :func:`absent` (written only when set)."""

    model_config = ConfigDict(extra="forbid")

    @model_serializer(mode="wrap")
    def _serialise(self, handler: Callable[[Any], JSONObject]) -> JSONObject:
        return _drop_unset(self, handler(self), only_marked=True)


class Payload(Figures):
    """A method's payload (see :class:`Figures`). Built from what a method computed
    (``Payload(field=value, ...)``): numbers become plain JSON (numpy scalars and arrays
    as Python numbers and lists, NaN and infinities as null) and a list given for a
    :class:`DetailFile` field becomes that detail's records."""

    @model_validator(mode="before")
    @classmethod
    def _computed(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        details = _detail_fields(cls)
        out: dict[str, Any] = {}
        for k, v in data.items():
            if k in details and isinstance(v, list):
                out[k] = DetailFile.of(k, v)
            elif isinstance(v, (BaseModel, DetailFile)):
                out[k] = v
            else:
                out[k] = clean(v)
        return out

    def detail_files(self) -> dict[str, DetailFile]:
        """The payload's per-record files, by field name."""
        return {k: v for k, v in self if isinstance(v, DetailFile)}

    def as_json(self) -> Json:
        """The payload as JSON with its detail records inline (what the report layer
        renders from)."""
        doc = self.model_dump(mode="json")
        for name, ref in self.detail_files().items():
            doc[name] = list(ref.rows())
        return doc


class Record(BaseModel):
    """A closed group of figures inside a payload; only the fields it was given are
    written."""

    model_config = ConfigDict(extra="forbid")

    @model_serializer(mode="wrap")
    def _serialise(self, handler: Callable[[Any], JSONObject]) -> JSONObject:
        return _drop_unset(self, handler(self), only_marked=False)


class DetailFile(BaseModel):
    """Where a run's per-query or per-item records are: a JSONL file beside results file.
    In memory the records travel with it (:meth:`of`); a loaded run streams them from
    the file."""

    model_config = ConfigDict(extra="forbid")
    file: str
    count: int
    _rows: list[Json] | None = PrivateAttr(default=None)
    _source: Callable[[str], Iterator[Json]] | None = PrivateAttr(default=None)
    _lines: Callable[[], Iterator[str]] | None = PrivateAttr(default=None)
    _without: dict[str, list[Json]] = PrivateAttr(default_factory=dict)

    @classmethod
    def of(cls, name: str, rows: Iterable[Json]) -> DetailFile:
        """The records ``rows`` of detail ``name`` (written as ``name.jsonl``)."""
        held = list(rows)
        ref = cls(file=f"{name}.jsonl", count=len(held))
        ref._rows = held
        return ref

    @classmethod
    def spilled(cls, name: str, path: Path, count: int) -> DetailFile:
        """Detail ``name`` whose ``count`` records a run streamed to the JSONL ``path`` as
        they were made (none held in memory); the file goes when this record does."""
        import weakref

        ref = cls(file=f"{name}.jsonl", count=count)

        def lines() -> Iterator[str]:  # the run wrote them as the folder's lines
            with open(path, encoding="utf-8") as fh:
                yield from (line for line in fh if line.strip())

        def read(_: str) -> Iterator[Json]:
            return (json_loads(line) for line in lines())
        ref._source = read
        ref._lines = lines
        weakref.finalize(ref, _unlink, str(path))
        return ref

    def lines(self) -> Iterator[str]:
        """The records as the folder's JSONL lines (a spill file's are copied as they
        are: they were written that way)."""
        if self._lines is not None:
            return self._lines()
        return (jsonl_line(r) for r in self.rows())

    def attach(self, source: Callable[[str], Iterator[Json]]) -> None:
        """Stream the records from ``source(file)`` (a loaded run's folder)."""
        self._source = source
        self._without.clear()

    def rows_without(self, key: str) -> list[Json]:
        """Every record without its ``key`` field (e.g. the bulky nested records a report
        and its figures both skip), read once: the records of a detail never change."""
        if key not in self._without:
            self._without[key] = [{k: v for k, v in r.items() if k != key}
                                  for r in self.rows()]
        return self._without[key]

    def drop_views(self) -> None:
        """Let go of the rows :meth:`rows_without` kept (once the report is built)."""
        self._without.clear()

    def records(self, model: type[M]) -> Iterator[M]:
        """The records as ``model`` (each validated as it is read): a detail's readers
        take its rows typed, not as dicts."""
        return (model.model_validate(r) for r in self.rows())

    def rows(self) -> Iterator[Json]:
        if self._rows is not None:
            return iter(self._rows)
        if self._source is not None:
            return self._source(self.file)
        return iter(())

    @property
    def in_memory(self) -> bool:
        return self._rows is not None


class Rate(Record):
    """A share with its interval and n (``clusters``: independent units, when fewer)."""

    rate: float | None = None
    ci: list[float] | None = None
    n: int = 0
    clusters: int | None = None
    p_value: float | None = None


def _detail_fields(model: type[BaseModel]) -> set[str]:
    """The fields of ``model`` that hold a :class:`DetailFile`."""
    import typing

    out = set()
    for name, info in model.model_fields.items():
        ann = info.annotation
        if ann is DetailFile or DetailFile in typing.get_args(ann):
            out.add(name)
    return out


class AgreementFigures(Record):
    """Agreement of a judge with a reference (judgekit.stats.agreement.agreement)."""

    n: int
    percent: float | None = None
    kappa: float | None = None
    alpha: float | None = None
    ac: float | None = None
    prevalence: float | None = None
    majority_baseline: float | None = None
    cis: dict[str, list[float] | None] | None = None
    level: float | None = None
    undefined: dict[str, str] | None = None
    note: str | None = None  # why the intervals may not hold (few items)


class Ensemble(Record):
    """Agreement among several judges and their majority (judgekit's ensemble baseline)."""

    n_items: int | None = None
    judges: list[str] | None = None
    pairs: list[EnsemblePair] | None = None
    mean_kappa: float | None = None
    mean_percent_agreement: float | None = None
    majority: Scores | None = None
    average: Scores | None = None


class EnsemblePair(Record):
    judges: list[str]
    kappa: float | None = None
    percent_agreement: float | None = None


class Scores(Record):
    accuracy: float | None = None
    f1: float | None = None


Ensemble.model_rebuild()


def _unlink(path: str) -> None:
    import contextlib
    import os

    with contextlib.suppress(OSError):  # already gone
        os.unlink(path)
