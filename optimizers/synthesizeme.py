"""SynthesizeMe's per-user fit: verified bootstrapped reasoning -> persona -> searched demos -> personal judge.

Step 1: the default judge (no user context) explains each train pair in both orders; a pair is verified when both
predictions match the label, and only verified pairs give demos. Candidate subsets of those traces are scored as
demos on the user's validation pairs; the best one is the evidence for the persona.
Step 2: the persona synthesizer (its prompt compiled once with MIPROv2) turns that evidence into a persona.
Step 3: with the persona in the judge's instructions, candidate demo sets drawn from the step-1 traces (no second
bootstrap) are scored on the validation pairs; the best one completes the personal judge.
Both searches race the candidates by successive halving (see `candidate_search`) and stop at
`stop_at_accuracy`; identical calls are answered by DSPy's cache.

Balanced demos: the paper verifies a trace judged in one order, so a judge biased towards one position verifies
mostly pairs shown in the order it favours, and the demos then teach the bias back (the personal judges of the
README's demo answered "Second" 92% of the time). Here a verified pair was judged right wherever the chosen response
stood, and every demo set, the labeled-only one included, shows each of its pairs in one order, drawn so that as
many demos have the chosen response first as second (one more of either when the set is odd). This costs one extra
bootstrap call per train pair. A judge that always answers the same position verifies no pair: the persona is then
written from the labeled-only set (no reasoning) and the demo search chooses between no demos and that set.

`SynthesizeMe` is a DSPy teleprompter: settings in its constructor, one user's data in
`compile(student, trainset=..., valset=...)`. Both sets are judge examples as `judge_examples` makes them (inputs
conversation, first_completion, second_completion; label preference; plus user_id, pair_id and order), every train
pair in both orders: `judge_set(pairs)` gives them, and `train_val_split(user)` splits a user's pairs first. It
returns a new judge carrying what the fit tried as `fit_record`. `collect_evidence` is step 1 alone, for compiling
the persona prompt.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

import dspy
from dspy.teleprompt import Teleprompter

from prefcraft.errors import DataError
from prefcraft.metrics.pairwise import preference_correct
from prefcraft.optimizers.candidate_search import SearchResult, SearchStrategy, search_candidates
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.programs.persona import PersonaSynthesizer
from prefcraft.scheduling import run_phases, warm_then_interleave
from prefcraft.signatures.judge import JudgePreference
from prefcraft.usage import LMUsage, metered

ORDERS = ("chosen_first", "chosen_second")  # the two orders of a pair, as judge_examples names them
DEMO_ORDERS = "balanced"
"""How demos are oriented; fits record it, so that judges fitted from one-order bootstraps are fitted again."""
SETS_HINT = "make trainset and valset with judge_set(pairs), which gives every pair in both orders"


@dataclass
class SynthesizeMeConfig:
    """Per-user fit settings. Defaults follow the paper (n = m = 10) and its reference code.

    Search: `num_persona_subsets` (n) candidate trace subsets in step 1, `num_demo_candidates` (m) demo sets in
    step 3, each of at most `max_demos` demos; a search stops at the first candidate reaching `stop_at_accuracy`.
    `search`: `halving` races the candidates one validation pair at a time, then on rungs twice as long, keeping
    the best third each time; `exhaustive` scores every candidate on every validation judgment, as the reference
    code does.
    Runtime: `num_threads` parallel calls; `seed` fixes the sampling of demo sets and of their demos' orders.
    """

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
    verified_pairs: int
    """Train pairs judged right in both orders: the pool of reasoned demos."""
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


BothOrders = tuple[dspy.Example, dspy.Example]
"""One pair's two judge examples (or verified traces): the chosen response shown first, then shown second."""


@dataclass
class PersonaEvidence:
    """The result of step 1 for one user: what the persona is written from, and what step 3 reuses."""

    user_id: str
    train: list[BothOrders]
    val_examples: list[dspy.Example]
    verified: list[BothOrders]
    evidence: list[dspy.Example]
    subset_accuracies: list[float | None]
    rng: random.Random
    usage: dict[str, LMUsage]
    failed_calls: dict[str, int] = field(default_factory=dict)

    @property
    def past_judgments(self) -> str:
        return format_judgments(self.evidence)


