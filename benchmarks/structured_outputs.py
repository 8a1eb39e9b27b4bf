"""Completion tokens and parse rate of prefcraft's structured outputs: dialects and small-model bounds compared on the
real signatures, and DSPy's own adapters beside them on request.

Starts the embedded llama.cpp server (SmolLM2-135M-Instruct) or uses the server at `--task-api-base`, turns DSPy's cache
off so that every call reaches the server, and runs the real signatures as their programs call them: those with a
closed answer (SynthesizeMe's `JudgePreference`, a chain of thought; CUPID's `MatchChecklist`, a reasoning and a list
of three-way coverage labels; LaMP-QA's `PlanAspects`, a list of models; PrefDisco's `NextTurn`, an ask-or-answer
choice and a question; SenseJudge's `ExtractPreference`) and those whose free text the tiny model writes
(SynthesizeMe's `SynthesizePersona`, a chain of thought from verified judgments; LaMP-QA's `AnswerWithPlan`; CUPID's
`InferPreference`; PrefDisco's `AnswerProblem` and its simulator's `ReplyAsUser`).

Each `--variant LABEL=DIALECT:PROFILE` is a SchemaAdapter as prefcraft builds it (`prefcraft.engine.lm.build_adapter`):
DIALECT is json_schema, llguidance (compact JSON) or none, and PROFILE is `default` (the small-model profile of
prefcraft/settings.py) or a TOML file whose `[small_model]` table sets the profile's bounds. The default variants:
`before` (json_schema with the bounds of benchmarks/profiles/bounds-2026-11-25.toml, the unmeasured ones), `compact`
(llguidance with the same bounds: what compact whitespace alone saves) and `after` (llguidance with today's default
profile). `--adapters chat json` adds `dspy.ChatAdapter(use_json_adapter_fallback=False)` and `dspy.JSONAdapter()`.

Per variant and signature it counts the calls whose prediction has every output field with the right type (failures
are counted by kind), the median and p90 latency of a call as the caller sees it (the server batches concurrent calls
in its slots), and its prompt and completion tokens; the summary line gives each variant's completion tokens per call
and its ratio to the first's. A second table gives, per free-text output field (`Owner.field`, as the profile keys its
bounds, ChainOfThought's `reasoning` included) over the parsed calls, the mean and longest string in characters, the
bound in force and the share of strings that reached 95% of it: a bound that many strings reach cuts answers short.
Inputs vary from call to call (a few built-in English exchanges, plus real SenseBench dialogues when `--sensebench`
names them) and are the same for every variant. The LM's `max_tokens` (default 256) binds the DSPy adapters and an
unbounded schema only: a bounded schema raises it to what the schema needs.

Run from the repository root:
    .venv/bin/python benchmarks/structured_outputs.py --calls 50 [--sensebench ../shared/data/sensebench]
"""

from __future__ import annotations

import argparse
import itertools
import logging
import math
import random
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import dspy
import pydantic
from dspy.utils.exceptions import AdapterParseError
from harness import configure_logging, load_profile, make_parser, model_endpoint, write_result
from tqdm import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm

from prefcraft.components.sensejudge.data import load_dialogues
from prefcraft.engine.adapter import DIALECTS, SchemaAdapter, output_schema
from prefcraft.engine.lm import build_adapter, build_lm
from prefcraft.loaders.personal_reward_bench import Message, format_conversation
from prefcraft.optimizers.synthesizeme import format_judgments
from prefcraft.programs.cupid import PreferenceInferrer, number_sessions
from prefcraft.programs.lampqa import PlanPers, format_plan
from prefcraft.programs.persona import PersonaSynthesizer
from prefcraft.programs.prefdisco import Responder, UserSimulator, format_chat
from prefcraft.settings import ModelSettings, SmallModelProfile
from prefcraft.signatures.cupid import MatchChecklist
from prefcraft.signatures.judge import JudgePreference
from prefcraft.signatures.lampqa import PlanAspects, PlannedAspect
from prefcraft.signatures.prefdisco import NextTurn
from prefcraft.signatures.sensejudge import ExtractPreference

logger = logging.getLogger("structured_outputs")

