"""The training backend: one policy (full weights or LoRA) with its optimizer, data-parallel ranks,
the train step's pieces, model loading and Hugging Face checkpoints.
"""
