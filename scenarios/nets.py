"""Seeded torch MLPs for the scenarios' roles, independent of torch's global RNG.

Roles may be built concurrently (the threads executor builds workers in parallel threads), so the global
RNG (``torch.manual_seed``) would race; each net draws its initial weights from its own ``torch.Generator``
with PyTorch's default Linear distribution, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and biases.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

def seeded_mlp(sizes: Sequence[int], seed: Sequence[int] | int) -> Any:
    """Linear-ReLU-...-Linear through ``sizes``, initialized from ``seed`` only (an int or int sequence)."""
    from scenarios.threads import import_torch

    torch = import_torch()

    words = [seed] if isinstance(seed, int) else list(seed)
    gen = torch.Generator().manual_seed(int(np.random.SeedSequence(words).generate_state(1, np.uint64)[0] >> 1))
    layers: list[Any] = []
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        if i:
            layers.append(torch.nn.ReLU())
        layer = torch.nn.Linear(fan_in, fan_out)
        bound = 1.0 / math.sqrt(fan_in)
        with torch.no_grad():
            layer.weight.uniform_(-bound, bound, generator=gen)
            layer.bias.uniform_(-bound, bound, generator=gen)
        layers.append(layer)
    return torch.nn.Sequential(*layers)


def tensor_of(array: np.ndarray) -> Any:
    """A tensor of ``array``'s values, for reading: on its memory where the array is writable, else on a copy. A
    received array may be read-only (a reactor port's shared memory, Ray's object store), and torch warns on a
    tensor over read-only memory; silencing it (`warnings.catch_warnings`) would swap the process's warning filters,
    which is not safe where roles run in threads (the threads executor). The arrays read here are small (the DQN's
    weights, a minibatch), so the copy costs microseconds against the round's milliseconds."""
    from scenarios.threads import import_torch

    torch = import_torch()
    return torch.from_numpy(array if array.flags.writeable else array.copy())
