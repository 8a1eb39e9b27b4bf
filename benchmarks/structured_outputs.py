"""How often typed outputs parse, and at what cost, with prefcraft's SchemaAdapter versus DSPy's own adapters.

Starts the embedded llama.cpp server (SmolLM2-135M-Instruct), turns DSPy's cache off so that every call reaches the
server, and runs nine signatures typical of prefcraft's components (judge preference with chain of thought, persona,
ask-or-answer, inferred preference, aspect list, 1-5 rubric grade, a profile of attribute weights as `dict[str, float]`,
a rubric checklist as a list of models with a bool and an optional note, a 0-1 fit score) through three adapters:
`SchemaAdapter()` (the `json_schema` dialect), `dspy.ChatAdapter(use_json_adapter_fallback=False)` and
`dspy.JSONAdapter()`. Per adapter and signature it counts the calls whose prediction has every output field with the
right type (failures are counted by kind), the median and p90 latency of a call as the caller sees it (the server
batches concurrent calls in its slots), and its prompt and completion tokens. Inputs
vary from call to call (a few built-in English exchanges plus real SenseBench dialogues, read at run time when
present) and are the same for every adapter. The LM's `max_tokens` (default 256) binds the two DSPy adapters only:
SchemaAdapter raises it to what its bounded schema needs.

Run from the repository root:
    .venv/bin/python benchmarks/structured_outputs.py --calls 50
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import math
import random
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import dspy
import pydantic
from dspy.utils.exceptions import AdapterParseError
from tqdm import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm

from prefcraft.adapter import SchemaAdapter
from prefcraft.backends import managed_server
from prefcraft.lm import build_lm
from prefcraft.settings import ModelSettings, ServerSettings
from prefcraft.signatures.judge import JudgePreference
from prefcraft.signatures.persona import SynthesizePersona

logger = logging.getLogger("structured_outputs")

SENSEBENCH = Path("/work/shared/data/sensebench/new_sense_bmk.json")
# Real dialogues are mostly Chinese, which costs the model's tokenizer two or three tokens a character: texts are
# clipped so that prompts stay a few hundred tokens long on a 4096-token context.
CLIP_CHARS = 300
REAL_SHARE = 0.5
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[\u3002\uff01\uff1f])|\n")  # Latin or CJK sentence end
FAILURE_SAMPLES = 3


class AskOrAnswer(dspy.Signature):
    """Decide whether to ask the user one clarifying question about their preferences before answering, or to answer
    their latest request now."""

    conversation: str = dspy.InputField(desc="the conversation so far, ending with the user's latest request")
    action: Literal["ask", "answer"] = dspy.OutputField(desc="'ask' to ask a clarifying question, 'answer' to answer")
    message: str = dspy.OutputField(desc="the clarifying question, or the answer")


class InferPreference(dspy.Signature):
    """From a user's earlier sessions, infer the preference that should shape the answer to their new request."""

    prior_sessions: str = dspy.InputField(desc="the user's earlier requests and the feedback they gave")
    request: str = dspy.InputField(desc="the user's new request")
    preference: str = dspy.OutputField(desc="the inferred preference, in one sentence")


class ListAspects(dspy.Signature):
    """List the aspects of a response that this user will care about when reading the answer to this question."""

    question: str = dspy.InputField(desc="the user's question")
    profile: str = dspy.InputField(desc="what is known about the user")
    aspects: list[str] = dspy.OutputField(desc="three to five short aspect phrases")


class GradeCriterion(dspy.Signature):
    """Grade how well the response meets the criterion, from 1 (not at all) to 5 (fully)."""

    response: str = dspy.InputField(desc="the response to grade")
    criterion: str = dspy.InputField(desc="the rubric criterion")
    score: Literal[1, 2, 3, 4, 5] = dspy.OutputField(desc="the grade: 1, 2, 3, 4 or 5")
    justification: str = dspy.OutputField(desc="one or two sentences explaining the grade")


class EstimateProfile(dspy.Signature):
    """From a user's earlier sessions, estimate how much each attribute of a response matters to them."""

    prior_sessions: str = dspy.InputField(desc="the user's earlier requests and the feedback they gave")
    weights: dict[str, float] = dspy.OutputField(
        desc="two to five response attributes (e.g. brevity, formality, examples), each weighted from 0 to 1"
    )


class CriterionCheck(pydantic.BaseModel):
    criterion: Annotated[str, pydantic.Field(max_length=120)]
    met: bool
    note: Annotated[str, pydantic.Field(max_length=200)] | None = None


