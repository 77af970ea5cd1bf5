"""``LanguageSelfPlayConfig``: the static settings of self-play with a language model
(``jaxagents.learners.language.selfplay``), every field checked on construction with
one-line errors naming the field, before anything is built.

The shared fields keep their meaning (``CommonConfig``): ``num_envs`` games of each
game per update, each played for at most ``num_steps`` turns (a game not finished by
then is not trained on), ``total_timesteps`` turns in all (``num_updates =
total_timesteps // (num_envs * num_steps)``).

Which system each advantage setting is (``jaxagents.advantages`` for the formulas):

==========================  ===========================================================
system                      settings
==========================  ===========================================================
SPIRAL                      ``advantage: rae`` (baselines per game and role), ``normalize: none``
MARS                        ``advantage: returns`` with ``gamma < 1`` (turn-level return-to-go), ``normalize: role``
Dr. MAS                     ``advantage: returns``, ``gamma: 1``, ``normalize: role`` (per-agent statistics)
GRPO                        ``advantage: grpo``, ``group_size: G`` (G games from one deal)
GiGPO                       ``advantage: gigpo``, ``group_size: G`` (anchor states: equal prompts)
REINFORCE, no baseline      ``advantage: returns``, ``gamma: 1``, ``normalize: none``
==========================  ===========================================================
"""

from __future__ import annotations

import dataclasses
from typing import Any

from jaxagents.core.validate import check_bool, check_choice, check_float, check_int, check_positive_int
from jaxagents.learners.skeleton.config import CommonConfig
from jaxagents.lm import lora

ADVANTAGES = ("rae", "returns", "grpo", "gigpo")
NORMALIZATIONS = ("none", "batch", "role")
LOSSES = ("reinforce", "ppo")
OPTIMIZERS = ("adam", "sgd")
DTYPES = ("float32", "bfloat16")
FAMILIES = ("llama", "qwen2", "qwen3", "gpt2")


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """The policy's model: a local Hugging Face folder (``path``: ``config.json``,
    ``*.safetensors``, ``tokenizer.json``), or, with ``path: null``, a decoder trained
    from scratch (``family`` and the sizes below) with a byte-level BPE tokenizer of
    ``vocab_size`` ids trained on the games' own text (``jaxagents.lm.tokenizer``).

    ``lora_rank > 0`` trains low-rank adapters on ``lora_targets`` (``jaxagents.lm.lora``)
    and keeps the weights frozen; 0 trains every weight. ``chat``: wrap each observation
    in the tokenizer's chat template (a checkpoint's; ``system`` its system message).
    """

    path: str | None = None
    dtype: str = "float32"
    family: str = "llama"
    vocab_size: int = 512
    hidden_size: int = 64
    num_layers: int = 2
    num_heads: int = 4
    num_kv_heads: int = 4
    head_dim: int = 16
    intermediate_size: int = 128
    max_position: int = 1024
    lora_rank: int = 0
    lora_alpha: float = 16.0
    lora_targets: tuple = ("q", "v")
    chat: bool = False
    system: str | None = None

    def __post_init__(self):
        if self.path is not None and (not isinstance(self.path, str) or not self.path):
            raise ValueError(f"model.path must be a checkpoint folder or null (a model from scratch), got {self.path!r}")
        check_choice("model.dtype", self.dtype, DTYPES)
        check_choice("model.family", self.family, FAMILIES)
        object.__setattr__(self, "vocab_size", check_int("model.vocab_size", self.vocab_size, low=257))
        for name in ("hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim", "intermediate_size",
                     "max_position"):
            object.__setattr__(self, name, check_positive_int(f"model.{name}", getattr(self, name)))
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"model.num_heads={self.num_heads} must be a multiple of model.num_kv_heads={self.num_kv_heads}")
        if self.head_dim % 2:
            raise ValueError(f"model.head_dim must be even (rotary positions rotate pairs), got {self.head_dim}")
        object.__setattr__(self, "lora_rank", check_int("model.lora_rank (0: train every weight)", self.lora_rank, low=0))
        object.__setattr__(self, "lora_alpha", check_float("model.lora_alpha", self.lora_alpha, low=0.0, low_open=True))
        try:
            object.__setattr__(self, "lora_targets", lora.check_targets(self.lora_targets))
        except ValueError as e:
            raise ValueError(f"model.{e}") from None
        object.__setattr__(self, "chat", check_bool("model.chat", self.chat))
        if self.system is not None and not isinstance(self.system, str):
            raise ValueError(f"model.system must be a string or null, got {self.system!r}")
        if self.system is not None and not self.chat:
            raise ValueError("model.system is the chat template's system message: set model.chat=true")


