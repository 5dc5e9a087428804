"""Prompt templates: prompts/*.j2 rendered through one sandboxed Jinja environment.

A template renders to text. A line ``<<<user>>>`` separates the system message
(above) from the user message (below); without it the whole text is the user
message. Judged text must enter as data inside delimiters, e.g. with the
``data`` filter: ``{{ output | data("OUTPUT") }}``.
"""

from __future__ import annotations

import contextvars
import hashlib
import re
from collections.abc import Callable, Hashable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import FileSystemLoader, StrictUndefined, TemplateNotFound, UndefinedError
from jinja2.exceptions import SecurityError, TemplateSyntaxError
from jinja2.runtime import LoopContext, new_context
from jinja2.sandbox import SandboxedEnvironment, safe_range

from judgekit.core.errors import TemplateError
from judgekit.core.resources import resource_dir
from judgekit.llm.identity import canonical_json

USER_MARK = "<<<user>>>"
# Any role marker a template could use: <<<user>>>, <<< system >>>, <<<assistant>>>...
_ROLE_MARK = re.compile(r"<<<\s*(\w+)\s*>>>")


def _neutralise(value: object) -> object:
    """Every value a template prints passes here: judged text cannot open or close a
    message role, whatever marker it carries (``<<<user>>>`` becomes ``<< <user> >>``)."""
    if isinstance(value, str) and "<<<" in value:
        return _ROLE_MARK.sub(lambda m: f"<< <{m.group(1)}> >>", value)
    return value


def _data_block(value: object, name: str = "DATA") -> str:
    text = str(value)
    # The closing delimiter inside the data would end the block early; neutralise it.
    text = text.replace(f"</{name}>", f"</ {name}>")
    return f"<{name}>\n{text}\n</{name}>"


_LOOP_FIELDS = frozenset({"index", "index0", "revindex", "revindex0", "first", "last",
                          "length", "depth", "depth0", "previtem", "nextitem"})


# A render's budget: a template from a user's prompts folder is code, and the sandbox
# stops unsafe operations, not long ones. Steps of range() loops (nested loops count
# every inner range), characters rendered, and the size of a value built with * or **.
STEP_BUDGET = 2_000_000
MAX_RENDER_CHARS = 4_000_000
_STEPS: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("jk_template_steps",
                                                                          default=None)


def _counted_range(*args: int) -> range:
    r = safe_range(*args)  # the sandbox's own limit on one range
    spent = _STEPS.get()
    if spent is not None:
        spent[0] += len(r)
        if spent[0] > STEP_BUDGET:
            raise SecurityError(f"more than {STEP_BUDGET:,} loop steps in one render")
    return r


class _Sandbox(SandboxedEnvironment):
    """The sandbox, with a loop's counters (``loop.index``...) read directly: they are
    plain values the sandbox always allows, and its checks were a fifth of a render;
    and with a budget on loops, repetition and powers."""

    intercepted_binops = frozenset({"*", "**"})

    def getattr(self, obj: Any, attribute: str) -> Any:
        if type(obj) is LoopContext and attribute in _LOOP_FIELDS:
            return getattr(obj, attribute)
        return super().getattr(obj, attribute)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "**":
            if isinstance(right, int) and abs(right) > 1000 and \
                    isinstance(left, int) and abs(left) > 1:
                raise SecurityError(f"a power of {right} is too large to compute")
            return left ** right
        for seq, times in ((left, right), (right, left)):
            if isinstance(seq, (str, list, tuple)) and isinstance(times, int) and \
                    len(seq) * max(times, 0) > MAX_RENDER_CHARS:
                raise SecurityError(f"repeating a value {times:,} times is too large")
        return left * right


class _MarkedLoader(FileSystemLoader):
    """Templates from folders, their ``<<<user>>>`` line replaced by ``mark``."""

    def __init__(self, search: list[str], mark: str) -> None:
        super().__init__(search)
        self.mark = mark

    def get_source(self, environment: Any, template: str
                   ) -> tuple[str, str, Callable[[], bool]]:
        source, filename, uptodate = super().get_source(environment, template)
        return source.replace(USER_MARK, self.mark), filename, uptodate


