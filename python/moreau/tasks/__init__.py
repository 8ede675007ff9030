"""moreau.tasks: batched differentiable environments (DiffEnv) built on moreau.torch.

``make(name, **kwargs)``: "locomotion" (ANYmal C velocity tracking, moreau.tasks.locomotion)
or "cartpole" (moreau.tasks.cartpole, when present)."""
from .base import DiffEnv  # noqa: F401


def make(name: str, **kwargs) -> DiffEnv:
    """A task by name: 'locomotion' or 'cartpole'; kwargs go to its constructor."""
    if name in ("locomotion", "anymal", "anymal_c"):
        from .locomotion import Locomotion
        return Locomotion(**kwargs)
    if name == "cartpole":
        from . import cartpole
        cls = getattr(cartpole, "CartPole", None) or getattr(cartpole, "Cartpole", None) or getattr(cartpole, "CartpoleEnv", None)
        if cls is None:
            raise AttributeError("moreau.tasks.cartpole: no CartPole class")
        return cls(**kwargs)
    raise ValueError(f"moreau.tasks.make: unknown task {name!r} (have: 'locomotion', 'cartpole')")
