"""moreau.torch.step / rollout: torch.autograd.gradcheck in double on the CPU, per contact mode."""
import pytest
import torch
from conftest import airborne_anymal, corner_cube, needs_cuda, pressed_cube

import moreau
import moreau.torch as mt

# Finite differences need the contact solve converged far below their step (docs/gradients.md).
TIGHT = dict(tolerance=1e-13, max_iterations=20000)


def anymal(mode, n_env=2, **kw):
    return moreau.Simulator(moreau.asset("anymal_c.json"), n_env=n_env, dtype=torch.float64, contact=mode,
                            n_threads=1, **kw)


def cube(mode, n_env=2, **kw):
    return moreau.Simulator(moreau.asset("cube.json"), n_env=n_env, dtype=torch.float64, contact=mode,
                            n_threads=1, **TIGHT, **kw)


@pytest.mark.parametrize("mode", ["none", "hard", "soft", "smooth", "hard_smooth_grad"])
def test_gradcheck_airborne_state_action_gains(mode, gen):
    """ANYmal C in the air (no contact switches): state, action, kp, kd, added base mass."""
    sim = anymal(mode, **TIGHT)
    q, v, a = airborne_anymal(sim, gen)
    kp = (80 + 10 * torch.rand(2, sim.nu, generator=gen, dtype=torch.float64))
    kd = (2 + torch.rand(2, sim.nu, generator=gen, dtype=torch.float64))
    mass = torch.tensor([0.5, 1.5], dtype=torch.float64)
    inputs = [x.clone().requires_grad_() for x in (q, v, a, kp, kd, mass)]

    def f(q, v, a, kp, kd, mass):
        return mt.step(sim, q, v, a, kp=kp, kd=kd, added_base_mass=mass)

    assert torch.autograd.gradcheck(f, inputs, eps=1e-6, atol=1e-5, rtol=1e-4)
    _, _, status = mt.step(sim, q, v, a, return_status=True)
    assert (status == 0).all()


CUBE_PARAM = {"hard": ("friction", [0.8, 1.2]), "soft": ("contact_kn", [1e4, 2e4]),
              "smooth": ("smooth_k", [300.0, 400.0])}


# The soft model's friction solve does not reach 1e-13 with four corners down (it stalls near
# 1e-7 m/s and sets the solver bit), which leaves its forward too rough for finite
# differences: soft is checked on one corner.
@pytest.mark.parametrize("mode,state", [("hard", pressed_cube), ("smooth", pressed_cube), ("hard", corner_cube),
                                        ("soft", corner_cube), ("smooth", corner_cube)])
def test_gradcheck_cube_pressed_into_ground(mode, state, gen):
    """The cube pressed 0.1 mm into the ground (active contacts, sticking, away from
    switches) on its four bottom corners or on one corner, with the contact parameter of the
    mode (friction, contact_kn, smooth_k) per environment."""
    sim = cube(mode)
    q, v, a = state(sim, gen)
    param, value = CUBE_PARAM[mode]
    p = torch.tensor(value, dtype=torch.float64)
    _, _, status = mt.step(sim, q, v, a, return_status=True, **{param: p})
    assert (status == 0).all(), status  # converged, finite
    sim.set_state(q, v)  # the same state stepped in place: contact information of its last step
    sim.step()
    assert ((sim.contact_gap < 0).sum(1) == (4 if state is pressed_cube else 1)).all(), sim.contact_gap
    assert (sim.contact_active.sum(1) >= 1).all()
    qs, vs, ps = (x.clone().requires_grad_() for x in (q, v, p))

    def f(q, v, p):
        return mt.step(sim, q, v, a, **{param: p})

    assert torch.autograd.gradcheck(f, (qs, vs, ps), eps=1e-6, atol=1e-5, rtol=1e-4)


def test_gradcheck_rollout(gen):
    """Three chained steps of a pendulum-like chain: the cart-pole, no contact."""
    sim = moreau.Simulator(moreau.asset("cartpole.json"), n_env=3, dtype=torch.float64, contact="none")
    q = 0.3 * torch.randn(3, sim.nq, generator=gen, dtype=torch.float64)
    v = 0.3 * torch.randn(3, sim.nv, generator=gen, dtype=torch.float64)
    u = 0.3 * torch.randn(4, 3, sim.nu, generator=gen, dtype=torch.float64)
    inputs = [x.clone().requires_grad_() for x in (q, v, u)]

    def f(q, v, u):
        qs, vs = mt.rollout(sim, q, v, u)
        return qs[1:], vs[1:]

    assert torch.autograd.gradcheck(f, inputs, eps=1e-6, atol=1e-5, rtol=1e-4)


