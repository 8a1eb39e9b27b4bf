"""What each paper's headline table costs at paper scale, estimated from the embedded runs' committed costs.

Reads each paper-scale experiment file (experiments/<paper>.toml) through prefcraft's experiment loader, so that its
options are the resolved ones, defaults included, and the committed cost of the embedded run of the same program
(benchmarks/results/<component>_cost.json: SmolLM2-135M, the small-model profile, a demo's budget). Each step's LM
calls are counted for the paper's data and the file's budget (users, instances, questions, scenarios, topics;
candidates, turns, k, orders), every factor written out; the counts only the data would tell (pairs per user, gold
aspects per question, rubric criteria per scenario, questions asked) are the papers' own figures, each named in the
output with every other assumption. Tokens are the calls times the tokens per call the embedded run measured for the
same kind of call: a lower bound (see LOWER_BOUND). No model is called.

Run: .venv/bin/python benchmarks/paper_scale_cost.py [--results benchmarks/results] [--output FILE]
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import REPOSITORY, RESULTS, write_result

from prefcraft.components.lampqa.data import CONFIGS
from prefcraft.components.lampqa.evaluation import select_questions
from prefcraft.components.lampqa.options import EvaluateOptions as LampQAOptions
from prefcraft.experiments.files import load_experiment
from prefcraft.options import Options

EXPERIMENTS = REPOSITORY / "experiments"
LOWER_BOUND = (
    "Tokens per call are the embedded runs' (SmolLM2-135M with the small-model profile: a 4k context bounds every "
    "prompt and reply, demos are capped, long inputs cut). The paper-scale runs turn the profile off: their prompts "
    "hold whole dialogues, profiles and demo sets, and replies run to each model's max_tokens. Their prompts are "
    "longer, so every token figure here is a lower bound; the calls are the estimate.")

Factor = tuple[float, str]


@dataclass(frozen=True)
class PerCall:
    """Tokens per LM call, as an embedded run measured them (`source`: which calls)."""

    prompt: float
    completion: float
    source: str

    @classmethod
    def of(cls, rows: Iterable[dict[str, Any]], source: str) -> PerCall:
        rows = [row for row in rows if row["calls"]]
        calls = sum(row["calls"] for row in rows)
        return cls(sum(row["prompt_tokens"] for row in rows) / calls,
                   sum(row["completion_tokens"] for row in rows) / calls, source)


@dataclass(frozen=True)
class Part:
    """One kind of call in a paper-scale run: how many (the product of `factors`), on which model, at what size."""

    step: str
    model: str
    """The role that answers it, "task" or "judge": the experiment's settings name the model."""
    factors: tuple[Factor, ...]
    per_call: PerCall

    @property
    def calls(self) -> float:
        return math.prod(value for value, _ in self.factors)

    def as_row(self) -> dict[str, Any]:
        return {"step": self.step, "model": self.model, "calls": round(self.calls),
                "prompt_tokens": round(self.calls * self.per_call.prompt),
                "completion_tokens": round(self.calls * self.per_call.completion),
                "calls_from": " x ".join(f"{_number(value)} {label}" for value, label in self.factors),
                "tokens_per_call": {"prompt": round(self.per_call.prompt),
                                    "completion": round(self.per_call.completion), "measured": self.per_call.source}}


@dataclass
class Estimate:
    parts: list[Part]
    assumptions: list[str] = field(default_factory=list)


Estimator = Callable[[dict[str, Options], dict[str, Any]], Estimate]


def _factors(*factors: Factor | None) -> tuple[Factor, ...]:
    return tuple(factor for factor in factors if factor is not None)


def _rows(measured: dict[str, Any], *keys: str) -> dict[tuple[str, ...], dict[str, Any]]:
    """The embedded run's per-step rows, by the values of `keys`."""
    return {tuple(row[key] for key in keys): row for row in measured["first_run"]["steps"]}


def _capped(count: int, cap: int | None) -> int:
    return count if cap is None else min(count, cap)


