from prefcraft.engine.scheduling import interleave, warm_then_interleave


def test_interleave_takes_one_item_of_each_group_in_turn():
    assert interleave([["a1", "a2", "a3"], ["b1"], ["c1", "c2"]]) == ["a1", "b1", "c1", "a2", "c2", "a3"]
    assert interleave([]) == []


def test_each_group_sends_its_prefix_alone_before_the_rest():
    phases = warm_then_interleave([["a1", "a2", "a3"], ["b1", "b2"], []])
    assert phases == [["a1", "b1"], ["a2", "b2", "a3"]]
    assert warm_then_interleave([["a1"]]) == [["a1"]]
