"""A compiled PlanPers (`lampqa_planner`) counts as compiled only when it is not the uncompiled program saved under
another name."""


from prefcraft.optimizers.artifacts import read_metadata, save_compiled
from prefcraft.optimizers.compile_selection import differs_from
from prefcraft.optimizers.lampqa import PROGRAM_NAME, load_planpers
from prefcraft.programs.lampqa import PlanPers


def test_an_uncompiled_program_saved_as_compiled_does_not_count_as_compiled(tmp_path):
    path = save_compiled(PlanPers(), tmp_path / "plain.json", program_name=PROGRAM_NAME, k=3)
    program, metadata = load_planpers(path)
    assert metadata == read_metadata(path) and program.retrieve.k == 3
    assert not differs_from(program, PlanPers())
    program.plan.demos = [{"question": "q"}]
    assert differs_from(program, PlanPers())
