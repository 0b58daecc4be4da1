"""Adapters to other ecosystems. `textenvs.adapters.textarena` registers every scenario with
TextArena when imported (kept out of this package's import so TextArena loads only on use)."""
