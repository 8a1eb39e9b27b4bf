"""`prefcraft sensejudge`: SenseJudge on one annotator's labelled pairs, and model ranking. Each step is one MLflow run.

select: the preference extractor writes candidate descriptions from the annotator's dev pairs (their train and val
pairs); `SubsetSelection` judges every dev pair under every description in both orders and keeps the best subset; the
`SelectedJudge` is saved as compiled JSON, with every candidate, the votes and the tied-best subsets in its metadata.
evaluate: judges the test pairs in both orders under every candidate description, so that each single description,
the selected subset and the reference's average over tied-best subsets come from one set of calls; then runs the loaded
`SelectedJudge` itself (the same prompts: DSPy's cache answers them) and ranks the response models by its wins and by
a Bradley-Terry fit, against the annotator's own ranking (by the labels' wins) or a given one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import dspy

from prefcraft.components.sensejudge.report import format_evaluation, format_selection, format_simulation
from prefcraft.components.sensejudge.results import (
    EvaluationOutcome,
    JudgeRow,
    RankingOutcome,
    SelectionOutcome,
    SimulationSummary,
)
from prefcraft.components.sensejudge.simulation import (
    SimulationConfig,
    load_pair_annotations,
    sample_dialogues,
    simulate_pairs,
)
from prefcraft.components.synthesizeme.evaluation import select_users
from prefcraft.errors import ConfigError
from prefcraft.evaluation import judge_pairs
from prefcraft.files import write_jsonl_atomic
from prefcraft.lm import check_reachable
from prefcraft.loaders.personal_reward_bench import (
    PreferencePair,
    UserPairs,
    group_by_user,
    judge_set,
    load_pairs,
    pair_id,
)
from prefcraft.metrics.majority_vote import NO_VOTE, decode_vote, encode_votes
from prefcraft.metrics.pairwise import Judgment, pairwise_report
from prefcraft.metrics.position_bias import first_position_share
from prefcraft.metrics.ranking import (
    Comparison,
    bradley_terry,
    rank_correlation,
    ranking_scores,
    win_rates,
)
from prefcraft.optimizers.artifacts import load_compiled, read_metadata, save_compiled
from prefcraft.optimizers.sensejudge import (
    SubsetSelection,
    SubsetSelectionConfig,
    SubsetSelectionRecord,
    collect_votes,
    extraction_input,
    subset_accuracy,
)
from prefcraft.programs.sensejudge import PreferenceExtractor, SelectedJudge, description_judge
from prefcraft.runtime import lm_context, model_session
from prefcraft.settings import Settings
from prefcraft.tracking import data_digest, log_file, log_json, log_metrics, model_params, start_tracking, tracked_run
from prefcraft.usage import metered

logger = logging.getLogger(__name__)

SENSEJUDGE = "sensejudge"
RUNS = Path("runs/sensejudge")
Step = Literal["simulate", "select", "evaluate"]


@dataclass
class SenseJudgeJob:
    """Where each step reads and writes, and its settings."""

    pairs: Path = RUNS / "pairs.jsonl"
    judge: Path = RUNS / "sensejudge.json"
    output_dir: Path = RUNS
    dialogues: Path | None = None
    simulation: SimulationConfig = field(default_factory=SimulationConfig)
    selection: SubsetSelectionConfig = field(default_factory=SubsetSelectionConfig)
    max_pair_descriptions: int | None = 10
    annotator: str | None = None
    reference_ranking: list[str] | None = None


def run_sensejudge(
    settings: Settings, job: SenseJudgeJob, steps: Sequence[Step], emit: Callable[[str], None]
) -> dict[Step, SimulationSummary | SelectionOutcome | EvaluationOutcome]:
    """Run `steps` in order on one model session (one server for all of them); returns each step's outcome."""
    if "simulate" in steps:
        if job.dialogues is None:
            raise ConfigError("simulate needs the SenseBench dialogues", "pass --dialogues PATH")
        sampled = sample_dialogues(job.dialogues, job.simulation)
    with model_session(settings) as session:
        start_tracking(session)
        outcomes: dict[Step, SimulationSummary | SelectionOutcome | EvaluationOutcome] = {}
        if "simulate" in steps:
            outcomes["simulate"] = simulate_pairs(session, sampled, job.dialogues, job.pairs, job.simulation)
            emit(format_simulation(outcomes["simulate"]))
        if "select" in steps:
            outcomes["select"] = select_descriptions(session, job)
            emit(format_selection(outcomes["select"]))
        if "evaluate" in steps:
            outcomes["evaluate"] = evaluate_judge(session, job)
            emit(format_evaluation(outcomes["evaluate"]))
    return outcomes


