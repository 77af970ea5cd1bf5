"""What every learner shares, and all a learner or a partner part may import besides
``jaxagents.core``, ``jaxagents.nn`` and ``jaxagents.advantages``:

* ``config``: ``CommonConfig``, the settings every learner shares, checked once;
* ``interface``: the ``Learner`` contract, traced hyper-parameters read from a config
  (``ConfigHParams``) and their specs (``HParamSpec``, ``hparam_space``), ``Fitness``;
* ``agents``: one network per role (``Agents``), observations to actions and values;
* ``rollout``: the environment carry, the one rollout (``collect``) and evaluation
  (``evaluate_episodes``), shaped rewards;
* ``metrics``: episode returns per role or agent slot;
* ``data_parallel``: one learner's environments split over a mesh axis;
* ``optim``: the traced optimiser (Adam/SGD after clipping) and full-batch fits;
* ``curriculum``: environment parameters on a schedule of updates.
"""
