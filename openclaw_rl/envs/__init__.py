"""Track-2 environment families (terminal, math tool, ...): tasks, tools and scoring per family."""
