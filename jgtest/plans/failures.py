"""A failed validation in words, the same on every game's plans."""

from __future__ import annotations


def failure_text(validation: dict, events) -> str:
    """The node or rule, the action and actor, what was expected after which event (``events``: the
    game's; anything else is a delay) and what was observed, e.g.
    ``node 0: interact switch #0: expected door_open +1 after switch_toggled within 10 steps;
    observed +0 (timeout: the event never came)``."""
    v = validation
    why = "timeout: the event never came" if v["status"] == "timeout" else "wrong post-state"
    bound = (
        f"after {v['bound_to']} within {v['timeout']} steps"
        if v["bound_to"] in events
        else f"after {v['bound_to']}"
    )
    return (
        f"{v['source']}: {v['action']} {v['actor']}: expected {v['variable']} "
        f"{v['expected_change']:+g} {bound}; observed {v['observed_change']:+g} ({why})"
    )