# SynthesizeMe: PersonalRewardBench (the paper's Table 2 and §4; its users split 40/10/50 by population).
PERSONAL_REWARD_BENCH = {
    "MichaelR207/prism_personalized_0125": {"pairs": 16_705, "all": 723, "train": 280, "val": 65,
                                            "test": 378},
    "MichaelR207/chatbot_arena_personalized_0125": {"pairs": 1_338, "all": 131, "train": 23, "val": 19,
                                                    "test": 89},
}
CONTEXT_SPLIT = {"train": 0.5, "val": 0.2, "test": 0.3}  # App. C: each user's pairs in time order
SEARCH_VARIANTS = {"exact": "paper", "exhaustive": "exhaustive", "halving": "halving"}  # fit_cost.json's names
JUDGE_CALL_LIKE = {"baseline": "bootstrap", "demographics": "bootstrap", "memory": "bootstrap",
                   "demos": "persona_evidence", "persona": "persona_bootstrap", "synthesizeme": "demo_search"}
"""The fit's call whose prompt each evaluate method's judge call repeats: the uncompiled judge, with step 1's demos,
with the persona, with the persona and step 3's demos."""


def synthesizeme(steps: dict[str, Options], measured: dict[str, Any]) -> Estimate:
    fit, evaluate = steps["fit"], steps["evaluate"]
    if fit.data not in PERSONAL_REWARD_BENCH:
        raise ValueError(f"steps.fit.data {fit.data!r}: the paper's counts are known for "
                         f"{', '.join(PERSONAL_REWARD_BENCH)} only")
    bench = PERSONAL_REWARD_BENCH[fit.data]
    pairs = {split: bench["pairs"] / bench["all"] * share for split, share in CONTEXT_SPLIT.items()}
    paper = measured["fits"]["paper"]
    tokens = {step: PerCall.of((row["by_step"][step] for row in paper), f"fit_cost.json paper fits, {step}")
              for step in paper[0]["by_step"]}
    variant = SEARCH_VARIANTS[fit.search]
    if variant not in measured["fits"]:
        raise ValueError(f"steps.fit.search {fit.search!r}: fit_cost.json measured no {variant!r} fits")
    share = {kind: _judged_share(measured["fits"][variant], kind) for kind in ("subsets", "demos")}

    def users(options: Options) -> Factor:
        return (len(options.users), "users") if options.users else (bench[options.population], "users")

    train = (pairs["train"], "train pairs per user")
    orders = (2, "orders") if fit.verification == "both_orders" else None
    val = (pairs["val"] * (2 if fit.val_orders == "both_orders" else 1), "validation judgments per user")
    searched = f"share of them the {fit.search} search judged"
    parts = [
        Part("fit: bootstrap", "task", _factors(train, orders, users(fit)), tokens["bootstrap"]),
        Part("fit: persona evidence search", "task", (
            (fit.subsets + 2, "candidates (n + 2)"), val, (share["subsets"], searched), users(fit)),
            tokens["persona_evidence"]),
        Part("fit: persona", "task", ((1, "call per user"), users(fit)), tokens["persona"]),
    ]
    if fit.step3_traces == "bootstrap_with_persona":
        parts.append(Part("fit: bootstrap with the persona", "task", _factors(train, orders, users(fit)),
                          tokens["persona_bootstrap"]))
    parts.append(Part("fit: demo search", "task", (
        (fit.demo_candidates + 3, "candidates (m + 3)"), val, (share["demos"], searched), users(fit)),
        tokens["demo_search"]))
    judgments = (pairs[evaluate.split] * 2, f"{evaluate.split} judgments per user (pairs x 2 orders)")
    for method in evaluate.methods:
        if method == "memory":
            parts.append(Part("evaluate: memory insights", "task", (
                (pairs["train"] + pairs["val"], "context pairs per user"), users(evaluate)), tokens["bootstrap"]))
        parts.append(Part(f"evaluate: {method}", "task", (judgments, users(evaluate)),
                          tokens[JUDGE_CALL_LIKE[method]]))
    return Estimate(parts, [
        f"pairs per user: {bench['pairs']:,} pairs / {bench['all']} users = {bench['pairs'] / bench['all']:.1f} "
        "(the paper's Table 2), split 50/20/30 into context train, context validation and target pairs (App. C); "
        "users per population from §4 (40/10/50)",
        f"candidates: n + 2 and m + 3 (fewer when sets repeat); the {fit.search} search judged "
        f"{share['subsets']:.0%} (step 1) and {share['demos']:.0%} (step 3) of every candidate on every validation "
        "judgment in the embedded fits, where the 135M judge's candidates nearly all tie: a judge whose candidates "
        "differ stops sooner (exhaustive: 100%)",
        "each evaluate method's judge call is priced as the fit call with the same prompt: baseline, demographics and "
        "memory as a bootstrap call, demos as a step-1 search call, persona as a step-3 bootstrap call, synthesizeme "
        "as a step-3 search call; memory's insights one call per context pair at most (pairs of one conversation: "
        "DSPy's cache), priced as a bootstrap call; every user has a demographic profile",
        "the embedded fits used the default persona prompt (no demos) and at most 4 demos: the released llama8b.json "
        "adds six demos (about 20-25k tokens, the file's header) to every persona call, and every verified train "
        "pair may be a demo here; import-persona-prompt makes no LM call",
    ])


