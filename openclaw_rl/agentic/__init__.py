"""The shared agentic core: sandbox, environments, pool servers, step PRM, agent loop."""
