"""moreau.evaluation: running a trained policy under a fixed protocol and measuring it.

``moreau.evaluation.evaluate``: one checkpoint under any contact mode
(``python3 -m moreau.evaluation.evaluate``, ``moreau-evaluate``); ``moreau.evaluation.learning_curve``:
every checkpoint of a run (``python3 -m moreau.evaluation.learning_curve``,
``moreau-learning-curve``); ``moreau.evaluation.metrics``: what is measured, and the tracking
criterion; ``moreau.evaluation.video``: plots and videos of an evaluation;
``moreau.evaluation.mujoco``: a locomotion policy run in MuJoCo beside moreau, sim-to-sim
(``python3 -m moreau.evaluation.mujoco``; needs the ``mujoco`` package, imported only there).
"""
