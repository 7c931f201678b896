"""The shared agentic core of Track 2 (agents acting in environments): the sandbox, environment
pools, multi-turn generation through the intercept server, and the step PRM judge
(:mod:`openclaw_rl.agentic.step_prm`)."""
