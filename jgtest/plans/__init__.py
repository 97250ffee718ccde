"""Explicit plans (the AGT article, SPEC §3): plans as data, compiled to arrays, and the plan
agent."""
