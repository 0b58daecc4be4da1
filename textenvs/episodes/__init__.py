"""The episode layer, below agents, evals, adapters and training: the agent protocol
(`protocol.py`), what an episode needs of an env and the one env factory type
(`envs.py`), an episode's record with every outcome and its bookkeeping
(`record.py`), the episode loop (`loop.py`) and which episodes to play (`specs.py`).
It imports only `textenvs.core` (and the rules prompts)."""
