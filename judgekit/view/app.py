"""The viewer's routes (aiohttp.web, bound to 127.0.0.1).

Pages: ``/`` the run list; ``/run?name=`` a run's sample grid and transcripts;
``/report?name=`` its report; ``/compare?a=&b=`` two runs on the same items;
``/cards?run=&run=`` judge cards side by side; ``/label?name=`` the labelling page.
API (JSON): ``/api/runs``, ``/api/items?run=`` (``&offset=&limit=&q=&filter=&sort=``: one
page), ``/api/samples?offset=&limit=`` (every run's items), ``/api/item?run=&id=|row=``,
``/api/next?run=`` (read only; ``POST /api/next`` draws the next batch), ``POST
/api/label`` and ``POST /api/undo``.

Requests whose Host is not this server's loopback address are refused (a web page
elsewhere cannot reach it through DNS rebinding), and POST bodies must be JSON (a
cross-site form cannot send them). Every text from runs is escaped where it lands:
Jinja's autoescape in server pages (``view/templates``), ``textContent`` in the static
pages' scripts.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from pathlib import Path
from typing import Any

from aiohttp import web

from judgekit.core.errors import JudgekitError
from judgekit.core.jsontypes import JSONObject
from judgekit.core.label_error import parse_label_error
from judgekit.view import background, pages
from judgekit.view import runs as runmod
from judgekit.view.requests import (
    LabelBody,
    NextQuery,
    ReportQuery,
    RowQuery,
    RunBody,
    body_of,
    page_query,
    parsed,
)

STATIC = Path(__file__).with_name("static")
TEMPLATES = Path(__file__).with_name("templates")
ROOT: web.AppKey[Path] = web.AppKey("root", Path)
STYLE = ("body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}"
         "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;"
         "text-align:left;vertical-align:top}th{background:#f3f3f3}a{color:#0645ad}")


_PAGES: Any = None


def _render(template: str, **context: Any) -> web.Response:
    """A server page from its Jinja template (autoescaped: every text from runs lands
    escaped)."""
    global _PAGES
    if _PAGES is None:
        from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

        _PAGES = Environment(loader=FileSystemLoader(str(TEMPLATES)),
                             autoescape=select_autoescape(default=True, default_for_string=True),
                             undefined=StrictUndefined)
    doc = _PAGES.get_template(template).render(**context)
    return web.Response(text=doc, content_type="text/html",
                        headers={"Content-Security-Policy": "default-src 'self'; "
                                 "style-src 'unsafe-inline'; img-src 'self' data:"})


async def index(request: web.Request) -> web.Response:
    root = request.app[ROOT]
    found = await asyncio.to_thread(runmod.discover, root)
    picked = await asyncio.to_thread(runmod.choices, root)
    return _render("index.html.j2", title="judgekit runs", root=root.name or str(root),
                   runs=found, choices=picked)


def _run(request: web.Request, key: str = "name") -> runmod.Run:
    name = request.query.get(key)
    if not name:
        raise web.HTTPBadRequest(text=f"give ?{key}=RUN")
    try:
        return runmod.find(request.app[ROOT], name)
    except JudgekitError as exc:
        raise web.HTTPNotFound(text=str(exc)) from None


async def report(request: web.Request) -> web.StreamResponse:
    asked = parsed(ReportQuery, dict(request.query))
    if asked.choice is not None:  # a `judgekit choose` folder's report
        try:
            folder = runmod.find_choice(request.app[ROOT], asked.choice).folder
        except JudgekitError as exc:
            raise web.HTTPNotFound(text=str(exc)) from None
    else:
        folder = _run(request).folder
    path = folder / "report.html"
    if not path.is_file():
        raise web.HTTPNotFound(text=f"{folder.name} has no report.html")
    if not runmod.inside(request.app[ROOT], path):
        raise web.HTTPForbidden(text=f"{folder.name}/report.html leads outside the served "
                                "folder: not served")
    # a copied run's report is not trusted: sandboxed, its scripts run in an origin of
    # their own and cannot reach the API (POSTs need a preflight nobody answers)
    return web.FileResponse(path, headers={"Content-Type": "text/html; charset=utf-8",
                                           "Content-Security-Policy": "sandbox allow-scripts"})


def _static(name: str) -> Any:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.FileResponse(STATIC / name,
                                headers={"Content-Type": "text/html; charset=utf-8",
                                         "Content-Security-Policy": "default-src 'self'; "
                                         "script-src 'self' 'unsafe-inline'; "
                                         "style-src 'unsafe-inline'"})
    return handler


async def api_runs(request: web.Request) -> web.Response:
    found = await asyncio.to_thread(runmod.discover, request.app[ROOT])
    return web.json_response([{k: v for k, v in r._asdict().items() if k != "folder"}
                              for r in found])


async def api_items(request: web.Request) -> web.Response:
    run = _run(request, "run")
    query = page_query(request)
    if query.paged:  # one page
        try:
            got_page = await asyncio.to_thread(
                pages.page, runmod.item_file(run), runmod.labels_by_item(run.folder),
                offset=query.offset, limit=query.limit, q=query.q, show=query.filter,
                sort=query.sort, descending=query.dir == "desc")
        except JudgekitError as exc:
            raise web.HTTPBadRequest(text=str(exc)) from None
        return web.json_response({"run": run.name, "method": run.method,
                                  "labelable": run.labelable, **got_page.model_dump()},
                                 dumps=_dumps)
    got = await asyncio.to_thread(runmod.items, run)
    columns = list(dict.fromkeys(k for row in got[:2000] for k in row))
    return web.json_response({"run": run.name, "method": run.method, "columns": columns,
                              "items": got}, dumps=_dumps)


async def api_samples(request: web.Request) -> web.Response:
    """One page of the sample grid across every run under the folder (``_run`` names
    each row's run)."""
    query = page_query(request)
    if query.filter not in pages.FILTERS:
        raise web.HTTPBadRequest(text=f"filter {query.filter!r}: use one of "
                                 f"{', '.join(f for f in pages.FILTERS if f)}")

    def build() -> JSONObject:
        found = runmod.discover(request.app[ROOT])
        sources = [(r.name, runmod.item_file(r)) for r in found]
        labels = {r.name: runmod.labels_by_item(r.folder) for r in found}
        return pages.page_many(sources, labels, offset=query.offset, limit=query.limit,
                               q=query.q, show=query.filter).model_dump()

    got = await _off_loop(build)
    return web.json_response(got, dumps=_dumps)



async def api_item(request: web.Request) -> web.Response:
    run = _run(request, "run")
    asked = parsed(RowQuery, dict(request.query))
    item, number = asked.id, asked.row
    if number is not None:  # by line number: exact, whatever the ids look like
        if not number.isdigit():
            raise web.HTTPBadRequest(text="row must be a line number (0, 1, ...)")
        row = await asyncio.to_thread(pages.record, runmod.item_file(run), row=int(number))
        item = number
    else:
        row = await asyncio.to_thread(pages.record, runmod.item_file(run), item=item)
    if row is None:
        raise web.HTTPNotFound(text=f"no item {item!r} in {run.name}")
    calls = await asyncio.to_thread(runmod.transcripts, run, request.app[ROOT], row)
    return web.json_response({"item": row, "transcripts": calls}, dumps=_dumps)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, default=str)