def _judged_share(fits: list[dict[str, Any]], kind: str) -> float:
    """Of every candidate on every validation judgment, the share the fits' searches judged."""
    candidates = [candidate for fit in fits for candidate in fit["candidates"][kind]]
    return sum(c["judged"] for c in candidates) / sum(c["total"] for c in candidates)


# CUPID: kixlab/CUPID (the paper's 756 instances).
CUPID_INSTANCES = 756


def _baseline_renamed(method: str) -> str:
    """A method as named now: a result file measured before the baseline's rename (CUPID's and LaMP-QA's) calls it
    "none"."""
    return "baseline" if method == "none" else method


def cupid(steps: dict[str, Options], measured: dict[str, Any]) -> Estimate:
    evaluate = steps["evaluate"]
    if evaluate.split != "all":
        raise ValueError(f"steps.evaluate.split {evaluate.split!r}: the instances of a persona split are known only "
                         "from the data; estimated for split 'all'")
    instances = (_capped(CUPID_INSTANCES, evaluate.max_instances), "instances")
    rows = _rows(measured, "method", "step")
    parts = []
    for variant in evaluate.inferrers:
        measured_as = variant if (variant, "infer") in rows else "all"
        for step, model in (("infer", "task"), ("match", "judge")):
            row = rows[(measured_as, step)]
            parts.append(Part(f"{variant}: {step}", model, (
                (row["calls_per_instance"], "calls per instance (measured)"), instances),
                PerCall.of([row], f"cupid_cost.json, {measured_as} {step}")))
    generated = {_baseline_renamed(method.removeprefix("respond ")): row for (method, step), row in rows.items()
                 if step == "generate" and row["calls"]}
    infer = PerCall.of([rows[("all", "infer")]], "")
    judge = PerCall.of((row for (_, step), row in rows.items() if step == "judge"), "cupid_cost.json, every judge call")
    unmeasured = [method for method in evaluate.responses if method not in generated]
    for method in evaluate.responses:
        if method in generated:
            generate = PerCall.of([generated[method]], f"cupid_cost.json, respond {method} generate")
        else:  # the methods that read the prior sessions
            generate = PerCall(infer.prompt, PerCall.of(generated.values(), "").completion,
                               "cupid_cost.json: prompt as an infer call, completion as every generate call")
        parts += [Part(f"respond {method}: generate", "task", ((1, "call per instance"), instances), generate),
                  Part(f"respond {method}: judge", "judge", ((1, "call per instance"), instances), judge)]
    return Estimate(parts, [
        f"{CUPID_INSTANCES} instances (kixlab/CUPID, the paper's tables, split all)",
        "infer and match: the calls per instance the embedded run measured (match: the decomposer once, the matcher "
        "twice); generate and judge: one call per instance and response method, as the programs make them (on the "
        "3 bundled instances DSPy's cache answered some identical prompts)",
        *([f"response methods the embedded run did not measure ({', '.join(unmeasured)}): prompt as an infer call "
           "(both read the prior sessions), completion as the measured responses'"] if unmeasured else []),
    ])


# LaMP-QA: its Table 1, questions and mean gold aspects per category and split.
LAMPQA_QUESTIONS = {
    "train": {"Art_and_Entertainment": (9_349, 2.7), "Lifestyle_and_Personal_Development": (7_370, 3.1),
              "Society_and_Culture": (7_614, 2.9)},
    "val": {"Art_and_Entertainment": (801, 4.7), "Lifestyle_and_Personal_Development": (892, 5.1),
            "Society_and_Culture": (810, 4.8)},
    "test": {"Art_and_Entertainment": (767, 4.6), "Lifestyle_and_Personal_Development": (989, 5.1),
             "Society_and_Culture": (1_074, 4.8)},
}
RETRIEVES = {"rag", "rag_random", "planpers"}


