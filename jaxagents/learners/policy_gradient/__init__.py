"""The policy-gradient family: PPO and what is built on it.

* ``ppo`` (``ppo_config``, ``update``): IPPO and MAPPO, feed-forward or recurrent;
  other learners extend it through ``ppo.Extension``;
* ``estimators``: the advantage estimators self-play chooses from (GAE, RAE, GRPO, ...);
* ``selfplay``: one shared policy over every role, combined with the partner parts;
* ``fcp``: fictitious co-play (a best response to a frozen pool of partners).
"""
