"""PrefDisco (seeds/000): a question-asking assistant, a passive user simulator and a per-criterion rubric grader.

The prompts paraphrase the paper's appendices D (user simulators), E (the assistant in each mode) and F.1 (the judge),
with the reference code's final-answer turn. As in the paper, no answer has a reasoning field: the assistant's prompts
ask for the answer alone. The asker's signatures (NextTurn; NextQuestion, the fixed question count of Figure 5; and
AnswerInDialogue, which reads the conversation as chat turns) and the Baseline's (SolveProblem) read the problem and the
dialogue only, never the hidden profile; the Oracle, the simulators and the graders read it. Grades are the paper's 1-5
scale. Field order is part of every compiled JSON: never reorder these fields.
"""

from typing import Literal

import dspy

from prefcraft.engine.small_model import small_model_bounds

Grade = Literal[1, 2, 3, 4, 5]


class NextTurn(dspy.Signature):
    """You are a helpful assistant. Before you solve the user's task, find out about their background, goals and
    preferences, so that you can tailor your answer to them: start by asking one or two clarifying questions, and do not
    give a full answer until you know enough to personalize it well. Keep a natural, curious and respectful tone; guide
    the conversation to learn about the user rather than interrogating them. At each turn, decide whether to ask for
    more information or to go on to answer; when you ask, ask one or two clarifying questions."""

    problem: str = dspy.InputField(desc="the task the user needs help with")
    dialogue: str = dspy.InputField(desc="your questions and the user's replies so far (empty at first)")
    questions_left: int = dspy.InputField(desc="how many more turns of questions you may take")
    action: Literal["ask", "answer"] = dspy.OutputField(desc="'ask' the user more, or 'answer' the task now")
    question: str = dspy.OutputField(desc="your clarifying question or two when asking, else empty")


class NextQuestion(dspy.Signature):
    """You are a helpful assistant. You must ask the user exactly `question_count` clarifying questions to learn their
    background, goals and preferences before you give a final answer; this is turn `turn` of `question_count`. Ask one
    or two clarifying questions that will help you tailor your answer to their needs. Keep a natural, curious and
    respectful tone; guide the conversation to learn about the user rather than interrogating them."""

    problem: str = dspy.InputField(desc="the task the user needs help with")
    dialogue: str = dspy.InputField(desc="your questions and the user's replies so far (empty at first)")
    turn: int = dspy.InputField(desc="this turn's number, counting from 0")
    question_count: int = dspy.InputField(desc="how many clarifying questions you must ask in all")
    question: str = dspy.OutputField(desc="your clarifying question or two")


class AnswerProblem(dspy.Signature):
    """You are a helpful assistant writing a personalized explanation of the problem the user asks you about. The
    user's persona and preferences are given. Answer in a way that aligns with these preferences. You will be evaluated
    on how well your explanation aligns with these preferences, so that is your primary goal. End with the final answer
    on its own."""

    problem: str = dspy.InputField(desc="the user's request: the task they need help with")
    user_preferences: str = dspy.InputField(desc="what you know of the user")
    response: str = dspy.OutputField(desc="your complete, personalized answer to the user")
    final_answer: str = dspy.OutputField(desc="the final answer alone, e.g. a number or an option letter")


class AnswerInDialogue(dspy.Signature):
    """You are a helpful assistant. From your conversation with the user you should have learned their preferences.
    Now give a complete final answer to their original task, in a way that aligns with these preferences. You will be
    evaluated on how well your explanation aligns with these preferences, so that is your primary goal. End with the
    final answer on its own."""

    message: str = dspy.InputField(desc="the user's latest message")
    history: dspy.History = dspy.InputField(
        desc="the conversation so far: the user's task, then your questions and the user's replies"
    )
    response: str = dspy.OutputField(desc="your complete, personalized answer to the user")
    final_answer: str = dspy.OutputField(desc="the final answer alone, e.g. a number or an option letter")


class SolveProblem(dspy.Signature):
    """Help the user with their task."""

    problem: str = dspy.InputField(desc="the user's request: the task they need help with")
    response: str = dspy.OutputField(desc="your answer to the user")
    final_answer: str = dspy.OutputField(desc="the final answer alone, e.g. a number or an option letter")