# Real dialogues are mostly Chinese, which costs the model's tokenizer two or three tokens a character: texts are
# clipped so that prompts stay a few hundred tokens long on a 4096-token context.
CLIP_CHARS = 300
REAL_SHARE = 0.5
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[\u3002\uff01\uff1f])|\n")  # Latin or CJK sentence end
FAILURE_SAMPLES = 3
NEAR_BOUND = 0.95  # a string at least this share of its bound long counts as reaching it
DEFAULT_VARIANTS = [
    "before=json_schema:benchmarks/profiles/bounds-2026-11-25.toml",
    "compact=llguidance:benchmarks/profiles/bounds-2026-11-25.toml",
    "after=llguidance:default",
]

# Each factory builds a fresh adapter or module; each module calls its signature as the component's program does.
DSPY_ADAPTERS: dict[str, Callable[[], dspy.Adapter]] = {
    "chat": lambda: dspy.ChatAdapter(use_json_adapter_fallback=False),
    "json": lambda: dspy.JSONAdapter(),
}
MODULES: dict[str, Callable[[], dspy.Module]] = {
    "JudgePreference": lambda: dspy.ChainOfThought(JudgePreference),
    "MatchChecklist": lambda: dspy.Predict(MatchChecklist),
    "PlanAspects": lambda: dspy.Predict(PlanAspects),
    "NextTurn": lambda: dspy.Predict(NextTurn),
    "ExtractPreference": lambda: dspy.Predict(ExtractPreference),
    "SynthesizePersona": lambda: PersonaSynthesizer().synthesize,
    "AnswerWithPlan": lambda: PlanPers().answer,
    "InferPreference": lambda: PreferenceInferrer().infer,
    "AnswerProblem": lambda: Responder().answer,
    "ReplyAsUser": lambda: UserSimulator().reply,
}

Turn = tuple[str, str]  # (speaker, text): speaker is "User" or "Assistant"

BUILTIN_EXCHANGES = [
    ("How do I reverse a list in Python?",
     "Use slicing: `items[::-1]` returns a reversed copy, while `items.reverse()` reverses the list in place. "
     "`reversed(items)` gives an iterator if you only need to loop backwards."),
    ("Can you suggest a three-day itinerary for Lisbon in spring?",
     "Day 1: Alfama, the castle and a fado dinner. Day 2: Belem's tower and monastery, then LX Factory. "
     "Day 3: a day trip to Sintra's palaces, back for sunset at a miradouro."),
    ("Explain what a p-value is to a first-year student.",
     "A p-value is the probability of seeing data at least as extreme as yours if the null hypothesis were true. "
     "A small p-value means your data would be surprising under that assumption."),
    ("Write a short, polite email declining a meeting invitation.",
     "Hi Sam, thank you for the invitation. Unfortunately I can't attend on Thursday because of a prior "
     "commitment. Could you share the notes afterwards? Best regards, Alex"),
    ("What's a healthy breakfast I can make in five minutes?",
     "Greek yogurt with berries, a spoon of oats and a handful of nuts: protein, fibre and healthy fats, "
     "and no cooking needed."),
    ("My sourdough comes out flat. What am I doing wrong?",
     "Usually the starter is not active enough or the dough is over-proofed. Feed the starter until it doubles "
     "within 6 hours, and shorten the bulk ferment in a warm kitchen."),
    ("Summarize the causes of the French Revolution in a paragraph.",
     "Royal debt from wars, a tax system that spared the nobility and clergy, bad harvests and bread prices, and "
     "Enlightenment ideas about rights combined to turn a fiscal crisis into a revolution."),
    ("Which is better for a beginner, React or Vue?",
     "Vue has a gentler learning curve and clear single-file components; React has the larger job market and "
     "ecosystem. If the goal is employment, pick React; for a first project, Vue."),
]
BUILTIN_DIALOGUES: list[list[Turn]] = [[("User", ask), ("Assistant", reply)] for ask, reply in BUILTIN_EXCHANGES]

