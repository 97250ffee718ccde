"""A campaign on a Ray cluster of two nodes (a head and a worker, both on this machine, as Ray's
``cluster_utils.Cluster`` starts them): the farm spreads its games over both nodes, and when the
worker node is killed mid-campaign its games become crash records, restart on the head, and the
campaign finishes."""

import json
import warnings

import pytest

ray = pytest.importorskip("ray")

from envs_bridge import pool  # noqa: E402
from jgtest.methods import reline  # noqa: E402
from jgtest.records import read_bug_records  # noqa: E402


@pytest.mark.slow  # two Ray nodes and a restart on 2 loaded cores: about a minute
def test_a_campaign_spans_two_nodes_and_survives_losing_one(tmp_path, monkeypatch):
    from ray.cluster_utils import Cluster

    farms, seen = [], {}
    original_init = pool.GameFarm.__init__

    def remember(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        farms.append(self)

    monkeypatch.setattr(pool.GameFarm, "__init__", remember)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", r"os\.fork\(\) was called", RuntimeWarning)
        cluster = Cluster(
            initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False}
        )
        worker = cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        # the driver joins, so the farm uses (and keeps) this connection
        ray.init(address=cluster.address, log_to_driver=False)

    # the campaign's own callback: kill the worker node while its game is mid-episode
    def progress(phase, done, total):
        if not (phase.startswith("evaluate") and 0 < done < total) or "killed" in seen:
            return
        farm, head = farms[-1], ray.get_runtime_context().get_node_id()
        on_worker = [i for i, node in enumerate(farm.nodes()) if node != head]
        # a kill during a reset leaves no trace
        if any(farm._actions[i] and not farm._needs_reset[i] for i in on_worker):
            seen["nodes_before"] = set(farm.nodes())
            cluster.remove_node(worker)
            seen["killed"] = True

    try:
        config = reline.RelineConfig(
            game="ale:MsPacman",
            models=1,
            eval_episodes=4,
            agents=("random",),
            actors=2,
            seed=3,
            ray_address=cluster.address,
        )
        summary = reline.run(config, tmp_path, progress=progress)
        nodes_after = set(farms[-1].nodes())
        alive = {node["NodeID"] for node in ray.nodes() if node["Alive"]}
    finally:
        ray.shutdown()
        cluster.shutdown()
    # one game on each node, until the worker went
    assert seen.get("killed") and len(seen["nodes_before"]) == 2
    # the lost game restarted on the head
    assert len(alive) == 1 and alive < seen["nodes_before"] and nodes_after == alive
    assert set(summary["table1"]["random"]) == {"1", "2", "3", "4"}  # the campaign finished
    assert json.loads((tmp_path / "table1.json").read_text()) == {
        "protocol": summary["protocol"],
        "table1": summary["table1"],
    }
    crashes = [r for r in read_bug_records(tmp_path / "bugs.jsonl") if r.kind == "crash"]
    # the worker's game
    assert len(crashes) == 1 and crashes[0].game == "ale:MsPacman" and "died" in crashes[0].detail
