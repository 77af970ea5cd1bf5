"""The value-based family: ``pqn`` (PQN, PQN-VDN: Q(lambda) on parallel rollouts,
``qlambda``) and ``qlearn`` (IQL, VDN, QMIX from a flashbax ``replay`` with ``mixers``),
on shared Q-networks and rollout (``qnets``), greedy evaluation and ``Learner``
(``common``)."""
