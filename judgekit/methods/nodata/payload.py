"""The No-Data experiments' payloads: the LLM audit and the synthetic study (closed all
the way down)."""

from __future__ import annotations

from typing import Literal

from judgekit.core.payload import (
    AgreementFigures,
    DetailFile,
    Ensemble,
    Figures,
    Payload,
    Rate,
    Record,
    absent,
)


class VerifierNoise(Record):
    """How consistently the verifier reads the same text (its re-reads)."""

    rereads: int
    disagreement: float | None = None
    disagreement_ci: list[float] | None = None
    readings: int | None = None
    by_criterion: dict[str, Rate] | None = None
    human_agreement: dict[str, Rate] | None = None
    # the re-reader (a second verifier, or the verifier again) against people
    reread_human_agreement: dict[str, Rate] | None = absent()
    # did the re-reads count towards the reference (a second verifier counts only when
    # people measured it)
    rereads_counted: bool | None = absent()
    # paraphrase readings that read as x did: the verifier on texts of known values
    paraphrase_agreement: Rate | None = absent()


class Uninformed(Record):
    """What judges without information score on the same items."""

    constant_claims: float
    random_claims: float
    better: str


class LabelAgreement(Record):
    kappa: float | None = None
    kappa_ci: list[float] | None = None
    percent: float | None = None
    undefined: dict[str, str] | None = None


class LabelAccuracy(Record):
    accuracy: float
    majority_label: float
    random_at_judge_rate: float
    excess_over_best: float
    excess_ci: list[float]
    n: int


class RestsOn(Record):
    verifier: str
    verifier_rubric: str
    judge_rubric: str
    rounds: int
    check: str
    thresholds: list[float]
    thresholds_of: str


Decision = Literal["trust", "do not trust", "inconclusive"]


class Verdict(Figures):
    """The audit's decision, the rule that took it, and the evidence it rests on."""

    decision: Decision
    reason: str
    success_rate: float | None
    success_ci: list[float] | None
    n_items: int
    rule: str | None = None  # which rule decided (judgekit.methods.nodata.decision)
    level: float | None = absent()
    verifier: VerifierNoise | None = absent()
    reference: float | None = absent()
    distinct_rounds: float | None = absent()
    relative_success: float | None = absent()
    relative_success_ci: list[float] | None = absent()
    claim_agreement: float | None = absent()
    uninformed: Uninformed | None = absent()
    skill: float | None = absent()
    skill_ci: list[float] | None = absent()
    label_agreement: LabelAgreement | None = absent()
    label_accuracy: LabelAccuracy | None = absent()
    # the judge's claims (label and shared criteria) against human rubric values, where
    # people scored enough items: what a verifier sharing the judge's errors cannot see
    claims_vs_people: Rate | None = absent()
    # how many more items people should score (rubric values or labels) for the
    # judge's claims against them to clear a threshold; set on every decision but trust
    items_to_score: int | None = absent()
    items_excluded: int | None = absent()
    measures: str | None = absent()
    rests_on: RestsOn | None = absent()


class AuditRun(Figures):
    """One phi of the audit (or of the synthetic study): success, flips, accuracy."""

    phi: float
    rounds: int
    n_items: int
    success_rate: float
    success_ci: list[float] | None
    flip_rate: float
    flip_ci: list[float] | None = None
    accuracy: float | None = None
    accuracy_ci: list[float] | None = None
    claim_agreement: float | None = None
    evaluator: str
    bound: float | None = absent()
    check: str | None = absent()
    claim_agreement_ci: list[float] | None = absent()
    f1: float | None = absent()
    f1_ci: list[float] | None = absent()
    known_accuracy: float | None = absent()
    known_f1: float | None = absent()
    parse_failures: int | None = absent()
    rubric: str | None = absent()


class Known(Record):
    """The judge against human labels, where the items carry them (empty: none do)."""

    n: int | None = None
    accuracy: float | None = None
    f1: float | None = None
    per_criterion_accuracy: dict[str, float] | None = None
    agreement: AgreementFigures | None = None


class Disagreements(Record):
    count: int
    items: list[int]


class DataChecks(Record):
    label_rubric_disagreements: Disagreements | None = None
    unknown_rubric_fields: dict[str, Disagreements] | None = None


class ClaimAgreement(Rate):
    by_criterion: dict[str, Rate] | None = None


class AuditPayload(Payload):
    """``nodata/llm``: the audit of one judge against a rubric."""

    runs: list[AuditRun]
    verdict: Verdict | None = None
    items: DetailFile | None = None
    data: str
    start: int
    sample_size: int
    indices: list[int] | None
    rubric: str
    verifier_rubric: str
    models: dict[str, str]
    known: Known
    problems_by_stage: dict[str, dict[str, int]]
    excluded_items: dict[str, str]
    verifier_note: str
    baseline: Ensemble | None
    data_checks: DataChecks
    claim_agreement: ClaimAgreement


class PaperFigures(Record):
    success_rate: float | None = None
    flip_rate: float | None = None
    accuracy: float | None = None
    known_accuracy: float | None = None


class SeedSweep(Record):
    seeds: int
    mean: float
    min: float
    max: float


class SyntheticRun(Figures):
    """One (set, evaluator, phi) row of the synthetic study."""

    phenomenon: str
    evaluator: str
    phi: float
    rounds: int
    n_items: int
    success_rate: float
    success_ci: list[float] | None = None
    flip_rate: float
    flip_ci: list[float] | None = None
    accuracy: float | None = None
    accuracy_ci: list[float] | None = None
    f1: float | None = None
    f1_ci: list[float] | None = None
    known_accuracy: float | None = None
    known_f1: float | None = None
    bound: float | None = None
    claim_agreement: float | None = None
    paper: PaperFigures | None = None
    seed_sweep: SeedSweep | None = None


class Escape(Record):
    """How often a liar escapes r rounds (against Lemma 5.1's bound)."""

    evaluator: str
    rounds: int
    pass_rate: float
    lemma_5_1: float


class SyntheticPayload(Payload):
    """``nodata/synthetic``: the bit-string study (Tables 2 and 6)."""

    runs: list[SyntheticRun]
    items: DetailFile
    data: dict[str, str]
    escape: list[Escape]
    baselines: dict[str, Ensemble]
    phi_meaning: str