REASONS = {
    "concise": ["gets to the point", "is shorter and easier to scan", "skips the preamble"],
    "detailed": ["explains the reasoning", "gives a concrete example", "is more thorough"],
}
PREFERENCES = [
    "The user wants short answers that lead with the command or the fact they asked for.",
    "The user wants step-by-step explanations with a concrete example.",
    "The user wants plain words, with no jargon, and a friendly tone.",
    "The user wants the claims backed by sources and the trade-offs laid out.",
]
CHECKLIST = [
    "Does the response answer the user's actual question?", "Is the response concise?",
    "Does the response give a concrete example?", "Does the response avoid jargon?",
    "Does the response cite a source?", "Does the response lay out the trade-offs?",
]
CLARIFYING_QUESTIONS = [
    "Do you prefer a short answer or a detailed one?", "How much do you already know about this?",
    "Should I include examples?",
]
REPLIES = [
    "Short, please; I only need the command.", "Detailed, with the steps in order.", "Please avoid jargon.",
    "I know the basics already.", "Yes, one worked example helps me.",
]
PLAN = [
    ("Concrete steps", "the user asks how to do things, not why"), ("Answer first", "the user skims long replies"),
    ("A worked example", "the user learns from concrete cases"), ("Trade-offs", "the user compares options first"),
]
PERSONAS = [
    "A busy software engineer who reads answers on the phone between meetings.",
    "A first-year student who is new to the subject and a little anxious about it.",
    "A retired teacher who enjoys learning new things at a slow pace.",
]


@dataclass(frozen=True)
class Variant:
    """A SchemaAdapter as prefcraft builds it: a dialect and the small-model profile whose bounds it sends."""

    label: str
    dialect: str
    profile_source: str  # "default" or the TOML file the profile was read from
    profile: SmallModelProfile

    def adapter(self) -> SchemaAdapter:
        return build_adapter(ModelSettings(structured_output=self.dialect), self.profile)


def parse_variant(spec: str) -> Variant:
    """`LABEL=DIALECT:PROFILE` -> a Variant; argparse reports a bad one as the flag's error."""
    label, _, rest = spec.partition("=")
    dialect, _, source = rest.partition(":")
    if not (label and dialect and source):
        raise argparse.ArgumentTypeError(f"variant {spec!r} is not LABEL=DIALECT:PROFILE")
    if dialect not in DIALECTS:
        raise argparse.ArgumentTypeError(
            f"variant {label}: unknown dialect {dialect!r}, use one of {', '.join(DIALECTS)}"
        )
    return Variant(label, dialect, source, load_profile(source))


@dataclass
class CallResult:
    failure: str | None  # None when the call parsed with every output field of the right type
    latency_s: float
    prompt_tokens: int
    completion_tokens: int
    raw_output: str | None = None
    strings: list[tuple[str, int, int | None]] = field(default_factory=list)
    """(Owner.field, characters, bound or None) of each free-text string of a parsed prediction."""


@dataclass
class FieldLengths:
    """How long one output field's strings were against their bound, over a cell's parsed calls."""

    field: str
    strings: int
    mean_chars: float
    max_chars: int
    bound: int | None
    near_bound_share: float | None  # of the strings, those at least NEAR_BOUND of the bound long


@dataclass
class CellSummary:
    adapter: str
    signature: str
    calls: int
    parsed: int
    parse_rate: float
    latency_median_s: float
    latency_p90_s: float
    prompt_tokens: int
    completion_tokens: int
    failures: dict[str, int] = field(default_factory=dict)
    failure_samples: list[str] = field(default_factory=list)
    latencies_s: list[float] = field(default_factory=list)
    field_lengths: list[FieldLengths] = field(default_factory=list)


class Picker:
    """Deterministic choices for one (signature, call index), so every adapter sees the same inputs."""

    def __init__(self, real_dialogues: list[list[Turn]], seed: str):
        self.real_dialogues = real_dialogues
        self.rng = random.Random(seed)

    def choice(self, options: list[str]) -> str:
        return self.rng.choice(options)

    def dialogue(self) -> list[Turn]:
        """A built-in or (half the time, when loaded) a real dialogue."""
        use_real = self.real_dialogues and self.rng.random() < REAL_SHARE
        return self.rng.choice(self.real_dialogues if use_real else BUILTIN_DIALOGUES)

    def exchange(self) -> tuple[str, str]:
        """A user request and the assistant's reply to it."""
        while True:
            turns = self.dialogue()
            pairs = [(a[1], b[1]) for a, b in itertools.pairwise(turns) if (a[0], b[0]) == ("User", "Assistant")]
            if pairs:
                return self.rng.choice(pairs)

    def completions(self) -> tuple[str, str, str]:
        """A request, a detailed reply and a concise one (the reply's first sentence)."""
        request, reply = self.exchange()
        return clip(request, 150), clip(reply, 200), clip(SENTENCE_END.split(reply.strip(), maxsplit=1)[0], 150)