_SOURCES_LOCK = threading.Lock()
_SOURCES: dict[Path, tuple[tuple[Any, ...], Any]] = {}  # a run's labelling source, kept


def _source_of(folder: Path) -> Any:
    """The run's labelling source, read once and kept while its files are unchanged (a
    label POST on 100,000 items re-read them all: a second of every request)."""
    from judgekit.labelling.sources import label_source

    def stamp(p: Path) -> tuple[int, int] | None:
        try:
            st = p.stat()
        except OSError:
            return None
        return st.st_size, st.st_mtime_ns

    from judgekit.runs.names import RESULTS

    key = tuple(stamp(folder / n) for n in (RESULTS, *sorted(
        p.name for p in folder.glob("*.jsonl") if p.name != "labels.jsonl")))
    got = _SOURCES.get(folder)
    if got is not None and got[0] == key:
        return got[1]
    src = label_source(folder)
    with _SOURCES_LOCK:  # labelling requests read sources in worker threads
        while len(_SOURCES) >= 8:
            _SOURCES.pop(next(iter(_SOURCES)))
        _SOURCES[folder] = (key, src)
    return src


def _label_source(request: web.Request, name: str) -> Any:
    try:
        run = runmod.find(request.app[ROOT], name)
        src = _source_of(run.folder)
        runmod.confined(request.app[ROOT], src.labels_path, "the labels file")
        return src
    except JudgekitError as exc:
        raise web.HTTPBadRequest(text=str(exc)) from None


