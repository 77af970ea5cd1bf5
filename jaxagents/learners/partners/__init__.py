"""Partner and opponent mechanisms, each owning its state and its update, that
self-play and FCP combine: ``league`` (a snapshot pool with PFSP over a payoff table),
``exploiter`` (a main exploiter network), ``average_policy`` (a distilled average
policy). Parts import only ``jaxagents.learners.skeleton`` (and ``core``/``nn``)."""
