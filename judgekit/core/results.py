"""Typed, versioned run results: :class:`RunResult` ``[P]``, generic over the method's
payload model ``P`` (schema version, method, the resolved config, the seed, one
:class:`CallSummary` shape for every method, typed call failures, the payload).

results file keeps the payload's fields at its top level beside the shared ones, as
schema 1 did; schema 2 is closed all the way down (an unknown field is an error, nested
too). A result holds no file handle and writes nothing: :mod:`judgekit.runs.folder`
writes and reads a run's folder. No timestamps inside: the same seed and cassette give
the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Generic, Literal, Protocol, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    JsonValue,
    PrivateAttr,
    model_serializer,
    model_validator,
)

from judgekit.core.calls import CallSummary, StageCalls
from judgekit.core.frames import frame, headline_rows
from judgekit.core.jsontypes import JSONObject
from judgekit.core.payload import DetailFile, Json, Payload, Record, absent

SCHEMA_VERSION = 2
READABLE_SCHEMAS = (1, 2)

__all__ = ["READABLE_SCHEMAS", "SCHEMA_VERSION", "CallFailure", "CallSummary", "DetailFile",
           "RunResult", "StageCalls"]

P = TypeVar("P", bound=Payload)


class CallFailure(Record):
    """One failed call of a run, with its transcript (a line of failures.jsonl)."""

    stage: str
    key: str
    kind: str
    model: str | None = None
    attempts: int = 0
    error: str | None = None
    source: str | None = None
    transcript: list[dict[str, JsonValue]] | None = None


class _Spec(Protocol):
    """What a result needs of its method's spec (judgekit.core.spec.MethodSpec)."""

    def headline(self, payload: Any, /) -> str: ...  # pragma: no cover


class RunResult(BaseModel, Generic[P]):
    """Fields every method's results share, and the method's payload. A failed run's
    results file says why (``status``, ``error``, ``failed_calls``) and has no payload."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    method: str
    experiment: str | None = None
    seed: int | None = None
    config: dict[str, JsonValue] | None = None
    calls: CallSummary | None = None
    payload: P | None = None
    status: Literal["failed"] | None = absent()
    error: str | None = absent()
    failed_calls: dict[str, int] | None = absent()

    _folder: Path | None = PrivateAttr(default=None)
    _failures: list[CallFailure] | None = PrivateAttr(default=None)
    _settings: Any = PrivateAttr(default=None)
    _spec: Any = PrivateAttr(default=None)
    _unused: list[str] = PrivateAttr(default_factory=list)
    _writer: Callable[[RunResult[Any], Path, bool], Path] | None = PrivateAttr(default=None)
    _reader: Callable[[str], Iterator[Json]] | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _nest_payload(cls, data: Any) -> Any:
        """results file keeps the payload's fields at the top level."""
        if not isinstance(data, dict) or "payload" in data:
            return data
        shared = set(RunResult.model_fields)
        body = {k: v for k, v in data.items() if k not in shared}
        out = {k: v for k, v in data.items() if k in shared}
        if data.get("status") != "failed":
            out["payload"] = body
        elif body:
            out.update(body)  # an unknown field of a failed run: rejected below
        return out

    @model_validator(mode="after")
    def _check_version(self) -> RunResult[P]:
        if self.schema_version not in READABLE_SCHEMAS:
            raise ValueError(f"schema_version {self.schema_version} is not one this judgekit "
                             f"reads ({', '.join(map(str, READABLE_SCHEMAS))}); upgrade "
                             "judgekit")
        return self

    @model_serializer(mode="wrap")
    def _flatten(self, handler: Callable[[Any], JSONObject]) -> JSONObject:
        d = handler(self)
        for k in ("status", "error", "failed_calls"):
            if k not in self.model_fields_set:
                d.pop(k, None)
        body = d.pop("payload", None) or {}
        return {**d, **body}

    # ---- binding (by the pipeline and the folder reader) -------------------------------
    def bind(self, *, spec: Any = None, settings: Any = None,
             failures: list[Json] | None = None, unused: list[str] | None = None,
             folder: Path | None = None,
             writer: Callable[[RunResult[Any], Path, bool], Path] | None = None,
             reader: Callable[[str], Iterator[Json]] | None = None) -> RunResult[P]:
        """Attach what the result knows beyond its JSON: its method's spec and config, the
        run's failed calls and unused cassette entries, its folder, how to write and read
        it. Returns the result."""
        if spec is not None:
            self._spec = spec
        if settings is not None:
            self._settings = settings
        if failures is not None:
            self._failures = [CallFailure.model_validate(f) for f in failures]
        if unused is not None:
            self._unused = list(unused)
        if folder is not None:
            self._folder = folder
        if writer is not None:
            self._writer = writer
        if reader is not None:
            self._reader = reader
            for ref in self.details().values():
                ref.attach(reader)
        return self

    # ---- reading --------------------------------------------------------------------
    @property
    def failures(self) -> list[Json]:
        """Every failed call of the run, with its transcript (failures.jsonl)."""
        if self._failures is not None:
            return [f.model_dump(mode="json") for f in self._failures]
        if self._reader is None:
            return []
        return list(self._reader("failures.jsonl"))

    @property
    def folder(self) -> Path | None:
        """The folder this result was loaded from or saved to (None: in memory only)."""
        return self._folder

    @property
    def settings(self) -> Any:
        """The validated config the result was computed with."""
        return self._settings

    @property
    def spec(self) -> Any:
        """The method's :class:`~judgekit.core.spec.MethodSpec`."""
        return self._spec

    @property
    def unused_cassette_entries(self) -> list[str]:
        """Cassette entries this run did not use (known for runs made in this process)."""
        return list(self._unused)

    def report_json(self) -> Json:
        """The result as JSON with its detail records inline (what report builders that
        read JSON take)."""
        doc = self.model_dump(mode="json")
        for name, ref in self.details().items():
            doc[name] = list(ref.rows())
        return doc

    def details(self) -> dict[str, DetailFile]:
        return self.payload.detail_files() if self.payload is not None else {}

    def detail_names(self) -> list[str]:
        return list(self.details())

    def detail(self, name: str | None = None) -> Iterator[Json]:
        """The per-query / per-item records (in memory, or the JSONL beside results file)."""
        refs = self.details()
        key = name or next(iter(refs), None)
        if key is None or key not in refs:
            return iter(())
        return refs[key].rows()

    def headline(self) -> str:
        """One line for the console (the method's headline)."""
        if self.payload is None or self._spec is None:
            return f"{self.method}: {self.status or 'no payload'}: {self.error or ''}".strip()
        return self._spec.headline(self.payload)

    def detail_frame(self, name: str | None = None) -> Any:
        """The per-item / per-query records as a pandas DataFrame, one row per record:
        nested fields flattened with "." (``evaluator.label``), lists kept as JSON text.
        Needs pandas (``pip install 'judgekit[pandas]'``)."""
        return frame(list(self.detail(name)))

    def to_pandas(self) -> Any:
        """The headline rows as a pandas DataFrame (the method's ``rows`` hook)."""
        return frame(headline_rows(self))

    # ---- writing --------------------------------------------------------------------
    def save(self, out: str | Path, *, overwrite: bool = False) -> Path:
        """Write the run's folder: results file, the detail JSONL files, failures.jsonl,
        figures, report.md and report.html. Returns the folder (also ``.folder`` from
        then on)."""
        if self._writer is None:
            raise RuntimeError("this result was built by hand; write it with "
                               "judgekit.runs.folder.write(result, folder)")
        folder = self._writer(self, Path(out), overwrite)
        if self._folder is None:
            self._folder = folder
        return folder
