"""LaMP-QA programs on scripted LMs: retrieval, the three methods, the aspect judge, and the gold-leak check."""

import dspy
import pytest
from dspy.utils import DummyLM
from dspy.utils.exceptions import AdapterParseError

from prefcraft.components.lampqa.data import SAMPLE_QUESTIONS, load_questions
from prefcraft.optimizers.artifacts import shipped_compiled
from prefcraft.optimizers.lampqa import PROGRAM_NAME, load_planpers
from prefcraft.programs.lampqa import (
    AspectJudge,
    BM25Retriever,
    DenseRetriever,
    NoPersonalization,
    PlanPers,
    ProfilePost,
    RAGPersonalization,
    RubricAspect,
    format_profile,
)
from prefcraft.settings import ModelSettings

POSTS = [ProfilePost(id=str(i), text=text) for i, text in enumerate([
    "How do I fix a squeaky door hinge?",
    "Cheap strings for a beginner?",
    "Best guitar for a total beginner?",
    "Why does bread go stale?",
])]
ANSWER = {"answer": "An answer."}
PLAN = {"aspects": [{"title": "Low cost", "reason": "tight budget"}]}


def scripted(*answers):
    return DummyLM(list(answers), adapter=dspy.JSONAdapter())


def prompts(lm):
    return ["\n".join(str(message["content"]) for message in entry["messages"]) for entry in lm.history]


def test_bm25_ranks_the_posts_that_share_the_most_question_terms_first():
    # post 2 shares "guitar" and "beginner" with the question, post 1 only "beginner", posts 0 and 3 nothing
    ranked = BM25Retriever(k=3)("Which guitar should a beginner buy?", POSTS)
    assert [post.id for post in ranked] == ["2", "1", "0"]  # the last one is a zero-score tie: profile order
    assert [post.id for post in BM25Retriever(k=2)("the of and", POSTS)] == ["0", "1"]  # only stopwords


def test_dense_retrieval_ranks_by_cosine_similarity_of_the_embeddings():
    vectors = {"q": [1.0, 0.0], POSTS[0].text: [0.0, 1.0], POSTS[1].text: [0.7, 0.7], POSTS[2].text: [2.0, 0.1],
               POSTS[3].text: [-1.0, 0.0]}
    seen = []

    def embed(texts):
        seen.append(texts)
        return [vectors[text] for text in texts]

    assert [post.id for post in DenseRetriever(embed, k=2)("q", POSTS)] == ["2", "1"]
    assert seen == [["q", *(post.text for post in POSTS)]]


def test_the_profile_shows_each_post_whole_unless_given_a_cut():
    posts = [ProfilePost(id="1", text="word " * 200), ProfilePost(id="2", text="short\n post")]
    assert format_profile(posts) == f"- {'word ' * 199}word\n- short post"
    cut = format_profile(posts, post_chars=300).splitlines()
    assert len(cut[0]) == 2 + 300 and cut[0].endswith("...") and cut[1] == "- short post"


def test_the_retrieving_methods_cut_the_posts_they_show():
    long_posts = [ProfilePost(id="1", text="guitar " * 100)]
    for program in (RAGPersonalization(BM25Retriever(k=1), post_chars=50), PlanPers(BM25Retriever(k=1), post_chars=50)):
        lm = scripted(PLAN, ANSWER) if isinstance(program, PlanPers) else scripted(ANSWER)
        with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
            program(question="Which guitar?", profile=long_posts)
        shown = [line for prompt in prompts(lm) for line in prompt.splitlines() if line.startswith("- guitar")]
        assert shown and all(len(line) == 2 + 50 for line in shown)


def test_each_method_answers_and_planpers_returns_its_plan():
    with dspy.context(lm=scripted(ANSWER, ANSWER, PLAN, ANSWER), adapter=dspy.JSONAdapter()):
        assert NoPersonalization()(question="Which guitar?", profile=POSTS).answer == "An answer."
        rag = RAGPersonalization(BM25Retriever(k=2))(question="Which guitar?", profile=POSTS)
        assert rag.retrieved == ["2", "0"]  # "guitar" in post 2 only; then the zero-score tie in profile order
        plan = PlanPers(BM25Retriever(k=2))(question="Which guitar?", profile=POSTS)
    assert plan.answer == "An answer." and plan.aspects[0].title == "Low cost"
    assert plan.plan == "- Low cost: tight budget"


def test_the_judge_scores_every_aspect_and_counts_a_failed_call_as_none():
    aspects = [RubricAspect(aspect=f"a{i}", reason="r", evidence="e") for i in range(3)]
    lm = scripted({"match_score": 2}, {"match_score": "seven"}, {"match_score": 0})
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        scores = AspectJudge()(question="q", details="d", response="r", aspects=aspects).scores
    assert scores == [2, None, 0]
    with dspy.context(lm=scripted({"match_score": 9}), adapter=dspy.JSONAdapter()), pytest.raises(AdapterParseError):
        AspectJudge()(question="q", details="d", response="r", aspects=aspects[:1])


def test_gold_never_reaches_the_retriever_planner_or_answerer_but_reaches_the_judge():
    question = load_questions(SAMPLE_QUESTIONS, "test").questions[0]
    secrets = {"narrative": "SECRET-NARRATIVE", "aspect": "SECRET-ASPECT", "reason": "SECRET-REASON",
               "evidence": "SECRET-EVIDENCE"}
    gold = question.model_copy(update={"narrative": secrets["narrative"], "rubric_aspects": (RubricAspect(
        aspect=secrets["aspect"], reason=secrets["reason"], evidence=secrets["evidence"]),)})
    example = gold.example()
    retrieved_texts = []

    class SpyRetriever(BM25Retriever):
        def __call__(self, query, posts):
            retrieved_texts.append(query + "".join(post.text for post in posts))
            return super().__call__(query, posts)

    programs = [NoPersonalization(), RAGPersonalization(SpyRetriever()), PlanPers(SpyRetriever())]
    compiled = shipped_compiled(PROGRAM_NAME, ModelSettings().model)
    if compiled is not None:  # its demos came from training questions: none of their gold may ride along
        programs.append(load_planpers(compiled, SpyRetriever())[0])
    lm = scripted(*[PLAN if i % 2 else ANSWER for i in range(2)] * 10)
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        for program in programs:
            lm.answers = iter([ANSWER] if isinstance(program, NoPersonalization | RAGPersonalization) else
                              [PLAN, ANSWER])
            program(**example.inputs())
    sent = prompts(lm) + retrieved_texts
    assert len(lm.history) == 1 + 1 + 2 * (len(programs) - 2)
    assert not [text for text in sent for secret in secrets.values() if secret in text]
    every_gold = [text for q in load_questions(SAMPLE_QUESTIONS, "train").questions
                  for text in (q.narrative, *(a.aspect for a in q.rubric_aspects))]
    assert not [text for text in every_gold for prompt in prompts(lm) if text in prompt]

    judge_lm = scripted({"match_score": 1})
    with dspy.context(lm=judge_lm, adapter=dspy.JSONAdapter()):
        AspectJudge()(question=example.question, details=example.narrative, response="r",
                      aspects=example.rubric_aspects)
    assert all(secret in prompts(judge_lm)[0] for secret in secrets.values())  # the check above can fail