class CheckCriteria(dspy.Signature):
    """Check the response against each rubric criterion: is it met, with a short note where it is not."""

    response: str = dspy.InputField(desc="the response to check")
    criteria: str = dspy.InputField(desc="the rubric criteria, one a line")
    checks: Annotated[list[CriterionCheck], pydantic.Field(max_length=5)] = dspy.OutputField(
        desc="one check per criterion, in order; note is null when met"
    )


class ScoreFit(dspy.Signature):
    """Score how well the response suits this user, from 0 (not at all) to 1 (perfectly)."""

    profile: str = dspy.InputField(desc="what is known about the user")
    response: str = dspy.InputField(desc="the response to score")
    score: Annotated[float, pydantic.Field(ge=0, le=1)] = dspy.OutputField(desc="the fit, a number from 0 to 1")


# Each factory builds a fresh adapter or module; the persona signature and both chains of thought are the ones
# prefcraft's judge and persona programs use.
ADAPTERS: dict[str, Callable[[], dspy.Adapter]] = {
    "schema": SchemaAdapter,
    "chat": lambda: dspy.ChatAdapter(use_json_adapter_fallback=False),
    "json": lambda: dspy.JSONAdapter(),
}
MODULES: dict[str, Callable[[], dspy.Module]] = {
    "judge": lambda: dspy.ChainOfThought(JudgePreference),
    "persona": lambda: dspy.ChainOfThought(SynthesizePersona),
    "ask_or_answer": lambda: dspy.Predict(AskOrAnswer),
    "preference": lambda: dspy.Predict(InferPreference),
    "aspects": lambda: dspy.Predict(ListAspects),
    "grade": lambda: dspy.Predict(GradeCriterion),
    "profile": lambda: dspy.Predict(EstimateProfile),
    "checklist": lambda: dspy.Predict(CheckCriteria),
    "fit_score": lambda: dspy.Predict(ScoreFit),
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
FEEDBACK = [
    "Too long; I only needed the command.", "Great, the step-by-step list helped.", "Please avoid jargon.",
    "I wanted sources for the claims.", "Perfect, short and friendly.", "Can you use metric units next time?",
]
PROFILES = [
    "A graduate student in biology who reads on a phone between experiments.",
    "A senior software engineer who prefers terse answers with code.",
    "A retired teacher learning to use computers; likes patient, simple explanations.",
    "A product manager who wants trade-offs laid out in bullet points.",
    "A high-school student preparing for exams in two weeks.",
]
CRITERIA = [
    "The response answers the user's actual question.", "The response is concise.",
    "The response is factually accurate.", "The response uses a tone suited to the user.",
    "The response gives a concrete example.",
]


@dataclass
class CallResult:
    failure: str | None  # None when the call parsed with every output field of the right type
    latency_s: float
    prompt_tokens: int
    completion_tokens: int
    raw_output: str | None = None


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


def judge_inputs(pick: Picker) -> dict[str, str]:
    request, detailed, concise = pick.completions()
    first, second = pick.rng.sample([detailed, concise], 2)
    return {"conversation": f"User: {request}", "first_completion": first, "second_completion": second}


def persona_inputs(pick: Picker) -> dict[str, str]:
    judgments = []
    for number in range(1, 4):
        request, detailed, concise = pick.completions()
        liked = pick.choice(["concise", "detailed"])
        preferred, rejected = (concise, detailed) if liked == "concise" else (detailed, concise)
        judgments.append(f"Judgment {number}. Request: {request}\nPreferred: {preferred}\nRejected: {rejected}\n"
                         f"Reasoning: the preferred response {pick.choice(REASONS[liked])}.")
    return {"past_judgments": "\n\n".join(judgments)}


def ask_or_answer_inputs(pick: Picker) -> dict[str, str]:
    turns = pick.dialogue()
    last_user = max(index for index, (speaker, _) in enumerate(turns) if speaker == "User")
    context = turns[max(0, last_user - 2) : last_user + 1]
    return {"conversation": "\n".join(f"{speaker}: {clip(text, 200)}" for speaker, text in context)}


def prior_sessions(pick: Picker) -> str:
    return "\n".join(f"Session {n}. Request: {clip(pick.exchange()[0], 150)}\nFeedback: {pick.choice(FEEDBACK)}"
                     for n in (1, 2))


def preference_inputs(pick: Picker) -> dict[str, str]:
    return {"prior_sessions": prior_sessions(pick), "request": clip(pick.exchange()[0])}


def aspects_inputs(pick: Picker) -> dict[str, str]:
    return {"question": clip(pick.exchange()[0]), "profile": pick.choice(PROFILES)}


def grade_inputs(pick: Picker) -> dict[str, str]:
    return {"response": clip(pick.exchange()[1]), "criterion": pick.choice(CRITERIA)}


def profile_inputs(pick: Picker) -> dict[str, str]:
    return {"prior_sessions": prior_sessions(pick)}


def checklist_inputs(pick: Picker) -> dict[str, str]:
    return {"response": clip(pick.exchange()[1]), "criteria": "\n".join(pick.rng.sample(CRITERIA, 3))}


def fit_score_inputs(pick: Picker) -> dict[str, str]:
    return {"profile": pick.choice(PROFILES), "response": clip(pick.exchange()[1])}


INPUTS: dict[str, Callable[[Picker], dict[str, str]]] = {
    "judge": judge_inputs,
    "persona": persona_inputs,
    "ask_or_answer": ask_or_answer_inputs,
    "preference": preference_inputs,
    "aspects": aspects_inputs,
    "grade": grade_inputs,
    "profile": profile_inputs,
    "checklist": checklist_inputs,
    "fit_score": fit_score_inputs,
}


def load_real_dialogues(path: Path) -> list[list[Turn]]:
    """SenseBench's dialogues (System turns dropped), or none when its file is absent."""
    if not path.is_file():
        logger.warning("%s not found: using the %d built-in dialogues only", path, len(BUILTIN_DIALOGUES))
        return []
    speakers = {"Human": "User", "Assistant": "Assistant"}
    loaded = [
        [(speakers[turn["from"]], turn["content"][0]["value"]) for turn in dialogue if turn["from"] in speakers]
        for dialogue in json.loads(path.read_text(encoding="utf-8"))
    ]
    return [turns for turns in loaded if any(speaker == "User" for speaker, _ in turns)]


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


def run_call(module: dspy.Module, inputs: dict[str, str], lm: dspy.LM, adapter: dspy.Adapter) -> CallResult:
    signature = module.predictors()[0].signature
    raw_output = None
    started = time.perf_counter()
    with dspy.context(lm=lm, adapter=adapter), dspy.track_usage() as usage:
        try:
            prediction = module(**inputs)
            failure = output_failure(prediction, signature)
            raw_output = repr(prediction) if failure else None
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
    )


