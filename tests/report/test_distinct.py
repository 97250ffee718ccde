"""Records grouped into distinct bugs by the game's own identity: its bug id and where the game
placed it, never merged across placements."""

from jgtest.records import BugRecord
from jgtest.report.distinct import distinct_bugs


def _record(bug_id: int, bug_pos=None, step: int = 4) -> BugRecord:
    kwargs = {} if bug_pos is None else {"bug_pos": bug_pos}
    return BugRecord(
        kind="logical",
        game="BlockMaze-v0",
        bug_id=bug_id,
        step=step,
        episode=0,
        seed=0,
        env_index=0,
        actions=(0,) * (step + 1),
        game_kwargs=kwargs,
    )


def test_one_bug_found_again_is_one_bug_and_another_placement_is_another():
    seed_0, seed_1 = [[1, 3], [5, 5]], [[2, 9], [7, 1]]  # Wuji's runs re-draw the bugs per seed
    bugs = distinct_bugs(
        [_record(0, seed_0), _record(0, seed_0, step=9), _record(0, seed_1), _record(1, seed_0)]
    )
    assert [len(b.records) for b in bugs] == [2, 1, 1]
    assert len(distinct_bugs([_record(0), _record(0, step=6)])) == 1
