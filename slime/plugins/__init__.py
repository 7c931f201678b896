"""Plugins: loading ``--*-path`` hooks (slime style), their typed protocols and calling
conventions, the start-up check, entry-point registries and what happens when one raises.
"""