def measure_cell(
    adapter: str, signature: str, real: list[list[Turn]], lm: dspy.LM, calls: int, threads: int, progress: tqdm
) -> CellSummary:
    """`calls` calls of one signature through one adapter; consecutive calls share a prompt prefix the server caches."""
    module, adapter_instance = MODULES[signature](), ADAPTERS[adapter]()
    inputs = [INPUTS[signature](Picker(real, f"{signature}:{index}")) for index in range(calls)]
    results = []
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for future in as_completed(pool.submit(run_call, module, item, lm, adapter_instance) for item in inputs):
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


def run_benchmark(args: argparse.Namespace, real: list[list[Turn]]) -> tuple[list[CellSummary], list[dict[str, Any]]]:
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    cells, totals = [], []
    with managed_server(ServerSettings()) as server, logging_redirect_tqdm():
        lm = build_lm(ModelSettings(api_base=server.base_url, max_tokens=args.max_tokens))
        progress = tqdm(total=len(args.adapters) * len(args.signatures) * args.calls, unit="call")
        for adapter in args.adapters:
            adapter_cells = [measure_cell(adapter, signature, real, lm, args.calls, args.threads, progress)
                             for signature in args.signatures]
            cells += adapter_cells
            totals.append(total_line(adapter, adapter_cells))
        progress.close()
    return cells, totals


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=50, help="calls per adapter and signature")
    parser.add_argument("--threads", type=int, default=2, help="concurrent calls")
    parser.add_argument("--adapters", nargs="+", choices=list(ADAPTERS), default=list(ADAPTERS))
    parser.add_argument("--signatures", nargs="+", choices=list(MODULES), default=list(MODULES))
    parser.add_argument("--max-tokens", type=int, default=256, help="the LM's max_tokens (binds the DSPy adapters)")
    parser.add_argument("--sensebench", type=Path, default=SENSEBENCH, help="SenseBench dialogues for varied inputs")
    parser.add_argument("--output", type=Path, default=Path("benchmarks/results/structured_outputs.json"))
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    # LiteLLM logs every call and DSPy warns on every truncated baseline reply: the parse outcome is what counts here.
    for noisy in ("LiteLLM", "httpx", "dspy"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    started = time.perf_counter()
    cells, totals = run_benchmark(args, load_real_dialogues(args.sensebench))
    wall_s = round(time.perf_counter() - started, 1)
    print(markdown_table(cells, totals))
    print(f"\n{args.calls} calls per cell, {args.threads} threads, max_tokens {args.max_tokens}, wall {wall_s} s")
    report = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "calls": args.calls, "threads": args.threads, "max_tokens": args.max_tokens, "wall_s": wall_s,
        "cells": [asdict(cell) for cell in cells], "totals": totals,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    logger.info("wrote %s", args.output)


if __name__ == "__main__":
    main()
