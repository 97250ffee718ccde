"""Explicit plans (the AGT article, SPEC §3): plans as data, their compilation to arrays, and the plan agent."""
