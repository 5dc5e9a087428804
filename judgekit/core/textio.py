"""Reading the user's text files: one clear line naming the file, line and byte when a
file is not UTF-8, instead of a traceback."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from pydantic_core import from_json

from judgekit.core.errors import DataError
from judgekit.core.jsontypes import JSONObject


def json_loads(text: str) -> Any:
    """``json.loads(text)``, parsed by pydantic-core's JSON reader: half the time of
    ``json.loads`` on cache entries and cassettes, the same values (NaN and Infinity
    included). Text it refuses goes to ``json.loads`` itself, which decides (its errors
    included), as does text it cannot take (a lone surrogate, nesting past its limit)."""
    try:
        return from_json(text)
    except (ValueError, TypeError):
        try:
            return json.loads(text)
        except RecursionError:  # one line for the caller, never a traceback
            raise json.JSONDecodeError(f"nested more than {sys.getrecursionlimit()} "
                                       "levels deep", text[:80], 0) from None


def safe_yaml(text: str) -> Any:
    """``yaml.safe_load``, stricter: a key given twice in one mapping, and nesting
    deeper than the reader can take, are YAML errors (one line each) rather than the
    last value silently winning, or a traceback."""
    import yaml

    try:
        return yaml.load(text, Loader=_strict_loader())  # noqa: S506 - a SafeLoader
    except RecursionError:
        raise yaml.YAMLError(f"nested more than {sys.getrecursionlimit()} levels deep") \
            from None


@lru_cache(maxsize=1)
def _strict_loader() -> Any:
    import yaml

    class Strict(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                try:
                    key = self.construct_object(key_node, deep=deep)
                    hash(key)
                except Exception:  # noqa: BLE001 - the base class reports it
                    continue
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key!r} appears twice in one mapping (line "
                        f"{key_node.start_mark.line + 1}); keep one", key_node.start_mark)
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    return Strict



def decode(data: bytes, path: str | Path) -> str:
    """``data`` as UTF-8 (a leading byte-order mark is dropped)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DataError(f"{path}: line {line}, column {col}: byte 0x{data[exc.start]:02x} is "
                        "not valid UTF-8; save the file as UTF-8") from None


def read_text(path: str | Path) -> str:
    """The file's text; a missing, unreadable or non-UTF-8 file is a one-line DataError."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    return decode(data, path)


def read_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line of a UTF-8 file, read one line at a time (a
    large JSONL file is never held whole); errors as ``read_text``'s."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below, also when the caller stops
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    with fh:
        for n, raw in enumerate(fh, start=1):
            try:
                text = raw.decode("utf-8-sig" if n == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(f"{path}: line {n}, column {exc.start + 1}: byte "
                                f"0x{raw[exc.start]:02x} is not valid UTF-8; save the file "
                                "as UTF-8") from None
            yield n, text.rstrip("\r\n")


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL file, one per non-blank line, read a line at a time;
    a line that is not JSON, or not an object, is a one-line DataError naming it."""
    return list(iter_jsonl(path))


def iter_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """The objects of :func:`read_jsonl` one at a time (none held after it is given)."""
    from judgekit.core.progress import track

    for n, line in track(read_lines(path), f"reading {Path(path).name}", unit="lines"):
        if not line.strip():
            continue
        try:
            row = json_loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path} line {n}: not JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise DataError(f"{path} line {n}: a JSON object per line is expected, got "
                            f"{type(row).__name__}")
        yield row


def clean(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, np.ndarray):
        return clean(obj.tolist())
    if isinstance(obj, float):
        return None if math.isnan(obj) or math.isinf(obj) else obj
    return obj


def _np_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


def jsonl_line(row: JSONObject) -> str:
    """One JSON line, NaN/inf as null. The fast path dumps directly; only a row holding
    a non-finite float takes the slower cleaning walk. write_text scrubs the result."""
    try:
        return json.dumps(row, sort_keys=True, ensure_ascii=False, allow_nan=False,
                          default=_np_default) + "\n"
    except ValueError:
        return json.dumps(clean(row), sort_keys=True, ensure_ascii=False) + "\n"
