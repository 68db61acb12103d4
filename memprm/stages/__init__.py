"""The stages of a full run, each a plain function over typed inputs: teacher trajectories, relabeling and
the critic, SFT, GRPO, evaluation. :func:`memprm.fit.fit` strings them together."""
