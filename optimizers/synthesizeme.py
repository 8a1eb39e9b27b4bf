"""SynthesizeMe's per-user fit (Algorithm 1 of the paper): bootstrapped reasoning -> persona -> searched demos.

Step 1: the default judge (no user context) explains each train pair; a pair is verified when the prediction
matches the label, and only verified pairs give reasoned demos. Candidate demo sets are scored on the user's
validation pairs; the best one is the evidence for the persona.
Step 2: the persona synthesizer (its prompt compiled once with MIPROv2) turns that evidence into a persona.
Step 3: with the persona in the judge's instructions, the train pairs are bootstrapped again, and candidate demo sets
of those traces (and no demos at all) are scored on the validation pairs; the best one completes the personal judge.

By default the fit follows the paper and its reference code (DSPy's BootstrapFewShotWithRandomSearch):
- each train pair is judged once, in one order (the order its data row shows it in when the examples carry
  `row_order`, as `fit` marks them; else half of the pairs with the chosen response first, drawn by the seed), and
  kept when that one prediction is right;
- a demo set holds up to every verified pair as a reasoned demo, topped up with labeled pairs (no reasoning) to
  `labeled_demos` in all, as BootstrapFewShot does. The candidates are drawn from the train list as the reference
  code's seeds draw them, in its order: the labeled-only set (seed -2: `labeled_demos` train pairs sampled by
  `random.Random(0)`), the unshuffled set (seed -1: the verified pairs in train order), then n (step 1) or m (step 3)
  random sets (seed s: the train list shuffled by `random.Random(s)`, its first `random.Random(s).randint(1, most)`
  verified pairs): n + 2 candidates in step 1, m + 3 in step 3 with no demos at all first. A set's labeled top-up is
  BootstrapFewShot's: the pairs not taken as reasoned demos, shuffled by `random.Random(0)`, then sampled by another.
  The draws depend on the train list alone, as the reference's do (its `seed` never reaches them). The reasoned demos
  all come from one bootstrap pass: the reference bootstraps again for each candidate, but its teacher's labeled
  demos lack the output field, which DSPy 2.5-2.6's adapter drops, so every candidate's teacher is the zero-shot
  judge, whose calls (greedy, cached) come out alike: a candidate's reasoned demos are the first `size` verified pairs
  in its order, as here;
- the first candidate in order to reach `stop_at_accuracy` on the validation judgments wins, else the most accurate
  (the earliest of the tied). `candidate_search`'s `exact` (the default) finds that winner without the calls that
  cannot change it: a candidate is scored no further once it can no longer win, and the search ends once one is left
  (scored to the end, for its accuracy); the record says how far each candidate was scored and why it stopped.
  `search = "exhaustive"` scores every candidate on every judgment, as the reference code does: the same winner, every
  candidate's full score in the record.

Options that depart from it, each named in `SynthesizeMeConfig`:
- `verification = "both_orders"`: a pair is verified when the judge is right in both orders, and every demo set shows
  as many pairs with the chosen response first as second. A judge biased towards one position verifies mostly the
  pairs shown in the order it favours, and the demos then teach the bias back (the personal judges of the README's
  demo once answered "Second" 92% of the time). It costs one more bootstrap call per train pair.
- `max_demos`: at most this many demos in a set, reasoned and labeled together (it bounds the random sets' sizes and
  the labeled demos, as the reference's `max_bootstrapped_demos` and `max_labeled_demos` set to it would); a 4k
  context holds about 4 (the small-model profile's `max_demos`).
- `search = "halving"`: successive halving, fewer calls than `exhaustive`, but the winner can differ (see
  `candidate_search`).
- `step3_traces = "from_step1"`: step 3 draws its demo sets from the step-1 traces, written without the persona,
  instead of bootstrapping again: one bootstrap pass fewer.
A judge that verifies no pair leaves the persona to be written from labeled pairs only (no reasoning), and the demo
search chooses between no demos and labeled sets. Identical candidate sets (the same demos in the same order) are
scored once (a duplicate never wins: it scores as its first copy and comes later), and identical calls are answered by
DSPy's cache.

`SynthesizeMe` is a DSPy teleprompter: settings in its constructor, one user's data in
`compile(student, trainset=..., valset=...)`. Both sets are judge examples as `judge_examples` makes them (inputs
conversation, first_completion, second_completion; label preference; plus user_id, pair_id and order, and optionally
row_order), every train pair in both orders: `judge_set(pairs)` gives them, and `train_val_split(user)` splits a
user's pairs first. The candidates are scored on the valset's examples as given: `fit` gives each validation pair in
the one order its row shows (the reference's), or in both. It returns a new judge carrying what the fit tried as
`fit_record`. `collect_evidence` is step 1 alone, for compiling the persona prompt.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import dspy
from dspy.teleprompt import Teleprompter

from prefcraft.engine.scheduling import run_phases, warm_then_interleave
from prefcraft.engine.usage import LMUsage, metered
from prefcraft.errors import DataError
from prefcraft.metrics.pairwise import preference_correct
from prefcraft.optimizers.candidate_search import SearchResult, SearchStrategy, search_candidates
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.programs.persona import PersonaSynthesizer
from prefcraft.signatures.judge import JudgePreference

ORDERS = ("chosen_first", "chosen_second")  # the two orders of a pair, as judge_examples names them
# How the candidate demo sets are drawn (the module): recorded with each fit, so that a judge fitted from other draws is
# fitted again rather than resumed.
CANDIDATE_DRAWS = "reference_seeds"
SETS_HINT = "make trainset and valset with judge_set(pairs), which gives every pair in both orders"
Verification = Literal["one_order", "both_orders"]
Step3Traces = Literal["bootstrap_with_persona", "from_step1"]


@dataclass
class SynthesizeMeConfig:
    """Per-user fit settings. Defaults follow the paper (n = m = 10) and its reference code.

    Search: `num_persona_subsets` (n) random candidate demo sets in step 1, `num_demo_candidates` (m) in step 3, each
    beside the unshuffled and the labeled-only sets (and, in step 3, no demos at all); the first candidate reaching
    `stop_at_accuracy` wins, else the most accurate (the earliest of the tied). `search`: `exact` finds that winner (the
    paper's) with the calls that cannot change it left out; `exhaustive` scores every candidate on every validation
    judgment (the reference code: the same winner, every score complete); `halving` races them one validation pair at
    a time, then on rungs twice as long, keeping the best third each time (the winner can differ).
    Demos: `max_demos` caps a set, reasoned and labeled demos together (None: every verified train pair may be a
    reasoned demo, as in the paper); `labeled_demos` tops a set up with labeled pairs. `verification` and
    `step3_traces`: see the module.
    Runtime: `num_threads` parallel calls; `seed` fixes the orders the train pairs are shown in when their rows do not
    say, the balanced orders of `both_orders`' demo sets and `halving`'s tie-break (the demo sets themselves are the
    reference code's fixed draws).
    """

    num_persona_subsets: int = 10
    num_demo_candidates: int = 10
    max_demos: int | None = None
    labeled_demos: int = 4
    stop_at_accuracy: float | None = 0.8
    search: SearchStrategy = "exact"
    verification: Verification = "one_order"
    step3_traces: Step3Traces = "bootstrap_with_persona"
    num_threads: int = 4
    seed: int = 0


@dataclass
class FitRecord:
    """What a fit did: sizes, candidate scores, the persona and the LM usage of each step."""

    user_id: str
    train_pairs: int
    val_pairs: int
    verified_pairs: int
    """Train pairs the step-1 judge got right (in the order shown, or in both with `both_orders`)."""
    persona: str
    subset_accuracies: list[float | None] = field(default_factory=list)
    """Step 1's candidates' validation accuracies; None for a candidate the search did not score to the end."""
    demo_accuracies: list[float | None] = field(default_factory=list)
    """Step 3's, the same way."""
    val_accuracy: float = 0.0
    demos: int = 0
    evidence_demos: list[dict[str, object]] = field(default_factory=list)
    """The step-1 subset: the best demos for the judge without a persona (the paper's "Just Demos")."""
    verified_with_persona: int | None = None
    """Train pairs the persona judge got right when step 3 bootstrapped again; None when it reused step 1's traces."""
    usage: dict[str, LMUsage] = field(default_factory=dict)
    failed_calls: dict[str, int] = field(default_factory=dict)
    """Calls that raised (server errors, unparseable replies) per step; each scored as a wrong judgment."""
    subset_scores: list[dict[str, object]] = field(default_factory=list)
    """Step 1's candidates as the search left them: correct answers, judgments judged of the total, failed calls, and
    why it stopped ("complete"; `exact`: "cannot win" or "not needed"; `halving`: "dropped")."""
    demo_scores: list[dict[str, object]] = field(default_factory=list)
    """Step 3's, the same way."""
    chosen_subset: int = 0
    """The index in `subset_scores` of the candidate the persona was written from."""
    chosen_demos: int = 0
    """The index in `demo_scores` of the demo set the judge keeps (0: no demos)."""

    @property
    def total_usage(self) -> LMUsage:
        return sum(self.usage.values(), LMUsage())


Judged = tuple[dspy.Example, ...]
"""One train pair as the bootstrap judges it: in its one shown order, or (`both_orders`) with the chosen response
first, then second; a verified pair is the same tuple with each example's reasoning."""


@dataclass
class PersonaEvidence:
    """The result of step 1 for one user: what the persona is written from, and what step 3 reuses."""

    user_id: str
    train: list[Judged]
    val_examples: list[dspy.Example]
    verified: list[Judged]
    evidence: list[dspy.Example]
    subset_accuracies: list[float | None]
    rng: random.Random
    usage: dict[str, LMUsage]
    failed_calls: dict[str, int] = field(default_factory=dict)
    subset_scores: list[dict[str, object]] = field(default_factory=list)
    chosen_subset: int = 0

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
        failed_calls = dict(evidence.failed_calls)
        with metered() as meter:
            persona = self.persona_synthesizer(past_judgments=evidence.past_judgments).persona
        usage["persona"] = meter.usage
        verified_with_persona = None
        verified = evidence.verified
        if self.config.step3_traces == "bootstrap_with_persona":
            with metered() as meter:
                verified, failed_calls["persona_bootstrap"] = self._bootstrap(
                    _with_persona(student, persona), evidence.train)
            usage["persona_bootstrap"] = meter.usage
            verified_with_persona = len(verified)
        with metered() as meter:
            candidates = self._candidate_demo_sets(evidence.train, verified, evidence.rng,
                                                   self.config.num_demo_candidates)
            demo_sets = [[], *candidates]
            judges = [_with_persona(student, persona) for _ in demo_sets]
            search = self._search(judges, demo_sets, evidence.val_examples)
        usage["demo_search"] = meter.usage
        failed_calls["demo_search"] = search.failed

        judge = _with_persona(student, persona)
        judge.demos = demo_sets[search.best_index]
        judge.fit_record = FitRecord(
            user_id=evidence.user_id, train_pairs=len(evidence.train),
            val_pairs=len({example.pair_id for example in evidence.val_examples}),
            verified_pairs=len(evidence.verified), persona=persona, subset_accuracies=evidence.subset_accuracies,
            demo_accuracies=_accuracies(search), val_accuracy=search.best.accuracy, demos=len(judge.demos),
            evidence_demos=[dict(demo) for demo in evidence.evidence], verified_with_persona=verified_with_persona,
            usage=usage, failed_calls=failed_calls, subset_scores=evidence.subset_scores,
            demo_scores=_candidate_records(search), chosen_subset=evidence.chosen_subset,
            chosen_demos=search.best_index,
        )  # fmt: skip
        return judge

    def collect_evidence(
        self, student: PreferenceJudge, *, trainset: Sequence[dspy.Example], valset: Sequence[dspy.Example]
    ) -> PersonaEvidence:
        """Step 1: bootstrap verified pairs with copies of `student`, and choose the demo set the persona is written
        from."""
        pairs = _pairs_in_both_orders(trainset)
        if not valset:
            raise DataError("valset", None, None, "no judge examples", SETS_HINT)
        rng = random.Random(self.config.seed)
        train = pairs if self.config.verification == "both_orders" else [(example,) for example in _shown(pairs, rng)]
        val_examples = list(valset)
        with metered() as bootstrap:
            verified, bootstrap_failures = self._bootstrap(student.reset_copy(), train)
        with metered() as evidence_meter:
            subsets = self._candidate_demo_sets(train, verified, rng, self.config.num_persona_subsets)
            search = self._search([student.reset_copy() for _ in subsets], subsets, val_examples)
        return PersonaEvidence(
            user_id=pairs[0][0].user_id, train=train, val_examples=val_examples, verified=verified,
            evidence=subsets[search.best_index], subset_accuracies=_accuracies(search), rng=rng,
            usage={"bootstrap": bootstrap.usage, "persona_evidence": evidence_meter.usage},
            failed_calls={"bootstrap": bootstrap_failures, "persona_evidence": search.failed},
            subset_scores=_candidate_records(search), chosen_subset=search.best_index,
        )  # fmt: skip

    def _bootstrap(self, judge: PreferenceJudge, train: list[Judged]) -> tuple[list[Judged], int]:
        """`judge` on every example of every train pair; the pairs it got right in each (with its reasoning), and how
        many calls failed."""
        examples = [example for pair in train for example in pair]
        # One judge, one prompt prefix: its first call runs alone, so that the others find the prefix cached.
        predictions = run_phases(warm_then_interleave([[(judge, example) for example in examples]]),
                                 self.config.num_threads)
        traces = iter([
            example.copy(reasoning=prediction.reasoning)
            if prediction is not None and preference_correct(example, prediction) else None
            for example, prediction in zip(examples, predictions, strict=True)
        ])
        verified = [traced for traced in (tuple(next(traces) for _ in pair) for pair in train)
                    if all(trace is not None for trace in traced)]
        return verified, sum(prediction is None for prediction in predictions)

    def _candidate_demo_sets(
        self, train: list[Judged], verified: list[Judged], rng: random.Random, count: int
    ) -> list[list[dspy.Example]]:
        """Candidate demo sets drawn as the reference's BootstrapFewShotWithRandomSearch draws them from the train list
        (see the module): labeled-only, unshuffled, then `count` random sets (seeds 0 to count - 1); `rng` only
        balances the orders with `both_orders`. Empty and duplicate sets dropped."""
        by_pair = {pair[0].pair_id: pair for pair in verified}
        most = min(self.config.max_demos or len(train), len(train))
        labeled_only = random.Random(0).sample(train, min(self._labeled_count, len(train)))  # DSPy's LabeledFewShot
        candidates = [self._shown(labeled_only, rng), self._demo_set(train, most, by_pair, rng)]
        for seed in range(count):
            order = list(train)
            random.Random(seed).shuffle(order)
            candidates.append(self._demo_set(order, random.Random(seed).randint(1, most), by_pair, rng))
        unique: dict[tuple[str, ...], list[dspy.Example]] = {}
        for demos in candidates:  # demos in another order make another prompt: not a duplicate
            unique.setdefault(tuple(f"{d.pair_id}:{d.order}:{'reasoning' in d}" for d in demos), demos)
        return [demos for demos in unique.values() if demos]

    def _demo_set(
        self, order: Sequence[Judged], size: int, verified: dict[str, Judged], rng: random.Random
    ) -> list[dspy.Example]:
        """The first `size` verified pairs in `order` as reasoned demos, topped up with labeled pairs to
        `_labeled_count` in all as BootstrapFewShot draws them: the rest of `order` shuffled by `random.Random(0)`,
        then sampled by a new `random.Random(0)`."""
        reasoned = [verified[pair[0].pair_id] for pair in order if pair[0].pair_id in verified][:size]
        taken = {pair[0].pair_id for pair in reasoned}
        rest = [pair for pair in order if pair[0].pair_id not in taken]
        random.Random(0).shuffle(rest)
        labeled = random.Random(0).sample(rest, min(max(0, self._labeled_count - len(reasoned)), len(rest)))
        return self._shown(reasoned + labeled, rng)

    @property
    def _labeled_count(self) -> int:
        """The labeled demos a set is topped up to: `labeled_demos`, within `max_demos`."""
        return min(self.config.labeled_demos, self.config.max_demos or self.config.labeled_demos)

    def _shown(self, pairs: Sequence[Judged], rng: random.Random) -> list[dspy.Example]:
        """Each pair as one demo: in the order it was judged in, or with `both_orders` in balanced orders."""
        if self.config.verification == "both_orders":
            return _balanced_orders(pairs, rng)
        return [pair[0] for pair in pairs]

    def _search(
        self, judges: list[PreferenceJudge], demo_sets: list[list[dspy.Example]], val_examples: list[dspy.Example]
    ) -> SearchResult:
        for judge, demos in zip(judges, demo_sets, strict=True):
            judge.demos = demos
        return search_candidates(
            judges, val_examples, preference_correct,
            stop_at=self.config.stop_at_accuracy, num_threads=self.config.num_threads,
            strategy=self.config.search, first_rung=2,  # halving: one validation pair, both orders
            seed=self.config.seed,
        )  # fmt: skip


def _balanced_orders(pairs: Sequence[Judged], rng: random.Random) -> list[dspy.Example]:
    """Each pair in one order: half of them with the chosen response first, which half (and, for an odd count,
    which order gets the extra one) drawn at random."""
    start = rng.randrange(2)
    orders = [(start + index) % 2 for index in range(len(pairs))]
    rng.shuffle(orders)
    return [pair[order] for pair, order in zip(pairs, orders, strict=True)]


def _shown(pairs: Sequence[Judged], rng: random.Random) -> list[dspy.Example]:
    """Each pair in the order its data row shows it (`row_order`, as `fit` marks the examples: the reference's), or,
    for examples without it, in balanced orders drawn by `rng`."""
    if all(hasattr(pair[0], "row_order") for pair in pairs):
        return [pair[ORDERS.index(pair[0].row_order)] for pair in pairs]
    return _balanced_orders(pairs, rng)


def _check_student(student: PreferenceJudge) -> None:
    """The persona replaces the student's instructions, so a student with instructions of its own is refused."""
    if not isinstance(student, PreferenceJudge) or student.judge.predict.signature.instructions != (
        JudgePreference.instructions
    ):
        raise ValueError(
            "SynthesizeMe writes the persona into the judge's instructions: compile an uncompiled PreferenceJudge()"
        )


def _pairs_in_both_orders(trainset: Sequence[dspy.Example]) -> list[Judged]:
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


def _candidate_records(search: SearchResult) -> list[dict[str, object]]:
    return [score.as_record() for score in search.scores]
