"""SynthesizeMe's per-user fit: verified bootstrapped reasoning -> persona -> searched demos -> personal judge.

Step 1: the default judge (no user context) explains each train pair; only traces whose prediction matches the
label are kept. Candidate subsets of those traces are scored as demos on the user's validation pairs; the best one
is the evidence for the persona.
Step 2: the persona synthesizer (its prompt compiled once with MIPROv2) turns that evidence into a persona.
Step 3: with the persona in the judge's instructions, candidate demo sets drawn from the step-1 traces (no second
bootstrap) are scored on the validation pairs; the best one completes the personal judge.
Both searches race the candidates by successive halving (see `candidate_search`) and stop at
`stop_at_accuracy`; identical calls are answered by DSPy's cache.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import dspy
from prefcraft.optimizers.candidate_search import SearchResult, SearchStrategy, search_candidates
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.programs.persona import PersonaSynthesizer

from prefcraft.errors import DataError
from prefcraft.loaders.personal_reward_bench import PreferencePair, UserPairs, judge_examples
from prefcraft.metrics.pairwise import preference_correct
from prefcraft.usage import LMUsage, metered


@dataclass
class SynthesizeMeConfig:
    """Per-user fit settings. Defaults follow the paper (n = m = 10) and its reference code.

    Split: `val_fraction` of a user's context pairs (the latest ones) become validation pairs when the data has none.
    Search: `num_persona_subsets` (n) candidate trace subsets in step 1, `num_demo_candidates` (m) demo sets in
    step 3, each of at most `max_demos` demos; a search stops at the first candidate reaching `stop_at_accuracy`.
    `search`: `halving` races the candidates one validation pair at a time, then on rungs twice as long, keeping
    the best third each time; `exhaustive` scores every candidate on every validation judgment, as the reference
    code does.
    Runtime: `num_threads` parallel calls; `seed` fixes the order of bootstrapping and sampling.
    """

    val_fraction: float = 0.3
    num_persona_subsets: int = 10
    num_demo_candidates: int = 10
    max_demos: int = 4
    stop_at_accuracy: float | None = 0.8
    search: SearchStrategy = "halving"
    num_threads: int = 4
    seed: int = 0


@dataclass
class FitRecord:
    """What a fit did: sizes, candidate scores, the persona and the LM usage of each step."""

    user_id: str
    train_pairs: int
    val_pairs: int
    verified_traces: int
    persona: str
    subset_accuracies: list[float | None] = field(default_factory=list)
    demo_accuracies: list[float | None] = field(default_factory=list)
    val_accuracy: float = 0.0
    demos: int = 0
    evidence_demos: list[dict[str, object]] = field(default_factory=list)
    """The step-1 subset: the best demos for the judge without a persona (the paper's "Just Demos")."""
    usage: dict[str, LMUsage] = field(default_factory=dict)
    failed_calls: dict[str, int] = field(default_factory=dict)
    """Calls that raised (server errors, unparseable replies) per step; each scored as a wrong judgment."""

    @property
    def total_usage(self) -> LMUsage:
        return sum(self.usage.values(), LMUsage())


@dataclass
class PersonaEvidence:
    """The result of step 1 for one user: what the persona is written from, and what step 3 reuses."""

    user_id: str
    train: list[PreferencePair]
    val_examples: list[dspy.Example]
    traces: list[dspy.Example]
    evidence: list[dspy.Example]
    subset_accuracies: list[float | None]
    rng: random.Random
    usage: dict[str, LMUsage]
    failed_calls: dict[str, int] = field(default_factory=dict)

    @property
    def past_judgments(self) -> str:
        return format_judgments(self.evidence)


class SynthesizeMe:
    def __init__(self, persona_synthesizer: PersonaSynthesizer, config: SynthesizeMeConfig | None = None):
        self.persona_synthesizer = persona_synthesizer
        self.config = config or SynthesizeMeConfig()

    def prepare(self, user: UserPairs) -> PersonaEvidence:
        """Step 1: split, bootstrap verified traces, and choose the trace subset the persona is written from."""
        train, val = self._split(user)
        rng = random.Random(self.config.seed)
        val_examples = [example for pair in val for example in judge_examples(pair)]
        with metered() as bootstrap:
            traces, bootstrap_failures = self._bootstrap_traces(train, rng)
        with metered() as evidence_meter:
            subsets = self._candidate_demo_sets(traces, train, rng, self.config.num_persona_subsets)
            search = self._search([PreferenceJudge() for _ in subsets], subsets, val_examples)
        return PersonaEvidence(
            user_id=user.user_id, train=train, val_examples=val_examples, traces=traces,
            evidence=subsets[search.best_index], subset_accuracies=_accuracies(search), rng=rng,
            usage={"bootstrap": bootstrap.usage, "persona_evidence": evidence_meter.usage},
            failed_calls={"bootstrap": bootstrap_failures, "persona_evidence": search.failed},
        )  # fmt: skip

    def fit(self, user: UserPairs) -> tuple[PreferenceJudge, FitRecord]:
        prepared = self.prepare(user)
        usage = dict(prepared.usage)
        with metered() as meter:
            persona = self.persona_synthesizer(past_judgments=prepared.past_judgments).persona
        usage["persona"] = meter.usage
        with metered() as meter:
            candidates = self._candidate_demo_sets(
                prepared.traces, prepared.train, prepared.rng, self.config.num_demo_candidates
            )
            demo_sets = [[], *candidates]
            search = self._search([PreferenceJudge(persona) for _ in demo_sets], demo_sets, prepared.val_examples)
        usage["demo_search"] = meter.usage

        judge = PreferenceJudge(persona)
        judge.demos = demo_sets[search.best_index]
        record = FitRecord(
            user_id=user.user_id, train_pairs=len(prepared.train), val_pairs=len(prepared.val_examples) // 2,
            verified_traces=len(prepared.traces), persona=persona, subset_accuracies=prepared.subset_accuracies,
            demo_accuracies=_accuracies(search), val_accuracy=search.best.accuracy, demos=len(judge.demos),
            evidence_demos=[dict(demo) for demo in prepared.evidence], usage=usage,
            failed_calls={**prepared.failed_calls, "demo_search": search.failed},
        )  # fmt: skip
        return judge, record

    def _split(self, user: UserPairs) -> tuple[list[PreferencePair], list[PreferencePair]]:
        pairs = user.context_pairs
        if len(pairs) < 2:
            raise DataError(user.user_id, None, None, f"user has {len(pairs)} context pair(s); SynthesizeMe needs 2+")
        same = [pair for pair in pairs if pair.chosen.content == pair.rejected.content]
        if same:
            raise DataError(user.user_id, None, "chosen", f"{len(same)} pair(s) have identical chosen and rejected")
        if user.val and user.train:
            return user.train, user.val
        cut = min(max(1, round(len(pairs) * (1 - self.config.val_fraction))), len(pairs) - 1)
        return pairs[:cut], pairs[cut:]  # unshuffled: the latest pairs validate

    def _bootstrap_traces(
        self, train: list[PreferencePair], rng: random.Random
    ) -> tuple[list[dspy.Example], int]:
        """Judge each train pair once (order drawn at random) without user context; the verified traces, and how
        many calls failed."""
        examples = [rng.choice(judge_examples(pair)) for pair in train]
        predictions = PreferenceJudge().batch(
            examples, num_threads=self.config.num_threads, max_errors=len(examples) + 1, disable_progress_bar=True
        )
        traces = [
            example.copy(reasoning=prediction.reasoning)
            for example, prediction in zip(examples, predictions, strict=True)
            if prediction is not None and preference_correct(example, prediction)
        ]
        return traces, sum(prediction is None for prediction in predictions)

    def _candidate_demo_sets(
        self, traces: list[dspy.Example], train: list[PreferencePair], rng: random.Random, count: int
    ) -> list[list[dspy.Example]]:
        """Unshuffled traces, labeled-only pairs, then random subsets; duplicates dropped, `count` at most."""
        k = self.config.max_demos
        labeled = [rng.choice(judge_examples(pair)) for pair in train[:k]]
        candidates = [traces[:k], labeled]
        for _ in range(8 * count):
            if len(candidates) >= count or not traces:
                break
            candidates.append(rng.sample(traces, rng.randint(1, min(k, len(traces)))))
        unique: dict[tuple[str, ...], list[dspy.Example]] = {}
        for demos in candidates:
            unique.setdefault(tuple(sorted(f"{d.pair_id}:{d.order}" for d in demos)), demos)
        return [demos for demos in unique.values() if demos][:count]

    def _search(
        self, judges: list[PreferenceJudge], demo_sets: list[list[dspy.Example]], val_examples: list[dspy.Example]
    ) -> SearchResult:
        for judge, demos in zip(judges, demo_sets, strict=True):
            judge.demos = demos
        return search_candidates(
            judges, val_examples, preference_correct,
            stop_at=self.config.stop_at_accuracy, num_threads=self.config.num_threads,
            strategy=self.config.search, first_rung=2,  # one validation pair, both orders
            seed=self.config.seed,
        )  # fmt: skip


def format_judgments(traces: list[dspy.Example]) -> str:
    """Verified traces as the persona synthesizer reads them."""
    blocks = []
    for number, trace in enumerate(traces, 1):
        blocks.append(
            f"Judgment {number}\nConversation:\n{trace.conversation}\nFirst completion:\n{trace.first_completion}\n"
            f"Second completion:\n{trace.second_completion}\nReasoning: {getattr(trace, 'reasoning', '')}\n"
            f"Preferred: {trace.preference}"
        )
    return "\n\n".join(blocks)


def _accuracies(search: SearchResult) -> list[float | None]:
    return [score.accuracy if score.complete else None for score in search.scores]
