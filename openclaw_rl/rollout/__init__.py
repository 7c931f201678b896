"""The OpenClaw rollout side: judged turns from the store become training samples."""
