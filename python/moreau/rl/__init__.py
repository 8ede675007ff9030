"""moreau.rl: adapters from moreau's DiffEnv tasks to reinforcement-learning libraries.

``moreau.rl.rsl_rl``: RslRlVecEnv (rsl_rl's VecEnv, for PPO through OnPolicyRunner); it needs
the ``rsl-rl-lib`` package and is imported on demand."""