def test_rollout_matches_simulator_rollout_backward(gen):
    """moreau.torch.rollout's backward equals Simulator.rollout / rollout_backward."""
    sim = anymal("none", n_env=3)
    q, v, _ = airborne_anymal(sim, gen)
    h = 3
    u = torch.randn(h, 3, sim.nu, generator=gen, dtype=torch.float64) * 0.3 + torch.tensor(sim.model.qpos0)[7:]
    wq = torch.randn(h + 1, 3, sim.nq, generator=gen, dtype=torch.float64)
    wv = torch.randn(h + 1, 3, sim.nv, generator=gen, dtype=torch.float64)
    qi, vi, ui = (x.clone().requires_grad_() for x in (q, v, u))
    qs, vs = mt.rollout(sim, qi, vi, ui)
    ((qs * wq).sum() + (vs * wv).sum()).backward()

    sim.set_state(q, v)
    sim.rollout(u)
    assert torch.equal(sim.q, qs[-1].detach()) and torch.equal(sim.v, vs[-1].detach())
    aq, av, au, _ = sim.rollout_backward(wq, wv)
    torch.testing.assert_close(aq[0], qi.grad, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(av[0], vi.grad, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(au, ui.grad, rtol=1e-12, atol=1e-12)


def test_policy_rollout_and_layouts(gen):
    """A differentiable policy in the loop, a row-major input (copied into the field-major
    layout), float32 on the CPU."""
    sim = moreau.Simulator(moreau.asset("cartpole.json"), n_env=4, contact="none")
    w = torch.zeros(sim.nq + sim.nv, sim.nu, requires_grad=True)

    def policy(t, q, v):
        return torch.cat([q, v], 1) @ w

    q0 = 0.1 * torch.randn(4, sim.nq, generator=gen)
    v0 = torch.zeros(4, sim.nv)
    qs, vs, status = mt.rollout(sim, q0, v0, policy, horizon=5, return_status=True)
    assert qs.shape == (6, 4, sim.nq) and vs.shape == (6, 4, sim.nv) and (status == 0).all()
    (qs[-1] ** 2).sum().backward()
    assert w.grad is not None and torch.isfinite(w.grad).all() and w.grad.abs().sum() > 0


def test_unused_output_and_parameters_restored(gen):
    sim = anymal("none")
    q, v, a = airborne_anymal(sim, gen)
    kp = torch.full((2, sim.nu), 70.0, dtype=torch.float64, requires_grad=True)
    qi = q.clone().requires_grad_()
    q1, _ = mt.step(sim, qi, v, a, kp=kp)
    # the parameter is now the simulator's; change it before the backward: the backward re-applies kp
    sim.set_param("kp", torch.full((sim.nu,), 10.0))
    q1.sum().backward()  # v_next unused: its adjoint is zero
    g_q, g_kp = qi.grad.clone(), kp.grad.clone()
    qi.grad, kp.grad = None, None
    q1, _ = mt.step(sim, qi, v, a, kp=kp)
    q1.sum().backward()
    torch.testing.assert_close(qi.grad, g_q, rtol=0, atol=0)
    torch.testing.assert_close(kp.grad, g_kp, rtol=0, atol=0)


def test_fixed_parameters_of_the_forward_serve_the_backward(gen):
    # motor_strength and frictionloss_scale take no gradient: the backward re-applies the forward's
    sim = anymal("none")
    q, v, a = airborne_anymal(sim, gen)
    strength = torch.tensor([[0.5] * sim.nu, [1.2] * sim.nu], dtype=torch.float64)
    qi = q.clone().requires_grad_()
    q1, v1 = mt.step(sim, qi, v, a, motor_strength=strength, frictionloss_scale=torch.ones(2, dtype=torch.float64))
    sim.set_param("motor_strength", torch.ones(sim.nu))  # changed between the forward and the backward
    v1.sum().backward()
    g = qi.grad.clone()
    qi.grad = None
    q1b, v1b = mt.step(sim, qi, v, a, motor_strength=strength)
    v1b.sum().backward()
    torch.testing.assert_close(qi.grad, g, rtol=0, atol=0)
    # and they act: a weaker drive moves the joints differently
    q1c, v1c = mt.step(sim, q, v, a, motor_strength=torch.ones(2, sim.nu, dtype=torch.float64))
    assert not torch.allclose(v1c, v1.detach())


def test_damping_and_armature_scales_act_and_their_gradient_matches_gradcheck(gen):
    """damping_scale and armature_scale (per environment, no gradient) on the Go1 in the air (the
    Menagerie's joint damping 1-2 N m s/rad and armature 0.01): zero damping and tripled armature
    change the motion; gradcheck of the state and action with the scales 0.5 / 2 and 2 / 0.5."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", moreau.ModelWarning)
        sim = moreau.Simulator(moreau.asset("unitree_go1/go1.xml"), n_env=2, dtype=torch.float64, contact="none",
                               n_threads=1)
    q, v, a = airborne_anymal(sim, gen)
    ones = torch.ones(2, dtype=torch.float64)
    _, v_model = mt.step(sim, q, v, a)
    _, v_ones = mt.step(sim, q, v, a, damping_scale=ones, armature_scale=ones)
    _, v_undamped = mt.step(sim, q, v, a, damping_scale=0 * ones)
    _, v_heavy = mt.step(sim, q, v, a, armature_scale=3 * ones)
    assert torch.equal(v_ones, v_model)
    assert (v_undamped - v_model).abs().max() > 1e-2 and (v_heavy - v_model).abs().max() > 1e-2
    damping = torch.tensor([0.5, 2.0], dtype=torch.float64)
    armature = torch.tensor([2.0, 0.5], dtype=torch.float64)
    inputs = [x.clone().requires_grad_() for x in (q, v, a)]

    def f(q_, v_, a_):
        return mt.step(sim, q_, v_, a_, damping_scale=damping, armature_scale=armature)

    assert torch.autograd.gradcheck(f, inputs, eps=1e-6, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("mode", ["hard", "smooth", "soft"])
@pytest.mark.parametrize("name, axis, state", [("spin_friction", 5, pressed_cube), ("rolling_friction", 3, corner_cube)])
def test_torque_friction_slows_a_turning_cube_and_its_gradient_matches_gradcheck(mode, name, axis, state, gen):
    """spin_friction and rolling_friction (per environment, no gradient): two copies of a cube on
    slippery ground (μ = 0.05) turning at 2 rad/s, about z pressed on its four bottom corners (spin:
    the corners slide) or about x on one corner (rolling over it), without and with μ = 0.03 m; state gradients against gradcheck in
    smooth and soft contact (in hard contact the corners settle at the speculative switch, gap 0 at
    the midpoint, after the first physics step, where the step has a kink: tests/gradient_test.cc
    checks hard spin and rolling friction on a ball and a quadruped)."""
    sim = cube(mode, **({"condim": 6} if name == "rolling_friction" else {}))
    sim.set_param("friction", 0.05)
    q, v, a = state(sim, gen)
    q[1], v[1] = q[0], v[0]
    v[:, axis] = 2.0
    mu = torch.tensor([0.0, 0.03], dtype=torch.float64)
    _, v1 = mt.step(sim, q, v, a, **{name: mu})
    assert v1[1, axis].abs() < v1[0, axis].abs() - 1e-3, f"{name} should slow the second cube's turning more"
    if mode == "hard":
        return
    qs, vs = q.clone().requires_grad_(), v.clone().requires_grad_()

    def f(q_, v_):
        return mt.step(sim, q_, v_, a, **{name: mu})

    assert torch.autograd.gradcheck(f, (qs, vs), eps=1e-6, atol=1e-5, rtol=1e-4)


def test_rolling_friction_needs_a_condim_6_simulator(gen):
    """A simulator has room for rolling friction's rows only with condim=6: passing
    rolling_friction to a step of a default (condim 4) one, or writing it, is an error that names
    the option."""
    sim = cube("hard")
    q, v, a = corner_cube(sim, gen)
    mu = torch.full((2,), 0.01, dtype=torch.float64)
    with pytest.raises(moreau.Error, match="condim is 4.*condim = 6"):
        mt.step(sim, q, v, a, rolling_friction=mu)
    with pytest.raises(moreau.Error, match="condim"):
        sim.set_param("rolling_friction", 0.01)
    six = cube("hard", condim=6)
    mt.step(six, q, v, a, rolling_friction=mu)
    assert torch.equal(six.param("rolling_friction")[:, 0], mu)


@needs_cuda
def test_cuda_step_matches_cpu(gen):
    cpu = moreau.Simulator(moreau.asset("anymal_c.json"), n_env=8, contact="hard")
    gpu = moreau.Simulator(moreau.asset("anymal_c.json"), n_env=8, contact="hard", device="cuda")
    q, v, a = (x.float() for x in airborne_anymal(cpu, gen, lift=0.2))
    qc, vc = mt.step(cpu, q, v, a)
    qi, vi, ai = (x.cuda().requires_grad_() for x in (q, v, a))
    qg, vg = mt.step(gpu, qi, vi, ai)
    assert qg.device.type == "cuda"
    torch.testing.assert_close(qg.cpu(), qc, rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(vg.cpu(), vc, rtol=1e-2, atol=1e-2)
    (qg.sum() + vg.sum()).backward()
    qcpu, vcpu, acpu = (x.clone().requires_grad_() for x in (q, v, a))
    q2, v2 = mt.step(cpu, qcpu, vcpu, acpu)
    (q2.sum() + v2.sum()).backward()
    torch.testing.assert_close(ai.grad.cpu(), acpu.grad, rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(qi.grad.cpu(), qcpu.grad, rtol=1e-2, atol=1e-2)


def test_transition_jacobians_match_finite_differences_and_the_adjoint(gen):
    """Simulator.transition_jacobians (tangent): the velocity blocks of A and B against central
    differences of step_pure, and wᵀ A, wᵀ B against one step_adjoint with weights w."""
    sim = anymal("hard", **TIGHT)
    q, v, a = airborne_anymal(sim, gen)
    A, B, status = sim.transition_jacobians(q, v, a)
    assert A.shape == (2, 2 * sim.nv, 2 * sim.nv) and B.shape == (2, 2 * sim.nv, sim.nu)
    assert (status == 0).all()
    nv, eps = sim.nv, 1e-6
    for k in (0, 4, 9, nv - 1):  # columns of dv_out/dv_in
        vp, vm = v.clone(), v.clone()
        vp[:, k] += eps
        vm[:, k] -= eps
        fd = (sim.step_pure(q, vp, a)[1] - sim.step_pure(q, vm, a)[1]) / (2 * eps)
        torch.testing.assert_close(A[:, nv:, nv + k], fd, rtol=1e-5, atol=1e-6)
    for k in (0, 7):  # columns of dv_out/daction
        ap, am = a.clone(), a.clone()
        ap[:, k] += eps
        am[:, k] -= eps
        fd = (sim.step_pure(q, v, ap)[1] - sim.step_pure(q, v, am)[1]) / (2 * eps)
        torch.testing.assert_close(B[:, nv:, k], fd, rtol=1e-5, atol=1e-6)
        assert fd.abs().max() > 1e-3
    # the v rows of the Jacobians are adjoints with unit weights on v_out
    wv = torch.randn(2, nv, generator=gen, dtype=torch.float64)
    adj = _adjoint_v_action(sim, q, v, a, torch.zeros(2, sim.nq, dtype=torch.float64), wv)
    torch.testing.assert_close(torch.einsum("er,erc->ec", wv, A[:, nv:, nv:]), adj["v"], rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(torch.einsum("er,erc->ec", wv, B[:, nv:, :]), adj["action"], rtol=1e-9, atol=1e-9)


def _adjoint_v_action(sim, q, v, a, wq, wv):
    """∂⟨(wq, wv), (q_out, v_out)⟩/∂(v, action) through moreau.torch.step."""
    vv, aa = v.clone().requires_grad_(), a.clone().requires_grad_()
    q1, v1 = mt.step(sim, q, vv, aa)
    ((q1 * wq).sum() + (v1 * wv).sum()).backward()
    return {"v": vv.grad, "action": aa.grad}


def test_transition_jacobians_reject_bad_inputs(gen):
    sim = anymal("none")
    q, v, a = airborne_anymal(sim, gen)
    with pytest.raises(moreau.TensorError, match="argument 'action'.*dtype"):
        sim.transition_jacobians(q, v, a.float())


def test_fewer_adjoint_tapes_give_the_same_gradient(gen):
    """adjoint_tapes=1 recomputes the control step's physics steps from checkpoints, and a count
    above the physics steps keeps every step's tape: both per environment with the scalar
    kernels, so the same bits. The automatic tapes (0) recompute in SIMD lanes, whose arithmetic
    differs by rounding (docs/cpu.md), so they agree to rounding."""
    sims = {k: anymal("hard", adjoint_tapes=k, **TIGHT) for k in (0, 1, 1000)}
    q, v, a = airborne_anymal(sims[0], gen)
    grads = {}
    for k, sim in sims.items():
        vv = v.clone().requires_grad_()
        q1, v1 = mt.step(sim, q, vv, a)
        (q1.sum() + (v1 ** 2).sum()).backward()
        grads[k] = vv.grad
    assert grads[1000].abs().max() > 0
    assert torch.equal(grads[1], grads[1000])
    torch.testing.assert_close(grads[0], grads[1000], rtol=1e-10, atol=1e-10 * grads[1000].abs().max().item())
