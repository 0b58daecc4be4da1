"""The choices of `textenvs train` that its settings check and its parts branch on,
declared once and without torch: the CLI's `--help` reads them without loading it."""

#: --reward-weighted's --credit: where an episode's credit goes (`credit.py`)
CREDITS = ("episode", "turn", "critic", "critic-gains", "lookahead")
#: the --credit values that weigh each turn apart (each turn a sequence of its own)
PER_TURN_CREDITS = ("turn", "critic", "critic-gains", "lookahead")
#: the credits a critic fit across seeds gives as a change in its value (`critic.py`)
CRITIC_CREDITS = ("critic", "critic-gains")
#: the credits whose turns are drawn by the size of their weight (`credit.fed_choice`)
DRAWN_CREDITS = (*CRITIC_CREDITS, "lookahead")

#: how far a token's probability may move from its sampled one, as a ratio, before the
#: loss stops moving it (PPO's epsilon; `--clip`)
CLIP = 0.2