class TemplateLibrary:
    """Loads and renders templates from a folder through a SandboxedEnvironment."""

    def __init__(self, folder: Path | str | None = None, *,
                 user: Path | str | None = None) -> None:
        """``folder``: the base templates (default: the packaged prompts/). ``user``: a
        folder searched first, so a user's edited copy of a template wins."""
        self.folder = Path(folder) if folder else resource_dir("prompts")
        self.user = Path(user) if user else None
        if self.user is not None and not self.user.is_dir():
            raise TemplateError(f"prompts folder {self.user} not found; create it with "
                                f"`judgekit prompts export {self.user}`")
        self.search = [p for p in (self.user, self.folder) if p is not None]
        import secrets

        # The template's own role marker becomes an unguessable token while rendering;
        # any marker left in the rendered text afterwards came from the data (also
        # from two variables printed side by side, which _neutralise cannot see one at
        # a time) and is neutralised before the token turns back into the marker.
        self._mark = f"\x00jk-{secrets.token_hex(16)}\x00"
        self.env = _Sandbox(
            loader=_MarkedLoader([str(p) for p in self.search], self._mark),
            undefined=StrictUndefined,
            autoescape=False,
            keep_trailing_newline=True,
            trim_blocks=True,
            lstrip_blocks=True,
            finalize=_neutralise,
        )
        self.env.filters["data"] = _data_block
        self.env.globals["range"] = _counted_range
        self._hashes: dict[str, str] = {}
        self._globals: dict[str, dict[str, object]] = {}
        self._memo: dict[Hashable, tuple[list[dict[str, str]], str]] = {}
        self._tries: dict[str, list[int]] = {}  # per template: [memo lookups, hits]

    def resolve(self, name: str) -> Path:
        """The file template ``name`` loads from (the user's folder first)."""
        for folder in self.search:
            if (folder / name).exists():
                return folder / name
        raise TemplateError(f"template {name!r} not found in "
                            f"{' or '.join(str(p) for p in self.search)}")

    def content_hash(self, name: str) -> str:
        if name not in self._hashes:
            self._hashes[name] = hashlib.sha256(self.resolve(name).read_bytes()).hexdigest()[:16]
        return self._hashes[name]

    def names(self) -> list[str]:
        return sorted({p.name for folder in self.search for p in folder.glob("*.j2")})

    def render(self, name: str, variables: Mapping[str, object]) -> list[dict[str, str]]:
        """Render template ``name`` to chat messages (the caller's own copy)."""
        return [dict(m) for m in self.render_keyed(name, variables)[0]]

    def render_keyed(self, name: str, variables: Mapping[str, object]
                     ) -> tuple[list[dict[str, str]], str]:
        """The messages, and their canonical JSON (for the request key). Renders are
        memoised by the variables' values (a query's replicas and a rerun's calls render
        the same prompt many times over). The messages may be shared with the memo: read
        them, never change them (:func:`judgekit.llm.calls.request_for` copies them for
        the provider)."""
        tries = self._tries.setdefault(name, [0, 0])
        key: Hashable | None = None
        # a template whose prompts never repeat (a tagger's: each replica's own answers)
        # is not keyed at all after its trial: keying was pure cost
        if tries[0] < MEMO_TRIAL or tries[1] * 20 >= tries[0]:
            try:
                key = (name, _freeze(variables))
            except TypeError:  # a value that cannot be keyed
                key = None
        if key is None:  # rendered each time
            msgs = self._render(name, variables)
            return msgs, canonical_json(msgs)
        tries[0] += 1
        hit = self._memo.get(key)
        if hit is not None:
            tries[1] += 1
        else:
            if len(self._memo) >= RENDER_MEMO:
                self._memo.clear()
            msgs = self._render(name, variables)
            hit = self._memo[key] = (msgs, canonical_json(msgs))
        return hit

    def _render(self, name: str, variables: Mapping[str, object]) -> list[dict[str, str]]:
        try:
            tmpl = self._template(name)
            # Template.render merges the globals ChainMap into a new dict on every call;
            # a prepared plain dict makes this hot path (cached replay) several times cheaper.
            g = self._globals.get(name)
            if g is None:
                g = self._globals[name] = dict(tmpl.globals)
            ctx = new_context(self.env, tmpl.name, tmpl.blocks, {**g, **variables}, True, g)
            text = _bounded(tmpl.root_render_func(ctx))  # type: ignore[attr-defined]
            text = str(_neutralise(text)).replace(self._mark, USER_MARK)
        except TemplateNotFound as exc:
            raise TemplateError(f"template {name!r} not found in "
                                f"{' or '.join(str(p) for p in self.search)}") from exc
        except UndefinedError as exc:
            raise TemplateError(f"template {name!r}: {exc}; pass that variable") from exc
        except SecurityError as exc:
            raise TemplateError(f"template {name!r} tried an unsafe operation: {exc}") from exc
        except (RecursionError, MemoryError, OverflowError) as exc:
            raise TemplateError(f"template {name!r} cannot be rendered: "
                                f"{_why(exc)}") from None
        return split_messages(text)

    def check(self, name: str, variables: tuple[str, ...] | None = None) -> None:
        """Fail now, before any call is paid, if template ``name`` is missing, does not
        parse, or uses a name that is neither passed (``variables``) nor a global."""
        from jinja2 import meta

        path = self.resolve(name)
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise TemplateError(f"template {path} cannot be read: {exc}") from exc
        try:
            ast = self.env.parse(source, name=name, filename=str(path))
        except TemplateSyntaxError as exc:
            raise TemplateError(f"template {path} line {exc.lineno}: {exc.message}") from exc
        if variables is None:
            return
        unknown = sorted(meta.find_undeclared_variables(ast) - set(variables)
                         - set(self.env.globals))
        if unknown:
            raise TemplateError(f"template {path} uses {', '.join(unknown)}, which the stage "
                                f"does not pass (it passes {', '.join(sorted(variables))})")

    def render_string(self, source: str, variables: Mapping[str, object]) -> str:
        try:
            tmpl = self.env.from_string(source)
            return _bounded(tmpl.root_render_func(tmpl.new_context(dict(variables))))
        except (RecursionError, MemoryError, OverflowError) as exc:
            raise TemplateError(f"template string cannot be rendered: {_why(exc)}") from None
        except SecurityError as exc:
            raise TemplateError(f"template string tried an unsafe operation: {exc}") from exc
        except UndefinedError as exc:
            raise TemplateError(f"template string: {exc}") from exc

    def _template(self, name: str):  # noqa: ANN202 - jinja Template
        try:
            return _compiled(self.env, name)
        except TemplateSyntaxError as exc:
            raise TemplateError(f"template {name!r} line {exc.lineno}: {exc.message}") from exc


