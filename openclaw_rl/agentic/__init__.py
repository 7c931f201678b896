"""The agentic core shared by the Track 2 agent families (issue 13)."""
