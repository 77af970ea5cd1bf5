"""Language-model policies: decoder-only models in JAX, checkpoints and tokenizers from
local Hugging Face folders, generation inside ``jit``, and text views of our games.
"""