def _bounded(parts: Any) -> str:
    """The rendered text, stopped past MAX_RENDER_CHARS characters or STEP_BUDGET loop
    steps (one line, not a render that runs until killed)."""
    token = _STEPS.set([0])
    try:
        out: list[str] = []
        size = 0
        for part in parts:
            size += len(part)
            if size > MAX_RENDER_CHARS:
                raise SecurityError(f"it renders more than {MAX_RENDER_CHARS:,} characters")
            out.append(part)
        return "".join(out)
    finally:
        _STEPS.reset(token)


def _why(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "it recurses too deeply (a macro calling itself?)"
    if isinstance(exc, MemoryError):
        return "it needs more memory than the machine has"
    return f"a number is too large ({exc})"


RENDER_MEMO = 4096  # distinct renders kept (the memo is emptied when it is full)
MEMO_TRIAL = 1024  # renders of a template before a < 5% hit rate stops its memo
_SCALARS = (str, int, float, bool, type(None))


def _freeze(value: object) -> Hashable:
    """A hashable key equal only for values a template renders alike: types are part of
    it (1, 1.0 and True are different keys; so are a list and a tuple)."""
    t = type(value)
    if t in _SCALARS:
        return (t, value)
    if t is dict:  # scalars inline (a stage's variables mostly are): no call for each
        return (dict, tuple([(k, (type(v), v) if type(v) in _SCALARS else _freeze(v))
                             for k, v in value.items()]))  # type: ignore[attr-defined]
    if t is list or t is tuple:
        return (t, tuple([(type(v), v) if type(v) in _SCALARS else _freeze(v)
                          for v in value]))  # type: ignore[attr-defined]
    raise TypeError(f"not memoised: {t.__name__}")


@lru_cache(maxsize=256)
def _compiled(env: SandboxedEnvironment, name: str):  # noqa: ANN202
    return env.get_template(name)


def split_messages(text: str) -> list[dict[str, str]]:
    if USER_MARK in text:
        system, user = text.split(USER_MARK, 1)
        msgs = []
        if system.strip():
            msgs.append({"role": "system", "content": system.strip()})
        msgs.append({"role": "user", "content": user.strip()})
        return msgs
    return [{"role": "user", "content": text.strip()}]
