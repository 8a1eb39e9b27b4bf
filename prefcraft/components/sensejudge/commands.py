"""`prefcraft sensejudge`: preference descriptions written from a user's dev pairs, the subset whose majority vote
judges best, and the selected judge's accuracy, consistency, position bias and model ranking on test pairs."""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path
from typing import Any

from prefcraft.components.component import Comparison, Component, Demo, Emit, Step
from prefcraft.components.sensejudge.charts import CHARTS
from prefcraft.components.sensejudge.simulation import DEFAULT_PERSONA, SimulationConfig
from prefcraft.components.sensejudge.steps import SENSEJUDGE, SenseJudgeJob, run_sensejudge
from prefcraft.flags import COUNT, POSITIVE
from prefcraft.optimizers.sensejudge import SubsetSelectionConfig
from prefcraft.programs.sensejudge import SelectedJudge

HELP = "SenseJudge: preference subsets and model ranking (simulate, select, evaluate, demo)"
STEPS = {
    "simulate": "responses to real SenseBench requests, labelled by a SIMULATED annotator persona",
    "select": "write preference descriptions from the dev pairs and select the subset whose vote is best",
    "evaluate": "accuracy, consistency, position bias and model ranking of a selected judge on the test pairs",
    "demo": "simulate, select and evaluate on the embedded model",
}
DEMO_DEFAULTS = {"dev_dialogues": 2, "test_dialogues": 2, "max_pair_descriptions": 4}  # about 150 LM calls


def _add_step_flags(parser: argparse.ArgumentParser, step: str) -> None:
    parser.add_argument("--pairs", type=Path,
                        help="labelled pairs, PersonalRewardBench schema (simulate writes them; default: "
                        "runs/sensejudge/pairs.jsonl)")
    if step in ("simulate", "demo"):
        parser.add_argument("--dialogues", type=Path, required=True,
                            help="SenseBench's new_sense_bmk.json or its folder (not shipped: no licence upstream)")
        parser.add_argument("--dev-dialogues", type=POSITIVE, default=4, help="dialogues whose pairs are dev pairs")
        parser.add_argument("--test-dialogues", type=POSITIVE, default=2, help="dialogues whose pairs are test pairs")
        parser.add_argument("--variants", nargs="+", default=["plain", "concise", "detailed"],
                            help="response models: the task model under these system prompts")
        parser.add_argument("--persona", help="the simulated annotator's persona (default: wants short answers)")
        parser.add_argument("--max-context-chars", type=int, default=1200, help="dialogue turns kept per request")
        parser.add_argument("--max-response-chars", type=int, default=600, help="longest response")
        parser.add_argument("--response-temperature", type=float, default=0.7, help="sampling of the responses")
    if step in ("select", "evaluate", "demo"):
        parser.add_argument("--judge", type=Path,
                            help="the compiled SelectedJudge: select writes it, evaluate reads it (default: "
                            "runs/sensejudge/sensejudge.json)")
        parser.add_argument("--annotator", help="whose pairs, when the file holds several annotators")
    if step in ("select", "demo"):
        parser.add_argument("--max-pair-descriptions", type=COUNT, default=10,
                            help="dev pairs that get a description of their own (the reference: 10)")
        parser.add_argument("--exhaustive-limit", type=COUNT, default=12, help="beyond this many descriptions, beam")
        parser.add_argument("--beam-width", type=POSITIVE, default=64, help="subsets kept at each step of the beam")
        parser.add_argument("--penalize-order-imbalance", action="store_true",
                            help="score a subset minus the gap between its right answers in the two orders")
        parser.add_argument("--unparseable-vote", choices=["against", "abstain"], default="against",
                            help="what a failed or unparseable vote counts as: against the chosen response (the "
                            "reference's rule) or nothing")
        parser.add_argument("--stop-when-perfect", action="store_true",
                            help="stop judging once a subset is right on every dev judgment (fewer calls; the "
                            "reference judges every description on every pair)")
    if step in ("evaluate", "demo"):
        parser.add_argument("--reference-ranking", nargs="+", metavar="MODEL",
                            help="reference ranking of the response models, best first (default: the annotator's)")
        parser.add_argument("--output-dir", type=Path,
                            help="where judgments go (default: runs/sensejudge)")
    if step == "demo":
        parser.set_defaults(**DEMO_DEFAULTS)


def job_from_flags(args: argparse.Namespace, settings: Any) -> Any:

    flags = vars(args)
    given = ("pairs", "judge", "output_dir", "dialogues", "annotator", "reference_ranking")
    job = SenseJudgeJob(**{name: flags[name] for name in given if flags.get(name) is not None})
    if "dialogues" in flags:
        job.simulation = SimulationConfig(
            dev_dialogues=args.dev_dialogues, test_dialogues=args.test_dialogues, variants=tuple(args.variants),
            persona=args.persona or DEFAULT_PERSONA, max_context_chars=args.max_context_chars,
            max_response_chars=args.max_response_chars, response_temperature=args.response_temperature,
            seed=settings.seed,
        )
    if "max_pair_descriptions" in flags:
        job.max_pair_descriptions = args.max_pair_descriptions
        job.selection = SubsetSelectionConfig(
            exhaustive_limit=args.exhaustive_limit, beam_width=args.beam_width,
            penalize_order_imbalance=args.penalize_order_imbalance, unparseable_vote=args.unparseable_vote,
            stop_when_perfect=args.stop_when_perfect, num_threads=settings.num_threads,
        )
    return job


def run(args: argparse.Namespace, settings: Any, emit: Emit) -> Any:
    steps = ["simulate", "select", "evaluate"] if args.step == "demo" else [args.step]
    return run_sensejudge(settings, job_from_flags(args, settings), steps, emit)


def compare(outcomes: dict[str, Any]) -> Comparison:
    evaluation = outcomes["evaluate"]
    no_description = evaluation.rows[0]
    return Comparison("accuracy, both orders (simulated labels)", no_description.name,
                      no_description.report.accuracy.mean, evaluation.selected.name,
                      evaluation.selected.report.accuracy.mean, "%")


def _demo_argv(sensebench: Path | None) -> list[str] | None:
    return ["demo", "--dialogues", str(sensebench)] if sensebench else None


COMPONENT = Component(
    name="sensejudge", title="SenseJudge", help=HELP,
    steps={step: Step(step_help, partial(_add_step_flags, step=step), run) for step, step_help in STEPS.items()},
    run_names=("sensejudge-simulate", "sensejudge-select", "sensejudge-evaluate"), demo=Demo(_demo_argv, compare),
    charts=CHARTS,
    programs={SENSEJUDGE: lambda _: SelectedJudge()},
)
