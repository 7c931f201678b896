"""The record: the one `Sample` type that travels from capture to loss, its collation into
``[B, T]`` tensors and the prompt datasets it is made from.
"""