class ReplyAsUser(dspy.Signature):
    """You are role-playing a passive, economical human user talking to an AI assistant, and you keep your own effort
    to a minimum. The assistant has just said something: answer it factually, with the least information that answers
    it. Keep to your role: you are not proactive or collaborative; you answer what is asked, then stop. Consult your
    persona and give a direct, atomic fact, without extra context, opinions or questions of your own. Never volunteer
    what was not explicitly asked: the assistant must ask follow-up questions to learn more. State a preference only
    when the assistant asks for it directly, and then minimally (e.g. "I prefer a simple one.")."""

    hidden_profile: str = dspy.InputField(desc="your persona and your preferences")
    chat_history: str = dspy.InputField(desc="the conversation so far, ending with what the assistant just said")
    thought: str = dspy.OutputField(desc="your minimal reasoning about what to answer, in a few words")
    reply: str = dspy.OutputField(desc="your direct, minimal reply to the assistant")


class ReplyAsCollaborativeUser(dspy.Signature):
    """You are role-playing a collaborative, proactive human user talking to an AI assistant, and you actively help it
    give you the best possible answer. The assistant has just said something. Keep to your role: you are engaged and
    willing to give details so as to reach the solution faster. When asked a question, give a full answer with any
    further context that could be useful. Volunteer information freely: offer any detail that could help, without being
    asked, such as your preferences, what you already understand and your goals. If the assistant's reply is good but
    could be better, ask follow-up questions to refine it."""

    hidden_profile: str = dspy.InputField(desc="your persona and your preferences")
    chat_history: str = dspy.InputField(desc="the conversation so far, ending with what the assistant just said")
    thought: str = dspy.OutputField(
        desc="your reasoning about how to help: what to answer, and what more to tell or ask the assistant"
    )
    reply: str = dspy.OutputField(desc="your detailed, helpful reply to the assistant")


class GradeCriterion(dspy.Signature):
    """You are an expert evaluator applying a standardized rubric to a personalized response: give a precise,
    evidence-based assessment of how well the response meets one criterion. Compare the response with the description
    of each performance level; find the specific evidence in it that matches a level; decide the exact score (1-5) that
    best represents the response on this criterion; justify it in detail, pointing to specific parts of the response.
    Be objective and apply the same standards to every evaluation, take the user's stated preference into account, and
    reason precisely enough that another evaluator could follow you to the same score."""

    criterion: str = dspy.InputField(
        desc="the criterion with its description, its performance levels, and the user's preferred value"
    )
    response: str = dspy.InputField(desc="the response to evaluate")
    grade: Grade = dspy.OutputField(desc="the score, 1 to 5")
    justification: str = dspy.OutputField(desc="the evidence in the response behind the score")


class JudgeCorrectness(dspy.Signature):
    """Judge the response's final answer against the correct reference answer, on objective correctness alone: the
    style of the response does not matter."""

    problem: str = dspy.InputField(desc="the problem")
    reference_answer: str = dspy.InputField(desc="the correct answer")
    response: str = dspy.InputField(desc="the response to check")
    justification: str = dspy.OutputField(desc="one sentence on why the final answer is or is not correct")
    correct: bool = dspy.OutputField(desc="true when the response's final answer matches the reference answer")


# The small-model profile's bounds of these fields (prefcraft/engine/small_model.py): what the embedded 135M model
# needs so that no call runs to its token budget. They apply only with the profile on; a paper-scale model gets none
# of them.
# ReplyAsCollaborativeUser has ReplyAsUser's fields, so the adapter gives it ReplyAsUser's bounds.
small_model_bounds(NextTurn, chars={"question": 120})
small_model_bounds(NextQuestion, chars={"question": 120})
small_model_bounds(AnswerProblem, chars={"response": 400, "final_answer": 40})
small_model_bounds(AnswerInDialogue, chars={"response": 400, "final_answer": 40})
small_model_bounds(SolveProblem, chars={"response": 400, "final_answer": 40})
small_model_bounds(ReplyAsUser, chars={"thought": 120, "reply": 120})
small_model_bounds(GradeCriterion, chars={"justification": 300})
small_model_bounds(JudgeCorrectness, chars={"justification": 200})
