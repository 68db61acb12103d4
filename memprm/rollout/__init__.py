"""Grouped rollouts: the group runner, the typed rollout containers, the rollout DataModule and heap trimming."""