def _status(request: web.Request, src: Any, propose: bool,
            label_error: object = None) -> JSONObject:
    """The session's figures (and next item) under the labels file's own settings; a
    ``label_error`` given (a rate or "repeats") overrides the recorded one."""
    from judgekit.analysis.source import derived
    from judgekit.labelling import session

    got = session.recorded(src)  # the labels file's own settings
    err = got.label_error if label_error in (None, "") else \
        parse_label_error(label_error)
    st = session.propose(src, seed=got.seed, target_width=got.target_width,
                         level=got.level, which=got.which, design=got.design,
                         label_error=err) if propose else \
        session.estimate(src, got.target_width, got.level, got.which, got.design, err,
                         got.seed)
    out = st.as_json()
    index = derived(src).by_id
    return {**out, "next": [index[p.id].fields() for p in st.pending][:1],
            "shape": src.shape}


async def _off_loop(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` in a worker thread; a judgekit error is the request's 400."""
    try:
        return await asyncio.to_thread(fn, *args)
    except JudgekitError as exc:
        raise web.HTTPBadRequest(text=str(exc)) from None


async def _labelling(fn: Any) -> Any:
    """A labelling request's ``fn()`` off the loop; facts built apart wait meanwhile."""
    with background.foreground():
        return await _off_loop(fn)


async def api_next(request: web.Request) -> web.Response:
    """GET: the figures and the items already pending (reads change nothing); POST
    {"run"}: the same after drawing the next batch when none is pending."""
    if request.method == "POST":
        body = await body_of(request, RunBody)
        name, err = body.run, body.label_error
    else:
        asked = parsed(NextQuery, dict(request.query))
        name, err = asked.run, asked.label_error

    def work() -> JSONObject:  # the run's source is read off the loop too
        return _status(request, _label_source(request, name), request.method == "POST", err)

    return web.json_response(await _labelling(work), dumps=_dumps)


async def api_label(request: web.Request) -> web.Response:
    from judgekit.labelling import session

    body = await body_of(request, LabelBody)

    def work() -> JSONObject:
        src = _label_source(request, body.run)
        if body.id is None or "label" not in body.model_fields_set:
            raise web.HTTPBadRequest(text="the body needs \"id\" and \"label\"")
        session.add_label(src, body.id, body.label, body.annotator or "anonymous")
        return _status(request, src, body.next, body.label_error)

    return web.json_response(await _labelling(work), dumps=_dumps)


async def api_undo(request: web.Request) -> web.Response:
    from judgekit.analysis.source import derived
    from judgekit.labelling import session

    body = await body_of(request, RunBody)

    def work() -> JSONObject:
        src = _label_source(request, body.run)
        gone = session.undo(src, body.annotator or "")
        out = {**_status(request, src, False), "undone": gone}
        if gone is not None:
            by_id = derived(src).by_id
            out = {**out, "next": [by_id[gone].fields()] if gone in by_id else []}
        return out

    return web.json_response(await _labelling(work), dumps=_dumps)


async def cards(request: web.Request) -> web.Response:
    from judgekit.analysis.card import build

    names = request.query.getall("run", [])
    if not names:
        raise web.HTTPBadRequest(text="tick one or more probe, audit or verdicts runs")
    built: list[tuple[str, Any]] = []
    for n in names:
        run = runmod.find(request.app[ROOT], n)
        try:
            built.append((n, await asyncio.to_thread(build, [run.folder])))
        except JudgekitError as exc:
            built.append((n, str(exc)))
    keys: dict[str, str] = {}
    for _, c in built:
        for r in [] if isinstance(c, str) else c.rows:
            keys.setdefault(f"{r.judge or ''}|{r.key}", r.measure)
    heads = [(n, c if isinstance(c, str) else c.judge) for n, c in built]
    decisions = [{"run": n, "judge": judge, "use": use, "decision": d.decision,
                  "margin": f"{d.margin:g}", "interval": _ci(d.interval), "n": d.n,
                  "labels_needed": d.labels_needed, "reason": d.reason}
                 for n, c in built if not isinstance(c, str)
                 for judge, got in c.by_judge.items()
                 for use, d in got.decisions.items()]
    rows = []
    for key, measure in keys.items():
        cells: list[JSONObject | None] = []
        for _, c in built:
            hit = None if isinstance(c, str) else next(
                (r for r in c.rows if f"{r.judge or ''}|{r.key}" == key), None)
            cells.append(None if hit is None else {
                "value": _fmt(hit.estimate), "ci": _ci(hit.ci), "n": hit.n,
                "decision": hit.decision or ""})
        rows.append((measure, cells))
    return _render("cards.html.j2", title="judge cards", heads=heads, rows=rows,
                   decisions=decisions)


def _fmt(v: Any) -> str:
    return "" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)


def _ci(ci: Any) -> str:
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""


@web.middleware
async def total(request: web.Request, handler: Any) -> web.StreamResponse:
    """Every failure is a 4xx with one line, and the server stays up: a judgekit error
    says what to fix; anything else (a NUL byte in a name, a body nested too deep, a
    torn file) is named by its kind."""
    try:
        with background.serving():  # background facts wait for a quiet server
            return await handler(request)
    except web.HTTPException:
        raise
    except JudgekitError as exc:
        raise web.HTTPBadRequest(text=str(exc).splitlines()[0] if str(exc) else
                                 type(exc).__name__) from None
    except Exception as exc:  # noqa: BLE001 - the one place that turns anything into a 4xx
        first = (str(exc).splitlines() or [""])[0][:200]
        raise web.HTTPBadRequest(text=f"cannot answer this request ({type(exc).__name__}"
                                 f"{': ' + first if first else ''})") from None


@web.middleware
async def local_only(request: web.Request, handler: Any) -> web.StreamResponse:
    host = (request.host or "").rsplit(":", 1)[0].strip("[]")
    if host not in ("127.0.0.1", "localhost"):
        raise web.HTTPForbidden(text="judgekit view answers requests to 127.0.0.1 only")
    return await handler(request)


def make_app(root: Path) -> web.Application:
    app = web.Application(middlewares=[local_only, total], client_max_size=1 << 20)
    app[ROOT] = root
    app.router.add_get("/", index)
    app.router.add_get("/run", _static("run.html"))
    app.router.add_get("/samples", _static("run.html"))  # the grid across every run
    app.router.add_get("/compare", _static("compare.html"))
    app.router.add_get("/label", _static("label.html"))
    app.router.add_get("/report", report)
    app.router.add_get("/cards", cards)
    app.router.add_get("/api/runs", api_runs)
    app.router.add_get("/api/items", api_items)
    app.router.add_get("/api/samples", api_samples)
    app.router.add_get("/api/item", api_item)
    app.router.add_get("/api/next", api_next)
    app.router.add_post("/api/next", api_next)
    app.router.add_post("/api/label", api_label)
    app.router.add_post("/api/undo", api_undo)
    return app


def serve(root: Path, port: int, open_browser: bool = True) -> None:
    """Serve until Ctrl-C, on 127.0.0.1 only. The labelling modules are imported before
    the first request rather than during it (a person's first label waited for them)."""
    import judgekit.analysis.label_terms  # noqa: F401

    async def main() -> None:
        runner = web.AppRunner(make_app(root), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", port)
        await site.start()
        bound = runner.addresses[0][1] if runner.addresses else port  # port 0: the OS's
        url = f"http://127.0.0.1:{bound}/"
        print(f"judgekit view: {len(runmod.discover(root))} run(s) under {root} at {url} "
              "(Ctrl-C stops)", flush=True)
        if open_browser:
            import webbrowser

            webbrowser.open(url)
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    try:
        asyncio.run(main())
    except OSError as exc:
        from judgekit.core.errors import ConfigError

        raise ConfigError(f"--port {port}: cannot listen on 127.0.0.1 ({exc.strerror}); "
                          "choose another port") from None
    sys.stdout.flush()
