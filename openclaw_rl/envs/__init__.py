"""Track 2 environments, one package per agent family."""
