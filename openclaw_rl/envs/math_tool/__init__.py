"""toolcall-rl: ReTool-style math with a sandboxed Python interpreter (data, answer checking, reward, environment)."""
