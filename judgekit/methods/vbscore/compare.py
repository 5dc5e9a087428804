"""`judgekit compare` of two VB-Score runs: per query, VB at the run's alpha; the mean
difference (B - A) with a Student t interval over queries (the query is the
independent unit; the range's ends as pseudo-observations) and a paired t test; ES as
a secondary row."""

from __future__ import annotations

from judgekit.analysis.paired import mean_row, rows_by
from judgekit.core.payload import Json
from judgekit.core.results import RunResult
from judgekit.core.spec import Paired
from judgekit.methods.vbscore.payload import VBScorePayload


def paired(ra: RunResult[VBScorePayload], rb: RunResult[VBScorePayload], level: float
           ) -> Paired:
    assert ra.payload is not None
    alpha = str(float(ra.payload.alpha))

    def key(r: Json) -> str:
        return f"{r['dataset']}:{r['query_id']}"

    ia, ib = rows_by(ra.detail("queries"), key), rows_by(rb.detail("queries"), key)
    keys = [k for k in ia if k in ib and (ia[k].get("vb") or {}).get(alpha) is not None
            and (ib[k].get("vb") or {}).get(alpha) is not None]
    es = [(float(ia[k]["es"]), float(ib[k]["es"])) for k in keys
          if ia[k].get("es") is not None and ib[k].get("es") is not None]
    rows = [mean_row("expected success ES", es, level, ra.seed or 0)] if es else []
    return Paired(f"VB-Score at alpha = {alpha} (mean over queries)", keys,
                  [float(ia[k]["vb"][alpha]) for k in keys],
                  [float(ib[k]["vb"][alpha]) for k in keys], rows, None,
                  (len(ia), len(ib)), binary=False,
                  bounds=(min(0.0, -float(ra.payload.alpha) / 2), 1.0))
