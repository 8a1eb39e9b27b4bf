"""CUPID (seeds/001): inferring a user's contextual preference from prior sessions, and the graders that score it.

Inference sees only dialogues and the current request; the decomposer, matcher and judge are graders that read gold
preferences and checklists. Each prompt follows its figure in the paper's appendix (Figures 14-16 and 21-23): the
analysis the paper asks for comes as an output field before the answer, and the calibration examples (four example
preferences for the inferrer, five decompositions, eight matches from the paper's meta-evaluation, taken from the
reference code's prompts) are written into the instructions in prefcraft's words, with the reference's labels. The
response judge is the reference code's (`JudgeResponse`: Figure 16 plus a label for each score, the label given before
the score); `JudgeResponseFigure16` is the paper's figure, without labels. The signatures' bounds are the paper's: a
preference of one sentence of at most 30 words, and checklists of at most 4 items; the small-model profile's bounds
are declared apart, after the signatures.
Field order is part of every compiled JSON: never reorder these fields.
"""

from typing import Literal

import dspy
from pydantic import BaseModel, Field

from prefcraft.engine.small_model import small_model_bounds

MAX_SESSION_NUMBER = 16
MAX_CHECKLIST_ITEMS = 4
Coverage = Literal["Fully", "Partially", "Not"]
SessionNumber = Literal[tuple(range(1, MAX_SESSION_NUMBER + 1))]  # a Literal renders as plain numbers in the prompt
JudgeScore = Literal[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
JudgeLabel = Literal["Exceptional", "Excellent", "Very Good", "Good", "Above Average", "Acceptable", "Below Average",
                     "Poor", "Very Poor", "Unacceptable"]


class SelectRelevantSessions(dspy.Signature):
    """You see numbered past sessions between a user and an AI assistant, then the user's current request. Pick the
    sessions whose situation is most similar to the current request, where the user's feedback shows what they expect
    in that situation."""

    sessions: str = dspy.InputField(desc="the numbered past sessions, oldest first")
    current_request: str = dspy.InputField(desc="the user's current request")
    relevant_sessions: list[SessionNumber] = dspy.OutputField(desc="numbers of the most relevant sessions")


class SessionSummary(BaseModel):
    """One past session of the log, summarised."""

    session: SessionNumber = Field(description="the session's number in the log")
    analysis: str = Field(description="your step-by-step thinking as you analyse the session")
    context: list[str] = Field(description="the situation the user was in when they started the session, one bullet "
                               "point each")
    preferences: list[str] = Field(description="the expectations, preferences and intentions the user expressed in "
                                   "the session, one bullet point each")


class SummarizeSessions(dspy.Signature):
    """You see a log of past sessions between a user and a conversational AI assistant, in chronological order with
    the most recent last. Inspect and analyse each session on its own, then summarise each session in two parts.
    Context: the situation the user was in when they started the interaction, in detailed bullet points. Preferences:
    the expectations, preferences and intentions the user expressed to the assistant in that session, read from all
    of the user's messages, in detailed bullet points. Give one summary per session, in the log's order, each with
    your step-by-step analysis of the session before its context and preferences."""

    sessions: str = dspy.InputField(desc="the numbered past sessions, oldest first")
    summaries: list[SessionSummary] = dspy.OutputField(desc="one summary per session, in the log's order")


class SummarizeSession(dspy.Signature):
    """You see one past session between a user and a conversational AI assistant. Analyse it, then summarise it in two
    parts. Context: the situation the user was in when they started the interaction, in detailed bullet points.
    Preference: the expectations, preferences and intentions the user expressed to the assistant, read from all of
    the user's messages, in detailed bullet points."""

    dialogue: str = dspy.InputField(desc="the session's messages")
    analysis: str = dspy.OutputField(desc="your step-by-step thinking as you analyse the session")
    context: str = dspy.OutputField(desc="the user's situation in the session, as bullet points")
    preference: str = dspy.OutputField(desc="what the user expected, preferred and intended, as bullet points")


class InferPreference(dspy.Signature):
    """You see a log of past sessions between a user and a conversational AI assistant, in chronological order with
    the most recent last, then the user's current request. Infer the implicit preference the user will hold in the
    current interaction: a guideline, requirement, constraint or principle the assistant must align with to satisfy
    the user in that context. The preference is not stated in the current request: infer it by analysing the earlier
    sessions. First write your analysis of the log, then describe the user's most likely preference for the current
    interaction in one sentence of at most 30 words. Keep to the most likely preference the log supports: every
    incorrect detail is penalised.

    Example preferences:
    - "Responsibilities should be conveyed in a stern, direct tone."
    - "Even the most basic topics need resources that are fully thorough and simplified."
    - "A presentation should be built around one example that everyone can understand and that includes everyone."
    - "Any instructions or manuals about equipment must give its inspection protocols a prominent place."
    """

    sessions: str = dspy.InputField(desc="past sessions (or a summary of each), oldest first")
    current_request: str = dspy.InputField(desc="the user's current request")
    analysis: str = dspy.OutputField(desc="your analysis of the log of past sessions")
    preference: str = dspy.OutputField(
        desc="the user's most likely preference for the current interaction, one sentence of at most 30 words"
    )


class DecomposePreference(dspy.Signature):
    """A preference is a requirement, guideline or principle a user applies when judging an AI assistant's response.
    To help judge how well a response satisfies a preference, turn the preference into an evaluation checklist:
    questions asking whether the response met specific aspects of the preference. Include only aspects the preference
    states explicitly, and no entry the preference does not call for. Each question must be:
    - answerable by yes or no, yes meaning the response met that requirement;
    - comprehensive yet concise: every aspect directly relevant to the preference has a question, and only clearly
      relevant questions are included;
    - precise: no vague wording, one specific aspect of a response, in the preference's own phrasing where it fits,
      and no content the preference does not contain.
    Always analyse the preference before giving the checklist. The checklist has at most 4 entries.

    Examples of preferences and their checklists:
    1. Preference: "Responsibilities should be conveyed in a stern, direct tone."
       Checklist: "Are the responsibilities conveyed in a stern tone?"; "Are the responsibilities conveyed in a direct
       tone?"
    2. Preference: "Any documentation about equipment must give inspection protocols a prominent place."
       Checklist: "Does the documentation include the equipment's inspection protocols?"; "Are the inspection
       protocols given a prominent place in the documentation?"
    3. Preference: "Presentations should use only examples that everyone can understand and that include everyone."
       Checklist: "Can every example in the presentation be understood by everyone?"; "Is every example in the
       presentation inclusive?"
    4. Preference: "Training manuals should give clear, step-by-step instructions for every procedure."
       Checklist: "Are the instructions clear?"; "Are the instructions given step by step?"; "Does the response give
       instructions for every procedure?"
    5. Preference: "Evaluations of a player's condition must record every possible physical and psychological issue,
       however little time there is."
       Checklist: "Does the evaluation record every possible physical issue, however little time there is?"; "Does
       the evaluation record every possible psychological issue, however little time there is?"
    """

    preference: str = dspy.InputField(desc="the user's preference")
    analysis: str = dspy.OutputField(desc="your analysis of the preference")
    checklist: list[str] = dspy.OutputField(desc="yes/no questions, at most 4", max_length=MAX_CHECKLIST_ITEMS)


class MatchChecklist(dspy.Signature):
    """You see an evaluation checklist and a preference. The preference describes an aspect of AI outputs to evaluate;
    the checklist's questions evaluate more specific, fine-grained aspects of those outputs. Decide whether each
    checklist entry is covered by the preference: covered means the preference and the entry evaluate the same or
    similar aspects of an output, even in other words. They may name the subject differently ("response" or
    "report") and still evaluate the same aspect: ignore wording and compare the aspects evaluated. Label each entry:
    - Fully: the preference fully covers the entry; evaluating on the preference also evaluates the entry.
    - Partially: the preference covers part of the entry; evaluating on the preference may evaluate some of it.
    - Not: the preference does not cover or evaluate the entry.
    Reason about each entry's coverage first, then give one label per entry, in the entries' order.

    Examples (a preference, then each checklist entry with its label):
    1. Preference: "Sampling procedures must put the safety of equipment first and require a weather check every hour
       before any sample is taken."
       - Does the protocol include detailed steps for monitoring the weather? Partially
       - Does the protocol include measures that protect the equipment? Partially
       - Does the protocol set out a systematic way to decide how to adapt to changing field conditions while
         sampling in the wet season? Not
    2. Preference: "Test results should centre on user engagement metrics and on how participants interact socially
       with one another."
       - Does the analysis protocol examine player engagement in depth? Partially
       - Does the analysis protocol examine collaboration in depth? Partially
       - Does the analysis protocol examine competition in depth? Not
       - Does the analysis protocol give actionable insights for improving the AR mini-game's social dynamics and
         overall player experience? Partially
    3. Preference: "Solutions must follow established military doctrine and proven tactics strictly, and avoid
       experimental or novel methods."
       - Is the training plan consistent with established military standards? Fully
       - Is the training plan clear? Partially
       - Is the training plan structured? Fully
       - Does the training plan include objective, data-driven criteria for evaluating performance? Fully
    4. Preference: "Presentation content must use formal academic language and technical terms, with a precise timing
       structure."
       - Is the presentation formally structured? Fully
       - Does the presentation use terminology specific to the discipline? Partially
       - Does the presentation give a clear time allocation for each section of the keynote? Partially
    5. Preference: "Authentication checks must finish within 15 minutes and look only at the critical identifying
       features listed in standard guides."
       - Does the procedure prioritise the key distinctive features of military stamps? Not
       - Does the procedure allow verification to be done efficiently within the time limit? Fully
       - Does the procedure follow established philatelic standards of accuracy? Not
    6. Preference: "Statistical findings should be presented mainly through stories of player impact and career
       paths."
       - Does the presentation communicate the analytics team's impact clearly? Partially
       - Does the presentation use engaging narratives? Partially
       - Does the presentation include relatable examples? Partially
    7. Preference: "All scientific analysis must put finding and correcting misconceptions first, whatever the
       documentary's artistic merit."
       - Does the analysis critically examine each segment for oversimplification? Not
       - Does the analysis critically examine each segment for inaccuracies? Fully
       - Does the analysis give detailed scientific corrections for any issues it finds? Partially
       - Does the analysis give detailed scientific clarifications for any issues it finds? Partially
    8. Preference: "Review processes must put comprehensive stakeholder input ahead of speed, with extended review
       periods."
       - Do the procedures set out structured review stages? Fully
       - Do the procedures assign stakeholder responsibilities clearly? Fully
       - Do the procedures allow enough time for feedback? Partially
       - Do the procedures cover every content type so that input is comprehensive? Not
    """

    checklist: str = dspy.InputField(desc="the numbered checklist entries")
    preference: str = dspy.InputField(desc="the preference")
    reasoning: str = dspy.OutputField(desc="for each entry in order, why the preference does or does not cover it")
    coverage: list[Coverage] = dspy.OutputField(
        desc="one label per entry, in the entries' order", max_length=MAX_CHECKLIST_ITEMS
    )


class GenerateResponse(dspy.Signature):
    """Give a helpful response to the user's request. To help you understand the user's needs, expectations and
    intentions you may be given what is known about the user: either a log of their past sessions with an AI
    assistant, in chronological order with the most recent last, from which you must infer what the user expected
    in similar earlier interactions; or their preference for this request. Craft a response that meets the user's
    expectations. Return only the response you would give the user, with nothing that should not reach them."""

    user_context: str = dspy.InputField(desc="what is known about the user; may be empty")
    request: str = dspy.InputField(desc="the user's request")
    response: str = dspy.OutputField(desc="the response to the user")


class JudgeResponse(dspy.Signature):
    """You are a critical and meticulous evaluator. You see a user's request to an AI assistant, the assistant's
    response, the user's preference, and an evaluation checklist that breaks the preference into specific questions.
    Evaluate whether the response satisfies the preference. First write your analysis: walk through each checklist
    item, summarise the response's strengths and weaknesses on it, and decide whether the item is satisfied. Consider
    nothing outside the checklist, and do not let any persona of your own sway the evaluation. Then rate the response
    on this scale from 1 to 10, giving the label of the rating before its score:
    - 10: Exceptional
    - 9: Excellent
    - 8: Very Good
    - 7: Good
    - 6: Above Average
    - 5: Acceptable
    - 4: Below Average
    - 3: Poor
    - 2: Very Poor
    - 1: Unacceptable
    """

    request: str = dspy.InputField(desc="the user's request")
    response: str = dspy.InputField(desc="the AI assistant's response")
    preference: str = dspy.InputField(desc="the user's preference")
    checklist: str = dspy.InputField(desc="the preference as yes/no checklist items")
    evaluation: str = dspy.OutputField(desc="for each checklist item in turn, the response's strengths and weaknesses")
    label: JudgeLabel = dspy.OutputField(desc="the label of the rating, from the scale")
    score: JudgeScore = dspy.OutputField(desc="how well the response meets the preference, the label's score")


class JudgeResponseFigure16(dspy.Signature):
    """You are a critical and meticulous evaluator. You see a user's request to an AI assistant, the assistant's
    response, the user's personal preference, and an evaluation checklist that breaks the preference into specific
    questions. Evaluate whether the response satisfies the preference. First write your analysis: walk through each
    checklist item, summarise the response's strengths and weaknesses on it, and decide whether the item is satisfied.
    Consider nothing outside the checklist, and do not let any persona of your own sway the evaluation. Then score
    the response from 1 to 10, where 1 means very poor and 10 means completely perfect."""

    request: str = dspy.InputField(desc="the user's request")
    response: str = dspy.InputField(desc="the AI assistant's response")
    preference: str = dspy.InputField(desc="the user's preference")
    checklist: str = dspy.InputField(desc="the preference as yes/no checklist items")
    evaluation: str = dspy.OutputField(desc="for each checklist item in turn, the response's strengths and weaknesses")
    score: JudgeScore = dspy.OutputField(desc="how well the response meets the preference")


# The small-model profile's bounds of these fields (prefcraft/engine/small_model.py): what the embedded 135M model
# needs so that no call runs to its token budget. They apply only with the profile on; a paper-scale model gets none
# of them.
small_model_bounds(SelectRelevantSessions, items={"relevant_sessions": 3})
small_model_bounds(SummarizeSession, chars={
    "analysis": 300,
    "context": 200,
    "preference": 200,  # CUPID's preference is one sentence of at most 30 words, about 200 characters
})
small_model_bounds(InferPreference, chars={"analysis": 300, "preference": 200})
small_model_bounds(DecomposePreference, chars={"analysis": 300, "checklist": 120})
small_model_bounds(MatchChecklist, chars={"reasoning": 200})
small_model_bounds(JudgeResponse, chars={"evaluation": 300})
small_model_bounds(JudgeResponseFigure16, chars={"evaluation": 300})
small_model_bounds(GenerateResponse, chars={"response": 700})
