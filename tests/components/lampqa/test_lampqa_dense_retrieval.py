"""LaMP-QA's dense retrieval as the reference runs Contriever: ranked by the raw dot product (cosine an option), each
text cut by the embeddings server to 512 tokens; no server, a scripted embedding function."""

import pytest

from prefcraft.components.lampqa.evaluation import build_retriever
from prefcraft.components.lampqa.options import EvaluateOptions
from prefcraft.programs.lampqa import DenseRetriever, ProfilePost

LONG = ProfilePost(id="long", text="a long post")
ALIGNED = ProfilePost(id="aligned", text="a post in the question's direction")
# The long post's vector is larger and less aligned with the question's: the dot product and cosine disagree.
VECTORS = {"q": [1.0, 0.0], LONG.text: [10.0, 10.0], ALIGNED.text: [1.0, 0.0]}


def embed(texts):
    return [VECTORS[text] for text in texts]


@pytest.mark.parametrize(("similarity", "first"), [("dot", "long"), ("cosine", "aligned")])
def test_dense_retrieval_ranks_by_the_raw_dot_product_unless_told_cosine(similarity, first):
    assert DenseRetriever(embed, k=1, similarity=similarity)("q", [LONG, ALIGNED])[0].id == first
    assert DenseRetriever(embed, k=1)("q", [LONG, ALIGNED])[0].id == "long"  # the reference's, by default


def test_a_dense_request_asks_the_server_to_cut_each_text_at_contrievers_512_tokens():
    options = {"retriever": "dense", "embedding_model": "openai/facebook/contriever-msmarco",
               "embedding_api_base": "http://127.0.0.1:8002/v1"}
    retriever = build_retriever(EvaluateOptions(**options))
    assert retriever.similarity == "dot"
    assert retriever.embed.default_kwargs == {"api_base": "http://127.0.0.1:8002/v1", "api_key": "EMPTY",
                                              "extra_body": {"truncate_prompt_tokens": 512}}
    retriever = build_retriever(EvaluateOptions(**options, embedding_max_tokens=0, embedding_similarity="cosine"))
    assert "extra_body" not in retriever.embed.default_kwargs and retriever.similarity == "cosine"
