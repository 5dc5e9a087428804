"""One registration per dataset: a decorated loader names the dataset, the formats it
reads, its Hugging Face id, its canonical URL and its licence.

    @dataset("arc", formats=("jsonl",), licence="CC BY-SA 4.0",
             url="https://.../ARC-V1-Feb2018.zip", filename="ARC-Challenge-Test.jsonl",
             member="ARC-V1-Feb2018-2/ARC-Challenge/ARC-Challenge-Test.jsonl",
             hf=("allenai/ai2_arc", "ARC-Challenge", "test"), hf_row=_arc_row)
    def load_arc(path: Path) -> list[Query]: ...

Everything that names datasets (config validation, `judgekit data list|fetch`, the
probe's ``pairs_from``, the Hugging Face loader) reads this registry, so adding a dataset
is one decorated function in a module the package imports.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from judgekit.core.errors import DataError
from judgekit.core.jsontypes import JSONObject
from judgekit.core.registry import Registry, did_you_mean

# modules whose decorated loaders register datasets; imported on first lookup
# The package's __init__ imports the modules whose loaders register judgekit's datasets;
# a method's own datasets (e.g. generated ones) register when its package is imported.
MODULES = ("judgekit.data",)


@dataclass(frozen=True)
class Dataset:
    name: str
    load: Callable[..., Any]  # path -> records (queries, judged items, labelled strings)
    formats: tuple[str, ...]  # file formats the loader reads
    licence: str
    kind: str = "questions"  # questions (text + gold), judged (rubric-judged items), ...
    rejected: bool = False  # its questions carry incorrect answers too (pairs can be built)
    description: str = ""
    url: str | None = None  # canonical location `judgekit data fetch` downloads
    filename: str | None = None  # name in the data cache
    member: str | None = None  # a file inside a zip archive at ``url``
    sha256: str | None = None  # pinned checksum of the downloaded file, when known
    hf: tuple[str, str, str] | None = None  # (repo, config, split) on the Hugging Face hub
    hf_row: Callable[[JSONObject, int], Any] | None = None  # one hub row -> one record
    group: str | None = None  # `data fetch GROUP` fetches every member
    extra: JSONObject = field(default_factory=dict)

    @property
    def fetchable(self) -> bool:
        return self.url is not None and self.filename is not None


DATASETS: Registry[Dataset] = Registry("dataset", kind=Dataset, error=DataError)


def dataset(name: str, **fields: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated loader as dataset ``name`` (fields of :class:`Dataset`)."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        doc = (fn.__doc__ or "").strip().split("\n")[0]
        fields.pop("uses", None)  # judgekit <= 0.1: the methods that read it (now ``kind``)
        add(Dataset(name=name, load=fn, description=fields.pop("description", "") or doc,
                    **fields))
        return fn

    return deco


def add(ds: Dataset) -> Dataset:
    """Register ``ds`` (a second registration of one name is an error unless identical)."""
    return DATASETS.add(ds.name, ds)


def _loaded() -> dict[str, Dataset]:
    for module in MODULES:
        importlib.import_module(module)
    return {n: DATASETS.get(n) for n in DATASETS.names()}


def get(name: str) -> Dataset:
    _loaded()
    if name not in DATASETS:
        raise DataError(f"unknown dataset {name!r}{did_you_mean(name, DATASETS.names())}; "
                        f"judgekit knows {', '.join(DATASETS.names())} (`judgekit data list`)")
    return DATASETS.get(name)


def all_datasets(kind: str | None = None) -> list[Dataset]:
    """Every registered dataset, or those of one ``kind``, in registration order."""
    return [d for d in _loaded().values() if kind is None or d.kind == kind]


def names(kind: str | None = None) -> list[str]:
    return [d.name for d in all_datasets(kind)]


def groups() -> dict[str, list[str]]:
    """Groups `data fetch` fetches at once: group name -> member datasets."""
    out: dict[str, list[str]] = {}
    for d in all_datasets():
        if d.group:
            out.setdefault(d.group, []).append(d.name)
    return out
