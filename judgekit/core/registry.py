"""One generic registry for everything pluggable: methods, datasets, recorded formats,
providers and scripted mock judges are each a :class:`Registry` ``[T]``.

Modelled on lm-evaluation-harness's registry (read, not copied): an entry is either an
object registered in this process or a lazy ``"module:attr"`` reference imported on
first lookup; a third-party package adds entries through an entry point group; a second
registration of one name with a different object is refused (a collision check), and an
unknown name is refused with a did-you-mean over the known ones.

    FORMATS: Registry[RecordedFormat] = Registry("recorded format", kind=RecordedFormat)

    @FORMATS.register("inspect")          # decorator form
    def _inspect(...): ...

    FORMATS.add_lazy("parquet", "my_package.formats:PARQUET")
    FORMATS.get("parqeut")  # ConfigError: unknown recorded format 'parqeut'; did
                            # you mean 'parquet'? (known: inspect, parquet)
"""

from __future__ import annotations

import difflib
import importlib
import sys
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar, overload

from judgekit.core.errors import ConfigError

__all__ = ["Registry", "RegistryCollision", "did_you_mean"]

T = TypeVar("T")


class RegistryCollision(ConfigError, ValueError):
    """A second registration of one name with another object."""


def did_you_mean(name: str, known: list[str]) -> str:
    """`` did you mean 'x'?`` for the closest known name, or an empty string."""
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


class Registry(Generic[T]):
    """Named entries of one kind.

    Args:
        what: what an entry is, for messages ("method", "recorded format").
        kind: when given, every entry must be an instance of it (checked on load).
        group: an entry point group whose entries are read once, on the first lookup.
        error: the exception an unknown name raises (a :class:`ConfigError` by default).
    """

    def __init__(self, what: str, *, kind: type | None = None, group: str | None = None,
                 error: type[Exception] = ConfigError) -> None:
        self.what = what
        self.kind = kind
        self.group = group
        self.error = error
        self._loaded: dict[str, T] = {}
        self._lazy: dict[str, str] = {}
        self._plugins_read = group is None

    # ---- adding -------------------------------------------------------------------------
    def add(self, name: str, obj: T, *, replace: bool = False) -> T:
        """Register ``obj`` as ``name``; the same object again is a no-op, another one
        (a built-in's lazy entry included) is a :class:`RegistryCollision` unless
        ``replace`` is True."""
        self._check(name, obj)
        if replace:
            self.remove(name)
        elif self._taken(name, obj):
            raise RegistryCollision(f"{self.what} {name!r} is already registered; pass "
                                    "replace=True to replace it")
        self._loaded[name] = obj
        return obj

    def _taken(self, name: str, obj: T) -> bool:
        """Whether ``name`` holds another object than ``obj``. A lazy entry whose module
        is being imported is the module registering itself."""
        old = self._loaded.get(name)
        if old is not None:
            return old is not obj and old != obj
        where = self._lazy.get(name)
        if where is None:
            return False
        module, _, attr = where.partition(":")
        mod = sys.modules.get(module)
        if mod is None:
            return True
        held = getattr(mod, attr, None)
        return held is not None and held is not obj

    def add_lazy(self, name: str, where: str) -> None:
        """Register ``name`` as ``"module:attr"``, imported on its first lookup."""
        if ":" not in where:
            raise ValueError(f"{self.what} {name!r}: {where!r} is not 'module:attr'")
        old = self._lazy.get(name)
        if (old is not None and old != where) or (name in self._loaded and old is None):
            raise RegistryCollision(f"{self.what} {name!r} is registered twice")
        self._lazy[name] = where

    @overload
    def register(self, name: str, *, replace: bool = False) -> Callable[[T], T]: ...
    @overload
    def register(self, name: T, *, replace: bool = False) -> T: ...

    def register(self, name: Any, *, replace: bool = False) -> Any:
        """A decorator, ``@registry.register("name")``; or ``registry.register(obj)`` for
        an object that carries its own ``name`` (or ``key``). An existing name is a
        :class:`RegistryCollision` unless ``replace`` is True."""
        if isinstance(name, str):
            def deco(obj: T) -> T:
                return self.add(name, obj, replace=replace)
            return deco
        key = getattr(name, "key", None) or getattr(name, "name", None)
        if not isinstance(key, str):
            raise self.error(f"{self.what}: register() takes a name or an object with one, "
                             f"not {type(name).__name__}")
        return self.add(key, name, replace=replace)

    def remove(self, name: str) -> None:
        """Forget ``name`` (tests; a plugin unloading itself)."""
        self._loaded.pop(name, None)
        self._lazy.pop(name, None)

    # ---- reading ------------------------------------------------------------------------
    def names(self) -> list[str]:
        """Every registered name, in registration order (lazy entries included)."""
        self._read_plugins()
        return list(dict.fromkeys([*self._lazy, *self._loaded]))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.names()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def get(self, name: str) -> T:
        """The entry ``name`` (imported if lazy), or the registry's error with a
        did-you-mean."""
        got = self._loaded.get(name)
        if got is not None:
            return got
        self._read_plugins()
        where = self._lazy.get(name)
        if where is None:
            if name in self._loaded:
                return self._loaded[name]
            known = self.names()
            raise self.error(f"unknown {self.what} {name!r}{did_you_mean(name, known)} "
                             f"(known: {', '.join(known) or 'none'})")
        module, _, attr = where.partition(":")
        obj = getattr(importlib.import_module(module), attr)
        self._check(name, obj)
        self._loaded[name] = obj
        return obj

    def items(self) -> list[tuple[str, T]]:
        """Every entry, loaded."""
        return [(n, self.get(n)) for n in self.names()]

    def _check(self, name: str, obj: Any) -> None:
        if self.kind is not None and not isinstance(obj, self.kind):
            raise self.error(f"{self.what} {name!r} is a {type(obj).__name__}, not a "
                             f"{self.kind.__name__}")

    def _read_plugins(self) -> None:
        if self._plugins_read:
            return
        self._plugins_read = True
        assert self.group is not None
        for ep in entry_points(group=self.group):
            try:
                got = ep.load()
            except Exception as exc:  # a broken plugin names itself, it does not hide others
                raise self.error(f"entry point {ep.name} = {ep.value} ({self.group}) "
                                 f"cannot be loaded: {exc}") from exc
            for obj in got if isinstance(got, (list, tuple)) else [got]:
                self.register(obj)

    def __repr__(self) -> str:
        return f"Registry({self.what!r}, {len(self._lazy) + len(self._loaded)} entries)"