def clip(text: str, limit: int = CLIP_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit].rstrip() + "..."


def judge_inputs(pick: Picker) -> dict[str, Any]:
    request, detailed, concise = pick.completions()
    first, second = pick.rng.sample([detailed, concise], 2)
    return {"conversation": f"User: {request}", "first_completion": first, "second_completion": second}


def match_checklist_inputs(pick: Picker) -> dict[str, Any]:
    checklist = pick.rng.sample(CHECKLIST, 3)
    return {"checklist": "\n".join(f"{number}. {item}" for number, item in enumerate(checklist, 1)),
            "preference": pick.choice(PREFERENCES)}


def plan_aspects_inputs(pick: Picker) -> dict[str, Any]:
    profile = "\n".join(f"- {clip(pick.exchange()[0], 150)}" for _ in range(3))
    return {"profile": profile, "question": clip(pick.exchange()[0])}


def next_turn_inputs(pick: Picker) -> dict[str, Any]:
    asked = pick.rng.randrange(3)  # questions already asked, out of a budget of 3
    dialogue = "\n".join(f"Assistant: {pick.choice(CLARIFYING_QUESTIONS)}\nUser: {pick.choice(REPLIES)}"
                         for _ in range(asked))
    return {"problem": clip(pick.exchange()[0]), "dialogue": dialogue, "questions_left": 3 - asked}


def extract_preference_inputs(pick: Picker) -> dict[str, Any]:
    request, detailed, concise = pick.completions()
    chosen, rejected = pick.rng.sample([detailed, concise], 2)
    return {"conversation": f"User: {request}", "chosen_response": chosen, "rejected_response": rejected}


def synthesize_persona_inputs(pick: Picker) -> dict[str, Any]:
    """Two verified judgments, each with its reasoning, as SynthesizeMe's step 1 hands them to the persona writer."""
    traces = []
    for _ in range(2):
        inputs = judge_inputs(pick)
        kind = pick.choice(list(REASONS))
        shorter = min(inputs["first_completion"], inputs["second_completion"], key=len)
        preferred = "First" if (inputs["first_completion"] == shorter) == (kind == "concise") else "Second"
        traces.append(dspy.Example(**inputs, reasoning=f"The preferred completion {pick.choice(REASONS[kind])}.",
                                   preference=preferred))
    return {"past_judgments": format_judgments(traces)}


def answer_with_plan_inputs(pick: Picker) -> dict[str, Any]:
    aspects = [PlannedAspect(title=title, reason=reason) for title, reason in pick.rng.sample(PLAN, 2)]
    return {**plan_aspects_inputs(pick), "plan": format_plan(aspects)}


def infer_preference_inputs(pick: Picker) -> dict[str, Any]:
    sessions = [format_conversation(Message(role=speaker.lower(), content=clip(text, 150))
                                    for speaker, text in pick.dialogue()) for _ in range(2)]
    return {"sessions": number_sessions(sessions), "current_request": clip(pick.exchange()[0])}


def hidden_profile(pick: Picker) -> str:
    """A persona and one preference, laid out as PrefDisco's hidden profile is."""
    return (f"Persona profile\nSummary: {pick.choice(PERSONAS)}\n\nPreferences:\n- {pick.choice(PREFERENCES)}\n"
            "  importance: 4 of 5")


def answer_problem_inputs(pick: Picker) -> dict[str, Any]:
    return {"problem": clip(pick.exchange()[0]), "user_preferences": hidden_profile(pick)}


def reply_as_user_inputs(pick: Picker) -> dict[str, Any]:
    turns = [{"question": pick.choice(CLARIFYING_QUESTIONS), "reply": pick.choice(REPLIES)}
             for _ in range(pick.rng.randrange(2))]
    question = pick.choice(CLARIFYING_QUESTIONS)
    return {"hidden_profile": hidden_profile(pick), "chat_history": format_chat(turns, question)}


INPUTS: dict[str, Callable[[Picker], dict[str, Any]]] = {
    "JudgePreference": judge_inputs,
    "MatchChecklist": match_checklist_inputs,
    "PlanAspects": plan_aspects_inputs,
    "NextTurn": next_turn_inputs,
    "ExtractPreference": extract_preference_inputs,
    "SynthesizePersona": synthesize_persona_inputs,
    "AnswerWithPlan": answer_with_plan_inputs,
    "InferPreference": infer_preference_inputs,
    "AnswerProblem": answer_problem_inputs,
    "ReplyAsUser": reply_as_user_inputs,
}


