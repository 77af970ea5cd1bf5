"""Partner and opponent mechanisms, each owning its state and its update, that
self-play combines: ``part`` (the ``Part`` interface and the loops over a list of
parts), ``pool`` (a ring buffer of snapshots), ``league`` (PFSP over the pool with a
payoff table), ``exploiter`` (a main exploiter network), ``average_policy`` (the
parameter average and a distilled average policy). Parts import only
``jaxagents.learners.skeleton`` (and ``core``/``nn``)."""