class SynthesizeMe(Teleprompter):
    """Fits a personal judge for one user from their train and validation judge examples."""

    def __init__(self, persona_synthesizer: PersonaSynthesizer, config: SynthesizeMeConfig | None = None):
        super().__init__()
        self.persona_synthesizer = persona_synthesizer
        self.config = config or SynthesizeMeConfig()

    def compile(
        self, student: PreferenceJudge, *, trainset: Sequence[dspy.Example], valset: Sequence[dspy.Example]
    ) -> PreferenceJudge:
        """A copy of `student` (an uncompiled `PreferenceJudge()`) with the persona in its instructions and the best
        demo set; its `fit_record` attribute is the fit's `FitRecord`. The student itself is left as it was."""
        _check_student(student)
        evidence = self.collect_evidence(student, trainset=trainset, valset=valset)
        usage = dict(evidence.usage)
        with metered() as meter:
            persona = self.persona_synthesizer(past_judgments=evidence.past_judgments).persona
        usage["persona"] = meter.usage
        with metered() as meter:
            candidates = self._candidate_demo_sets(
                evidence.verified, evidence.train, evidence.rng, self.config.num_demo_candidates
            )
            demo_sets = [[], *candidates]
            judges = [_with_persona(student, persona) for _ in demo_sets]
            search = self._search(judges, demo_sets, evidence.val_examples)
        usage["demo_search"] = meter.usage

        judge = _with_persona(student, persona)
        judge.demos = demo_sets[search.best_index]
        judge.fit_record = FitRecord(
            user_id=evidence.user_id, train_pairs=len(evidence.train),
            val_pairs=len({example.pair_id for example in evidence.val_examples}),
            verified_pairs=len(evidence.verified), persona=persona, subset_accuracies=evidence.subset_accuracies,
            demo_accuracies=_accuracies(search), val_accuracy=search.best.accuracy, demos=len(judge.demos),
            evidence_demos=[dict(demo) for demo in evidence.evidence], usage=usage,
            failed_calls={**evidence.failed_calls, "demo_search": search.failed},
        )  # fmt: skip
        return judge

    def collect_evidence(
        self, student: PreferenceJudge, *, trainset: Sequence[dspy.Example], valset: Sequence[dspy.Example]
    ) -> PersonaEvidence:
        """Step 1: bootstrap verified pairs with copies of `student`, and choose the demo set the persona is written
        from."""
        train = _pairs_in_both_orders(trainset)
        if not valset:
            raise DataError("valset", None, None, "no judge examples", SETS_HINT)
        rng = random.Random(self.config.seed)
        val_examples = list(valset)
        with metered() as bootstrap:
            verified, bootstrap_failures = self._bootstrap(student, train)
        with metered() as evidence_meter:
            subsets = self._candidate_demo_sets(verified, train, rng, self.config.num_persona_subsets)
            search = self._search([student.reset_copy() for _ in subsets], subsets, val_examples)
        return PersonaEvidence(
            user_id=train[0][0].user_id, train=train, val_examples=val_examples, verified=verified,
            evidence=subsets[search.best_index], subset_accuracies=_accuracies(search), rng=rng,
            usage={"bootstrap": bootstrap.usage, "persona_evidence": evidence_meter.usage},
            failed_calls={"bootstrap": bootstrap_failures, "persona_evidence": search.failed},
        )  # fmt: skip

    def _bootstrap(self, student: PreferenceJudge, train: list[BothOrders]) -> tuple[list[BothOrders], int]:
        """Judge each train pair in both orders; the pairs judged right in both, and how many calls failed."""
        examples = [example for pair in train for example in pair]
        judge = student.reset_copy()
        # One judge, one prompt prefix: its first call runs alone, so that the others find the prefix cached.
        predictions = run_phases(warm_then_interleave([[(judge, example) for example in examples]]),
                                 self.config.num_threads)
        traces = [
            example.copy(reasoning=prediction.reasoning)
            if prediction is not None and preference_correct(example, prediction) else None
            for example, prediction in zip(examples, predictions, strict=True)
        ]
        verified = [
            (first, second)
            for first, second in zip(traces[0::2], traces[1::2], strict=True)
            if first is not None and second is not None
        ]
        return verified, sum(prediction is None for prediction in predictions)

    def _candidate_demo_sets(
        self, verified: list[BothOrders], train: list[BothOrders], rng: random.Random, count: int
    ) -> list[list[dspy.Example]]:
        """Unshuffled verified pairs, labeled-only pairs, then random subsets of the verified pairs, each set shown
        in balanced orders; duplicates dropped, `count` at most."""
        k = self.config.max_demos
        labeled = _balanced_orders(train[:k], rng)
        candidates = [_balanced_orders(verified[:k], rng), labeled]
        for _ in range(8 * count):
            if len(candidates) >= count or not verified:
                break
            subset = rng.sample(verified, rng.randint(1, min(k, len(verified))))
            candidates.append(_balanced_orders(subset, rng))
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


def _balanced_orders(pairs: Sequence[BothOrders], rng: random.Random) -> list[dspy.Example]:
    """Each pair in one order: half of them with the chosen response first, which half (and, for an odd count,
    which order gets the extra one) drawn at random."""
    start = rng.randrange(2)
    orders = [(start + index) % 2 for index in range(len(pairs))]
    rng.shuffle(orders)
    return [pair[order] for pair, order in zip(pairs, orders, strict=True)]


def _check_student(student: PreferenceJudge) -> None:
    """The persona replaces the student's instructions, so a student with instructions of its own is refused."""
    if not isinstance(student, PreferenceJudge) or student.judge.predict.signature.instructions != (
        JudgePreference.instructions
    ):
        raise ValueError(
            "SynthesizeMe writes the persona into the judge's instructions: compile an uncompiled PreferenceJudge()"
        )


def _pairs_in_both_orders(trainset: Sequence[dspy.Example]) -> list[BothOrders]:
    """The train examples grouped by pair, in the order the pairs first appear."""
    by_pair: dict[str, dict[str, dspy.Example]] = {}
    for example in trainset:
        by_pair.setdefault(example.pair_id, {})[example.order] = example
    if not by_pair:
        raise DataError("trainset", None, None, "no judge examples", SETS_HINT)
    one_order = [pair_id for pair_id, orders in by_pair.items() if set(orders) != set(ORDERS)]
    if one_order:
        raise DataError("trainset", None, "order", f"{len(one_order)} pair(s) have only one order", SETS_HINT)
    return [(orders[ORDERS[0]], orders[ORDERS[1]]) for orders in by_pair.values()]


def _with_persona(student: PreferenceJudge, persona: str) -> PreferenceJudge:
    """A copy of `student` whose instructions carry `persona`, worded as `PreferenceJudge(persona)` words them (the
    judge that `evaluate`'s persona method rebuilds)."""
    judge = student.reset_copy()
    judge.judge.predict.signature = PreferenceJudge(persona).judge.predict.signature
    return judge


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
