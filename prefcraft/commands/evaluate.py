"""`prefcraft evaluate`: judge a split's pairs in both orders and report pooled and per-user accuracy."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from prefcraft.errors import ConfigError
from prefcraft.evaluation import judge_pairs
from prefcraft.loaders.personal_reward_bench import PreferencePair, UserPairs, group_by_user, load_pairs
from prefcraft.metrics.pairwise import Judgment, PairwiseReport, pairwise_report
from prefcraft.runtime import lm_context, model_session
from prefcraft.settings import Settings
from prefcraft.tracking import data_digest, log_json, log_metrics, model_params, start_tracking, tracked_run
from prefcraft.usage import LMUsage
from programs.judge import DefaultJudge

logger = logging.getLogger(__name__)


@dataclass
class EvaluationOutcome:
    report: PairwiseReport
    usage: LMUsage
    judgments: list[Judgment]


def select_users(users: dict[str, UserPairs], wanted: Sequence[str] | None) -> dict[str, UserPairs]:
    if not wanted:
        return users
    unknown = sorted(set(wanted) - set(users))
    if unknown:
        raise ConfigError(f"unknown user ids: {', '.join(unknown)}", f"known: {', '.join(sorted(users)[:10])} ...")
    return {user_id: users[user_id] for user_id in wanted}


def evaluate_default_judge(
    settings: Settings, data: str | Path, *, users: Sequence[str] | None = None, split: str = "test",
    output_dir: Path | None = None,
) -> EvaluationOutcome:
    selected = select_users(group_by_user(load_pairs(data)), users)
    pairs: list[PreferencePair] = [pair for user in selected.values() for pair in getattr(user, split)]
    with model_session(settings) as session:
        start_tracking(session)
        params = {"program": "default_judge", "data": str(data), "data_digest": data_digest(data), "split": split,
                  "users": len(selected), "pairs": len(pairs), **model_params(session)}
        with tracked_run("evaluate-default-judge", params), lm_context(session, "task"):
            judgments, usage = judge_pairs(
                DefaultJudge(), pairs, model=session.task, num_threads=session.num_threads
            )
            report = pairwise_report(judgments, seed=session.seed)
            log_metrics({**report.as_metrics(), **usage.as_metrics()})
            _log_per_user(report)
            log_json([asdict(judgment) for judgment in judgments], "judgments.json")
    if output_dir is not None:
        _write_results(output_dir, judgments)
    return EvaluationOutcome(report, usage, judgments)


def _log_per_user(report: PairwiseReport) -> None:
    for user_id, estimate in report.per_user.items():
        with tracked_run(user_id, {"user_id": user_id}, nested=True):
            log_metrics({"accuracy": estimate.mean, "judgments": float(estimate.n)})


def _write_results(output_dir: Path, judgments: list[Judgment]) -> None:
    output_dir.mkdir(parents=True, exist_ok=True)
    path = output_dir / "judgments.jsonl"
    path.write_text("".join(json.dumps(asdict(judgment)) + "\n" for judgment in judgments), encoding="utf-8")
    logger.info("wrote %d judgments to %s", len(judgments), path)
