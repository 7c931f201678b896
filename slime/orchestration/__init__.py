"""Ray orchestration: the train actors as one trainer, the rollout manager, rollout services,
GPU placement, weight publishing, monitoring, actor-death reports and fault points.
"""
