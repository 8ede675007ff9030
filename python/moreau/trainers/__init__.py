"""moreau.trainers: reinforcement learning on moreau's tasks (moreau.tasks).

``moreau.trainers.shac``: SHAC, the analytic gradient through the simulator
(``python3 -m moreau.trainers.shac``, ``moreau-shac``); ``moreau.trainers.ppo``: PPO through
rsl_rl's OnPolicyRunner (``python3 -m moreau.trainers.ppo``, ``moreau-ppo``); both data-parallel
over processes under torchrun (``moreau.trainers.distributed``). Their parts:
``moreau.trainers.checkpoints`` (checkpoint files and the policies they hold),
``moreau.trainers.networks`` (SHAC's actor and critic), ``moreau.trainers.normalization``
(running observation statistics), ``moreau.trainers.runlog`` (a run's log.csv),
``moreau.trainers.meters`` (statistics kept on the device, read once per log row; timing with
CUDA events). Training recipes
(presets) are in moreau.tasks.presets; evaluation in moreau.evaluation.
"""
