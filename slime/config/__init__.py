"""Configuration: typed flag declarations, the command line parsed once into an immutable
:class:`~slime.config.arguments.SlimeConfig`, its consistency checks and its path handling.
"""
