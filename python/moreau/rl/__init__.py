"""moreau.rl: adapters from moreau's DiffEnv tasks to reinforcement-learning libraries, each
imported on demand (they need their library):

``moreau.rl.rsl_rl``: RslRlVecEnv (rsl_rl's VecEnv, for PPO through OnPolicyRunner; ``rsl-rl-lib``).
``moreau.rl.gymnasium``: VectorEnv (gymnasium's VectorEnv; registers moreau/AnymalC-v0 and
moreau/CartPole-v0 for ``gymnasium.make_vec``)."""
