"""terminal-rl: AgentBench OS shell tasks in the bubblewrap sandbox (env, tasks, checks)."""
