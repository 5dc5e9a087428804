"""Can the LLM audit be fooled? The No-Data audit run through the real runner (mock
provider, scripted judges and paraphrasers, an oracle verifier) on 200 judged items.

Judges: oracle (true breakdown), random (coin flips), constant (always 1), and a
self-consistent liar (claims a wrong breakdown and realises it). Paraphrasers:
faithful (x' keeps x's true qualities, as capable LLMs tend to) and realising (x'
carries the judge's claimed qualities). With ``check: pair`` alone (x vs x'), a
random or constant judge passes every challenge under a faithful paraphraser; the
default ``check: both`` also demands that the verifier's reading of x agree with the
judge's claims, so success tracks whether the judge is right.

The last line is one JSON object: oracle_success, random_faithful_success,
random_realising_success, selfconsistent_liar_success, constant_faithful_success,
constant_accuracy, and the same under check=pair for contrast.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from _smoke import pick

N_ITEMS = pick(200, 12)  # --smoke: a dozen items


def audit(work: Path, judge: str, para: str, check: str = "both") -> dict:
    from judgekit.testing.judges import scripted_audit

    return scripted_audit(work, judge, para, n=N_ITEMS, check=check, concurrency=32)


def main() -> None:
    from judgekit.testing import judges

    work = Path(tempfile.mkdtemp(prefix="judgekit-audit-power-"))
    judges.write_audit_data(work, N_ITEMS, seed=1)
    t0 = time.perf_counter()
    figs: dict[str, object] = {}
    cases = {"oracle_success": ("oracle", "faithful"),
             "random_faithful_success": ("random", "faithful"),
             "random_realising_success": ("random", "realising"),
             "selfconsistent_liar_success": ("liar", "realising"),
             "constant_faithful_success": ("constant", "faithful")}
    for check in ("both", "pair"):
        for name, (j, p) in cases.items():
            res = audit(work, j, p, check)
            row = res["runs"][0]
            key = name if check == "both" else f"pair_{name}"
            figs[key] = row["success_rate"]
            figs[f"{key}_ci"] = row["success_ci"]
            if check == "both":
                figs[f"{name.removesuffix('_success')}_verdict"] = res["verdict"]["decision"]
            if j == "constant" and check == "both":
                figs["constant_accuracy"] = res["known"]["accuracy"]
            print(f"check={check:<4} {name:<30} success {row['success_rate']:.3f} "
                  f"{row['success_ci']} claims agree {row['claim_agreement']}", file=sys.stderr)
    figs["n_items"] = N_ITEMS
    figs["wall_s"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(figs, sort_keys=True))


if __name__ == "__main__":
    main()