def lampqa(steps: dict[str, Options], measured: dict[str, Any]) -> Estimate:
    evaluate = steps["evaluate"]
    table = LAMPQA_QUESTIONS[evaluate.split]
    counts = {config: _capped(table[config][0], evaluate.max_questions) for config in evaluate.categories or CONFIGS}
    questions = sum(counts.values())
    aspects = sum(count * table[config][1] for config, count in counts.items()) / questions
    rows = {(_baseline_renamed(method), step): row
            for (method, step), row in _rows(measured, "method", "step").items()}
    bundled_aspects = _bundled_aspects(measured["questions"] // len(CONFIGS))
    answer = {method: PerCall.of([rows[(method, "answer")]], "") for method in ("baseline", "rag")}
    per_post = (answer["rag"].prompt - answer["baseline"].prompt) / measured["k"]
    more_posts = (evaluate.k - measured["k"]) * per_post
    asked = (questions, "questions")
    parts = []
    for method in evaluate.methods:
        measured_as = method if (method, "answer") in rows else "rag"
        row = rows[(measured_as, "answer")]
        tokens = PerCall.of([row], f"lampqa_cost.json, {measured_as} answer")
        if method in RETRIEVES:
            tokens = PerCall(tokens.prompt + more_posts, tokens.completion,
                             f"{tokens.source}, + {evaluate.k - measured['k']} posts x {per_post:.0f} tokens")
        parts.append(Part(f"{method}: answer", "task", ((row["calls_per_question"], "calls per question (measured)"),
                                                        asked), tokens))
        for step in ("judge", "coverage") if method == "planpers" else ("judge",):
            row = rows[(measured_as, step)]
            parts.append(Part(f"{method}: {step}", "judge", (
                (row["calls"] / bundled_aspects, "calls per gold aspect (measured)"),
                (aspects, "gold aspects per question"), asked),
                PerCall.of([row], f"lampqa_cost.json, {measured_as} {step}")))
    return Estimate(parts, [
        f"{questions:,} {evaluate.split} questions ({', '.join(f'{count:,}' for count in counts.values())} per "
        f"category) with {aspects:.2f} gold aspects each on average: LaMP-QA's Table 1",
        f"retrieved posts: k = {evaluate.k} against the embedded run's {measured['k']}, each post "
        f"{per_post:.0f} prompt tokens (RAG's prompt over the baseline's, per post); PlanPers' planner and answerer "
        "both read them; rag_random priced as rag",
        f"judge calls per gold aspect as measured on the {bundled_aspects} aspects of the bundled questions "
        f"(retries of unparsed replies included; judge_retries = {evaluate.judge_retries} is a ceiling, not a "
        "count); Contriever's embedding requests are not LM calls",
    ])


def _bundled_aspects(per_category: int) -> int:
    """The gold aspects of the bundled questions lampqa_cost.py evaluated: the first `per_category` of each category's
    test split."""
    options = LampQAOptions(max_questions=per_category, no_shipped=True)
    loaded = select_questions(options, options.questions_split)
    return sum(len(question.rubric_aspects) for question in loaded.questions)


# PrefDisco: stellalisy/prefq-bench, 10 tasks x 100 problems x 10 personas (the paper's §3).
PREFQ_TASKS, PREFQ_PROBLEMS, PREFQ_PERSONAS = 10, 100, 10
CRITERIA_PER_SCENARIO = (23 + 23 + 21 + 25 + 25 + 23) / 6
"""The preferences of the paper's six example profiles (its appendix), one rubric criterion each."""
QUESTIONS_ASKED = 1.48  # §4: the models' mean questions per dialogue


def prefdisco(steps: dict[str, Options], measured: dict[str, Any]) -> Estimate:
    evaluate = steps["evaluate"]
    held_out = {"test": evaluate.test_share, "val": evaluate.val_share}
    problems = {"all": PREFQ_PROBLEMS, **{split: max(1, round(PREFQ_PROBLEMS * share))
                                          for split, share in held_out.items()}}
    problems["train"] = PREFQ_PROBLEMS - problems["test"] - problems["val"]
    per_task = _capped(problems[evaluate.split] * PREFQ_PERSONAS, evaluate.max_per_task)
    scenarios = (_capped(per_task * PREFQ_TASKS, evaluate.max_scenarios), "scenarios")
    rows = _rows(measured, "condition", "step")
    forced = evaluate.forced_questions
    questions = forced if forced is not None else min(QUESTIONS_ASKED, evaluate.max_turns)
    stops = 0 if forced is not None or questions >= evaluate.max_turns else 1
    discovery = PerCall.of([rows[("discovery", "generation")]], "prefdisco_cost.json, discovery generation")
    grading = (CRITERIA_PER_SCENARIO + 1, "grading calls per response (rubric criteria + correctness)")
    parts = [Part(f"{condition}: answer", "task", ((1, "call per scenario"), scenarios),
                  PerCall.of([rows[(condition, "generation")]], f"prefdisco_cost.json, {condition} generation"))
             for condition in ("baseline", "oracle")]
    parts += [
        Part("discovery: asker and answer", "task", (
            (questions + stops + 1, f"calls per scenario ({_number(questions)} questions + {stops} decision to "
             "answer + 1 answer)"), scenarios), discovery),
        Part("discovery: simulated user", "judge", ((questions, "replies per scenario"), scenarios), discovery),
    ]
    parts += [Part(f"{condition}: grading", "judge", (grading, scenarios),
                   PerCall.of([rows[(condition, "grading")]], f"prefdisco_cost.json, {condition} grading"))
              for condition in ("baseline", "oracle", "discovery")]
    return Estimate(parts, [
        f"scenarios: {PREFQ_TASKS} tasks x {PREFQ_PROBLEMS} problems x {PREFQ_PERSONAS} personas (the paper), "
        f"split {evaluate.split}",
        f"rubric criteria per scenario: {CRITERIA_PER_SCENARIO:.1f}, the mean of the paper's six example profiles "
        "(21-25 preferences each, one criterion per preference); the embedded run's grading made exactly its "
        "formula's calls (criteria + 1 per response)",
        f"questions per dialogue: {QUESTIONS_ASKED}, the paper's mean over models (§4; its abstract says 1.42), of a "
        f"{evaluate.max_turns}-turn "
        "budget; a dialogue of k questions makes k asker calls and k simulator replies (judge model), one decision "
        "to answer when it stops early, and the answer; every discovery call priced as the embedded run's mean",
    ])


# SenseJudge: SenseBench's human labels, 8 topics x 125 pairs, three annotators (the paper's §4.1).
SENSEBENCH_TOPICS, PAIRS_PER_TOPIC, ANNOTATORS = 8, 125, 3


def sensejudge(steps: dict[str, Options], measured: dict[str, Any]) -> Estimate:
    select, evaluate = steps["select"], steps["evaluate"]
    topics = len(select.topics) if select.topics else SENSEBENCH_TOPICS
    dev = select.dev_pairs_per_topic
    test = _capped(PAIRS_PER_TOPIC - dev, evaluate.max_test_pairs_per_topic)
    per_topic = select.scope == "topic"
    groups = (topics, "topics") if per_topic else (1, "selection over every topic")
    dev_pairs = (dev if per_topic else dev * topics, "dev pairs")
    test_pairs = (test if per_topic else test * topics, "test pairs")
    descriptions = min(select.max_pair_descriptions, dev_pairs[0]) + 2  # none, one per dev pair, the aggregate
    runs = (ANNOTATORS, "annotators (a run each)")
    rows = measured["first_run"]["steps"]

    def measured_as(words: str) -> PerCall:
        return PerCall.of((row for row in rows if words in row["step"]), f"sensejudge_cost.json, {words}")

    written = (descriptions, "descriptions")
    both = (2, "orders")
    parts = [
        Part("select: extract descriptions", "task", (
            (descriptions - 1, "calls (a description per dev pair and the aggregate)"), groups, runs),
            measured_as("extract descriptions")),
        Part("select: judge votes", "task", (written, dev_pairs, both, groups, runs), measured_as("judge votes")),
        Part("evaluate: every description", "task", (written, test_pairs, both, groups, runs),
             measured_as("every description")),
    ]
    return Estimate(parts, [
        f"{topics} topics x {PAIRS_PER_TOPIC} pairs (the paper's 1,000 human-labelled pairs), {dev} dev pairs per "
        f"topic, the other {PAIRS_PER_TOPIC - dev} test pairs (fewer once duplicates are dropped)",
        f"Tables 1 and 2 average {ANNOTATORS} annotators: the file runs one (edit annotator and its paths), so the "
        "run is repeated for each",
        "the embedded run's votes made exactly the formula's calls (descriptions x dev pairs x 2 orders); the "
        "selected judge makes no call of its own (its prompts are among every description's: DSPy's cache)",
    ])


PAPERS: dict[str, tuple[str, Estimator]] = {
    "synthesizeme-table3": ("fit_cost.json", synthesizeme),
    "cupid-main": ("cupid_cost.json", cupid),
    "lampqa-methods": ("lampqa_cost.json", lampqa),
    "prefdisco-conditions": ("prefdisco_cost.json", prefdisco),
    "sensejudge-subsets": ("sensejudge_cost.json", sensejudge),
}
"""Each paper-scale experiment, the embedded run's cost file it is estimated from, and how."""


def estimate_paper(name: str, results: Path) -> dict[str, Any]:
    """One paper's estimate: the totals, per model, each part and the assumptions."""
    cost_file, estimator = PAPERS[name]
    path = EXPERIMENTS / f"{name}.toml"
    experiment = load_experiment(path)
    measured = json.loads((results / cost_file).read_text(encoding="utf-8"))
    estimate = estimator({step.name: step.options for step in experiment.commands()}, measured)
    rows = [part.as_row() for part in estimate.parts]
    models = {role: experiment.settings.model_for(role).model for role in dict.fromkeys(row["model"] for row in rows)}
    by_model = {model: _totals(row for row in rows if models[row["model"]] == model) for model in models.values()}
    return {"experiment": str(path.relative_to(REPOSITORY)), "measured": f"benchmarks/results/{cost_file}",
            **_totals(rows), "by_model": by_model, "parts": rows, "assumptions": estimate.assumptions}


def _totals(rows: Iterable[dict[str, Any]]) -> dict[str, int]:
    rows = list(rows)
    return {key: sum(row[key] for row in rows) for key in ("calls", "prompt_tokens", "completion_tokens")}


def _number(value: float) -> str:
    """A count as written in a row's `calls_from`: a whole count plainly, a mean or share to 3 figures."""
    return f"{value:,.0f}" if isinstance(value, int) or value >= 100 else f"{value:#.3g}"


def _tokens(value: float) -> str:
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= size:
            return f"{value / size:.3g}{unit}"
    return f"{value:.0f}"


def print_estimates(papers: dict[str, dict[str, Any]]) -> None:
    for name, paper in papers.items():
        print(f"\n## {name} ({paper['experiment']}; tokens per call from {paper['measured']})\n")
        print("| step | model | calls | prompt tokens | completion tokens | calls = | tokens per call |")
        print("|---|---|---|---|---|---|---|")
        for row in paper["parts"]:
            per_call = row["tokens_per_call"]
            print(f"| {row['step']} | {row['model']} | {row['calls']:,} | {_tokens(row['prompt_tokens'])} | "
                  f"{_tokens(row['completion_tokens'])} | {row['calls_from']} | {per_call['prompt']} + "
                  f"{per_call['completion']} ({per_call['measured']}) |")
        print(f"| **all** | | **{paper['calls']:,}** | **{_tokens(paper['prompt_tokens'])}** | "
              f"**{_tokens(paper['completion_tokens'])}** | | |")
        for model, totals in paper["by_model"].items():
            print(f"- {model}: {totals['calls']:,} calls, {_tokens(totals['prompt_tokens'])} prompt and "
                  f"{_tokens(totals['completion_tokens'])} completion tokens")
        for assumption in paper["assumptions"]:
            print(f"- assumed: {assumption}")
    print("\n## All papers\n\n| paper | LM calls | prompt tokens | completion tokens |\n|---|---|---|---|")
    for name, paper in papers.items():
        print(f"| {name} | {paper['calls']:,} | {_tokens(paper['prompt_tokens'])} | "
              f"{_tokens(paper['completion_tokens'])} |")
    print(f"\n{LOWER_BOUND}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=RESULTS, help="folder of the embedded runs' *_cost.json")
    parser.add_argument("--output", type=Path, default=RESULTS / "paper_scale_cost.json")
    args = parser.parse_args()
    papers = {name: estimate_paper(name, args.results) for name in PAPERS}
    write_result(args.output, {"note": LOWER_BOUND, "papers": papers})
    print_estimates(papers)
    print(f"\nwritten to {args.output}")


if __name__ == "__main__":
    main()
