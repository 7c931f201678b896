"""Algorithms: advantage estimators, the PPO/KL/entropy policy loss and per-token log-probs.
The learning methods that combine them are :mod:`slime.methods`.
"""
