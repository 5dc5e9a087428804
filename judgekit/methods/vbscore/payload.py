"""The VB-Score case study's payload (closed all the way down)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from judgekit.core.payload import DetailFile, Figures, Payload, Rate, Record, absent


class VBDataset(Figures):
    """One dataset's headline: VB and ES with intervals, accuracy, the test against ES."""

    name: str
    n_queries: int
    replicas: int
    vb: float | None
    vb_ci: list[float | None]
    es: float | None
    es_ci: list[float | None] | None = None
    accuracy: float | None = None
    accuracy_ci: list[float | None] | None = None
    p_value: float | None = None
    reliable: bool = True
    # keyed by alpha, a number in Python (JSON keys are strings: "0.5")
    vb_by_alpha: dict[float, float] | None = None
    vb_ci_by_alpha: dict[float, list[float | None]] | None = None
    t_test_note: str | None = absent()
    queries_excluded: int | None = absent()
    mean_token_entropy: float | None = absent()
    response_diversity: float | None = absent()


class TaggerCheck(Record):
    """The tagger probed like a judge (judgekit.methods.vbscore.selfcheck.tagger_check)."""

    decision: str
    reason: str
    calls: int
    rotated_calls_read: int
    decisive_calls: int
    position_calls: int
    content_calls: int
    position_share: Rate
    content_agreement: Rate | None = None
    position_agreement: Rate | None = None
    placebo_agreement: Rate | None = None


class Stability(Record):
    """How often two replicas agree on the readings of a query."""

    top_reading_agreement: Rate | None = None
    same_readings: Rate | None = None
    queries: int = 0


class SelfCheck(Record):
    reliable: bool
    reasons: list[str]
    headline: str
    tagger: TaggerCheck | None = None
    interpretations: Stability | None = None


class QueryFigures(BaseModel):
    """What the report and figures read of one line of queries.jsonl (the rest of the
    line, the replica records included, is left as it is)."""

    model_config = ConfigDict(extra="ignore")
    dataset: str
    query_id: str
    replicas: int
    replicas_agree: bool | None = None
    es: float | None = None
    vb: dict[str, float | None]
    vb_ci: dict[str, list[float | None]]
    vb_of_mean_es: dict[str, float | None] = {}
    accuracy: float | None = None
    response_diversity: float | None = None


class VBScorePayload(Payload):
    """``vbscore``: one row per dataset; queries (with their replicas) and failed
    replicas in JSONL files."""

    alpha: float
    alphas: list[float]
    replicas: int
    k: int
    datasets: list[VBDataset]
    queries: DetailFile
    replica_failures: DetailFile
    failures_by_stage: dict[str, int]
    self_check: SelfCheck | None = None
