"""Reading a workspace as the engine left it: journals, state.json, logs, runs, reviews, checked against the engine's schemas."""
