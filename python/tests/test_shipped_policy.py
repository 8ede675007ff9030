"""The shipped SHAC policy (results/shac_walk/policy.pt, results/shac_walk/README.md), trained through
smooth contact, still walks under hard contact: rebuilt from the checkpoint alone, it tracks a
forward command and random commands of the training ranges. Guards the task, the simulator and
the checkpoint format against changes that would silently break the published result."""
import os

import pytest
import torch

from moreau.evaluation.evaluate import eval_env, evaluate
from moreau.trainers.checkpoints import load_shac_policy

POLICY = os.path.join(os.path.dirname(__file__), "..", "..", "results", "shac_walk", "policy.pt")


@pytest.fixture(scope="module")
def policy():
    torch.set_num_threads(1)
    return load_shac_policy(POLICY)


def test_the_checkpoint_carries_its_task(policy):
    meta = policy.meta["env"]
    assert meta["contact"] == "smooth" and meta["task_config"]["gait_frequency"] == 2.0
    assert meta["num_obs"] == 56 and policy.meta["env_steps"] > 1e6


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


def test_leg_clearance_tells_the_transfer_policy_from_the_shipped_one():
    # moreau.evaluation.leg_clearance: the shipped policy brings its feet within 6 cm of each other
    # often (10.9 % of pair-steps in the full protocol); walk_transfer, trained with feet_separation,
    # almost never (0.03 %)
    from moreau.evaluation.leg_clearance import leg_clearance
    transfer = os.path.join(os.path.dirname(POLICY), "..", "transfer", "walk_transfer", "policy.pt")
    shipped = leg_clearance(POLICY, num_envs=8, seconds=4.0)
    trained = leg_clearance(transfer, num_envs=8, seconds=4.0)
    assert shipped["pair_steps"] == trained["pair_steps"] == 2 * 8 * 200
    assert shipped["near_fraction"] > 0.02 > trained["near_fraction"]
