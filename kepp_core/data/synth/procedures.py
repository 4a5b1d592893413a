"""The tasks of the synthetic world and their stochastic procedures.

A procedure is a small grammar whose ``sample(rng)`` returns one plan (a list of step names):

- ``S(name)``: one step;
- ``Seq(a, b, ...)``: all of them in order (ordering constraints);
- ``Opt(p, x)``: ``x`` with probability ``p`` (optional steps);
- ``Any((w, x), (w, y), ...)``: one alternative, chosen with weights ``w``;
- ``Perm(a, b, ...)``: all of them in a random order (steps whose order does not matter);
- ``Loop(x, again, most)``: ``x`` once, then again with probability ``again``, at most ``most``
  times (repeats and short loops such as add → stir → add → stir).

So one start and end step admit several plans with different probabilities.

>>> import numpy as np
>>> Seq(S("add sugar"), Loop(S("stir"), again=0.0)).sample(np.random.default_rng(0))
['add sugar', 'stir']
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["TASKS", "TaskSpec"]


class Node:
    """A procedure grammar node: samples a list of step names."""
    def sample(self, rng: np.random.Generator) -> list[str]:
        raise NotImplementedError

    def names(self) -> list[str]:
        """Step names this node can produce, in first-appearance order."""
        raise NotImplementedError


@dataclass(frozen=True)
class S(Node):
    """One step."""
    name: str

    def sample(self, rng):
        return [self.name]

    def names(self):
        return [self.name]


class Seq(Node):
    """Its items in order."""
    def __init__(self, *items: Node) -> None:
        self.items = items

    def sample(self, rng):
        return [s for it in self.items for s in it.sample(rng)]

    def names(self):
        return list(dict.fromkeys(n for it in self.items for n in it.names()))


class Opt(Node):
    """Its item with probability ``p``, else nothing."""
    def __init__(self, p: float, item: Node) -> None:
        self.p, self.item = p, item

    def sample(self, rng):
        return self.item.sample(rng) if rng.random() < self.p else []

    def names(self):
        return self.item.names()


class Any(Node):
    """One of its items, chosen by weight."""
    def __init__(self, *choices: tuple[float, Node]) -> None:
        self.weights = np.array([w for w, _ in choices], float)
        self.weights /= self.weights.sum()
        self.items = [c for _, c in choices]

    def sample(self, rng):
        return self.items[int(rng.choice(len(self.items), p=self.weights))].sample(rng)

    def names(self):
        return list(dict.fromkeys(n for it in self.items for n in it.names()))


class Perm(Node):
    """Its items in a random order."""
    def __init__(self, *items: Node) -> None:
        self.items = items

    def sample(self, rng):
        return [s for k in rng.permutation(len(self.items)) for s in self.items[k].sample(rng)]

    def names(self):
        return list(dict.fromkeys(n for it in self.items for n in it.names()))


class Loop(Node):
    """Its item, repeated with probability ``again`` up to ``most`` times."""
    def __init__(self, item: Node, again: float = 0.3, most: int = 3) -> None:
        self.item, self.again, self.most = item, again, most

    def sample(self, rng):
        out = self.item.sample(rng)
        k = 1
        while k < self.most and rng.random() < self.again:
            out += self.item.sample(rng)
            k += 1
        return out

    def names(self):
        return self.item.names()


@dataclass(frozen=True)
class TaskSpec:
    """A task of the world: id (no "_"), readable name and procedure."""

    id: str
    name: str
    procedure: Node

    @property
    def steps(self) -> list[str]:
        return self.procedure.names()


# Seven everyday tasks. Shared steps ("pour water", "add sugar", "stir", "add milk",
# "boil water", "serve cup") are one action each across tasks, as in CrossTask.
TASKS: tuple[TaskSpec, ...] = (
    TaskSpec("tea", "make tea", Seq(
        S("boil water"), S("pour water"), S("add tea bag"), S("steep tea"),
        Opt(0.7, S("remove tea bag")),
        Opt(0.7, Loop(Seq(S("add sugar"), S("stir")), again=0.35, most=3)),
        Opt(0.4, Seq(S("add milk"), Opt(0.6, S("stir")))),
        S("serve cup"))),
    TaskSpec("coffee", "make coffee", Seq(
        Perm(S("grind beans"), S("boil water")), S("add coffee"), S("pour water"),
        Loop(S("stir"), again=0.2, most=2),
        Opt(0.5, Loop(Seq(S("add sugar"), S("stir")), again=0.3, most=3)),
        Opt(0.5, S("add milk")), S("serve cup"))),
    TaskSpec("lemonade", "make lemonade", Seq(
        Loop(Seq(S("cut lemon"), S("squeeze lemon")), again=0.4, most=3),
        Perm(S("pour water"), S("add sugar")), Loop(S("stir"), again=0.3, most=2),
        Opt(0.6, S("add ice")), S("serve cup"))),
    TaskSpec("pancakes", "make pancakes", Seq(
        Loop(S("crack egg"), again=0.5, most=3), Perm(S("add flour"), S("add milk")),
        Loop(S("whisk batter"), again=0.3, most=2), Opt(0.5, S("add sugar")),
        Any((0.6, Seq(S("heat pan"), Opt(0.6, S("add butter")))), (0.4, S("heat pan"))),
        Loop(Seq(S("pour batter"), S("flip pancake")), again=0.45, most=3),
        Opt(0.7, S("serve plate")))),
    TaskSpec("seedling", "plant a seedling", Seq(
        S("fill pot"), S("dig hole"), S("place seedling"),
        Loop(Seq(S("add soil"), S("press soil")), again=0.4, most=3),
        Opt(0.5, S("add fertilizer")), S("pour water"), Opt(0.6, S("label pot")))),
    TaskSpec("tire", "change a tire", Seq(
        Opt(0.5, S("place wedge")), S("loosen nuts"), S("jack up car"), S("remove wheel"),
        S("mount wheel"), Loop(S("tighten nuts"), again=0.3, most=2), S("lower car"),
        Opt(0.6, S("tighten nuts")), Opt(0.4, S("check pressure")))),
    TaskSpec("window", "clean a window", Seq(
        Opt(0.6, S("fill bucket")),
        Loop(Seq(S("spray cleaner"), S("wipe glass")), again=0.5, most=3),
        Opt(0.4, S("scrape glass")), Opt(0.5, S("pour water")), S("dry glass"))),
)