def load_real_dialogues(source: Path | None) -> list[list[Turn]]:
    """SenseBench's dialogues (System turns dropped), or none without `--sensebench`."""
    if source is None:
        logger.info("no --sensebench: using the %d built-in dialogues only", len(BUILTIN_DIALOGUES))
        return []
    speakers = {"user": "User", "assistant": "Assistant"}
    return [[(speakers[message.role], message.content) for message in dialogue.messages()
             if message.role in speakers] for dialogue in load_dialogues(source)]


def output_failure(prediction: dspy.Prediction, signature: type[dspy.Signature]) -> str | None:
    """Why the prediction lacks a well-typed output field, or None when every field is present with its type."""
    for name, info in signature.output_fields.items():
        value = prediction.get(name)
        if value is None:
            return "missing_field"
        try:
            pydantic.TypeAdapter(info.annotation).validate_python(value, strict=True)
        except pydantic.ValidationError:
            return "wrong_type"
    return None


def free_strings(value: Any, schema: dict[str, Any], owner: str, name: str) -> Iterator[tuple[str, int, int | None]]:
    """(Owner.field, characters, bound) of each free-text string in an output value (choices are not free text),
    reading each string's bound from the output schema beside it; a field of a nested model is keyed by that model."""
    if isinstance(value, str):
        if "enum" not in schema and "const" not in schema:
            yield f"{owner}.{name}", len(value), schema.get("maxLength")
    elif isinstance(value, list):
        for item in value:
            yield from free_strings(item, schema.get("items", {}), owner, name)
    elif isinstance(value, pydantic.BaseModel):
        for field_name, field_value in value:
            yield from free_strings(field_value, schema["properties"][field_name], type(value).__name__, field_name)


def run_call(module: dspy.Module, inputs: dict[str, Any], lm: dspy.LM, adapter: dspy.Adapter,
             owner: str, schema: dict[str, Any]) -> CallResult:
    """One call; `schema` is the output schema the adapter sends (unbounded for DSPy's own), `owner` the name of the
    signature as the bounds key its fields."""
    signature = module.predictors()[0].signature
    raw_output = None
    strings = []
    started = time.perf_counter()
    with dspy.context(lm=lm, adapter=adapter), dspy.track_usage() as usage:
        try:
            prediction = module(**inputs)
            failure = output_failure(prediction, signature)
            raw_output = repr(prediction) if failure else None
            if failure is None:
                strings = [string for name in signature.output_fields
                           for string in free_strings(prediction.get(name), schema["properties"][name], owner, name)]
        except AdapterParseError as error:
            failure, raw_output = "AdapterParseError", error.lm_response
        except Exception as error:  # every other failure is counted by its kind; the run goes on
            failure, raw_output = type(error).__name__, str(error)
    latency_s = time.perf_counter() - started
    per_model = usage.get_total_tokens().values()
    return CallResult(
        failure=failure,
        latency_s=latency_s,
        prompt_tokens=sum(tokens.get("prompt_tokens") or 0 for tokens in per_model),
        completion_tokens=sum(tokens.get("completion_tokens") or 0 for tokens in per_model),
        raw_output=raw_output,
        strings=strings,
    )


