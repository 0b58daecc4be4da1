"""What benchmarks and tests both run against: a real OpenAI-protocol server on loopback
(`openai_server`), the scripted replies that make every harness play the same episodes
(`scripted_replies`), verifiers' eval runner (`verifiers_eval`) and a local Ray cluster
(`ray_cluster`). Tests import these from here; nothing here imports tests."""
