"""A PrefDisco record's problem, normalized as the reference code normalizes it (stellalisy/PrefDisco,
`src/benchmark_data.py`): the question, its options, the gold answer and the source's solution.

A released record keeps the untouched row of its task's dataset in `original_problem`, so the keys vary by task:

| task (source dataset) | keys read |
|---|---|
| math (HuggingFaceH4/MATH-500) | problem, solution, answer |
| aime (gneubig/aime-1983-2024) | Question, Answer (an integer) |
| commonsenseqa (tau/commonsense_qa) | question, choices {label, text}, answerKey (empty in the test split) |
| logiqa (lucasmccabe/logiqa) | context, query, options (a list), correct_option (0-based) |
| mascqa (stellalisy/MaScQA) | question, correct_answer |
| medqa (GBaker/MedQA-USMLE-4-options) | question, options {A: ...}, answer_idx (before answer, the text) |
| mmlu (lighteval/mmlu) | question, choices (a list), answer (0-based) |
| scienceqa (derek-thomas/ScienceQA) | question, choices (a list), answer (0-based), lecture, solution |
| simpleqa (pvduy/simpleqa) | problem, answer |
| socialiqa (allenai/social_i_qa) | context, question, answerA-C, label ("1"-"3", 1-based) |

The rules, in the reference's order: the question is the first non-empty of `query`, `question`, `problem`,
`Question`, `prompt`, with a `context` before it (a blank line between); the options are `choices`, else `options` (a
dict, `label`/`text` lists, or a plain list lettered A, B, ...), else `answerA`-`answerD`; the answer is the first set
one of `correct_answer`, `answerKey`, `correct_option`, `answer_idx`, `Answer`, `answer`, `label`, an integer with
options being a 0-based option index and a digit string `label` SocialIQA's 1-based one; the solution is `lecture`
then `solution`. A record with a `parsed_problem` (the reference's older evaluation files) is taken as it is. A value
of None counts as absent (rows read through Arrow carry every key of their file). Images (ScienceQA) are not read: the
reference evaluates them only when asked to, and prefcraft's models read text.

Where the reference falls back to an empty question or answer, or letters an answer index that names no option, this
raises UnreadableProblemError naming the key; an answer that is set but empty (CommonsenseQA's test split) is kept, as
the reference keeps it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

QUESTION_KEYS = ("query", "question", "problem", "Question", "prompt")
ANSWER_KEYS = ("correct_answer", "answerKey", "correct_option", "answer_idx", "Answer", "answer", "label")
SOCIAL_OPTION_KEYS = ("answerA", "answerB", "answerC", "answerD")
SOLUTION_KEYS = ("lecture", "solution")


class UnreadableProblemError(ValueError):
    """A record's problem no rule can read; `field` is the path of the key at fault."""

    def __init__(self, field: str, problem: str):
        self.field, self.problem = field, problem
        super().__init__(f"{field}: {problem}")


@dataclass(frozen=True)
class Problem:
    question: str
    options: dict[str, str]
    """Label -> text, in the source's order."""
    answer: str
    solution: str = ""

    def task_text(self) -> str:
        """The problem as the reference's assistant first reads it: the question, then one line per option."""
        return "\n".join([self.question, *(f"{label}. {text}" for label, text in self.options.items())])


def normalize_problem(record: dict[str, Any]) -> Problem:
    """The problem of one scenario record (see the module docstring). Raises UnreadableProblemError naming the key."""
    parsed = record.get("parsed_problem")
    if isinstance(parsed, dict) and parsed.get("question"):
        return _parsed(parsed)
    source = record.get("original_problem")
    if not isinstance(source, dict):
        raise UnreadableProblemError("original_problem", "missing" if source is None else
                                     f"expected an object, got {type(source).__name__}")
    options = _options(source)
    return Problem(_question(source), options, _answer(source, options), _solution(source))


def _parsed(parsed: dict[str, Any]) -> Problem:
    if parsed.get("answer") is None:
        raise UnreadableProblemError("parsed_problem.answer", "missing")
    options = parsed.get("options") or {}
    if not isinstance(options, dict):
        raise UnreadableProblemError("parsed_problem.options", f"expected an object, got {type(options).__name__}")
    return Problem(str(parsed["question"]), {str(k): str(v) for k, v in options.items() if v is not None},
                   str(parsed["answer"]), str(parsed.get("solution") or ""))


def _question(source: dict[str, Any]) -> str:
    question = next((str(source[key]) for key in QUESTION_KEYS if source.get(key)), "")
    context = source.get("context")
    if context:
        question = f"{context}\n\n{question}" if question else str(context)
    if not question:
        raise UnreadableProblemError("original_problem.question",
                                     f"no question: none of {', '.join(QUESTION_KEYS)} or context has text")
    return question


def _options(source: dict[str, Any]) -> dict[str, str]:
    value = source.get("choices") or source.get("options")
    key = "choices" if source.get("choices") else "options"
    if isinstance(value, dict):
        labels, texts = value.get("label"), value.get("text")
        if isinstance(labels, list) and isinstance(texts, list):
            if len(labels) != len(texts):
                raise UnreadableProblemError(f"original_problem.{key}",
                                             f"{len(labels)} labels for {len(texts)} option texts")
            value = dict(zip(labels, texts, strict=True))
        return {str(label): str(text) for label, text in value.items() if text is not None}
    if isinstance(value, list):
        return {chr(ord("A") + index): str(text) for index, text in enumerate(value)}
    return {name[-1]: str(source[name]) for name in SOCIAL_OPTION_KEYS if source.get(name) is not None}


def _answer(source: dict[str, Any], options: dict[str, str]) -> str:
    key = next((name for name in ANSWER_KEYS if source.get(name) is not None), None)
    if key is None:
        raise UnreadableProblemError("original_problem.answer",
                                     f"no gold answer: none of {', '.join(ANSWER_KEYS)} is set")
    answer = source[key]
    if isinstance(answer, int) and not isinstance(answer, bool) and options:
        return _letter(answer, answer, options, key)
    if key == "label" and isinstance(answer, str) and answer.isdigit():  # SocialIQA's labels count from 1
        return _letter(int(answer) - 1, answer, options, key)
    return str(answer)


def _letter(index: int, answer: Any, options: dict[str, str], key: str) -> str:
    if index < 0 or (options and index >= len(options)):
        raise UnreadableProblemError(f"original_problem.{key}",
                                     f"answer {answer!r} names none of the {len(options)} options")
    return chr(ord("A") + index)


def _solution(source: dict[str, Any]) -> str:
    return "\n\n".join(str(source[key]) for key in SOLUTION_KEYS if source.get(key) not in (None, ""))