def p90(values: list[float]) -> float:
    """Nearest-rank 90th percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]


def summarize(adapter: str, signature: str, results: list[CallResult]) -> CellSummary:
    latencies = [result.latency_s for result in results]
    failed = [result for result in results if result.failure]
    return CellSummary(
        adapter=adapter,
        signature=signature,
        calls=len(results),
        parsed=len(results) - len(failed),
        parse_rate=(len(results) - len(failed)) / len(results),
        latency_median_s=round(statistics.median(latencies), 2),
        latency_p90_s=round(p90(latencies), 2),
        prompt_tokens=sum(result.prompt_tokens for result in results),
        completion_tokens=sum(result.completion_tokens for result in results),
        failures=dict(Counter(result.failure for result in failed)),
        failure_samples=[result.raw_output or "" for result in failed[:FAILURE_SAMPLES]],
        latencies_s=[round(latency, 2) for latency in latencies],
        field_lengths=field_lengths(results),
    )


def field_lengths(results: list[CallResult]) -> list[FieldLengths]:
    """Per free-text field, in the order the calls wrote them, how long the parsed calls' strings were."""
    by_field: dict[str, list[tuple[int, int | None]]] = {}
    for result in results:
        if result.failure is None:
            for key, chars, bound in result.strings:
                by_field.setdefault(key, []).append((chars, bound))
    summaries = []
    for key, samples in by_field.items():
        lengths = [chars for chars, _ in samples]
        bound = samples[0][1]
        near = None if bound is None else sum(chars >= NEAR_BOUND * bound for chars in lengths) / len(lengths)
        summaries.append(FieldLengths(field=key, strings=len(lengths), mean_chars=round(statistics.mean(lengths), 1),
                                      max_chars=max(lengths), bound=bound, near_bound_share=near))
    return summaries


def measure_cell(
    adapter: str, make_adapter: Callable[[], dspy.Adapter], signature: str, real: list[list[Turn]], lm: dspy.LM,
    calls: int, threads: int, progress: tqdm,
) -> CellSummary:
    """`calls` calls of one signature through one adapter; consecutive calls share a prompt prefix the server caches."""
    module, adapter_instance = MODULES[signature](), make_adapter()
    bounds = adapter_instance.bounds if isinstance(adapter_instance, SchemaAdapter) else None
    schema = output_schema(module.predictors()[0].signature, bounds)
    inputs = [INPUTS[signature](Picker(real, f"{signature}:{index}")) for index in range(calls)]
    results = []
    with ThreadPoolExecutor(max_workers=threads) as pool:
        calls_made = (pool.submit(run_call, module, item, lm, adapter_instance, signature, schema) for item in inputs)
        for future in as_completed(calls_made):
            results.append(future.result())
            progress.update()
    summary = summarize(adapter, signature, results)
    logger.info("%s/%s: %d/%d parsed, median %.2f s, failures %s", adapter, signature, summary.parsed,
                summary.calls, summary.latency_median_s, summary.failures or "none")
    return summary


def total_line(adapter: str, cells: list[CellSummary]) -> dict[str, Any]:
    latencies = [latency for cell in cells for latency in cell.latencies_s]
    calls = sum(cell.calls for cell in cells)
    parsed = sum(cell.parsed for cell in cells)
    failures: Counter[str] = Counter()
    for cell in cells:
        failures.update(cell.failures)
    return {
        "adapter": adapter, "calls": calls, "parsed": parsed, "parse_rate": parsed / calls,
        "latency_median_s": round(statistics.median(latencies), 2), "latency_p90_s": round(p90(latencies), 2),
        "prompt_tokens": sum(cell.prompt_tokens for cell in cells),
        "completion_tokens": sum(cell.completion_tokens for cell in cells),
        "failures": dict(failures),
    }


def table_row(label: str, row: dict[str, Any]) -> str:
    per_call = f"{row['prompt_tokens'] / row['calls']:.0f} / {row['completion_tokens'] / row['calls']:.0f}"
    failures = ", ".join(f"{kind} {count}" for kind, count in sorted(row["failures"].items())) or "-"
    return (f"| {label} | {100 * row['parse_rate']:.0f}% ({row['parsed']}/{row['calls']}) | "
            f"{row['latency_median_s']:.2f} | {row['latency_p90_s']:.2f} | {per_call} | {failures} |")


def markdown_table(cells: list[CellSummary], totals: list[dict[str, Any]]) -> str:
    lines = ["| adapter / signature | parsed | median s | p90 s | prompt / completion tokens per call | failures |",
             "|---|---|---|---|---|---|"]
    lines += [table_row(f"{cell.adapter} / {cell.signature}", asdict(cell)) for cell in cells]
    lines += [table_row(f"**{total['adapter']} total**", total) for total in totals]
    return "\n".join(lines)


def field_table(cells: list[CellSummary]) -> str:
    lines = [f"| adapter / signature | field | strings | mean / max chars | bound | at >= {NEAR_BOUND:.0%} of bound |",
             "|---|---|---|---|---|---|"]
    for cell in cells:
        for lengths in cell.field_lengths:
            near = "-" if lengths.near_bound_share is None else f"{100 * lengths.near_bound_share:.0f}%"
            lines.append(f"| {cell.adapter} / {cell.signature} | {lengths.field} | {lengths.strings} | "
                         f"{lengths.mean_chars:.0f} / {lengths.max_chars} | {lengths.bound or 'none'} | {near} |")
    return "\n".join(lines)