def select_descriptions(session: Settings, job: SenseJudgeJob) -> SelectionOutcome:
    """Extract candidate descriptions from the dev pairs, select a subset, save the SelectedJudge to `job.judge`."""
    annotator = _annotator(job.pairs, job.annotator)
    dev = annotator.context_pairs
    if not dev:
        raise ConfigError(f"annotator {annotator.user_id} has no dev pairs (split train or val) in {job.pairs}")
    config = job.selection
    digest = data_digest(job.pairs)
    params = {"program": SENSEJUDGE, "data": str(job.pairs), "data_digest": digest, "annotator": annotator.user_id,
              "dev_pairs": len(dev), "max_pair_descriptions": job.max_pair_descriptions, **_settings_of(config),
              **model_params(session)}
    with tracked_run("sensejudge-select", params), lm_context(session, "task"):
        with metered() as extraction:
            extracted = PreferenceExtractor(job.max_pair_descriptions)(pairs=[extraction_input(p) for p in dev])
        descriptions = list(extracted.descriptions)
        with metered() as selection:
            compiled = SubsetSelection(config).compile(SelectedJudge(descriptions), trainset=judge_set(dev))
        record: SubsetSelectionRecord = compiled.selection
        if record.failed_calls:
            check_reachable(session.task, "task")
            logger.warning("%d dev judgments failed and cast no vote", record.failed_calls)
        save_compiled(compiled, job.judge, program_name=SENSEJUDGE, model=session.task.model, data=str(job.pairs),
                      data_digest=digest, annotator=annotator.user_id,
                      descriptions=[descriptions[index] for index in record.selected],
                      candidate_descriptions=descriptions, description_names=description_names(len(descriptions)),
                      score={"dev_accuracy": record.accuracy}, optimizer=_settings_of(config), record=asdict(record))
        usage = {"extraction": extraction.usage, "selection": selection.usage}
        log_metrics({"dev_accuracy": record.accuracy, "descriptions": len(descriptions),
                     "judged_descriptions": record.judged_descriptions, "selected": len(record.selected),
                     "tied_best_subsets": len(record.tied_best), "failed_calls": record.failed_calls,
                     **{f"{step}_{name}": value for step, step_usage in usage.items()
                        for name, value in step_usage.as_metrics().items()}})
        log_file(job.judge)
    return SelectionOutcome(job.judge, descriptions, record, usage)


def evaluate_judge(session: Settings, job: SenseJudgeJob) -> EvaluationOutcome:
    """Test accuracy, consistency and position bias per description and for the selection; model ranking."""
    metadata = read_metadata(job.judge)
    digest = data_digest(job.pairs)
    if metadata.get("data_digest") != digest:
        raise ConfigError(f"{job.judge} was selected on data with digest {metadata.get('data_digest')}, not on "
                          f"{job.pairs} (digest {digest}): its dev pairs could be among the test pairs",
                          "run `prefcraft sensejudge select` on this file first")
    annotator = _annotator(job.pairs, job.annotator or metadata.get("annotator"))
    if not annotator.test:
        raise ConfigError(f"annotator {annotator.user_id} has no test pairs in {job.pairs}")
    annotations = dict(zip(map(pair_id, load_pairs(job.pairs)), load_pair_annotations(job.pairs), strict=True))
    candidates: list[str] = metadata["candidate_descriptions"]
    names: list[str] = metadata["description_names"]
    examples = judge_set(annotator.test)
    params = {"program": SENSEJUDGE, "judge": str(job.judge), "data": str(job.pairs), "data_digest": digest,
              "annotator": annotator.user_id, "test_pairs": len(annotator.test),
              **model_params(session)}
    with tracked_run("sensejudge-evaluate", params), lm_context(session, "task"):
        with metered() as every_description:
            votes = collect_votes([description_judge(d) for d in candidates], examples, num_threads=session.num_threads)
        if (votes == NO_VOTE).any():
            check_reachable(session.task, "task")
        judge = SelectedJudge()
        load_compiled(judge, job.judge, program_name=SENSEJUDGE)
        with metered() as selected_judge:
            judgments, _ = judge_pairs(judge, annotator.test, model=session.task, num_threads=session.num_threads)
        rows = [_row(name, _judgments(examples, [decode_vote(vote) for vote in row]), session.seed)
                for name, row in zip(names, votes, strict=True)]
        selected = _row(f"selected ({len(judge.judges)} of {len(candidates)})", judgments, session.seed)
        tied_best = [tuple(subset) for subset in metadata["record"]["tied_best"]]
        gold = encode_votes([[example.preference for example in examples]])[0]
        ranking = _rank(annotator.test, judgments, annotations, job.reference_ranking)
        outcome = EvaluationOutcome(
            rows=rows, selected=selected, tied_best_accuracy=float(subset_accuracy(
                votes, gold, tied_best, metadata["optimizer"].get("unparseable_vote", "against")).mean()),
            tied_best_subsets=len(tied_best), ranking=ranking,
            labels=", ".join(sorted({annotations[pair_id(pair)][2] for pair in annotator.test})),
            usage={"every_description": every_description.usage, "selected_judge": selected_judge.usage},
        )  # fmt: skip
        _log_evaluation(outcome, judgments, job.output_dir)
    return outcome


