"""The episode layer, below agents, evals, adapters and training: the agent protocol
(`protocol.py`), an episode's record with every outcome and its bookkeeping
(`record.py`), the episode loop (`loop.py`) and which episodes to play (`specs.py`).
It imports only `textenvs.core` (and the rules prompts)."""
