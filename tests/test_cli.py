"""CLI: cache and cassette commands, one-line errors."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from judgekit.cli.commands import app
from judgekit.llm import Client, ClientSettings, Stage
from judgekit.llm.providers import mock
from judgekit.llm.templates import TemplateLibrary

from .conftest import TEST_PROMPTS
from .test_client import GOOD, Answer


def _record(tmp_path):
    cas = tmp_path / "c.json"
    client = Client(ClientSettings(cache_dir=tmp_path / "cache", cassette=cas, progress=False),
                    templates=TemplateLibrary(TEST_PROMPTS),
                    providers={"mock/cli": mock.FunctionProvider(lambda req: GOOD)})
    client.run_sync(Stage("answer", "answer.j2", Answer), {"question": "q"}, model="mock/cli")
    client.run_sync(Stage("answer", "answer.j2", Answer), {"question": "q"}, model="mock/cli")
    client.close()
    return cas


def test_cache_stats_and_clear(tmp_path):
    _record(tmp_path)
    r = CliRunner().invoke(app, ["cache", "stats", "--dir", str(tmp_path / "cache")])
    stats = json.loads(r.output)
    assert stats["entries"] == 1 and stats["last_run_hits"] == 0 and stats["last_run_misses"] == 1
    assert stats["bytes"] > 0
    # not a terminal and no --yes: nothing is deleted, a usage error says what to add
    r = CliRunner().invoke(app, ["cache", "clear", "--dir", str(tmp_path / "cache")])
    assert r.exit_code != 0 and "--yes" in str(r.exception)
    stats = json.loads(CliRunner().invoke(app, ["cache", "stats", "--dir",
                                                str(tmp_path / "cache")]).output)
    assert stats["entries"] == 1
    r = CliRunner().invoke(app, ["cache", "clear", "--yes", "--dir", str(tmp_path / "cache")])
    assert r.exit_code == 0 and "removed" in r.output
    stats = json.loads(CliRunner().invoke(app, ["cache", "stats", "--dir",
                                                str(tmp_path / "cache")]).output)
    assert stats["entries"] == 0


def test_packaged_names_and_registries_in_the_command_line():
    r = CliRunner().invoke(app, ["cassette", "list", "demo"])
    assert r.exit_code == 0 and "tagger.j2" in r.output
    r = CliRunner().invoke(app, ["cassette", "verify", "probe_local"])
    assert r.exit_code == 0, r.output
    from judgekit.core.methods import experiments

    help_text = " ".join(CliRunner().invoke(app, ["schema", "--help"]).output.split())
    for name in experiments():
        assert name in help_text
    run_help = " ".join(CliRunner().invoke(app, ["run", "--help"]).output.split())
    assert "nodata_west_frisian" in run_help and "probe_local" in run_help


def test_cassette_list_and_verify(tmp_path):
    cas = _record(tmp_path)
    r = CliRunner().invoke(app, ["cassette", "list", str(cas)])
    assert "answer.j2" in r.output and "mock/cli" in r.output
    r = CliRunner().invoke(app, ["cassette", "verify", str(cas)])
    assert r.exit_code == 0 and "ok" in r.output
    doc = json.loads(cas.read_text())
    doc["entries"][0]["identity"]["draw"] = 9
    cas.write_text(json.dumps(doc))
    r = CliRunner().invoke(app, ["cassette", "verify", str(cas)])
    assert r.exit_code == 1 and "does not match" in r.output


def test_committed_cassettes_verify():
    from .conftest import ROOT

    files = sorted((ROOT / "cassettes").glob("*.json"))
    if files:
        r = CliRunner().invoke(app, ["cassette", "verify", *map(str, files)])
        assert r.exit_code == 0, r.output


def test_progress_off_a_terminal_prints_plain_lines_with_counts_tokens_and_cost(capsys):
    from judgekit.llm.ledger import Progress, StageStats

    st = StageStats(prompt_tokens=1200, completion_tokens=34, cost_usd=0.0125, cached=2)
    with Progress(True, "tagger", 3, st, interval=0.0) as tick:
        for _ in range(3):
            tick()
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("judgekit: tagger 1/3 calls, 0 s, 1,234 tokens, $0.0125, "
                               "2 cached")
    assert len(lines) == 4 and lines[-1].startswith("judgekit: tagger 3/3 calls")
    with Progress(True, "quick", 3, st, interval=60.0) as tick:  # short: silent
        tick()
    with Progress(False, "off", 3, st, interval=0.0) as tick:
        tick()
        tick(2)
    assert capsys.readouterr().err == ""
    with Progress(True, "replayed", 2050, st, interval=0.0) as tick:  # a chunk at a time
        tick(1024)
        tick(1026)
    lines = capsys.readouterr().err.splitlines()
    assert [ln.split(" calls")[0] for ln in lines] == [
        "judgekit: replayed 1024/2050", "judgekit: replayed 2050/2050",
        "judgekit: replayed 2050/2050"]


def test_progress_on_a_terminal_advances_by_each_ticks_count():
    from judgekit.llm.ledger import Progress, StageStats

    p = Progress(True, "replayed", 2050, StageStats())
    p.tty = True  # as on a terminal: the rich bar
    with p as tick:
        tick(1024)
        tick()
        assert p.bar.tasks[0].completed == 1025
        tick(1025)
        assert p.bar.tasks[0].completed == 2050
