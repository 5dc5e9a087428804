"""`judgekit view`: a local web app (aiohttp's server, on 127.0.0.1 only) over every run
under a folder: the run list, each report, a sample grid, transcripts, two runs side by
side, judge cards side by side and the labelling page. No page loads anything from
outside the machine."""

__all__: list[str] = []