def completion_line(totals: list[dict[str, Any]]) -> str:
    """Each adapter's completion tokens per call, and its ratio to the first adapter's."""
    per_call = {total["adapter"]: total["completion_tokens"] / total["calls"] for total in totals}
    first = next(iter(per_call.values()))
    parts = [f"{adapter} {tokens:.1f}" + (f" ({tokens / first:.2f}x)" if first else "")
             for adapter, tokens in per_call.items()]
    return "completion tokens per call: " + ", ".join(parts)


def run_benchmark(args: argparse.Namespace, real: list[list[Turn]]) -> tuple[list[CellSummary], list[dict[str, Any]]]:
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    cells, totals = [], []
    with model_endpoint(args, max_tokens=args.max_tokens) as endpoint, logging_redirect_tqdm():
        lm = build_lm(endpoint.model)
        progress = tqdm(total=len(args.adapter_factories) * len(args.signatures) * args.calls, unit="call")
        for adapter, make_adapter in args.adapter_factories.items():
            adapter_cells = [
                measure_cell(adapter, make_adapter, signature, real, lm, args.calls, args.threads, progress)
                for signature in args.signatures
            ]
            cells += adapter_cells
            totals.append(total_line(adapter, adapter_cells))
        progress.close()
    return cells, totals


def parse_args() -> argparse.Namespace:
    parser = make_parser(__doc__, "structured_outputs.json", threads=2, timeout_s=ModelSettings().timeout_s)
    parser.add_argument("--calls", type=int, default=50, help="calls per adapter and signature")
    parser.add_argument("--variant", dest="variants", action="append", type=parse_variant,
                        metavar="LABEL=DIALECT:PROFILE",
                        help="a SchemaAdapter to measure, repeated (default: before, compact and after, above)")
    parser.add_argument("--adapters", nargs="+", choices=list(DSPY_ADAPTERS), default=[],
                        help="DSPy's own adapters to measure after the variants (default: none)")
    parser.add_argument("--signatures", nargs="+", choices=list(MODULES), default=list(MODULES))
    parser.add_argument("--max-tokens", type=int, default=256,
                        help="the LM's max_tokens (binds the DSPy adapters and unbounded schemas)")
    parser.add_argument("--sensebench", type=Path,
                        help="SenseBench's new_sense_bmk.json or its folder, for varied real inputs")
    args = parser.parse_args()
    try:
        args.variants = args.variants or [parse_variant(spec) for spec in DEFAULT_VARIANTS]
    except argparse.ArgumentTypeError as error:
        parser.error(str(error))
    labels = [variant.label for variant in args.variants] + args.adapters
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        parser.error(f"adapter labels given more than once: {', '.join(repeated)}")
    args.adapter_factories = {variant.label: variant.adapter for variant in args.variants}
    args.adapter_factories.update({name: DSPY_ADAPTERS[name] for name in args.adapters})
    return args


def main() -> None:
    args = parse_args()
    configure_logging()
    # LiteLLM logs every call and DSPy warns on every truncated baseline reply: the parse outcome is what counts here.
    for noisy in ("LiteLLM", "dspy"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    started = time.perf_counter()
    cells, totals = run_benchmark(args, load_real_dialogues(args.sensebench))
    wall_s = round(time.perf_counter() - started, 1)
    print(markdown_table(cells, totals))
    print(f"\n{field_table(cells)}")
    print(f"\n{completion_line(totals)}")
    print(f"{args.calls} calls per cell, {args.threads} threads, max_tokens {args.max_tokens}, wall {wall_s} s")
    variants = {variant.label: {"dialect": variant.dialect, "profile": variant.profile_source,
                                "small_model": variant.profile.model_dump()} for variant in args.variants}
    write_result(args.output, {"calls": args.calls, "threads": args.threads, "max_tokens": args.max_tokens,
                               "variants": variants, "wall_s": wall_s, "cells": [asdict(cell) for cell in cells],
                               "totals": totals})
    logger.info("wrote %s", args.output)


if __name__ == "__main__":
    main()