@dataclasses.dataclass(frozen=True)
class LanguageSelfPlayConfig(CommonConfig):
    """Self-play of one language model in every seat (see the module docstring for the
    shared fields and the advantage settings).

    The fields beyond ``CommonConfig``'s:

    Attributes:
        model: a ``ModelSpec`` (or a mapping of its fields).
        games: more text games trained in the same batch as the run's ``env`` (ids, or
            ``{id, kwargs}`` mappings): one batch mixing games, baselines per (game, role).
        held_out: text games never trained on, only evaluated (as ``games``): transfer in
            MARS's sense, reported under ``eval/heldout/{game}/...``. Their text joins the
            corpus of a from-scratch tokenizer (the vocabulary a pretrained model would
            bring), so the trained model and the untrained one read them alike.
        prompt_len: prompt tokens kept per turn (a longer observation is cut at the end;
            ``selfplay/overflow`` counts it). ``max_new_tokens``: a reply's budget.
        temperature: sampling temperature (> 0: the policy gradient needs a distribution).
        constrained: replies drawn among the legal moves' strings (exact move
            probabilities, never an invalid move) in every game that has move strings (a
            game of free-text moves, a negotiation's offers, is always played with free
            replies); False: free text parsed by the game everywhere.
        advantage, normalize, rae_alpha, gigpo_omega, group_size: the advantage estimator.
        loss: ``reinforce`` (one gradient step on ``logprob * A``) or ``ppo`` (the clipped
            per-token ratio, ``update_epochs`` x ``num_minibatches`` steps).
        grad_chunks: ``reinforce``'s one step with its gradient summed over this many
            pieces of the update's turns (a ``scan``): the same step (to float rounding),
            with the loss's activations (each turn's whole prompt, forward and backward)
            held for one piece at a time. Raise it when an update runs out of memory.
        ent_coef: weight of the per-token entropy bonus; kl_coef: weight of the KL to the
            reference model (the k3 estimator per token; 0: none).
        kl_ref_rate: 0 keeps the KL's reference at the initial model (frozen); r > 0
            makes it a moving *magnet*, the trained weights' exponential average
            (``ref <- (1 - r) ref + r params`` after every update; under LoRA the adapters'
            average), magnetic mirror descent's regulariser: gradient self-play cycles
            around a zero-sum game's equilibrium, the magnet damps the cycle.
        kl_ref_snapshots, kl_ref_every: K > 0 makes the reference the uniform *mixture*
            of K snapshots of the trained weights, one taken every ``kl_ref_every``
            updates into a ring (all K the initial weights at first): the magnet is the
            average of the snapshots' *strategies* (each reply scored as the mean of its
            probabilities under the K models, ``policy.mixture_logprobs``), not a model
            of averaged weights; K reference forward passes an update.
        eval_every: updates between the games' evaluations; eval_games: games of each
            match against a game's scripted opponents (even; 0: no matches).
        eval_turns, eval_prompt_len: the turns a match may last and the prompt tokens an
            evaluation keeps (0: ``num_steps``, ``prompt_len``); a held-out game longer
            than the training games (Connect Four: 42 moves, 2,048 tokens) needs its own.
    """

    num_envs: int = 64
    num_steps: int = 4
    total_timesteps: int = 256 * 1000
    lr: float = 1e-3
    anneal_lr: bool = False
    max_grad_norm: float = 1.0
    gamma: float = 1.0
    model: ModelSpec = ModelSpec()
    games: tuple = ()
    held_out: tuple = ()
    prompt_len: int = 384
    max_new_tokens: int = 8
    temperature: float = 1.0
    constrained: bool = True
    advantage: str = "rae"
    normalize: str = "none"
    rae_alpha: float = 0.95
    gigpo_omega: float = 1.0
    group_size: int = 1
    loss: str = "reinforce"
    clip_eps: float = 0.2
    update_epochs: int = 1
    num_minibatches: int = 1
    grad_chunks: int = 1
    optimizer: str = "adam"
    ent_coef: float = 0.0
    kl_coef: float = 0.0
    kl_ref_rate: float = 0.0
    kl_ref_snapshots: int = 0
    kl_ref_every: int = 10
    eval_every: int = 10
    eval_games: int = 32
    eval_turns: int = 0
    eval_prompt_len: int = 0

    def __post_init__(self):
        self.check_common()
        if isinstance(self.model, dict):
            try:
                object.__setattr__(self, "model", ModelSpec(**self.model))
            except TypeError as e:  # an unknown key (the runner's config check names it first)
                raise ValueError(f"model: {e}") from None
        if not isinstance(self.model, ModelSpec):
            raise ValueError(f"model must be a ModelSpec or a mapping of its fields, got {type(self.model).__name__}")
        object.__setattr__(self, "games", tuple(_game_spec("games", i, g) for i, g in enumerate(self.games or ())))
        object.__setattr__(self, "held_out", tuple(_game_spec("held_out", i, g)
                                                   for i, g in enumerate(self.held_out or ())))
        object.__setattr__(self, "eval_turns", check_int("eval_turns (0: num_steps)", self.eval_turns, low=0))
        object.__setattr__(self, "eval_prompt_len", check_int("eval_prompt_len (0: prompt_len)", self.eval_prompt_len,
                                                              low=0))
        for name in ("prompt_len", "max_new_tokens", "group_size", "update_epochs", "num_minibatches", "grad_chunks",
                     "eval_every"):
            object.__setattr__(self, name, check_positive_int(name, getattr(self, name)))
        object.__setattr__(self, "eval_games", check_int("eval_games (0: no matches)", self.eval_games, low=0))
        if self.eval_games % 2:
            raise ValueError(f"eval_games must be even (half the games in each seat), got {self.eval_games}")
        object.__setattr__(self, "temperature", check_float("temperature (> 0: a sampled policy)", self.temperature,
                                                            low=0.0, low_open=True))
        object.__setattr__(self, "constrained", check_bool("constrained", self.constrained))
        check_choice("advantage", self.advantage, ADVANTAGES)
        check_choice("normalize", self.normalize, NORMALIZATIONS)
        check_choice("loss", self.loss, LOSSES)
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        object.__setattr__(self, "rae_alpha", check_float("rae_alpha", self.rae_alpha, low=0.0, high=1.0))
        object.__setattr__(self, "gigpo_omega", check_float("gigpo_omega", self.gigpo_omega, low=0.0))
        object.__setattr__(self, "clip_eps", check_float("clip_eps", self.clip_eps, low=0.0, low_open=True))
        object.__setattr__(self, "ent_coef", check_float("ent_coef", self.ent_coef, low=0.0))
        object.__setattr__(self, "kl_coef", check_float("kl_coef", self.kl_coef, low=0.0))
        object.__setattr__(self, "kl_ref_rate", check_float("kl_ref_rate", self.kl_ref_rate, low=0.0, high=1.0))
        if self.kl_ref_rate > 0 and self.kl_coef == 0:
            raise ValueError(f"kl_ref_rate={self.kl_ref_rate} moves the KL's reference: set kl_coef > 0")
        object.__setattr__(self, "kl_ref_snapshots", check_int("kl_ref_snapshots (0: none)", self.kl_ref_snapshots,
                                                               low=0))
        object.__setattr__(self, "kl_ref_every", check_positive_int("kl_ref_every", self.kl_ref_every))
        if self.kl_ref_snapshots and (self.kl_coef == 0 or self.kl_ref_rate > 0):
            raise ValueError(f"kl_ref_snapshots={self.kl_ref_snapshots} makes the KL's reference a mixture of "
                             "snapshots: set kl_coef > 0 and leave kl_ref_rate at 0")
        if self.advantage in ("grpo", "gigpo") and self.group_size < 2:
            raise ValueError(f"advantage={self.advantage!r} compares games dealt alike: set group_size >= 2")
        if self.advantage not in ("grpo", "gigpo") and self.group_size != 1:
            raise ValueError(f"group_size={self.group_size} only applies to advantage 'grpo' or 'gigpo'")
        if self.num_envs % self.group_size:
            raise ValueError(f"num_envs={self.num_envs} must be a multiple of group_size={self.group_size}")
        if self.loss == "reinforce" and (self.update_epochs, self.num_minibatches) != (1, 1):
            raise ValueError("loss='reinforce' takes one step per update: update_epochs and num_minibatches must be 1 "
                             "(set loss='ppo' for several)")
        if self.grad_chunks > 1 and self.loss != "reinforce":
            raise ValueError("grad_chunks applies to loss='reinforce' (ppo's num_minibatches already splits the turns)")
        if self.num_envs * self.num_steps % self.grad_chunks:
            raise ValueError(f"grad_chunks={self.grad_chunks} must divide the turns of an update "
                             f"(num_envs * num_steps = {self.num_envs * self.num_steps})")
        if self.num_envs * self.num_steps % self.num_minibatches:
            raise ValueError(f"num_minibatches={self.num_minibatches} must divide the turns of an update "
                             f"(num_envs * num_steps = {self.num_envs * self.num_steps})")


def _game_spec(field: str, i: int, g: Any) -> tuple:
    """One entry of ``games`` (or ``held_out``) as ``(id, ((kwarg, value), ...))`` (hashable)."""
    if isinstance(g, str):
        return (g, ())
    if isinstance(g, (tuple, list)) and len(g) == 2 and isinstance(g[0], str):
        return (g[0], tuple(sorted(dict(g[1]).items())))
    if isinstance(g, dict) and isinstance(g.get("id"), str) and set(g) <= {"id", "kwargs"}:
        return (g["id"], tuple(sorted(dict(g.get("kwargs") or {}).items())))
    raise ValueError(f"{field}[{i}] must be a text game id or a mapping {{id, kwargs}}, got {g!r}")
