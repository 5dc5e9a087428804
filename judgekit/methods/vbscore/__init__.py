"""VB-Score: expected success over interpretations, penalised by its variance (Ding 2025)."""

from judgekit.methods.vbscore.config import VBScoreConfig
from judgekit.methods.vbscore.metric import ALPHA_GRID, expected_success, vb_from
from judgekit.methods.vbscore.payload import VBScorePayload
from judgekit.methods.vbscore.scorefile import VBScores, score, score_file

__all__ = ["ALPHA_GRID", "VBScoreConfig", "VBScorePayload", "VBScores", "expected_success",
           "score", "score_file", "vb_from"]