def description_names(count: int) -> list[str]:
    """Names of the extractor's descriptions, in its order: none, one per dev pair, the aggregate."""
    return ["no description", *[f"dev pair {number}" for number in range(1, count - 1)], "aggregate"]


def _annotator(path: Path, wanted: str | None) -> UserPairs:
    users = group_by_user(load_pairs(path))
    if wanted is not None:
        return select_users(users, [wanted])[wanted]
    if len(users) > 1:
        raise ConfigError(f"{path} holds the pairs of {len(users)} annotators", "choose one with --annotator")
    return next(iter(users.values()))


def _settings_of(config: SubsetSelectionConfig) -> dict[str, object]:
    """The settings that change a selection's result (threads and progress bars only change how it runs)."""
    return {name: value for name, value in asdict(config).items() if name not in ("num_threads", "display_progress")}


def _judgments(examples: Sequence[dspy.Example], predictions: Sequence[str | None]) -> list[Judgment]:
    return [Judgment(user_id=example.user_id, pair_id=example.pair_id, order=example.order, predicted=predicted,
                     correct=predicted == example.preference)
            for example, predicted in zip(examples, predictions, strict=True)]


def _row(name: str, judgments: list[Judgment], seed: int) -> JudgeRow:
    return JudgeRow(name, pairwise_report(judgments, seed=seed), first_position_share(judgments, seed=seed))


def _rank(
    test: Sequence[PreferencePair], judgments: Sequence[Judgment], annotations: dict[str, tuple[str, str, str]],
    given: Sequence[str] | None,
) -> RankingOutcome:
    """The judge's comparisons (each test pair in both orders) and the annotator's (its label) ranked and compared."""
    judged = []
    for judgment in judgments:
        chosen, rejected, _ = annotations[judgment.pair_id]
        first, second = (chosen, rejected) if judgment.order == "chosen_first" else (rejected, chosen)
        winner = {"First": first, "Second": second}.get(judgment.predicted or "")
        judged.append(Comparison(first, second, winner))
    labelled = [Comparison(chosen, rejected, chosen) for chosen, rejected, _ in
                (annotations[pair_id(pair)] for pair in test)]
    reference = ranking_scores(given) if given else win_rates(labelled)
    wins, strengths = win_rates(judged), bradley_terry(judged)
    return RankingOutcome(judge_wins=wins, judge_bradley_terry=strengths, reference=reference,
                          reference_source="given" if given else "annotator's wins",
                          by_wins=rank_correlation(wins, reference),
                          by_bradley_terry=rank_correlation(strengths, reference))


def _log_evaluation(outcome: EvaluationOutcome, judgments: list[Judgment], output_dir: Path) -> None:
    metrics = {}
    for number, row in enumerate([*outcome.rows, outcome.selected]):
        prefix = "selected_" if row is outcome.selected else f"description_{number}_"
        metrics.update(row.report.as_metrics(prefix))
        metrics[f"{prefix}first_position_share"] = row.first_position.mean
    ranking = outcome.ranking
    metrics.update({"tied_best_accuracy": outcome.tied_best_accuracy,
                    "kendall_tau_wins": ranking.by_wins.kendall_tau, "spearman_rho_wins": ranking.by_wins.spearman_rho,
                    "kendall_tau_bradley_terry": ranking.by_bradley_terry.kendall_tau,
                    "spearman_rho_bradley_terry": ranking.by_bradley_terry.spearman_rho})
    for step, usage in outcome.usage.items():
        metrics.update(usage.as_metrics(f"{step}_"))
    log_metrics({name: value for name, value in metrics.items() if value == value})  # NaN: nothing to measure
    log_json({"labels": outcome.labels, "ranking": asdict(ranking),
              "judgments": [asdict(judgment) for judgment in judgments]}, "sensejudge-evaluation.json")
    path = write_jsonl_atomic(output_dir / "sensejudge-judgments.jsonl", map(asdict, judgments))
    logger.info("wrote %d judgments of the selected judge to %s", len(judgments), path)

