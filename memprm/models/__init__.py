"""Learned models: the memory-utility critic (``backbone``, ``critic_losses``, ``critic``).

Nothing is imported here, so importing one module (e.g. the pure ``critic_losses``) does not pull in
transformers, peft or lightning.
"""
