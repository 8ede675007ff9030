"""The published walking policies still walk under hard contact: the shipped one
(results/transfer/walk_transfer_roll/policy.pt, results/transfer/README.md: damped drives, joint
friction and foot friction randomised, condim 6) and the walk_fast policy (results/shac_walk/policy.pt,
results/shac_walk/README.md), both trained through smooth contact. Rebuilt from the checkpoint
alone, each tracks a forward command and random commands of the training ranges on its own task.
Guards the task, the simulator and the checkpoint format against changes that would silently
break a published result."""
import json
import os

import pytest
import torch

from moreau.evaluation.evaluate import eval_env, evaluate
from moreau.trainers.checkpoints import load_shac_policy

RESULTS = os.path.join(os.path.dirname(__file__), "..", "..", "results")
SHIPPED = os.path.join(RESULTS, "transfer", "walk_transfer_roll", "policy.pt")
WALK_FAST = os.path.join(RESULTS, "shac_walk", "policy.pt")


@pytest.fixture(scope="module", params=[SHIPPED, WALK_FAST], ids=["shipped", "walk_fast"])
def policy(request):
    torch.set_num_threads(1)
    return load_shac_policy(request.param)


def test_the_checkpoint_carries_its_task(policy):
    meta = policy.meta["env"]
    assert meta["contact"] == "smooth" and meta["task_config"]["gait_frequency"] == 2.0
    assert meta["num_obs"] == 56 and policy.meta["env_steps"] > 1e6


def test_the_shipped_policy_trained_on_the_transfer_robot():
    task = load_shac_policy(SHIPPED).meta["env"]["task_config"]
    assert task["joint_damping"] > 0 and task["joint_frictionloss"] > 0 and task["joint_limits"]
    assert task["randomize_spin_friction"] and task["randomize_rolling_friction"]


def test_the_walk_transfer_roll_preset_is_the_shipped_policys_recipe():
    # `python3 -m moreau.trainers.shac --preset walk_transfer_roll` builds the task the shipped
    # policy was trained on (it was trained as walk_transfer_spin with a --task-config)
    from moreau.tasks import env_config, make_env
    from moreau.tasks.presets import SHAC_PRESETS, preset_kwargs
    meta = load_shac_policy(SHIPPED).meta["env"]
    preset = SHAC_PRESETS["walk_transfer_roll"]
    env = make_env("locomotion", preset["num_envs"], contact=preset["contact"], seed=0, n_threads=1,
                   **preset_kwargs(preset["task_preset"]))
    built = json.loads(json.dumps(env_config(env)))
    assert built == meta["task_config"]
    assert {k: v for k, v in preset.items() if k != "task_preset"} == \
        {k: v for k, v in SHAC_PRESETS[meta["preset"]].items() if k != "task_preset"}


def test_walks_forward_under_hard_contact(policy):
    env = eval_env(policy.meta["env"], "locomotion", 8, "hard", command=(0.5, 0.0, 0.0), push=False, sim_threads=1)
    res = evaluate(env, policy, 5.0, "locomotion", seed=1)
    print(res)
    assert res["falls"] == 0 and res["lin_vel_error"] < 0.15 and res["trot_fraction"] > 0.5, res


def test_tracks_random_commands_under_hard_contact(policy):
    env = eval_env(policy.meta["env"], "locomotion", 16, "hard", sim_threads=1)
    res = evaluate(env, policy, 5.0, "locomotion", seed=1)
    stand = evaluate(env, lambda o: torch.zeros(o.shape[0], 12), 5.0, "locomotion", seed=1)
    print(res, stand)
    assert stand["lin_vel_error"] > 0.5  # commands that standing still does not meet
    assert res["falls"] <= 1 and res["lin_vel_error"] < 0.3 and res["yaw_rate_error"] < 0.3, res


def test_leg_clearance_tells_the_transfer_policy_from_the_walk_fast_one():
    # moreau.evaluation.leg_clearance: the walk_fast policy brings its feet within 6 cm of each other
    # often (10.9 % of pair-steps in the full protocol); walk_transfer, trained with feet_separation,
    # almost never (0.03 %)
    from moreau.evaluation.leg_clearance import leg_clearance
    transfer = os.path.join(RESULTS, "transfer", "walk_transfer", "policy.pt")
    walk_fast = leg_clearance(WALK_FAST, num_envs=8, seconds=4.0)
    trained = leg_clearance(transfer, num_envs=8, seconds=4.0)
    assert walk_fast["pair_steps"] == trained["pair_steps"] == 2 * 8 * 200
    assert walk_fast["near_fraction"] > 0.02 > trained["near_fraction"]
