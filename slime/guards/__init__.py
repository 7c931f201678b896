"""Guards that keep a run from getting worse: sample admission, the behaviour and degenerate-reply
checks, the loss guard, the collapse guard's spike detector and the promotion gate.
"""
