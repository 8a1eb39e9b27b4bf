"""MIPROv2 over CUPID's inferrer: the real optimizer on a fake engine, the metric, and the shipped compiled program."""

import json

import dspy
import pytest

from prefcraft.components.cupid.data import SAMPLE_INSTANCES, load_instances
from prefcraft.components.cupid.metrics import PreferenceF1
from prefcraft.engine.adapter import SchemaAdapter
from prefcraft.optimizers.artifacts import save_compiled
from prefcraft.optimizers.cupid import PROGRAM_NAME, labeled, load_inferrer
from prefcraft.optimizers.demos import keep_prompt_demos
from prefcraft.optimizers.prompt_optimizer import MIPROv2Config, PromptOptimizer
from prefcraft.programs.cupid import PreferenceInferrer, PreferenceMatch
from tests.fakes import FieldFillingEngine

TYPED = {"relevant_sessions": [1], "score": 5}


class InstructionRewardingEngine(FieldFillingEngine):
    """Answers every call with JSON that fills each requested output field, so MIPROv2's proposer calls work too. The
    inferred preference depends on the instructions, so candidates differ in score: under an instruction that mentions
    "brief" the preference is "brief", which the fake decomposer and matcher score as fully matching; otherwise the
    gold checklist is Not covered."""

    def value(self, field, system, user):
        if field == "preference":
            return "brief" if "brief" in system else "long"
        if field == "checklist":
            return ["Is it brief?"] if "brief" in user else ["Is it long?"]
        if field == "coverage":
            return ["Fully" if "brief" in user else "Not"] * 4  # the program keeps one label per item
        if field == "proposed_instruction":
            return "Infer the user's preference, in brief."
        return TYPED.get(field, "text")


class DemoRewardingEngine(InstructionRewardingEngine):
    """Infers "brief" (a full match) only when the prompt shows demos, so a demo set beats zero-shot."""

    def complete(self, request):
        self.few_shot = any(message.role == "assistant" for message in request.messages)
        return super().complete(request)

    def value(self, field, system, user):
        if field == "preference":
            return "brief" if self.few_shot else "long"
        if field == "proposed_instruction":
            return "Infer the user's preference."
        return super().value(field, system, user)


def examples(count):
    return [instance.example() for instance in load_instances(SAMPLE_INSTANCES).instances[:count]]


def metric(lm):
    return PreferenceF1(PreferenceMatch(), lambda: dspy.context(lm=lm, adapter=dspy.JSONAdapter()))


def compile_inferrer(lm, config, trainset, valset):
    """As `prefcraft cupid compile` compiles: labeled training examples, then only the demos the prompt shows."""
    optimizer = PromptOptimizer(metric(lm), config, prompt_model=lm, task_model=lm)
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        compiled = optimizer.compile(PreferenceInferrer("all"), trainset=[labeled(e) for e in trainset], valset=valset)
    return keep_prompt_demos(compiled)


def test_real_mipro_compile_on_a_fake_engine_changes_the_program_and_round_trips(tmp_path):
    lm = dspy.LM("fake-model", engine=InstructionRewardingEngine(), cache=False)
    config = MIPROv2Config(num_candidates=2, num_trials=5, max_bootstrapped_demos=1, max_labeled_demos=0,
                           num_threads=1, metric_threshold=0.5)
    compiled = compile_inferrer(lm, config, examples(3), examples(6)[3:])
    assert isinstance(compiled, PreferenceInferrer) and compiled.variant == "all"
    record = compiled.compile_record
    assert record.optimizer == "miprov2" and len(record.trial_logs) >= 1
    assert "brief" in compiled.infer.signature.instructions  # the proposed instruction that scores higher won
    assert record.validation_score == pytest.approx(100.0)  # DSPy reports the validation score in percent
    path = save_compiled(compiled, tmp_path / "inferrer.json", program_name=PROGRAM_NAME, variant="all")
    reloaded, metadata = load_inferrer(path)
    assert metadata["variant"] == "all"
    assert reloaded.infer.signature.instructions == compiled.infer.signature.instructions
    assert len(reloaded.infer.demos) == len(compiled.infer.demos)


def test_labeled_and_bootstrapped_demos_carry_the_inferrers_fields_and_reach_its_prompt():
    """Labeled demos are training examples placed as they are: each must show its gold preference as the answer."""
    lm = dspy.LM("fake-model", engine=DemoRewardingEngine(), cache=False)
    config = MIPROv2Config(num_candidates=3, num_trials=3, max_bootstrapped_demos=1, max_labeled_demos=3,
                           num_threads=1, metric_threshold=0.5)
    trainset = examples(4)
    compiled = compile_inferrer(lm, config, trainset, examples(6)[4:])
    demos = compiled.infer.demos
    labeled = [demo for demo in demos if not demo.get("augmented")]
    assert labeled, "the chosen demo set holds labeled demos"
    assert all(set(demo.keys()) <= {*compiled.infer.signature.fields, "augmented"} for demo in demos)
    assert {demo["preference"] for demo in labeled} <= {example.gold_preference for example in trainset}
    messages = SchemaAdapter().format(compiled.infer.signature, demos, {"sessions": "s", "current_request": "r"})
    assert len(messages) == 2 + 2 * len(demos)  # system, a user/assistant pair per demo, the input
    shown = [json.loads(m["content"])["preference"] for m in messages[2:-1:2]]
    assert sorted(shown) == sorted(d["preference"] for d in demos)  # DSPy shows demos lacking the analysis first


def test_the_metric_is_the_instance_f1_of_the_preference_match():
    score = metric(dspy.LM("fake-model", engine=InstructionRewardingEngine(), cache=False))
    example = examples(1)[0]
    # The fake matcher labels every item Fully when the inferred preference is "brief": P = R = F1 = 1.
    assert score(example, dspy.Prediction(preference="brief")) == pytest.approx(1.0)
    assert score(example, dspy.Prediction(preference="long")) == pytest.approx(0.0)

